"""``flowscope report`` on many small SQL jobs: its time and the size of its JSON, now that every finding has an
impact and the findings fold into groups, against another checkout of flowscope (the one before, ``--base``).

The log is the one ``replay_vs_history_server.py`` builds, from 2,000 copies of the pyspark 4.3 log of four small
SQL jobs (`pyspark-4.3/spark430_batch_rdd_sql.jsonl.gz` in `$FLOWSCOPE_SPARK_EVENTS`): 8,000 jobs, written once to
``benchmarks/out/`` (``--copies`` changes it). Each round runs ``flowscope report --json LOG`` as a new process
(this checkout, then ``--base``'s, alternating), and prints its wall seconds, its CPU seconds with its children's
(the conversion's processes, the plan findings' process), its JSON's bytes, findings and groups, and the load
average (``os.getloadavg``) before each run: on a shared machine, figures are only comparable beside it.

    .venv/bin/python benchmarks/report_groups.py --base /tmp/flowscope-before
    .venv/bin/python benchmarks/report_groups.py --copies 200 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from replay_vs_history_server import REPO, SPARK_EVENTS, ensure_log  # noqa: E402  (the log and where it comes from)

SOURCE = SPARK_EVENTS / "pyspark-4.3" / "spark430_batch_rdd_sql.jsonl.gz"


def run_report(checkout: Path, log: Path) -> dict:
    """One ``flowscope report --json`` of ``checkout`` (its code first on the path) on ``log``."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", "import sys; from flowscope.cli import main; sys.exit(main())",
                          "report", "--json", str(log)], cwd=checkout, env=env, capture_output=True, check=True)
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    answer = json.loads(out.stdout)
    return {"checkout": str(checkout), "load": round(load, 1), "wall_s": round(wall, 2),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
            "json_bytes": len(out.stdout), "findings": answer.get("findings_total"),
            "groups": len(answer["groups"]) if "groups" in answer else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=2000, help="copies of the source's jobs (2000: 8,000 jobs)")
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--base", type=Path, default=None, help="another checkout to compare with (its root)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args(argv)
    if not args.source.exists():
        print(f"no {args.source}: set FLOWSCOPE_SPARK_EVENTS to the shared Spark event logs", file=sys.stderr)
        return 2
    log, meta = ensure_log(args.source, args.copies, False)
    runs = []
    for _ in range(max(1, args.rounds)):
        for checkout in [REPO] + ([args.base] if args.base else []):
            runs.append(run_report(checkout, log))
            print(json.dumps(runs[-1]), flush=True)
    print(json.dumps({"log": {k: meta[k] for k in ("source", "copies", "jobs", "tasks", "bytes")}, "runs": runs},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
