"""Hydroflow-style strata on the runtime: the design's own set difference ``C = A \\ B`` over several ticks, and a
reachability-with-negation program (which nodes can *not* be reached), each checked against plain Python.

Run: ``python examples/strata.py [workers]``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tracker.runtime import execute  # noqa: E402
from tracker.runtime.strata import Program, StrataRunner  # noqa: E402

DIFF_TICKS = [
    ({1, 2, 3, 4}, {2, 4}),
    ({5, 6}, set()),
    ({7, 8, 9}, {7, 8, 9}),
    ({10, 11}, {11, 12}),
]

REACH_TICKS = [
    # (nodes, edges, start)
    ({0, 1, 2, 3, 4, 5}, {(0, 1), (1, 2), (2, 0), (3, 4)}, {0}),
    ({0, 1, 2, 3}, {(0, 1), (1, 2), (2, 3)}, {2}),
    ({7, 8, 9}, {(9, 8)}, {9}),
]


def difference_program() -> Program:
    p = Program()
    p.input("A")
    p.input("B")
    p.difference("C = A \\ B", "A", "B")
    p.output("C", "C = A \\ B")
    return p


def reachability_program() -> Program:
    p = Program()
    p.input("nodes")
    p.input("edges")
    p.input("start")
    p.union("reach", "start", "step")
    p.join("step", "reach", "edges", lambda n: n, lambda e: e[0], lambda n, e: e[1])
    p.difference("unreached", "nodes", "reach")
    p.output("reachable", "reach")
    p.output("unreachable", "unreached")
    return p


def _finish(worker, runner):
    runner.close()
    worker.run()
    return {"results": runner.results, "completions": runner.completions, "strata": runner.strata}


def main_difference(worker):
    """One worker's part of the set difference: worker 0 feeds each tick's A and B."""
    runner = StrataRunner(worker, difference_program(), "set difference")
    for a, b in DIFF_TICKS:
        if worker.index == 0:
            runner.send("A", sorted(a))
            runner.send("B", sorted(b))
        runner.run_tick()
    return _finish(worker, runner)


def main_reachability(worker):
    """One worker's part of reachability with negation."""
    runner = StrataRunner(worker, reachability_program(), "reachability with negation")
    for nodes, edges, start in REACH_TICKS:
        if worker.index == 0:
            runner.send("nodes", sorted(nodes))
            runner.send("edges", sorted(edges))
            runner.send("start", sorted(start))
        runner.run_tick()
    return _finish(worker, runner)


def run_difference(workers: int = 1, chaos=None, global_view=None):
    return execute(workers, main_difference, chaos=chaos, global_view=global_view)


def run_reachability(workers: int = 1, chaos=None, global_view=None, record_dir=None):
    return execute(workers, main_reachability, chaos=chaos, global_view=global_view, record_dir=record_dir)


def merged(outcomes, output: str) -> dict[int, set]:
    out: dict[int, set] = {}
    for outcome in outcomes:
        for tick, facts in outcome["results"][output].items():
            out.setdefault(tick, set()).update(facts)
    return out


def expected_difference() -> dict[int, set]:
    return {t: a - b for t, (a, b) in enumerate(DIFF_TICKS) if a - b}


def expected_reachability() -> tuple[dict[int, set], dict[int, set]]:
    reach, unreach = {}, {}
    for t, (nodes, edges, start) in enumerate(REACH_TICKS):
        seen, todo = set(start), list(start)
        while todo:
            n = todo.pop()
            for a, b in edges:
                if a == n and b not in seen:
                    seen.add(b)
                    todo.append(b)
        reach[t] = seen
        if nodes - seen:
            unreach[t] = nodes - seen
    return reach, unreach


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    runners = run_difference(n)
    print("strata:", runners[0]["strata"])
    print("C per tick:", merged(runners, "C"), "expected", expected_difference())
    runners = run_reachability(n)
    print("strata:", runners[0]["strata"])
    print("reachable:", merged(runners, "reachable"))
    print("unreachable:", merged(runners, "unreachable"))
    print("completions (tick, stratum):", runners[0]["completions"])
    assert (merged(runners, "reachable"), merged(runners, "unreachable")) == expected_reachability()
