"""Builder and Tracker: vectors V1-V8 and V10 of timely-reference.md section 6, plus hand-computed cases.

Conventions follow the reference: "pushed" is the drained list of implication-frontier changes, sorted by
(Location, time); each ``step`` is one ``propagate_all`` after the listed updates. Locations sort by node, then
targets before sources, then port.
"""

from __future__ import annotations

import pytest

from tracker.frontier import Antichain, MutableAntichain
from tracker.reachability import Builder, CycleError, Location, Source, Target, Tracker
from tracker.timestamp import Refinement, domain

D1 = domain(1)
D2 = domain(2)


def step(tracker: Tracker, updates) -> list:
    """Apply one batch of pointstamp updates, propagate, and return what was pushed."""
    for loc, t, d in updates:
        tracker.update(loc, t, d)
    tracker.propagate_all()
    return tracker.drain_pushed()


def frontiers(tracker: Tracker) -> dict:
    return {loc: tracker.frontier(loc) for loc in tracker.locations}


def assert_no_negative_implications(tracker: Tracker) -> None:
    for loc in tracker.locations:
        assert tracker.implications_at(loc).has_negative() is False, loc


# --- graphs -------------------------------------------------------------------------------------------------


def v1_builder() -> Builder:
    """V1: nodes 0, 1, 2 (1 in, 1 out) with summaries {0}, {0}, {1}; a cycle 0 -> 1 -> 2 -> 0."""
    b = Builder(D1)
    b.add_node(0, 1, 1, [[[0]]])
    b.add_node(1, 1, 1, [[[0]]])
    b.add_node(2, 1, 1, [[[1]]])
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(0, 0))
    return b


def v2_builder() -> Builder:
    """V2: boundary (1,1) without connectivity; S(0,0) -> node 1 -> node 2 -> T(0,0)."""
    b = Builder(D1)
    b.add_node(0, 1, 1, [[[]]])
    b.add_node(1, 1, 1, None)
    b.add_node(2, 1, 1, None)
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(0, 0))
    return b


def v3_tracker() -> Tracker:
    """V3: boundary (0,0); Input (0 in, 1 out) -> Map -> sink (1 in, 0 out)."""
    b = Builder(D1)
    b.add_node(0, 0, 0, [])
    b.add_node(1, 0, 1, [])
    b.add_node(2, 1, 1, None)
    b.add_node(3, 1, 0, None)
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(3, 0))
    tracker, scope_summary = b.build()
    assert scope_summary == []
    return tracker


V3_PATH = [Source(1, 0), Target(2, 0), Source(2, 0), Target(3, 0)]


def v6_builder() -> Builder:
    """V6: boundary (1,1); node 1 with summary {(1,0),(0,1)}; node 2 identity (Product times)."""
    b = Builder(D2)
    b.add_node(0, 1, 1, [[[]]])
    b.add_node(1, 1, 1, [[[(1, 0), (0, 1)]]])
    b.add_node(2, 1, 1, None)
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(0, 0))
    return b


def v7_builder() -> Builder:
    """V7: concat (2 in), branch (2 out) and a feedback with summary (0,1), inside an iterative scope."""
    b = Builder(D2)
    b.add_node(0, 1, 1, [[[]]])
    b.add_node(1, 2, 1, [[[(0, 0)]], [[(0, 0)]]])
    b.add_node(2, 1, 2, [[[(0, 0)], [(0, 0)]]])
    b.add_node(3, 1, 1, [[[(0, 1)]]])
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(3, 0), Target(1, 1))
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(3, 0))
    b.add_edge(Source(2, 1), Target(0, 0))
    return b


# --- locations ----------------------------------------------------------------------------------------------


def test_location_order_targets_before_sources():
    """``T(1,0) < S(1,0) < T(2,0)``; Target/Source are Location(node, kind, port)."""
    assert Target(1, 0) < Source(1, 0) < Target(2, 0)
    assert Target(1, 1) < Source(1, 0)
    assert Target(0, 0) == Location(0, 0, 0)
    assert Source(0, 0) == Location(0, 1, 0)
    assert Target(3, 1).is_target and not Target(3, 1).is_source
    assert str(Target(3, 1)) == "in(3,1)"
    assert str(Source(2, 0)) == "out(2,0)"
    assert Location.from_json(["in", 3, 1]) == Target(3, 1)
    assert Source(2, 0).to_json() == ["out", 2, 0]


# --- V1 -----------------------------------------------------------------------------------------------------


def test_v1_cycle_with_plus_one_summary():
    """V1 [repo + derived]: +1@17 at S(0,0), then -1@17."""
    b = v1_builder()
    tracker, scope_summary = b.build()
    assert scope_summary == [{0: Antichain([1], D1.le)}]

    pushed = step(tracker, [(Source(0, 0), 17, +1)])
    assert [(loc, t, d) for loc, t, d in pushed if loc.is_target] == [  # the repo assertion
        (Target(0, 0), 18, 1),
        (Target(1, 0), 17, 1),
        (Target(2, 0), 17, 1),
    ]
    assert pushed == [
        (Target(0, 0), 18, 1),
        (Source(0, 0), 17, 1),
        (Target(1, 0), 17, 1),
        (Source(1, 0), 17, 1),
        (Target(2, 0), 17, 1),
        (Source(2, 0), 18, 1),
    ]
    assert tracker.frontier(Source(0, 0)) == [17]
    imp = tracker.implications_at(Source(0, 0))
    assert imp.updates() == [(17, 1), (18, 1)]
    assert imp.count_for(17) == 1
    assert imp.count_for(18) == 1
    assert [b.into_inner() for b in tracker.output_changes] == [[]]

    pushed = step(tracker, [(Source(0, 0), 17, -1)])
    assert [(loc, t, d) for loc, t, d in pushed if loc.is_target] == [
        (Target(0, 0), 18, -1),
        (Target(1, 0), 17, -1),
        (Target(2, 0), 17, -1),
    ]
    assert pushed == [
        (Target(0, 0), 18, -1),
        (Source(0, 0), 17, -1),
        (Target(1, 0), 17, -1),
        (Source(1, 0), 17, -1),
        (Target(2, 0), 17, -1),
        (Source(2, 0), 18, -1),
    ]
    assert [b.into_inner() for b in tracker.output_changes] == [[]]
    assert all(tracker.frontier(loc) == [] for loc in tracker.locations)
    assert tracker.tracking_anything() is False


def test_v1_summaries():
    """V1 [derived]: T(1,0):{1}, T(2,0):{1}, S(1,0):{1}, S(2,0):{0}; scope summary S(0,0)->out0 = {1}."""
    b = v1_builder()
    summaries = b.path_summaries_to(Target(0, 0))
    assert summaries == {
        Target(0, 0): Antichain([0], D1.le),
        Source(2, 0): Antichain([0], D1.le),
        Target(2, 0): Antichain([1], D1.le),
        Source(1, 0): Antichain([1], D1.le),
        Target(1, 0): Antichain([1], D1.le),
        Source(0, 0): Antichain([1], D1.le),
    }


# --- V2 -----------------------------------------------------------------------------------------------------


def test_v2_external_frontier_vs_internal_capability():
    """V2 [derived]: output_changes come from pointstamps, never from the projected external frontier."""
    tracker, scope_summary = v2_builder().build()
    assert scope_summary == [{0: Antichain([0], D1.le)}]
    assert len(tracker.output_changes) == 1

    # a) an internal capability at S(1,0)
    pushed = step(tracker, [(Source(1, 0), 5, +1)])
    assert pushed == [
        (Target(0, 0), 5, 1),
        (Source(1, 0), 5, 1),
        (Target(2, 0), 5, 1),
        (Source(2, 0), 5, 1),
    ]
    assert tracker.output_changes[0].drain() == [(5, 1)]
    assert tracker.total_counts == 1

    # b) the outer frontier arrives at S(0,0)
    pushed = step(tracker, [(Source(0, 0), 3, +1)])
    assert pushed == [
        (Target(0, 0), 3, 1),
        (Target(0, 0), 5, -1),
        (Source(0, 0), 3, 1),
        (Target(1, 0), 3, 1),
        (Source(1, 0), 3, 1),
        (Source(1, 0), 5, -1),
        (Target(2, 0), 3, 1),
        (Target(2, 0), 5, -1),
        (Source(2, 0), 3, 1),
        (Source(2, 0), 5, -1),
    ]
    for loc in [Source(0, 0), Target(1, 0), Source(1, 0), Target(2, 0), Source(2, 0), Target(0, 0)]:
        assert tracker.frontier(loc) == [3]
    assert tracker.output_changes[0].drain() == []  # the external frontier is never projected
    assert tracker.total_counts == 2

    # c) the internal capability is dropped: nothing pushed, but the scope output changes
    pushed = step(tracker, [(Source(1, 0), 5, -1)])
    assert pushed == []
    assert tracker.output_changes[0].drain() == [(5, -1)]
    assert tracker.total_counts == 1
    assert tracker.tracking_anything() is True

    # d) the outer frontier closes
    pushed = step(tracker, [(Source(0, 0), 3, -1)])
    assert pushed == [
        (Target(0, 0), 3, -1),
        (Source(0, 0), 3, -1),
        (Target(1, 0), 3, -1),
        (Source(1, 0), 3, -1),
        (Target(2, 0), 3, -1),
        (Source(2, 0), 3, -1),
    ]
    assert all(tracker.frontier(loc) == [] for loc in tracker.locations)
    assert tracker.output_changes[0].drain() == []
    assert tracker.total_counts == 0
    assert tracker.tracking_anything() is False


# --- V3 -----------------------------------------------------------------------------------------------------


def test_v3_capability_drop_advances_downstream_two_workers():
    """V3 [derived]: with 2 peers, the frontier moves only after both workers downgrade."""
    tracker = v3_tracker()
    pushed = step(tracker, [(Source(1, 0), 0, +2)])
    assert pushed == [(loc, 0, 1) for loc in V3_PATH]
    for loc in V3_PATH:
        assert tracker.frontier(loc) == [0]

    pushed = step(tracker, [(Source(1, 0), 0, -1), (Source(1, 0), 1, +1)])  # worker 0
    assert pushed == []
    assert tracker.pointstamps_at(Source(1, 0)).updates() == [(0, 1), (1, 1)]
    assert tracker.frontier(Source(1, 0)) == [0]

    pushed = step(tracker, [(Source(1, 0), 0, -1), (Source(1, 0), 1, +1)])  # worker 1
    assert pushed == [entry for loc in V3_PATH for entry in [(loc, 0, -1), (loc, 1, 1)]]
    assert tracker.frontier(Target(3, 0)) == [1]
    assert tracker.pointstamps_at(Source(1, 0)).updates() == [(1, 2)]


# --- V4 -----------------------------------------------------------------------------------------------------


def test_v4_message_in_flight_holds_frontier():
    """V4 [derived]: a message at T(2,0) and later at T(3,0) holds those frontiers at 0."""
    tracker = v3_tracker()
    step(tracker, [(Source(1, 0), 0, +1)])

    pushed = step(tracker, [(Target(2, 0), 0, +1), (Source(1, 0), 0, -1), (Source(1, 0), 1, +1)])
    assert pushed == [(Source(1, 0), 0, -1), (Source(1, 0), 1, 1)]
    assert tracker.frontier(Source(1, 0)) == [1]
    assert tracker.frontier(Target(2, 0)) == [0]
    assert tracker.frontier(Source(2, 0)) == [0]
    assert tracker.frontier(Target(3, 0)) == [0]
    assert tracker.is_global(Target(2, 0), 0) is True

    pushed = step(tracker, [(Target(2, 0), 0, -1), (Target(3, 0), 0, +1)])  # map consumes and re-emits
    assert pushed == [
        (Target(2, 0), 0, -1),
        (Target(2, 0), 1, 1),
        (Source(2, 0), 0, -1),
        (Source(2, 0), 1, 1),
    ]
    assert tracker.frontier(Target(2, 0)) == [1]
    assert tracker.frontier(Source(2, 0)) == [1]
    assert tracker.frontier(Target(3, 0)) == [0]  # its own message
    assert tracker.implications_at(Target(3, 0)).updates() == [(0, 1), (1, 1)]

    pushed = step(tracker, [(Target(3, 0), 0, -1)])
    assert pushed == [(Target(3, 0), 0, -1), (Target(3, 0), 1, 1)]
    assert tracker.frontier(Target(3, 0)) == [1]

    pushed = step(tracker, [(Source(1, 0), 1, -1)])  # input closed
    assert pushed == [(loc, 1, -1) for loc in V3_PATH]
    assert all(tracker.frontier(loc) == [] for loc in tracker.locations)
    assert tracker.tracking_anything() is False
    assert tracker.total_counts == 0


# --- V5 -----------------------------------------------------------------------------------------------------

V5_W0 = [(Target(2, 0), 0, +1), (Source(1, 0), 0, -1), (Source(1, 0), 1, +1)]
V5_W1A = [(Source(1, 0), 0, -1), (Source(1, 0), 1, +1)]
V5_W1B = [(Target(2, 0), 0, -1)]
V5_ALL_MOVE = [entry for loc in V3_PATH for entry in [(loc, 0, -1), (loc, 1, 1)]]


def v5_tracker() -> Tracker:
    tracker = v3_tracker()
    step(tracker, [(Source(1, 0), 0, +2)])
    return tracker


def assert_v5_final(tracker: Tracker) -> None:
    for loc in V3_PATH:
        assert tracker.frontier(loc) == [1]
    assert tracker.pointstamps_at(Source(1, 0)).updates() == [(1, 2)]
    assert tracker.pointstamps_at(Target(2, 0)).updates() == []
    assert_no_negative_implications(tracker)


def test_v5_order_w1a_w1b_w0():
    """V5 [derived]: a transiently negative count at T(2,0) never leaks into a frontier."""
    tracker = v5_tracker()
    assert step(tracker, V5_W1A) == []
    assert_no_negative_implications(tracker)

    assert step(tracker, V5_W1B) == []
    assert tracker.pointstamps_at(Target(2, 0)).updates() == [(0, -1)]
    assert tracker.frontier(Target(2, 0)) == [0]  # from upstream
    assert tracker.implications_at(Target(2, 0)).updates() == [(0, 1)]
    assert_no_negative_implications(tracker)

    assert step(tracker, V5_W0) == V5_ALL_MOVE
    assert tracker.pointstamps_at(Source(1, 0)).updates() == [(1, 2)]
    assert_v5_final(tracker)


def test_v5_order_w0_w1a_w1b():
    """V5 [derived]: W0's message and upstream both imply 0 at T(2,0)."""
    tracker = v5_tracker()
    assert step(tracker, V5_W0) == []
    assert tracker.implications_at(Target(2, 0)).count_for(0) == 2

    assert step(tracker, V5_W1A) == [(Source(1, 0), 0, -1), (Source(1, 0), 1, 1)]
    assert tracker.frontier(Target(2, 0)) == [0]
    assert tracker.implications_at(Target(2, 0)).updates() == [(0, 1), (1, 1)]

    assert step(tracker, V5_W1B) == [
        (Target(2, 0), 0, -1),
        (Target(2, 0), 1, 1),
        (Source(2, 0), 0, -1),
        (Source(2, 0), 1, 1),
        (Target(3, 0), 0, -1),
        (Target(3, 0), 1, 1),
    ]
    assert_v5_final(tracker)


def test_v5_order_w1b_w0_w1a():
    """V5 [derived]: nothing is pushed until W1a; the final state equals the other orders'."""
    tracker = v5_tracker()
    assert step(tracker, V5_W1B) == []
    assert_no_negative_implications(tracker)
    assert step(tracker, V5_W0) == []
    assert_no_negative_implications(tracker)
    assert step(tracker, V5_W1A) == V5_ALL_MOVE
    assert_v5_final(tracker)


def test_v5_all_orders_reach_same_state():
    import itertools

    results = []
    for order in itertools.permutations([V5_W0, V5_W1A, V5_W1B]):
        tracker = v5_tracker()
        for batch in order:
            step(tracker, batch)
            assert_no_negative_implications(tracker)
        results.append(frontiers(tracker))
        assert_v5_final(tracker)
    assert all(r == results[0] for r in results)


# --- V6 -----------------------------------------------------------------------------------------------------


def test_v6_summaries():
    """V6 [derived]: scope summary {(1,0),(0,1)}; the parent sees {1,0} which reduces to {0}."""
    b = v6_builder()
    tracker, scope_summary = b.build()
    assert scope_summary == [{0: Antichain([(1, 0), (0, 1)], D2.le)}]
    assert b.path_summaries_to(Target(0, 0))[Target(1, 0)] == Antichain([(1, 0), (0, 1)], D2.le)
    r = Refinement(D1, D2)
    seen = Antichain((r.summarize(s) for s in scope_summary[0][0]), D1.le)
    assert seen == Antichain([0], D1.le)
    assert seen.elements() == [0]


def test_v6_two_and_three_element_frontiers():
    """V6 [derived]: incomparable summaries produce antichains of size 2 and then 3."""
    tracker, _ = v6_builder().build()
    downstream = [Source(1, 0), Target(2, 0), Source(2, 0), Target(0, 0)]

    step(tracker, [(Source(0, 0), (0, 0), +1)])
    assert tracker.frontier(Target(1, 0)) == [(0, 0)]
    for loc in downstream:
        assert tracker.frontier(loc) == [(0, 1), (1, 0)]
    assert tracker.output_changes[0].drain() == []

    step(tracker, [(Target(1, 0), (0, 5), +1), (Source(0, 0), (0, 0), -1), (Source(0, 0), (1, 0), +1)])
    assert tracker.frontier(Target(1, 0)) == [(0, 5), (1, 0)]
    for loc in downstream:
        assert tracker.frontier(loc) == [(0, 6), (1, 1), (2, 0)]
    assert tracker.output_changes[0].drain() == [((0, 6), 1), ((1, 5), 1)]
    # to_outer then filtered through a MutableAntichain of outer times: internals +1 at outer time 0.
    r = Refinement(D1, D2)
    caps = MutableAntichain(D1.le, D1.total)
    assert caps.update_iter([(r.to_outer(t), d) for t, d in [((0, 6), 1), ((1, 5), 1)]]) == [(0, 1)]


def test_v6_is_global():
    """V6 [derived]: is_global at S(1,0) and T(1,0) after the second batch."""
    tracker, _ = v6_builder().build()
    step(tracker, [(Source(0, 0), (0, 0), +1)])
    step(tracker, [(Target(1, 0), (0, 5), +1), (Source(0, 0), (0, 0), -1), (Source(0, 0), (1, 0), +1)])
    s10 = Source(1, 0)
    assert tracker.is_global(s10, (0, 6)) is True
    assert tracker.is_global(s10, (1, 1)) is True
    assert tracker.is_global(s10, (2, 0)) is True
    assert tracker.is_global(s10, (1, 6)) is False
    assert tracker.is_global(s10, (3, 0)) is False
    assert tracker.is_global(s10, (0, 0)) is True
    t10 = Target(1, 0)
    assert tracker.is_global(t10, (0, 5)) is True
    assert tracker.is_global(t10, (1, 0)) is True
    assert tracker.is_global(t10, (1, 5)) is False


# --- V7 -----------------------------------------------------------------------------------------------------


def test_v7_acyclic_and_summaries():
    """V7 [derived]: is_acyclic, the scope summary, and the target/source summaries to the scope output."""
    b = v7_builder()
    assert b.find_identity_cycle() is None
    tracker, scope_summary = b.build()
    assert scope_summary == [{0: Antichain([(0, 0)], D2.le)}]
    r = Refinement(D1, D2)
    assert Antichain((r.summarize(s) for s in scope_summary[0][0]), D1.le) == Antichain([0], D1.le)
    zero, one = Antichain([(0, 0)], D2.le), Antichain([(0, 1)], D2.le)
    assert b.path_summaries_to(Target(0, 0)) == {
        Target(0, 0): zero,
        Source(2, 1): zero,
        Target(2, 0): zero,
        Source(1, 0): zero,
        Target(1, 0): zero,
        Target(1, 1): zero,
        Source(0, 0): zero,
        Source(3, 0): zero,
        Target(3, 0): one,
        Source(2, 0): one,
    }


def test_v7_loop_in_iterative_scope():
    """V7 [derived]: every listed frontier and output change of steps a) to d)."""
    tracker, _ = v7_builder().build()

    # a) outer frontier 5
    step(tracker, [(Source(0, 0), (5, 0), +1)])
    assert frontiers(tracker) == {
        Target(0, 0): [(5, 0)],
        Source(0, 0): [(5, 0)],
        Target(1, 0): [(5, 0)],
        Target(1, 1): [(5, 1)],
        Source(1, 0): [(5, 0)],
        Target(2, 0): [(5, 0)],
        Source(2, 0): [(5, 0)],
        Source(2, 1): [(5, 0)],
        Target(3, 0): [(5, 0)],
        Source(3, 0): [(5, 1)],
    }
    assert tracker.output_changes[0].drain() == []

    # b) outer frontier moves to 6 while a record sits at the feedback input
    step(tracker, [(Source(0, 0), (5, 0), -1), (Source(0, 0), (6, 0), +1), (Target(3, 0), (5, 3), +1)])
    assert frontiers(tracker) == {
        Target(0, 0): [(5, 4), (6, 0)],
        Source(0, 0): [(6, 0)],
        Target(1, 0): [(6, 0)],
        Target(1, 1): [(5, 4), (6, 1)],
        Source(1, 0): [(5, 4), (6, 0)],
        Target(2, 0): [(5, 4), (6, 0)],
        Source(2, 0): [(5, 4), (6, 0)],
        Source(2, 1): [(5, 4), (6, 0)],
        Target(3, 0): [(5, 3), (6, 0)],
        Source(3, 0): [(5, 4), (6, 1)],
    }
    assert tracker.output_changes[0].drain() == [((5, 4), 1)]

    # c) feedback forwards the record
    pushed = step(tracker, [(Target(3, 0), (5, 3), -1), (Target(1, 1), (5, 4), +1)])
    assert pushed == [
        (Target(3, 0), (5, 3), -1),
        (Target(3, 0), (5, 4), 1),
        (Source(3, 0), (5, 4), -1),
        (Source(3, 0), (5, 5), 1),
    ]
    assert tracker.output_changes[0].drain() == []

    # d) the loop body drops it
    pushed = step(tracker, [(Target(1, 1), (5, 4), -1)])
    assert pushed == [
        (Target(0, 0), (5, 4), -1),
        (Target(1, 1), (5, 4), -1),
        (Source(1, 0), (5, 4), -1),
        (Target(2, 0), (5, 4), -1),
        (Source(2, 0), (5, 4), -1),
        (Source(2, 1), (5, 4), -1),
        (Target(3, 0), (5, 4), -1),
        (Source(3, 0), (5, 5), -1),
    ]
    expected = {loc: [(6, 0)] for loc in tracker.locations}
    expected[Target(1, 1)] = [(6, 1)]
    expected[Source(3, 0)] = [(6, 1)]
    assert frontiers(tracker) == expected
    assert tracker.output_changes[0].drain() == [((5, 4), -1)]
    assert_no_negative_implications(tracker)


# --- V8 -----------------------------------------------------------------------------------------------------


def chain_builder(name: str = "") -> Builder:
    b = Builder(D1, name)
    for n in range(3):
        b.add_node(n, 1, 1, [[[0]]])
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(1, 0), Target(2, 0))
    return b


def test_v8_chain_is_acyclic():
    """V8 [repo]: a 3-node chain with summaries {0} and edges 0 -> 1 -> 2 is acyclic."""
    b = chain_builder()
    assert b.find_identity_cycle() is None
    b.check_acyclic()
    tracker, scope_summary = b.build()
    assert scope_summary == [{}]


def test_v8_chain_closed_into_cycle_is_rejected():
    """V8 [repo]: adding 2 -> 0 makes it not acyclic; build raises CycleError naming the ports of the cycle."""
    b = chain_builder()
    b.add_edge(Source(2, 0), Target(0, 0))
    cycle = [Target(0, 0), Source(0, 0), Target(1, 0), Source(1, 0), Target(2, 0), Source(2, 0)]
    assert b.find_identity_cycle() == cycle
    with pytest.raises(CycleError) as e:
        b.build()
    assert e.value.cycle == cycle
    assert str(e.value) == (
        "cycle without a strictly advancing path summary: "
        "in(0,0) -> out(0,0) -> in(1,0) -> out(1,0) -> in(2,0) -> out(2,0) -> in(0,0); "
        "give some operator on it (usually the feedback) a summary that advances time"
    )
    assert isinstance(e.value, ValueError)


def test_v8_cycle_error_names_scope():
    b = chain_builder("loop")
    b.add_edge(Source(2, 0), Target(0, 0))
    with pytest.raises(CycleError) as e:
        b.build()
    assert str(e.value).startswith("cycle without a strictly advancing path summary in scope loop: in(0,0) -> ")


def v8_self_loop_builder(summary_1_1: int) -> Builder:
    b = Builder(D1)
    b.add_node(0, 2, 2, [[[0], []], [[], [summary_1_1]]])
    b.add_edge(Source(0, 0), Target(0, 1))
    b.add_edge(Source(0, 1), Target(0, 0))
    return b


def test_v8_node0_cycle_through_plus_one_is_acyclic():
    """V8 [repo]: node 0 with in0->out0 {0}, in1->out1 {1}, no cross links; the cycle passes through +1."""
    b = v8_self_loop_builder(1)
    assert b.nodes[0][0] == {0: Antichain([0], D1.le)}  # the empty antichain is dropped
    assert b.nodes[0][1] == {1: Antichain([1], D1.le)}
    assert b.find_identity_cycle() is None
    b.build()


def test_v8_node0_cycle_through_identity_is_rejected():
    """V8 [derived]: the same graph with in1->out1 {0} is not acyclic."""
    b = v8_self_loop_builder(0)
    cycle = [Target(0, 0), Source(0, 0), Target(0, 1), Source(0, 1)]
    assert b.find_identity_cycle() == cycle
    with pytest.raises(CycleError) as e:
        b.build()
    assert e.value.cycle == cycle
    assert "in(0,0) -> out(0,0) -> in(0,1) -> out(0,1) -> in(0,0)" in str(e.value)


def test_v8_product_cycle_needs_non_identity_summary():
    """An iterative loop is fine with (0,1) on the feedback, and rejected with (0,0)."""
    assert v7_builder().find_identity_cycle() is None
    b = v7_builder()
    b.add_node(3, 1, 1, [[[(0, 0)]]])
    assert b.find_identity_cycle() == [
        Target(1, 1), Source(1, 0), Target(2, 0), Source(2, 0), Target(3, 0), Source(3, 0)
    ]
    with pytest.raises(CycleError):
        b.build()


# --- V10 ----------------------------------------------------------------------------------------------------


def demand_send(tracker: Tracker, local_batch) -> bool:
    """Demand mode: send the whole batch if an entry is a visible retraction or mentions node 0."""
    return any((tracker.is_global(loc, t) and d < 0) or loc.node == 0 for loc, t, d in local_batch)


def test_v10_demand_send_decision_at_w1():
    """V10 [derived]: W1 holds its consumption while W0's message also implies 0, then sends with its downgrade."""
    tracker = v3_tracker()
    step(tracker, [(Source(1, 0), 0, +2)])
    step(tracker, [(Target(2, 0), 0, +1), (Source(1, 0), 0, -1), (Source(1, 0), 1, +1)])  # W0's batch
    assert tracker.implications_at(Target(2, 0)).updates() == [(0, 2)]
    assert tracker.is_global(Target(2, 0), 0) is False
    local = [(Target(2, 0), 0, -1)]
    assert demand_send(tracker, local) is False  # not sent yet

    local += [(Source(1, 0), 0, -1), (Source(1, 0), 1, +1)]
    assert tracker.is_global(Source(1, 0), 0) is True
    assert tracker.is_global(Source(1, 0), 1) is False  # 0 < 1 dominates it
    assert demand_send(tracker, local) is True  # the whole batch is sent


def test_v10_variant_without_w0_batch():
    """V10 [derived]: if W0's batch has not arrived, T(2,0)@0 has count 1 and the consumption alone is sent."""
    tracker = v3_tracker()
    step(tracker, [(Source(1, 0), 0, +2)])
    assert tracker.implications_at(Target(2, 0)).count_for(0) == 1
    assert tracker.is_global(Target(2, 0), 0) is True
    assert demand_send(tracker, [(Target(2, 0), 0, -1)]) is True


# --- hand-computed cases ------------------------------------------------------------------------------------


def test_plain_chain_with_advancing_summaries():
    """Input -> A (+2) -> B (+3) -> sink: frontiers shift by the summaries; a downgrade shifts them all."""
    b = Builder(D1)
    b.add_node(0, 0, 0, [])
    b.add_node(1, 0, 1, [])
    b.add_node(2, 1, 1, [[[2]]])
    b.add_node(3, 1, 1, [[[3]]])
    b.add_node(4, 1, 0, None)
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(3, 0))
    b.add_edge(Source(3, 0), Target(4, 0))
    tracker, _ = b.build()

    pushed = step(tracker, [(Source(1, 0), 10, +1)])
    assert pushed == [
        (Source(1, 0), 10, 1),
        (Target(2, 0), 10, 1),
        (Source(2, 0), 12, 1),
        (Target(3, 0), 12, 1),
        (Source(3, 0), 15, 1),
        (Target(4, 0), 15, 1),
    ]
    pushed = step(tracker, [(Source(1, 0), 10, -1), (Source(1, 0), 11, +1)])
    assert pushed == [
        (Source(1, 0), 10, -1),
        (Source(1, 0), 11, 1),
        (Target(2, 0), 10, -1),
        (Target(2, 0), 11, 1),
        (Source(2, 0), 12, -1),
        (Source(2, 0), 13, 1),
        (Target(3, 0), 12, -1),
        (Target(3, 0), 13, 1),
        (Source(3, 0), 15, -1),
        (Source(3, 0), 16, 1),
        (Target(4, 0), 15, -1),
        (Target(4, 0), 16, 1),
    ]
    # A capability held at A's output itself is reflected downstream only.
    pushed = step(tracker, [(Source(2, 0), 12, +1)])
    assert pushed == [
        (Source(2, 0), 12, 1),
        (Source(2, 0), 13, -1),
        (Target(3, 0), 12, 1),
        (Target(3, 0), 13, -1),
        (Source(3, 0), 15, 1),
        (Source(3, 0), 16, -1),
        (Target(4, 0), 15, 1),
        (Target(4, 0), 16, -1),
    ]
    assert tracker.frontier(Target(2, 0)) == [11]
    assert tracker.total_counts == 2
    step(tracker, [(Source(2, 0), 12, -1), (Source(1, 0), 11, -1)])
    assert all(tracker.frontier(loc) == [] for loc in tracker.locations)
    assert tracker.tracking_anything() is False


def test_fan_in_integer_frontier_is_minimum():
    """Two inputs into one join: the join's output frontier is the minimum of both (integers are total)."""
    b = Builder(D1)
    b.add_node(0, 0, 0, [])
    b.add_node(1, 0, 1, [])
    b.add_node(2, 0, 1, [])
    b.add_node(3, 2, 1, None)
    b.add_edge(Source(1, 0), Target(3, 0))
    b.add_edge(Source(2, 0), Target(3, 1))
    tracker, _ = b.build()
    step(tracker, [(Source(1, 0), 4, +1), (Source(2, 0), 7, +1)])
    assert tracker.frontier(Target(3, 0)) == [4]
    assert tracker.frontier(Target(3, 1)) == [7]
    assert tracker.frontier(Source(3, 0)) == [4]
    assert tracker.implications_at(Source(3, 0)).updates() == [(4, 1), (7, 1)]
    pushed = step(tracker, [(Source(1, 0), 4, -1)])
    assert pushed == [
        (Source(1, 0), 4, -1),
        (Target(3, 0), 4, -1),
        (Source(3, 0), 4, -1),
        (Source(3, 0), 7, 1),
    ]


def test_fan_in_product_two_element_frontier():
    """Two Product inputs at incomparable times: the join's output frontier holds both."""
    b = Builder(D2)
    b.add_node(0, 0, 0, [])
    b.add_node(1, 0, 1, [])
    b.add_node(2, 0, 1, [])
    b.add_node(3, 2, 1, None)
    b.add_edge(Source(1, 0), Target(3, 0))
    b.add_edge(Source(2, 0), Target(3, 1))
    tracker, _ = b.build()
    pushed = step(tracker, [(Source(1, 0), (0, 3), +1), (Source(2, 0), (2, 0), +1)])
    assert tracker.frontier(Source(3, 0)) == [(0, 3), (2, 0)]
    assert (Source(3, 0), (0, 3), 1) in pushed and (Source(3, 0), (2, 0), 1) in pushed
    pushed = step(tracker, [(Source(2, 0), (2, 0), -1), (Source(2, 0), (0, 4), +1)])  # now comparable: dominated
    assert pushed == [
        (Source(2, 0), (0, 4), 1),
        (Source(2, 0), (2, 0), -1),
        (Target(3, 1), (0, 4), 1),
        (Target(3, 1), (2, 0), -1),
        (Source(3, 0), (2, 0), -1),
    ]
    assert tracker.frontier(Source(3, 0)) == [(0, 3)]


def test_is_global_counts_and_domination():
    """is_global is true iff nothing strictly below dominates t and at most one implication holds t."""
    tracker = v3_tracker()
    assert tracker.is_global(Target(2, 0), 0) is True  # count 0, nothing dominates
    step(tracker, [(Source(1, 0), 3, +1)])
    assert tracker.is_global(Source(1, 0), 3) is True
    assert tracker.is_global(Source(1, 0), 4) is False
    assert tracker.is_global(Source(1, 0), 2) is True
    step(tracker, [(Target(2, 0), 3, +1)])
    assert tracker.implications_at(Target(2, 0)).count_for(3) == 2
    assert tracker.is_global(Target(2, 0), 3) is False  # redundant
    assert tracker.is_global(Source(2, 0), 3) is True
    step(tracker, [(Source(1, 0), 3, -1)])
    assert tracker.is_global(Target(2, 0), 3) is True
    assert tracker.is_global(Source(1, 0), 3) is True


def test_tracker_buffers_until_propagate():
    tracker = v3_tracker()
    assert tracker.tracking_anything() is False
    tracker.update(Source(1, 0), 0, +1)
    assert tracker.tracking_anything() is True
    assert tracker.frontier(Target(3, 0)) == []
    tracker.propagate_all()
    assert tracker.frontier(Target(3, 0)) == [0]
    assert tracker.drain_pushed() == [(loc, 0, 1) for loc in V3_PATH]
    assert tracker.drain_pushed() == []


def test_builder_add_node_validates_summary_shape():
    b = Builder(D1)
    with pytest.raises(ValueError) as e:
        b.add_node(1, 2, 1, [[[0]]])
    assert str(e.value) == "node 1: summary has 1 rows for 2 inputs"
    with pytest.raises(ValueError) as e:
        b.add_node(1, 1, 2, [[[0]]])
    assert str(e.value) == "node 1: summary row 0 has 1 entries for 2 outputs"


def test_builder_add_edge_validates_ports():
    b = Builder(D1)
    b.add_node(0, 0, 0, [])
    b.add_node(1, 0, 1, [])
    with pytest.raises(ValueError) as e:
        b.add_edge(Source(1, 0), Target(2, 0))
    assert str(e.value) == "edge names in(2,0), but node 2 is not declared"
    with pytest.raises(ValueError) as e:
        b.add_edge(Target(1, 0), Source(1, 0))
    assert str(e.value) == "an edge goes from an output to an input, not in(1,0) -> out(1,0)"


def test_two_edges_into_one_target_both_reach_scope_output():
    """Two sources feeding the same input port: both get summaries to the scope output and both hold it.

    (timely's summarize_outputs assumes one incoming edge per target; the port keeps every incoming edge.)
    """
    b = Builder(D1)
    b.add_node(0, 1, 0, [[]])
    b.add_node(1, 0, 1, [])
    b.add_node(2, 0, 1, [])
    b.add_node(3, 1, 1, [[[2]]])
    b.add_edge(Source(1, 0), Target(3, 0))
    b.add_edge(Source(2, 0), Target(3, 0))
    b.add_edge(Source(3, 0), Target(0, 0))
    assert b.path_summaries_to(Target(0, 0)) == {
        Target(0, 0): Antichain([0], D1.le),
        Source(3, 0): Antichain([0], D1.le),
        Target(3, 0): Antichain([2], D1.le),
        Source(1, 0): Antichain([2], D1.le),
        Source(2, 0): Antichain([2], D1.le),
    }
    tracker, _ = b.build()
    step(tracker, [(Source(1, 0), 4, +1), (Source(2, 0), 7, +1)])
    assert tracker.output_changes[0].drain() == [(6, 1), (9, 1)]
    assert tracker.frontier(Target(3, 0)) == [4]
    assert tracker.frontier(Target(0, 0)) == [6]
    step(tracker, [(Source(1, 0), 4, -1)])
    assert tracker.output_changes[0].drain() == [(6, -1)]
    assert tracker.frontier(Target(0, 0)) == [9]
