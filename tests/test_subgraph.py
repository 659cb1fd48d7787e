"""Scopes through :class:`tracker.subgraph.Subgraph`: boundary accounting between a nested scope and its parent.

V2 and V9 of timely-reference.md seen through a region, V7 seen from the parent of an iterative scope, and a
scope that grows after progress started. The root is a depth-1 Subgraph whose Input operator's capability is
the frontier it pushes into the nested scope at ``Target(K, 0)``; what the nested scope reports upward is
observed by wrapping its ``pull_internal_progress`` (the parent half of timely's ``extract_progress``).
"""

from __future__ import annotations

from tests.conftest import tracker_of
from tracker.change_batch import ChangeBatch
from tracker.frontier import Antichain
from tracker.reachability import Source, Target
from tracker.subgraph import Subgraph
from tracker.timestamp import domain


class Reports:
    """Everything a nested scope reported to its parent through pull_internal_progress, consolidated."""

    def __init__(self, scope: Subgraph):
        self.consumed = [ChangeBatch() for _ in range(scope.inputs)]
        self.internal = [ChangeBatch() for _ in range(scope.outputs)]
        self.produced = [ChangeBatch() for _ in range(scope.outputs)]
        original = scope.pull_internal_progress

        def spy(consumed, internal, produced):
            result = original(consumed, internal, produced)
            # the parent passes one batch per input and per output of the scope, as sized here
            for mine, theirs in zip(self.consumed, consumed, strict=True):
                mine.extend(theirs.into_inner())
            for mine, theirs in zip(self.internal, internal, strict=True):
                mine.extend(theirs.into_inner())
            for mine, theirs in zip(self.produced, produced, strict=True):
                mine.extend(theirs.into_inner())
            return result

        scope.pull_internal_progress = spy  # type: ignore[method-assign]  # a spy on one scope

    def drain(self) -> dict:
        return {
            "consumed": [b.drain() for b in self.consumed],
            "internal": [b.drain() for b in self.internal],
            "produced": [b.drain() for b in self.produced],
        }


class Pushed:
    """Every frontier change of a hierarchy (set_pushed_sink), per scope, sorted like drain_pushed."""

    def __init__(self, root: Subgraph):
        self.sink: list = []
        root.set_pushed_sink(self.sink)

    def drain(self, scope: Subgraph) -> list:
        mine = ChangeBatch(((loc, t), d) for s, loc, t, d in self.sink if s is scope)
        self.sink[:] = [e for e in self.sink if e[0] is not scope]
        return [(loc, t, d) for (loc, t), d in mine.into_inner()]


def frontiers(scope: Subgraph) -> dict:
    return {loc: tracker_of(scope).frontier(loc) for loc in tracker_of(scope).locations}


def pointstamps(scope: Subgraph) -> dict:
    return {loc: tracker_of(scope).pointstamps_at(loc).updates() for loc in tracker_of(scope).locations}


def root_around(scope_inputs: int = 1, scope_outputs: int = 1, depth: int = 1, input_cap=0):
    """Root: Input (node 1, capability ``input_cap``) -> nested scope (node 2) -> sink (node 3)."""
    root = Subgraph(name="root")
    root.add_operator(1, "input", 0, 1, capabilities=[[input_cap]])
    inner = root.add_scope(2, "inner", scope_inputs, scope_outputs, depth)
    root.add_operator(3, "sink", 1, 0)
    root.add_edge(Source(1, 0), Target(2, 0))
    root.add_edge(Source(2, 0), Target(3, 0))
    return root, inner


# --- V9 -----------------------------------------------------------------------------------------------------


def v9_setup():
    root, region = root_around()
    region.add_operator(1, "map", 1, 1, capabilities=[[0]])
    region.add_edge(Source(0, 0), Target(1, 0))
    region.add_edge(Source(1, 0), Target(0, 0))
    return root, region


def test_v9_initialize_reports_initial_capability_and_accepts_frontier():
    """V9 [derived]: initialize reports internals +1@0; the parent's frontier +1@0 reaches Map's input."""
    root, region = v9_setup()
    reports = Reports(region)
    pushed = Pushed(root)
    assert root.schedule() is True

    # internals +1@0, handed over when the parent built its tracker
    assert root.tracker.pointstamps_at(Source(2, 0)).updates() == [(0, 1)]
    assert region.reported_outputs() == [[0]]
    # the parent-facing summary [{0:{0}}]
    summary, caps = region.get_internal_summary()
    assert summary == [[Antichain([0], domain(1).le)]]
    assert [c.into_inner() for c in caps] == [[]]
    # frontiers[0] +1@0 became S(0,0)@0 +1; Map's input frontier is {0}
    assert region.tracker.pointstamps_at(Source(0, 0)).updates() == [(0, 1)]
    assert region.tracker.frontier(Target(1, 0)) == [0]
    assert pushed.drain(region) == [
        (Target(0, 0), 0, 1),
        (Source(0, 0), 0, 1),
        (Target(1, 0), 0, 1),
        (Source(1, 0), 0, 1),
    ]
    assert reports.drain() == {"consumed": [[]], "internal": [[]], "produced": [[]]}


def test_v9_boundary_accounting_consumed_produced_internals():
    """V9 [derived]: the compacted batch {S(0,0)@0 -3, T(0,0)@0 +3, S(1,0)@0 -1} at the region.

    The parent sees consumed +3@0, produced +3@0 and internals -1@0; inside, nothing is pushed because
    S(1,0) is still implied by the outer frontier, and the child-0 entries are not recorded in the tracker.
    """
    root, region = v9_setup()
    reports = Reports(region)
    root.schedule()
    pushed = Pushed(root)

    root.receive([(Target(2, 0), 0, +3)])  # the Input produced 3 records into the region
    # harvest {T(1,0)@0 +3, S(0,0)@0 -3} plus Map's {T(1,0)@0 -3, T(0,0)@0 +3, S(1,0)@0 -1}, compacted
    region.receive([(Source(0, 0), 0, -3), (Target(0, 0), 0, +3), (Source(1, 0), 0, -1)])
    assert root.schedule() is True

    assert reports.drain() == {"consumed": [[(0, 3)]], "internal": [[(0, -1)]], "produced": [[(0, 3)]]}
    assert pushed.drain(region) == []
    assert pointstamps(region) == {
        Target(0, 0): [],
        Source(0, 0): [(0, 1)],  # only the accepted outer frontier
        Target(1, 0): [],
        Source(1, 0): [],
    }
    assert region.tracker.frontier(Source(1, 0)) == [0]
    assert region.reported_outputs() == [[]]
    # the parent applied them: T(2,0) +3 -3, T(3,0) +3, S(2,0) +1 -1
    assert pointstamps(root) == {
        Source(1, 0): [(0, 1)],
        Target(2, 0): [],
        Source(2, 0): [],
        Target(3, 0): [(0, 3)],
    }
    assert pushed.drain(root) == []  # the Input's capability still holds everything at 0


def test_v9_frontier_advances_then_closes():
    """V9 [derived]: the parent moves the frontier to 1 then closes it; Map's frontier goes {0} -> {1} -> {}."""
    root, region = v9_setup()
    reports = Reports(region)
    root.schedule()
    root.receive([(Target(2, 0), 0, +3)])
    region.receive([(Source(0, 0), 0, -3), (Target(0, 0), 0, +3), (Source(1, 0), 0, -1)])
    root.schedule()
    reports.drain()
    assert region.tracker.frontier(Target(1, 0)) == [0]

    root.receive([(Source(1, 0), 0, -1), (Source(1, 0), 1, +1)])
    assert root.schedule() is True
    assert region.tracker.frontier(Target(1, 0)) == [1]
    assert region.tracker.pointstamps_at(Source(0, 0)).updates() == [(1, 1)]

    root.receive([(Source(1, 0), 1, -1), (Target(3, 0), 0, -3)])  # close the input; the sink consumes
    assert root.schedule() is False
    assert region.tracker.frontier(Target(1, 0)) == []
    assert all(f == [] for f in frontiers(region).values())
    assert all(f == [] for f in frontiers(root).values())
    assert region.tracker.tracking_anything() is False
    assert region.schedule() is False
    assert reports.drain() == {"consumed": [[]], "internal": [[]], "produced": [[]]}


# --- V2 through a region ------------------------------------------------------------------------------------


def test_v2_region_internal_capability_vs_outer_frontier():
    """V2 [derived] through a region: the outer frontier 3 is never reported back up; the capability at 5 is.

    Dropping the capability at 5 pushes nothing inside (3 dominates it) but reports internals -1@5.
    """
    root, region = root_around(input_cap=3)
    region.add_operator(1, "a", 1, 1, capabilities=[[5]])
    region.add_operator(2, "b", 1, 1)
    region.add_edge(Source(0, 0), Target(1, 0))
    region.add_edge(Source(1, 0), Target(2, 0))
    region.add_edge(Source(2, 0), Target(0, 0))
    reports = Reports(region)
    assert root.schedule() is True
    assert region.reported_outputs() == [[5]]
    assert root.tracker.pointstamps_at(Source(2, 0)).updates() == [(5, 1)]
    for loc in [Source(0, 0), Target(1, 0), Source(1, 0), Target(2, 0), Source(2, 0), Target(0, 0)]:
        assert region.tracker.frontier(loc) == [3]
    assert reports.drain() == {"consumed": [[]], "internal": [[]], "produced": [[]]}
    pushed = Pushed(root)

    region.receive([(Source(1, 0), 5, -1)])
    assert root.schedule() is True
    assert pushed.drain(region) == []
    assert reports.drain() == {"consumed": [[]], "internal": [[(5, -1)]], "produced": [[]]}
    assert region.reported_outputs() == [[]]
    assert region.tracker.total_counts == 1
    assert root.tracker.pointstamps_at(Source(2, 0)).updates() == []
    assert root.tracker.frontier(Target(3, 0)) == [3]  # still held by the Input through the region

    root.receive([(Source(1, 0), 3, -1)])
    assert root.schedule() is False
    assert region.tracker.total_counts == 0
    assert region.tracker.tracking_anything() is False
    assert all(f == [] for f in frontiers(region).values())


# --- V7 seen from the parent --------------------------------------------------------------------------------


def v7_setup():
    root, loop = root_around(depth=2, input_cap=5)
    loop.add_operator(1, "concat", 2, 1)
    loop.add_operator(2, "branch", 1, 2)
    loop.add_operator(3, "feedback", 1, 1, summary=[[[(0, 1)]]])
    loop.add_edge(Source(0, 0), Target(1, 0))
    loop.add_edge(Source(3, 0), Target(1, 1))
    loop.add_edge(Source(1, 0), Target(2, 0))
    loop.add_edge(Source(2, 0), Target(3, 0))
    loop.add_edge(Source(2, 1), Target(0, 0))
    return root, loop


V7_A = {
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
V7_B = {
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


def test_v7_iterative_scope_summary_seen_by_parent():
    """V7 [derived]: the loop's scope summary (0,0) is seen by the parent as {0}."""
    root, loop = v7_setup()
    root.schedule()
    summary, _ = loop.get_internal_summary()
    assert summary == [[Antichain([0], domain(1).le)]]
    assert loop.domain.depth == 2
    assert frontiers(loop) == V7_A
    assert loop.reported_outputs() == [[]]
    assert root.tracker.pointstamps_at(Source(2, 0)).updates() == []
    assert frontiers(root) == {Source(1, 0): [5], Target(2, 0): [5], Source(2, 0): [5], Target(3, 0): [5]}


def test_v7_parent_sees_internals_at_5_while_outer_frontier_is_6():
    """V7 [derived] from the parent: outer frontier 5 -> 6 while a record sits at the feedback input.

    The parent gets internals +1@5 while its input frontier at the loop is 6; forwarding the record reports
    nothing; dropping it reports internals -1@5.
    """
    root, loop = v7_setup()
    reports = Reports(loop)
    root.schedule()
    assert reports.drain() == {"consumed": [[]], "internal": [[]], "produced": [[]]}

    # b) the parent's frontier moves to 6; a record sits at the feedback input at (5,3)
    root.receive([(Source(1, 0), 5, -1), (Source(1, 0), 6, +1)])
    loop.receive([(Target(3, 0), (5, 3), +1)])
    assert root.schedule() is True
    assert frontiers(loop) == V7_B
    assert reports.drain() == {"consumed": [[]], "internal": [[(5, 1)]], "produced": [[]]}
    assert loop.reported_outputs() == [[5]]
    assert root.tracker.frontier(Target(2, 0)) == [6]  # the loop's input frontier
    assert root.tracker.pointstamps_at(Source(2, 0)).updates() == [(5, 1)]
    assert root.tracker.frontier(Target(3, 0)) == [5]

    # c) the feedback forwards the record: nets to nothing for the parent
    pushed = Pushed(root)
    loop.receive([(Target(3, 0), (5, 3), -1), (Target(1, 1), (5, 4), +1)])
    assert root.schedule() is True
    assert pushed.drain(loop) == [
        (Target(3, 0), (5, 3), -1),
        (Target(3, 0), (5, 4), 1),
        (Source(3, 0), (5, 4), -1),
        (Source(3, 0), (5, 5), 1),
    ]
    assert pushed.drain(root) == []
    assert reports.drain() == {"consumed": [[]], "internal": [[]], "produced": [[]]}
    assert loop.reported_outputs() == [[5]]

    # d) the loop body drops it: internals -1@5
    loop.receive([(Target(1, 1), (5, 4), -1)])
    assert root.schedule() is True
    assert reports.drain() == {"consumed": [[]], "internal": [[(5, -1)]], "produced": [[]]}
    assert loop.reported_outputs() == [[]]
    expected = {loc: [(6, 0)] for loc in loop.tracker.locations}
    expected[Target(1, 1)] = [(6, 1)]
    expected[Source(3, 0)] = [(6, 1)]
    assert frontiers(loop) == expected
    assert pushed.drain(root) == [
        (Source(2, 0), 5, -1),
        (Source(2, 0), 6, 1),
        (Target(3, 0), 5, -1),
        (Target(3, 0), 6, 1),
    ]
    assert root.tracker.pointstamps_at(Source(2, 0)).updates() == []
    assert frontiers(root) == {Source(1, 0): [6], Target(2, 0): [6], Source(2, 0): [6], Target(3, 0): [6]}

    # the input closes: everything drains
    root.receive([(Source(1, 0), 6, -1)])
    assert root.schedule() is False
    assert loop.tracker.tracking_anything() is False


def test_v7_record_before_frontier_move_holds_parent_downstream_at_5():
    """Same loop, record first: the parent's sink frontier stays 5 while the input moves to 6, then goes to 6."""
    root, loop = v7_setup()
    reports = Reports(loop)
    root.schedule()
    pushed = Pushed(root)

    loop.receive([(Target(3, 0), (5, 3), +1)])
    root.schedule()
    assert reports.drain()["internal"] == [[(5, 1)]]
    assert pushed.drain(root) == []  # the internal capability at 5 is already implied by the input at 5

    root.receive([(Source(1, 0), 5, -1), (Source(1, 0), 6, +1)])
    root.schedule()
    assert frontiers(loop) == V7_B
    assert reports.drain()["internal"] == [[]]
    assert pushed.drain(root) == [
        (Source(1, 0), 5, -1),
        (Source(1, 0), 6, 1),
        (Target(2, 0), 5, -1),
        (Target(2, 0), 6, 1),
    ]
    assert frontiers(root) == {Source(1, 0): [6], Target(2, 0): [6], Source(2, 0): [5], Target(3, 0): [5]}


# --- a scope that grows after progress started -------------------------------------------------------------


def grow_root(root: Subgraph) -> None:
    root.add_operator(3, "map2", 1, 1)
    root.add_edge(Source(2, 0), Target(3, 0))


def flat_root(full: bool) -> Subgraph:
    root = Subgraph(name="root")
    root.add_operator(1, "input", 0, 1, capabilities=[[0]])
    root.add_operator(2, "map", 1, 1)
    root.add_edge(Source(1, 0), Target(2, 0))
    if full:
        grow_root(root)
    return root


FLAT_BEFORE = [
    [(Source(1, 0), 0, -1), (Source(1, 0), 1, +1), (Target(2, 0), 0, +1)],
    [(Target(2, 0), 0, -1), (Source(2, 0), 0, +1)],  # map holds a capability at 0 while it works
]
FLAT_AFTER = [
    [(Source(2, 0), 0, -1), (Target(3, 0), 0, +2)],
    [(Source(1, 0), 1, -1), (Source(1, 0), 2, +1), (Target(2, 0), 1, +1)],
    [(Target(3, 0), 0, -2)],
    [(Target(2, 0), 1, -1), (Target(3, 0), 1, +1)],
    [(Source(1, 0), 2, -1)],
    [(Target(3, 0), 1, -1)],
]


def test_scope_grown_after_progress_matches_scope_built_whole():
    """Add an operator and an edge after some batches: afterwards every port equals the whole-built scope's."""
    grown, whole = flat_root(False), flat_root(True)
    grown_pushed, whole_pushed = Pushed(grown), Pushed(whole)
    grown.schedule()
    whole.schedule()
    for batch in FLAT_BEFORE:
        for scope in (grown, whole):
            scope.receive(batch)
            scope.schedule()
        common = frontiers(grown)
        assert {loc: f for loc, f in frontiers(whole).items() if loc in common} == common

    grow_root(grown)
    assert grown.schedule() is True
    assert grown.port_state() == whole.port_state()
    assert frontiers(grown)[Target(3, 0)] == [0]  # the map's capability at 0 reaches the new operator
    for batch in FLAT_AFTER:
        results = []
        for scope in (grown, whole):
            scope.receive(batch)
            results.append(scope.schedule())
        assert results[0] == results[1]
        assert grown.port_state() == whole.port_state()
    assert results == [False, False]

    # the frontier changes reported along the way accumulate to the same (empty) frontiers
    assert grown_pushed.drain(grown) == whole_pushed.drain(whole) == []


def test_scope_grown_reports_only_net_frontier_changes():
    """The rebuild reports the frontier changes the new structure causes: accumulating them gives the frontiers."""
    grown = flat_root(False)
    pushed = Pushed(grown)
    grown.schedule()
    for batch in FLAT_BEFORE:
        grown.receive(batch)
        grown.schedule()
    before = pushed.drain(grown)
    assert before == [(Source(1, 0), 1, 1), (Target(2, 0), 1, 1), (Source(2, 0), 0, 1)]
    grow_root(grown)
    grown.schedule()
    assert pushed.drain(grown) == [(Target(3, 0), 0, 1), (Source(3, 0), 0, 1)]


def grow_region(root: Subgraph, region: Subgraph) -> None:
    """Give the region a second operator holding a capability at 1, a path to its output, and the root a probe."""
    region.add_operator(2, "map2", 1, 1, capabilities=[[1]])
    region.add_edge(Source(1, 0), Target(2, 0))
    region.add_edge(Source(2, 0), Target(0, 0))
    root.add_operator(4, "probe", 1, 0)
    root.add_edge(Source(2, 0), Target(4, 0))


def nested_setup(full: bool):
    root, region = root_around()
    region.add_operator(1, "map", 1, 1)
    region.add_edge(Source(0, 0), Target(1, 0))  # no path to the region's output yet
    if full:
        grow_region(root, region)
    return root, region


NESTED_BEFORE = [
    ("root", [(Source(1, 0), 0, -1), (Source(1, 0), 1, +1), (Target(2, 0), 0, +2)]),
    ("region", [(Source(0, 0), 0, -2), (Target(1, 0), 0, +2)]),
]
NESTED_AFTER = [
    ("region", [(Target(1, 0), 0, -2), (Target(2, 0), 1, +2)]),
    ("region", [(Target(2, 0), 1, -2), (Target(0, 0), 1, +2), (Source(2, 0), 1, -1), (Source(2, 0), 2, +1)]),
    ("root", [(Target(3, 0), 1, -2), (Target(4, 0), 1, -2)]),
    ("region", [(Source(2, 0), 2, -1)]),
    ("root", [(Source(1, 0), 1, -1)]),
]


def test_nested_scope_grown_after_progress_matches_scope_built_whole():
    """A region gains an operator (with a capability) and the path to its output after progress started.

    Its summary for the parent changes from no path to {0}, so the parent rebuilds too. After the growth, both
    scopes' ports and what the region reports upward equal those of a hierarchy built whole and fed the same
    batches.
    """
    grown, whole = nested_setup(False), nested_setup(True)
    for root, _ in (grown, whole):
        root.schedule()
    for which, batch in NESTED_BEFORE:
        for root, region in (grown, whole):
            (root if which == "root" else region).receive(batch)
            root.schedule()
    assert grown[1].get_internal_summary()[0] == [[Antichain([], domain(1).le)]]

    grow_region(*grown)
    assert grown[0].schedule() is True
    assert grown[1].get_internal_summary()[0] == [[Antichain([0], domain(1).le)]]
    assert whole[1].get_internal_summary()[0] == [[Antichain([0], domain(1).le)]]
    assert grown[0].port_state() == whole[0].port_state()
    assert grown[1].port_state() == whole[1].port_state()
    # the two records in flight to the map at 0 now have a path to the region's output
    assert grown[1].reported_outputs() == whole[1].reported_outputs() == [[0]]
    assert grown[0].tracker.pointstamps_at(Source(2, 0)).updates() == [(0, 1)]

    reported = []
    for which, batch in NESTED_AFTER:
        results = []
        for root, region in (grown, whole):
            (root if which == "root" else region).receive(batch)
            results.append(root.schedule())
        assert results[0] == results[1]
        assert grown[0].port_state() == whole[0].port_state()
        assert grown[1].port_state() == whole[1].port_state()
        assert grown[1].reported_outputs() == whole[1].reported_outputs()
        reported.append(grown[1].reported_outputs())
    assert reported == [[[1]], [[2]], [[2]], [[]], [[]]]
    assert results == [False, False]


def net_pushed(pushed: Pushed, scope: Subgraph) -> dict:
    """The frontier changes reported for a scope since the sink was set, accumulated per port (not drained)."""
    batch = ChangeBatch(((loc, t), d) for s, loc, t, d in pushed.sink if s is scope)
    out: dict = {loc: [] for loc in tracker_of(scope).locations}
    for (loc, t), d in batch.into_inner():
        assert d == 1, (loc, t, d)
        out[loc].append(t)
    return out


def region_added_setup(full: bool):
    root = Subgraph(name="root")
    root.add_operator(1, "input", 0, 1, capabilities=[[0]])
    root.add_operator(2, "map", 1, 1)
    root.add_edge(Source(1, 0), Target(2, 0))
    region = add_region_after_map(root) if full else None
    return root, region


def add_region_after_map(root: Subgraph) -> Subgraph:
    region = root.add_scope(3, "region", 1, 1)
    region.add_operator(1, "inner-map", 1, 1)
    region.add_edge(Source(0, 0), Target(1, 0))
    region.add_edge(Source(1, 0), Target(0, 0))
    root.add_operator(4, "sink", 1, 0)
    root.add_edge(Source(2, 0), Target(3, 0))
    root.add_edge(Source(3, 0), Target(4, 0))
    return region


def test_nested_scope_added_after_progress_matches_scope_built_whole():
    """A region added after progress started gets its input frontier from the parent's rebuild.

    Every port of both scopes then equals the whole-built hierarchy's, and the frontier changes reported for
    each scope accumulate to exactly its current frontiers (the rebuild reports only what changed).
    """
    grown_root, _ = region_added_setup(False)
    whole_root, whole_region = region_added_setup(True)
    grown_pushed, whole_pushed = Pushed(grown_root), Pushed(whole_root)
    for root in (grown_root, whole_root):
        root.schedule()
        root.receive([(Source(1, 0), 0, -1), (Source(1, 0), 2, +1), (Target(2, 0), 0, +1)])
        root.schedule()

    grown_region = add_region_after_map(grown_root)
    assert grown_root.schedule() is True
    assert grown_root.port_state() == whole_root.port_state()
    assert grown_region.port_state() == whole_region.port_state()
    assert tracker_of(grown_region).pointstamps_at(Source(0, 0)).updates() == [(0, 1)]  # the parent's frontier
    assert tracker_of(grown_region).frontier(Target(1, 0)) == [0]

    batches = [
        ("root", [(Target(2, 0), 0, -1), (Target(3, 0), 0, +1)]),  # map forwards into the region
        ("region", [(Source(0, 0), 0, -1), (Target(1, 0), 0, +1)]),  # harvested inside
        ("region", [(Target(1, 0), 0, -1), (Target(0, 0), 0, +1)]),  # inner map emits to the output
        ("root", [(Target(4, 0), 0, -1)]),
        ("root", [(Source(1, 0), 2, -1)]),
    ]
    for pushed, scope in (
        (grown_pushed, grown_root),
        (grown_pushed, grown_region),
        (whole_pushed, whole_root),
        (whole_pushed, whole_region),
    ):
        assert net_pushed(pushed, scope) == frontiers(scope)
    for which, batch in batches:
        results = []
        for root, region in ((grown_root, grown_region), (whole_root, whole_region)):
            (root if which == "root" else region).receive(batch)
            results.append(root.schedule())
        assert results[0] == results[1]
        assert grown_root.port_state() == whole_root.port_state()
        assert grown_region.port_state() == whole_region.port_state()
        assert net_pushed(grown_pushed, grown_root) == frontiers(grown_root)
        assert net_pushed(grown_pushed, grown_region) == frontiers(grown_region)
    assert results == [False, False]
    assert all(f == [] for f in frontiers(grown_root).values())
    assert all(f == [] for f in frontiers(grown_region).values())


def test_iterative_scope_boundary_entries_use_to_outer():
    """Entries at child 0 of an iterative scope are reported to the parent at outer times (to_outer)."""
    root, loop = v7_setup()
    reports = Reports(loop)
    root.schedule()
    root.receive([(Target(2, 0), 5, +2)])  # the Input sends two records into the loop
    loop.receive([(Source(0, 0), (5, 0), -2), (Target(1, 0), (5, 0), +2)])
    root.schedule()
    # the records in flight inside imply the loop may still produce at outer time 5
    assert reports.drain() == {"consumed": [[(5, 2)]], "internal": [[(5, 1)]], "produced": [[]]}
    assert loop.tracker.pointstamps_at(Source(0, 0)).updates() == [((5, 0), 1)]
    assert loop.tracker.pointstamps_at(Target(1, 0)).updates() == [((5, 0), 2)]
    # one record leaves at (5,0), one goes round the loop (it still implies (5,1) at the output: outer 5)
    loop.receive([(Target(1, 0), (5, 0), -2), (Target(0, 0), (5, 0), +1), (Target(3, 0), (5, 0), +1)])
    root.schedule()
    assert reports.drain() == {"consumed": [[]], "internal": [[]], "produced": [[(5, 1)]]}
    assert root.tracker.pointstamps_at(Target(3, 0)).updates() == [(5, 1)]
    assert loop.tracker.pointstamps_at(Target(0, 0)).updates() == []  # child-0 entries are not recorded
    loop.receive([(Target(3, 0), (5, 0), -1)])
    root.schedule()
    assert reports.drain() == {"consumed": [[]], "internal": [[(5, -1)]], "produced": [[]]}
    assert loop.reported_outputs() == [[]]


def grow_region_in_parallel(root: Subgraph, region: Subgraph) -> None:
    """A second operator, holding a capability at 3, feeding the existing map: the region's summary is unchanged."""
    region.add_operator(2, "late-source", 0, 1, capabilities=[[3]])
    region.add_edge(Source(2, 0), Target(1, 0))


def parallel_setup(full: bool):
    root, region = root_around()
    region.add_operator(1, "map", 1, 1)
    region.add_edge(Source(0, 0), Target(1, 0))
    region.add_edge(Source(1, 0), Target(0, 0))
    if full:
        grow_region_in_parallel(root, region)
    return root, region


def test_nested_scope_grown_without_summary_change_matches_scope_built_whole():
    """Growth inside a region that leaves its summary unchanged: the parent does not rebuild, and the region's
    changed internal capabilities still reach it (through the next pull) exactly as in the whole-built one."""
    grown, whole = parallel_setup(False), parallel_setup(True)
    batches_before = [
        ("root", [(Source(1, 0), 0, -1), (Source(1, 0), 5, +1), (Target(2, 0), 0, +1)]),
        ("region", [(Source(0, 0), 0, -1), (Target(1, 0), 0, +1)]),
        ("region", [(Target(1, 0), 0, -1), (Target(0, 0), 0, +1)]),
        ("root", [(Target(3, 0), 0, -1)]),
    ]
    batches_after = [
        ("region", [(Source(2, 0), 3, -1), (Source(2, 0), 4, +1), (Target(1, 0), 3, +1)]),
        ("region", [(Target(1, 0), 3, -1), (Target(0, 0), 3, +1)]),
        ("root", [(Target(3, 0), 3, -1)]),
        ("region", [(Source(2, 0), 4, -1)]),
        ("root", [(Source(1, 0), 5, -1)]),
    ]
    for root, _ in (grown, whole):
        root.schedule()
    for which, batch in batches_before:
        for root, region in (grown, whole):
            (root if which == "root" else region).receive(batch)
            root.schedule()
    root_tracker_before = grown[0].tracker

    grow_region_in_parallel(*grown)
    assert grown[0].schedule() is True
    assert grown[0].tracker is root_tracker_before  # the parent kept its tracker
    assert grown[1].get_internal_summary()[0] == whole[1].get_internal_summary()[0] == [[Antichain([0], domain(1).le)]]
    assert grown[0].port_state() == whole[0].port_state()
    assert grown[1].port_state() == whole[1].port_state()
    assert grown[1].reported_outputs() == whole[1].reported_outputs() == [[3]]
    assert grown[0].tracker.frontier(Target(3, 0)) == [3]

    reported = []
    for which, batch in batches_after:
        results = []
        for root, region in (grown, whole):
            (root if which == "root" else region).receive(batch)
            results.append(root.schedule())
        assert results[0] == results[1]
        assert grown[0].port_state() == whole[0].port_state()
        assert grown[1].port_state() == whole[1].port_state()
        reported.append(grown[1].reported_outputs())
    assert reported == [[[3]], [[4]], [[4]], [[]], [[]]]
    assert results == [False, False]


def test_three_level_hierarchy_reports_through_each_to_outer():
    """root (depth 1) > outer loop (depth 2) > inner loop (depth 3): times refine and report level by level."""
    root, outer = root_around(depth=2, input_cap=5)
    inner = outer.add_scope(1, "inner", 1, 1, depth=3)
    outer.add_edge(Source(0, 0), Target(1, 0))
    outer.add_edge(Source(1, 0), Target(0, 0))
    inner.add_operator(1, "concat", 2, 1)
    inner.add_operator(2, "feedback", 1, 1, summary=[[[((0, 0), 1)]]])
    inner.add_edge(Source(0, 0), Target(1, 0))
    inner.add_edge(Source(1, 0), Target(2, 0))
    inner.add_edge(Source(2, 0), Target(1, 1))
    inner.add_edge(Source(1, 0), Target(0, 0))
    assert root.schedule() is True
    assert inner.tracker.pointstamps_at(Source(0, 0)).updates() == [(((5, 0), 0), 1)]
    assert inner.tracker.frontier(Target(1, 1)) == [((5, 0), 1)]
    assert outer.tracker.frontier(Target(1, 0)) == [(5, 0)]

    # a record at the inner feedback while the root's input moves from 5 to 7
    inner.receive([(Target(2, 0), ((5, 0), 3), +1)])
    root.receive([(Source(1, 0), 5, -1), (Source(1, 0), 7, +1)])
    assert root.schedule() is True
    assert inner.reported_outputs() == [[(5, 0)]]
    assert outer.reported_outputs() == [[5]]
    assert inner.tracker.frontier(Target(1, 1)) == [((5, 0), 4), ((7, 0), 1)]
    assert outer.tracker.frontier(Target(1, 0)) == [(7, 0)]
    assert outer.tracker.frontier(Source(1, 0)) == [(5, 0)]
    assert frontiers(root) == {Source(1, 0): [7], Target(2, 0): [7], Source(2, 0): [5], Target(3, 0): [5]}

    inner.receive([(Target(2, 0), ((5, 0), 3), -1)])
    assert root.schedule() is True
    assert inner.reported_outputs() == [[]]
    assert outer.reported_outputs() == [[]]
    assert frontiers(root) == {Source(1, 0): [7], Target(2, 0): [7], Source(2, 0): [7], Target(3, 0): [7]}
    assert inner.tracker.frontier(Target(1, 1)) == [((7, 0), 1)]

    root.receive([(Source(1, 0), 7, -1)])
    assert root.schedule() is False
    for scope in root.scopes():
        assert all(f == [] for f in frontiers(scope).values())
