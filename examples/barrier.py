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


def run(workers: int = 2, rounds: int = 3, work: float = 0.01, chaos=None, global_view=None):
    """Returns (arrivals, releases, during_wait).

    ``arrivals[r][w]`` and ``releases[r][w]`` are monotonic times; ``during_wait[r][w]`` counts the records of the
    other dataflow that worker w processed while it waited at round r (it sends 100 just before waiting).
    """
    arrivals = [[0.0] * workers for _ in range(rounds)]
    releases = [[0.0] * workers for _ in range(rounds)]
    during_wait = [[0] * workers for _ in range(rounds)]
    background = [0] * workers

    def main(worker):
        # Another dataflow: a counter that keeps receiving records while workers wait at the barrier.
        def build(scope):
            inp, stream = scope.new_input("ticks")
            stream.inspect(lambda t, r: background.__setitem__(worker.index, background[worker.index] + 1))
            return inp

        ticks = worker.dataflow(build, "background")
        barrier = Barrier(worker)
        for r in range(rounds):
            deadline = time.monotonic() + work * worker.index  # uneven work: worker i is busy i * work seconds
            while time.monotonic() < deadline:
                ticks.send(r)
                worker.step()
            ticks.send_batch([r] * 100)
            before = background[worker.index]
            arrivals[r][worker.index] = time.monotonic()
            barrier.wait()
            releases[r][worker.index] = time.monotonic()
            during_wait[r][worker.index] = background[worker.index] - before
        barrier.close()
        ticks.close()

    execute(workers, main, chaos=chaos, global_view=global_view)
    return arrivals, releases, during_wait


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    arrivals, releases, during_wait = run(n, rounds, work=0.2)
    t0 = min(min(a) for a in arrivals)
    for r in range(rounds):
        print(f"round {r}: arrived " + ", ".join(f"{a - t0:6.3f}s" for a in arrivals[r])
              + "   released " + ", ".join(f"{x - t0:6.3f}s" for x in releases[r]))
    print("records of another dataflow processed while waiting, per round and worker:", during_wait)
