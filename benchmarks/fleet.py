"""Applications per minute: `flowscope fleet` on Spark local[2] against one Python process.

The fleet is the shipped real logs (fixtures/spark: six PySpark applications) copied `--copies` times each,
re-timed an hour apart under new application ids and laid out in turn in every layout and codec
(`tests/test_fleet.make_fleet`). Two ways over the same directory:

* `one process`: `backend.fleet.analyze.analyze_log` on each log in turn (the reader, the Spark model and the
  tracker; no tables written), the per-application work alone;
* `Spark local[2]`: `backend.fleet.job.run_fleet` (list and read through Spark, one task per application, the
  Parquet tables, the signature aggregate and report.html), timed after the session is up; the session's
  start-up is reported beside it, since spark-submit pays it once per run.

Both figures are wall clock on a machine whose load the script reports (`os.getloadavg` before each part): on a
shared machine the Spark figure in particular moves with it. Usage:

    PYTHONPATH=. .venv/bin/python benchmarks/fleet.py [--copies 20] [--master local[2]]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.fleet.analyze import analyze_log  # noqa: E402
from backend.fleet.job import run_fleet  # noqa: E402
from tests.test_fleet import make_fleet  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=20, help="copies of each of the 6 fixture logs (default 20)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="flowscope-fleet-bench-") as tmp:
        logs = Path(tmp) / "logs"
        logs.mkdir()
        made = make_fleet(logs, args.copies)
        n = len(made)
        size = sum(f.stat().st_size for f in logs.rglob("*") if f.is_file())
        print(f"{n} applications, {size / 1e6:.1f} MB of logs in every layout and codec")

        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        rows = [analyze_log(path) for path, _, _ in made]
        one = time.perf_counter() - t0
        times = sum(len(r.times) for r in rows)
        print(f"one process     : {one:7.2f} s  {n / one * 60:9.0f} applications/min  ({times} times; load {load:.1f})")

        from pyspark.sql import SparkSession

        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        spark = (SparkSession.builder.master(args.master).appName("flowscope fleet benchmark")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "4").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        startup = time.perf_counter() - t0
        try:
            t0 = time.perf_counter()
            summary = run_fleet(spark, str(logs), str(Path(tmp) / "out"))
            fleet = time.perf_counter() - t0
        finally:
            spark.stop()
        assert summary.applications == n and summary.times == times, summary
        print(f"Spark {args.master:<10}: {fleet:7.2f} s  {n / fleet * 60:9.0f} applications/min  "
              f"(+ {startup:.1f} s session start-up; tables and report included; load {load:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
