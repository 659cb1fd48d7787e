"""The Spark model on a long driver loop: what one job per iteration costs as the lineage grows.

Job k of a PageRank-shaped driver loop (``tests/test_spark_loops.py``'s ``driver_loop``) lists the reduce of every
iteration up to k, so the event log itself grows with the square of the iterations; the model should cost no more
than that (linear in the stage infos it reads). Reported per size: events, stage infos, CPU seconds of the model
and a replay (``time.process_time``), and microseconds per stage info. A run takes about 10 s on a quiet machine.

    .venv/bin/python benchmarks/driver_loop.py                 # 100, 200, 400 iterations
    .venv/bin/python benchmarks/driver_loop.py --sizes 50 800
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from backend.spark.model.spark_model import SparkModel  # noqa: E402
from tests.test_spark_loops import driver_loop  # noqa: E402
from tracker.progress_log.replay import Replay  # noqa: E402


def run(iterations: int) -> dict:
    events = driver_loop(iterations)
    infos = sum(len(e.get("Stage Infos", [])) for e in events)
    t0 = time.process_time()
    model, replay = SparkModel(), Replay("driver loop")
    for line, e in enumerate(events, start=1):
        for rec in model.feed(e, line):
            replay.apply(rec, line)
    replay.finish()
    cpu = time.process_time() - t0
    last = model.jobs[iterations - 1].iteration
    return {"iterations": iterations, "events": len(events), "stage_infos": infos, "cpu_s": round(cpu, 3),
            "us_per_stage_info": round(1e6 * cpu / infos, 1), "last_iteration": last}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400])
    args = ap.parse_args()
    print(json.dumps({"load": os.getloadavg(), "runs": [run(n) for n in args.sizes]}, indent=1))


if __name__ == "__main__":
    main()
