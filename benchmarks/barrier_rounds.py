"""Rounds per second of progress coordination alone, like timely's ``barrier`` example.

One operator in a loop with a +1 feedback and no data: each round it is notified at ``t`` and asks for ``t + 1``.
A round ends on a worker only when every worker's capability has moved past ``t``, so each round is one exchange
of progress batches among all workers: the cost of the protocol itself. Measured for 1, 2 and 4 workers, as
threads of one process and as Spark barrier tasks (TCP between them; Spark's task launch excluded from the rate,
reported separately).

Run: ``python benchmarks/barrier_rounds.py [--rounds N] [--no-spark]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tracker.runtime import execute  # noqa: E402
from tracker.runtime.operators import Operator  # noqa: E402


def make_main(rounds: int):
    def main(worker):
        reached = [0]

        def build(scope):
            handle, looped = scope.feedback(summary=1, name="feedback")
            started = [False]

            def logic(ctx):
                for _ in ctx.input(0):
                    pass
                if not started[0]:
                    started[0] = True
                    ctx.notify_at(ctx.initial_capability)
                for t, cap in ctx.notifications():
                    reached[0] = t + 1
                    if t + 1 < rounds:
                        ctx.notify_at(cap.delayed(t + 1))

            (out,) = scope.add_operator("barrier", [looped], 1, Operator(logic), initial_capability=True)
            handle.connect(out)

        started = time.monotonic()
        worker.dataflow(build, "barrier benchmark")
        worker.run()
        assert reached[0] == rounds, reached
        return time.monotonic() - started

    return main


def threads(peers: int, rounds: int) -> float:
    t0 = time.monotonic()
    execute(peers, make_main(rounds), timeout=600)
    return time.monotonic() - t0


def spark_tasks(spark, peers: int, rounds: int) -> tuple[float, float]:
    from backend.spark.barrier_hosting import run_on_spark_timed

    t0 = time.monotonic()
    out = run_on_spark_timed(spark, peers, make_main(rounds))
    whole = time.monotonic() - t0
    return max(r[0] for r in out), whole


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000)
    ap.add_argument("--no-spark", action="store_true")
    args = ap.parse_args()
    print(f"{'host':<14}{'workers':>8}{'rounds':>8}{'seconds':>10}{'rounds/s':>11}")
    for peers in (1, 2, 4):
        secs = threads(peers, args.rounds)
        print(f"{'threads':<14}{peers:>8}{args.rounds:>8}{secs:>10.3f}{args.rounds / secs:>11.0f}")
    if args.no_spark:
        return
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark import cloudpickle
    from pyspark.sql import SparkSession

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark = (SparkSession.builder.master("local[4]").config("spark.ui.showConsoleProgress", "false")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_tasks(spark, 1, 10)  # warm up Python workers
    for peers in (1, 2, 4):
        secs, whole = spark_tasks(spark, peers, args.rounds)
        print(f"{'spark tasks':<14}{peers:>8}{args.rounds:>8}{secs:>10.3f}{args.rounds / secs:>11.0f}"
              f"   (whole job incl. task launch: {whole:.2f} s)")
    spark.stop()


if __name__ == "__main__":
    main()
