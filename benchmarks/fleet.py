"""Applications per minute: `flowscope fleet` on Spark local[2] against one Python process.

The fleet is the shipped real logs (every PySpark application under fixtures/spark) copied `--copies` times each,
re-timed an hour apart under new application ids and laid out in turn in every layout and codec
(`tests/test_fleet.make_fleet`). With `--scale K` every log is K times bigger: each application runs its jobs K
times over (renumbered and shifted as `replay_vs_history_server.py` replicates a log). Two ways over the same
directory:

* `one process`: `backend.fleet.analyze.analyze_log` on each log in turn (the reader, the Spark model and the
  tracker; no tables written), the per-application work alone;
* `Spark local[2]`: `backend.fleet.job.run_fleet` (list and read through Spark, a few tasks per core, the Parquet
  tables, the signature aggregate and report.html) on the session `flowscope fleet` builds, run twice: `cold` is
  the first run in a fresh JVM (what one spark-submit pays), `warm` the second (a JVM that has run it before: its
  classes loaded and its code compiled). The session's start-up is reported beside them.

The machine may be shared, so beside wall clock every figure has its CPU seconds: the one process's own, and for
Spark the whole process tree's (this driver, the JVM and its Python workers, from /proc), and the load average
before each part. On a quiet machine with two free cores the Spark figure is at best its CPU seconds / 2. Usage:

    PYTHONPATH=. .venv/bin/python benchmarks/fleet.py [--copies 20] [--scale 1] [--master local[2]]
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
from backend.fleet.job import build_session, run_fleet  # noqa: E402
from tests.test_fleet import SPARK_FIXTURES, make_fleet, plain_events  # noqa: E402


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds of `root` and every live descendant, each with its reaped children's (Linux /proc): the
    driver, the JVM it started, PySpark's worker daemon and its workers."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    seconds: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parent[int(name)] = int(fields[1])
        seconds[int(name)] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += seconds.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def scaled_events(scale: int):
    """A fixture's JSON lines with its jobs run `scale` times over in the one application."""
    if scale <= 1:
        return plain_events
    import orjson
    from replay_vs_history_server import ONCE_AFTER, ONCE_BEFORE, Renumber

    def events_of(fixture: Path) -> bytes:
        events = [orjson.loads(line) for line in plain_events(fixture).splitlines() if line.strip()]
        before = [e for e in events if e.get("Event") in ONCE_BEFORE]
        after = [e for e in events if e.get("Event") in ONCE_AFTER]
        body = [e for e in events if e.get("Event") not in ONCE_BEFORE | ONCE_AFTER]
        renumber = Renumber(body)
        out = before + [renumber.copy(e, k) for k in range(scale) for e in body]
        out += [renumber.copy(e, scale - 1) for e in after]
        return b"".join(orjson.dumps(e) + b"\n" for e in out)
    return events_of


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--copies", type=int, default=20,
                        help=f"copies of each of the {len(SPARK_FIXTURES)} fixture logs (default 20)")
    parser.add_argument("--scale", type=int, default=1, help="each log's jobs run this many times over (default 1)")
    parser.add_argument("--master", default="local[2]", help="the Spark master (default local[2])")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="flowscope-fleet-bench-") as tmp:
        logs = Path(tmp) / "logs"
        logs.mkdir()
        made = make_fleet(logs, args.copies, scaled_events(args.scale))
        n = len(made)
        size = sum(f.stat().st_size for f in logs.rglob("*") if f.is_file())
        print(f"{n} applications, {size / 1e6:.1f} MB of logs in every layout and codec (scale {args.scale})")

        def line(what: str, wall: float, cpu: float, load: float, extra: str = "") -> None:
            print(f"{what:<18}: {wall:7.2f} s wall {n / wall * 60:7.0f} applications/min | {cpu:7.2f} s CPU "
                  f"{n / cpu * 60:7.0f} applications/CPU-min | load {load:.1f}{extra}", flush=True)

        load = os.getloadavg()[0]
        t0, c0 = time.perf_counter(), time.process_time()
        rows = [analyze_log(path) for path, _, _ in made]
        one, one_cpu = time.perf_counter() - t0, time.process_time() - c0
        times = sum(len(r.times) for r in rows)
        line("one process", one, one_cpu, load, f" ({times} times)")

        t0 = time.perf_counter()
        spark = build_session(args.master)  # as `flowscope fleet` does (no console progress bar)
        spark.sparkContext.setLogLevel("ERROR")
        print(f"(Spark session start-up {time.perf_counter() - t0:.1f} s)")
        try:
            for run in ("cold", "warm"):
                load = os.getloadavg()[0]
                t0, c0 = time.perf_counter(), tree_cpu_seconds(os.getpid())
                summary = run_fleet(spark, str(logs), str(Path(tmp) / f"out-{run}"))
                wall, cpu = time.perf_counter() - t0, tree_cpu_seconds(os.getpid()) - c0
                assert summary.applications == n and summary.times == times, summary
                line(f"Spark {args.master} {run}", wall, cpu, load, " (tables and report included)")
        finally:
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
