"""The sequencer of the synchronization post: every worker pushes items at its own pace; every worker reads the
same items in the same order, each released only once the frontier has passed its time.

Run: ``python examples/sequencer.py [workers]``.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tracker.runtime import execute  # noqa: E402
from tracker.runtime.sync import Sequencer  # noqa: E402


def make_main(items: int = 5, pace: float = 0.002):
    """One worker's part: push ``items`` items at its own pace; returns the items in the order it read them."""

    def main(worker):
        seq = Sequencer(worker)
        seen = []
        for k in range(items):
            deadline = time.monotonic() + pace * (1 + worker.index)
            while time.monotonic() < deadline:
                worker.step()
            seq.push(f"worker {worker.index} item {k}")
            while (item := seq.next()) is not None:
                seen.append(item)
        seq.close()
        while len(seen) < items * worker.peers:
            worker.step(0.001)
            while (item := seq.next()) is not None:
                seen.append(item)
        worker.run()
        return seen

    return main


def run(workers: int = 2, items: int = 5, pace: float = 0.002, chaos=None, global_view=None):
    """Returns, per worker, the list of items in the order that worker read them."""
    return execute(workers, make_main(items, pace), chaos=chaos, global_view=global_view)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    orders = run(n, pace=0.05)
    for w, order in enumerate(orders):
        print(f"worker {w}: {order}")
    print("same order on every worker:", all(o == orders[0] for o in orders))
