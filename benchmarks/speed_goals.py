"""Issue 33's four speed goals in one command: each goal's benchmark run in turn, then every ``goal:`` line they
printed, with the load average beside each.

1. ``flowscope report`` at least 3x faster than the History Server lists every job, ``frontiers`` at least 5x, on
   both shapes (``replay_vs_history_server.py``: 100 jobs x 1,000 tasks; 8,000 small SQL jobs);
2. the tracker's replay of the 120k-batch progress log at most 1.3x a stdlib ``json`` parse (the aim: 1.2x), by
   CPU and by wall (``replay_vs_json.py``);
3. reading Task Metrics adds at most +10% to the replay of the 100-job log (``task_metrics_cost.py``);
4. ``report``'s peak memory on the 8,000-job log no more than when the goal was set (``replay_vs_history_server.py``
   on that shape).

Timings are only worth reading on a quiet machine: the load average is printed before and after each benchmark,
and every ratio is by CPU time (user + system of every process) beside wall time. ``--only`` picks some of them
(``json``, ``metrics``, ``big``, ``sql``); ``--repeat`` is each benchmark's rounds.

    .venv/bin/python benchmarks/speed_goals.py                 # about 15 minutes on a quiet 2-core machine
    .venv/bin/python benchmarks/speed_goals.py --only json,metrics --repeat 5
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPARK_EVENTS = Path(os.environ.get("FLOWSCOPE_SPARK_EVENTS") or HERE.parent.parent / "shared" / "spark-events")
SQL_SOURCE = SPARK_EVENTS / "pyspark-4.3" / "spark430_batch_rdd_sql.jsonl.gz"


def benchmarks(repeat: int) -> dict[str, list[str]]:
    """Each goal's benchmark, as the command that runs it."""
    return {
        "json": ["replay_vs_json.py", "--repeat", str(max(repeat, 5))],
        "metrics": ["task_metrics_cost.py", "--copies", "100", "--repeat", str(repeat)],
        "big": ["replay_vs_history_server.py", "--repeat", str(repeat)],
        "sql": ["replay_vs_history_server.py", "--repeat", str(repeat), "--copies", "2000", "--source",
                str(SQL_SOURCE)],
    }


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="json,metrics,big,sql", help="which benchmarks (json,metrics,big,sql)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of each benchmark (3; replay_vs_json at least 5)")
    args = ap.parse_args(argv)
    every = benchmarks(args.repeat)
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in every]
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}: choose from {', '.join(every)}")
    goals: list[str] = []
    for name in chosen:
        cmd = [sys.executable, str(HERE / every[name][0]), *every[name][1:]]
        before = load()
        print(f"== {name}: {' '.join(every[name])} (load average {before})", flush=True)
        proc = subprocess.run(cmd, cwd=HERE.parent, capture_output=True, text=True, check=False)
        sys.stdout.write(proc.stdout)
        if proc.returncode != 0:
            sys.stdout.write(proc.stderr)
            goals.append(f"[{name}] FAILED (exit {proc.returncode})")
            continue
        goals += [f"[{name}] {line}  (load {before} -> {load()})" for line in proc.stdout.splitlines()
                  if line.startswith("goal:")]
    print()
    print("\n".join(goals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
