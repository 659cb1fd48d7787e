"""How long a seek takes as a session grows: restoring the state after batch k from the session history.

The claim (backend/sessions/history.py): a seek restores the checkpoint at or before k and re-applies at most one
segment
(``--every`` batches), so its cost does not grow with the session. The workload is a chain pipeline (the tests'
``pipeline_records``) of ``--operators`` stages, recorded into a History as a session does; then seeks to the head,
the first batch, the middle and ``--seeks`` random batches, each from a fresh cursor (the pool emptied first, so
none is a cheap step forward). Reported per session length: the worst and median seek, wall clock and CPU time
(``time.process_time``: other processes on the machine disturb it much less). The test suite asserts the counted
work instead (tests/test_backend_history.py::test_seek_work_does_not_grow_with_the_session).

Run::

    .venv/bin/python benchmarks/seek_cost.py                      # 100 and 400 epochs (about 4k and 16k batches)
    .venv/bin/python benchmarks/seek_cost.py --epochs 100 400 1600
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from backend.sessions.history import History  # noqa: E402
from tests.e2e.logs import pipeline_records  # noqa: E402
from tracker.progress_log.replay import Replay  # noqa: E402


def recorded(operators: int, epochs: int, every: int) -> History:
    history = History(checkpoint_every=every)
    replay = Replay("bench", observer=lambda info, scope, u, p: history.batch_applied(
        replay, replay.last_at, info.worker, scope.path))
    for rec in pipeline_records(operators, epochs, in_flight=4):
        history.record(rec)
        replay.apply(rec)
    return history


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--operators", type=int, default=40)
    ap.add_argument("--epochs", type=int, nargs="+", default=[100, 400])
    ap.add_argument("--every", type=int, default=2048, help="checkpoint every N batches")
    ap.add_argument("--seeks", type=int, default=8)
    args = ap.parse_args()
    print(f"{'batches':>8} {'worst wall':>11} {'median wall':>12} {'worst cpu':>10} {'median cpu':>11}")
    for epochs in args.epochs:
        history = recorded(args.operators, epochs, args.every)
        n = history.batches
        rng = random.Random(1)
        walls, cpus = [], []
        for k in [n, 1, n // 2] + [rng.randrange(n) for _ in range(args.seeks)]:
            w0, c0 = time.perf_counter(), time.process_time()
            replay = history.restore(k)
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
            assert replay.batches_applied == k
        print(f"{n:>8} {max(walls) * 1000:>9.1f}ms {statistics.median(walls) * 1000:>10.1f}ms "
              f"{max(cpus) * 1000:>8.1f}ms {statistics.median(cpus) * 1000:>9.1f}ms")


if __name__ == "__main__":
    main()
