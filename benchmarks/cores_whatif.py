"""The cores what-if's time on a many-small-jobs Spark log, and what the Overview costs beside it.

The log is the one ``replay_vs_history_server.py`` builds, here from 2,000 copies of the pyspark 4.3 log of four
small SQL jobs (`pyspark-4.3/spark430_batch_rdd_sql.jsonl.gz` in `$FLOWSCOPE_SPARK_EVENTS`): 8,000 jobs, written
once to ``benchmarks/out/`` (``--copies`` and ``--source`` change it). In one process (the collector tuned as every
flowscope process's is):

* ``read``: the log converted, replayed and blamed as ``flowscope whatif`` reads it (``read_blamed``), every record
  also handed to the recorded schedule and the executor timeline the what-if reads;
* ``whatif``: :func:`~backend.spark.diagnosis.cores_whatif.cores_whatif` for 4 core counts (``--cores``, default
2,4,8,16)
  over every completed time, best of ``--repeat``: the goal is under 1 s;
* ``overview``: the Overview's answer (its what-if line simulates two more core counts), best of ``--repeat``.

Printed: seconds (wall and CPU) of each, the jobs, tasks and times, and the estimates themselves.

    .venv/bin/python benchmarks/cores_whatif.py
    .venv/bin/python benchmarks/cores_whatif.py --copies 200 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

SPARK_EVENTS = Path(os.environ.get("FLOWSCOPE_SPARK_EVENTS") or REPO.parent / "shared" / "spark-events")
SOURCE = SPARK_EVENTS / "pyspark-4.3" / "spark430_batch_rdd_sql.jsonl.gz"


def timed(fn, repeat: int) -> tuple[float, float, Any]:
    """Best wall and CPU seconds of ``repeat`` calls, and the last answer."""
    best_wall = best_cpu = float("inf")
    out = None
    for _ in range(max(1, repeat)):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - w0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    return best_wall, best_cpu, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=2000, help="copies of the source's jobs (2000: 8,000 jobs)")
    ap.add_argument("--source", type=Path, default=SOURCE)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cores", default="2,4,8,16")
    args = ap.parse_args(argv)
    if not args.source.exists():
        print(f"no {args.source}: set FLOWSCOPE_SPARK_EVENTS to the shared Spark event logs", file=sys.stderr)
        return 2

    from flowscope.cli import tune_collector

    tune_collector()
    from replay_vs_history_server import ensure_log

    from backend.spark.diagnosis.cores_whatif import cores_whatif, parse_cores
    from backend.spark.diagnosis.recorded_schedule import RecordedSchedule
    from backend.spark.diagnosis.task_timeline import TaskTimeline
    from backend.views.overview import build_overview
    from flowscope.commands.blame import read_blamed

    log, meta = ensure_log(args.source, args.copies, False)
    schedule, timeline = RecordedSchedule(), TaskTimeline()
    w0, c0 = time.perf_counter(), time.process_time()
    read = read_blamed(str(log), also=(schedule.record, timeline.record))
    read_wall, read_cpu = time.perf_counter() - w0, time.process_time() - c0
    if isinstance(read, int):
        return read
    replay, times, _ = read
    cores = parse_cores(args.cores)
    w_wall, w_cpu, answer = timed(lambda: cores_whatif(schedule, timeline, cores, times), args.repeat)
    marks = [replay.marks[i] for i in replay.finding_marks]
    o_wall, o_cpu, _ = timed(lambda: build_overview(log.name, times, marks, replay.findings, schedule, timeline),
                             args.repeat)
    app = answer["application"]
    print(json.dumps({
        "log": {k: meta[k] for k in ("source", "copies", "events", "tasks", "jobs", "bytes")},
        "jobs": app["jobs"], "tasks": app["tasks"], "times": len(times), "cores": answer["cores"],
        "read_s": round(read_wall, 2), "read_cpu_s": round(read_cpu, 2),
        "whatif_s": round(w_wall, 3), "whatif_cpu_s": round(w_cpu, 3),
        "overview_s": round(o_wall, 3), "overview_cpu_s": round(o_cpu, 3),
        "wall_s": app["wall_s"], "estimates_s": app["estimates_s"], "critical_path_s": app["critical_path_s"],
        "simulated_at_recorded_cores_s": app["simulated_at_recorded_cores_s"], "recorded_cores": app["recorded_cores"],
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
