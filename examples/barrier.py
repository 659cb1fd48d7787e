"""The reusable barrier of the synchronization post: workers with deliberately uneven work meet, round after round,
while another dataflow keeps running on every worker.

Run: ``python examples/barrier.py [workers] [rounds]``.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tracker.runtime import execute  # noqa: E402
from tracker.runtime.sync import Barrier  # noqa: E402


def make_main(rounds: int = 3, work: float = 0.01):
    """One worker's part; it returns, per round: (arrival time, release time, records of the other dataflow
    processed while waiting). Times are ``time.monotonic()``, one clock for every process of a machine."""

    def main(worker):
        background = [0]
        per_round = []
        # Another dataflow: a counter that keeps receiving records while workers wait at the barrier.
        def build(scope):
            inp, stream = scope.new_input("ticks")
            stream.inspect(lambda t, r: background.__setitem__(0, background[0] + 1))
            return inp

        ticks = worker.dataflow(build, "background")
        barrier = Barrier(worker)
        for r in range(rounds):
            deadline = time.monotonic() + work * worker.index  # uneven work: worker i is busy i * work seconds
            while time.monotonic() < deadline:
                ticks.send(r)
                worker.step()
            ticks.send_batch([r] * 100)
            before = background[0]
            arrived = time.monotonic()
            barrier.wait()
            per_round.append((arrived, time.monotonic(), background[0] - before))
        barrier.close()
        ticks.close()
        worker.run()
        return per_round

    return main


def combine(per_worker):
    """(arrivals, releases, during_wait), each indexed [round][worker]."""
    rounds = len(per_worker[0])
    return tuple([[per_worker[w][r][k] for w in range(len(per_worker))] for r in range(rounds)] for k in range(3))


def run(workers: int = 2, rounds: int = 3, work: float = 0.01, chaos=None, global_view=None):
    return combine(execute(workers, make_main(rounds, work), chaos=chaos, global_view=global_view))


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    arrivals, releases, during_wait = run(n, rounds, work=0.2)
    t0 = min(min(a) for a in arrivals)
    for r in range(rounds):
        print(f"round {r}: arrived " + ", ".join(f"{a - t0:6.3f}s" for a in arrivals[r])
              + "   released " + ", ".join(f"{x - t0:6.3f}s" for x in releases[r]))
    print("records of another dataflow processed while waiting, per round and worker:", during_wait)
