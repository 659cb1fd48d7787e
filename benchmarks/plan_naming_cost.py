"""What naming each SQL stage's plan operator in the Spark model costs, against the second pass it replaced.

The log is the one ``replay_vs_history_server.py`` builds: by default the pyspark 4.3 log of one small SQL job and
three RDD jobs (``spark430_batch_rdd_sql.jsonl.gz``) copied ``--copies`` times (2,000: 8,000 jobs, 2,000 SQL
executions, ~390 MB; written once to ``benchmarks/out/``). Each measurement runs in a fresh process, rounds
alternating, CPU seconds (the machine may be shared), best and median of ``--repeat``:

* ``model``: the log read, decoded and run through the Spark model (``SparkLogConversion``, every record made):
  the part of ``flowscope frontiers`` and ``blame`` the naming adds to, for this checkout and for each ``--tree``
  given (another checkout of flowscope, e.g. ``git worktree add /tmp/before <commit>``: the model before);
* ``read_plans``: the whole log read into its SQL plans (what ``flowscope blame`` ran after blame to name the
  operators before the model did it, and what ``flowscope plan`` still runs).

    .venv/bin/python benchmarks/plan_naming_cost.py --tree /tmp/before --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_MODEL = """
import json, resource, sys
from backend.spark.recording.convert import SparkLogConversion
records = marks = 0
for rec in SparkLogConversion(sys.argv[1]):
    records += 1
    marks += "plan_operators" in rec
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu": r.ru_utime + r.ru_stime, "records": records, "marks": marks}))
"""

_READ_PLANS = """
import json, resource, sys
from backend.spark.sql_plan.read import read_plans
plans, _ = read_plans(sys.argv[1])
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu": r.ru_utime + r.ru_stime, "executions": len(plans.executions)}))
"""


def measure(tree: Path, code: str, log: Path) -> dict:
    """One fresh process running ``code`` on ``log`` with ``tree``'s flowscope first on its path."""
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)}, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from replay_vs_history_server import ensure_log

    default_source = Path(os.environ.get("FLOWSCOPE_SPARK_EVENTS", REPO.parent / "shared" / "spark-events")) / \
        "pyspark-4.3" / "spark430_batch_rdd_sql.jsonl.gz"
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", type=Path, default=default_source)
    ap.add_argument("--tree", type=Path, action="append", default=[],
                    help="another flowscope checkout whose model to measure too (repeatable)")
    args = ap.parse_args(argv)
    log, meta = ensure_log(args.source, args.copies, False)
    print(f"log: {meta['jobs']} jobs, {meta['tasks']:,} tasks, {meta['bytes'] / 1e6:.0f} MB", flush=True)
    runs: dict[str, list[dict]] = {}
    jobs = [(f"model ({tree})", tree, _MODEL) for tree in [REPO, *args.tree]] + [("read_plans", REPO, _READ_PLANS)]
    for _ in range(args.repeat):
        for name, tree, code in jobs:
            runs.setdefault(name, []).append(measure(tree, code, log))
    for name, rs in runs.items():
        cpus = [r["cpu"] for r in rs]
        more = ", ".join(f"{k} {v:,}" for k, v in rs[0].items() if k != "cpu")
        print(f"  {name:<60} best {min(cpus):6.2f} s CPU, median {statistics.median(cpus):6.2f}  ({more})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
