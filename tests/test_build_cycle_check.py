"""A scope's first build skips the whole-graph identity-cycle search only when every edge was admitted by the
per-edge check (``cycle_closed_by``, as the replay does), and that skip is sound.

* Edges admitted one by one, in random hierarchies (a root with leaf operators and a nested region or loop,
  edges of both scopes interleaved): after admission, the whole-graph search finds no cycle in any scope, and a
  rejected edge really would close one (the search finds it once the edge is added unchecked).
* An edge added without the per-edge check brings the search back: a cycle it closes, in its own scope or (through
  a nested scope's summary) in an enclosing one, is still refused at the build.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracker.identity_cycles import cycle_closed_by
from tracker.progress_log.replay import Replay
from tracker.reachability import Builder, CycleError, Location, Source, Target
from tracker.subgraph import Subgraph

SETTINGS: dict[str, Any] = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _summaries(draw, depth: int, inner_loop: bool) -> list:
    """One (input, output) entry: identity, advancing (outer or, in a loop, inner coordinate only), or none."""
    zero = 0 if depth == 1 else (0, 0)
    kinds = ["identity", "advance", "none"] + (["inner"] if inner_loop else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "identity":
        return [zero]
    if kind == "none":
        return []
    if kind == "inner":
        return [(0, 1)]
    return [1] if depth == 1 else [(1, 0)]


@st.composite
def hierarchies(draw):
    """A root (depth 1) of leaf operators and one nested scope (a region, or a loop of depth 2) with leaf
    operators of its own; then edges of both scopes in one random order."""
    root = Subgraph((), "root", 0, 0, 1)
    nested_depth = draw(st.sampled_from([1, 2]))
    leaves = draw(st.integers(1, 3))
    shapes = {}
    for node in range(1, leaves + 1):
        ins, outs = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        rows = [[_summaries(draw, 1, False) for _ in range(outs)] for _ in range(ins)]
        root.add_operator(node, f"op{node}", ins, outs, rows)
        shapes[node] = (ins, outs)
    k = leaves + 1
    s_ins, s_outs = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    inner = root.add_scope(k, "nested", s_ins, s_outs, depth=nested_depth)
    shapes[k] = (s_ins, s_outs)
    inner_shapes = {0: (s_outs, s_ins)}  # node 0: its inputs are the scope's outputs
    for node in range(1, draw(st.integers(1, 3)) + 1):
        ins, outs = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        rows = [[_summaries(draw, nested_depth, nested_depth == 2) for _ in range(outs)] for _ in range(ins)]
        inner.add_operator(node, f"in{node}", ins, outs, rows)
        inner_shapes[node] = (ins, outs)

    def ports(shape: dict) -> tuple[list[Location], list[Location]]:
        return ([Source(n, o) for n, (_, outs) in shape.items() for o in range(outs)],
                [Target(n, i) for n, (ins, _) in shape.items() for i in range(ins)])

    outer_src, outer_tgt = ports(shapes)
    inner_src, inner_tgt = ports(inner_shapes)
    edges = draw(st.lists(st.one_of(
        st.tuples(st.just(root), st.sampled_from(outer_src), st.sampled_from(outer_tgt)),
        st.tuples(st.just(inner), st.sampled_from(inner_src), st.sampled_from(inner_tgt)),
    ), max_size=14))
    return root, edges


@settings(max_examples=300, **SETTINGS)
@given(hierarchies())
def test_edges_admitted_one_by_one_leave_no_identity_cycle_for_the_build_to_find(case):
    root, edges = case
    searches = []
    original = Builder.find_identity_cycle

    for scope, source, target in edges:
        cycle = cycle_closed_by(scope, source, target)
        if cycle is None:
            scope.add_edge(source, target, cycle_checked=True)
        else:  # refused, with the cycle it would close
            assert isinstance(cycle, CycleError) and cycle.cycle
    try:
        Builder.find_identity_cycle = lambda self: searches.append(self.name) or original(self)  # type: ignore
        root.schedule()  # every edge was admitted: no whole-graph search
    finally:
        Builder.find_identity_cycle = original  # type: ignore
    assert searches == []
    for scope in root.scopes():  # and a search would have found nothing
        assert scope.structure.find_identity_cycle() is None, scope.label


def test_an_edge_the_per_edge_check_refuses_does_close_a_cycle():
    """Admitted unchecked, an edge the per-edge check refused makes the build refuse too; the generated cases
    include such edges (a case without one checks nothing, and the test says if none came)."""
    refused = []

    @settings(max_examples=300, **SETTINGS)
    @given(hierarchies())
    def check(case):
        root, edges = case
        for scope, source, target in edges:
            cycle = cycle_closed_by(scope, source, target)
            if cycle is None:
                scope.add_edge(source, target, cycle_checked=True)
                continue
            scope.add_edge(source, target)  # unchecked: the build must search, and refuse
            with pytest.raises(CycleError):
                root.schedule()
            refused.append(cycle)
            return

    check()
    assert refused, "no generated case had an edge the per-edge check refused"


def _chain_with_loop_back() -> tuple[Replay, Subgraph]:
    """a -> b through the replay (checked); both operators keep times unchanged."""
    replay = Replay()
    records: list[dict] = [
        {"type": "operator", "scope": [], "node": 1, "name": "a", "inputs": 1, "outputs": 1, "summary": [[[0]]],
         "capabilities": [[0]]},
        {"type": "operator", "scope": [], "node": 2, "name": "b", "inputs": 1, "outputs": 1, "summary": [[[0]]]},
        {"type": "edge", "scope": [], "from": ["out", 1, 0], "to": ["in", 2, 0]},
    ]
    for r in records:
        assert replay.apply(r), replay.errors
    return replay, replay.root


def _count_cycle_searches(monkeypatch) -> list:
    """A list that grows by one at each whole-graph identity-cycle search a Builder runs from now on."""
    searched: list = []
    original = Builder.find_identity_cycle

    def counted_search(self):
        searched.append(1)
        return original(self)

    monkeypatch.setattr(Builder, "find_identity_cycle", counted_search)
    return searched


def test_a_replayed_structure_is_built_without_the_whole_graph_search(monkeypatch):
    replay, root = _chain_with_loop_back()
    searched = _count_cycle_searches(monkeypatch)
    root.schedule()
    assert searched == [] and root.tracker is not None
    assert root.tracker.frontier(Target(2, 0)) == [0]


def test_an_unchecked_edge_closing_a_cycle_is_still_refused_at_the_build(monkeypatch):
    replay, root = _chain_with_loop_back()
    assert not replay.apply({"type": "edge", "scope": [], "from": ["out", 2, 0], "to": ["in", 1, 0]})
    assert "cycle without a strictly advancing path summary" in replay.errors[-1].reason  # the replay refuses it
    root.add_edge(Source(2, 0), Target(1, 0))  # the same edge, around the per-edge check
    searched = _count_cycle_searches(monkeypatch)
    with pytest.raises(CycleError) as info:
        root.schedule()
    assert searched == [1]
    assert set(info.value.cycle) == {Source(1, 0), Target(2, 0), Source(2, 0), Target(1, 0)}


def test_an_unchecked_edge_in_a_nested_scope_brings_the_search_back_around_it():
    """Outside, b leads the region's output back to its input unchanged; inside, the last edge (unchecked) joins
    the input to the output unchanged: the cycle is in the root, and the root's build refuses it."""
    replay = Replay()
    records: list[dict] = [
        {"type": "scope", "path": [1], "name": "region", "inputs": 1, "outputs": 1, "depth": 1},
        {"type": "operator", "scope": [], "node": 2, "name": "back", "inputs": 1, "outputs": 1, "summary": [[[0]]]},
        {"type": "edge", "scope": [], "from": ["out", 1, 0], "to": ["in", 2, 0]},
        {"type": "edge", "scope": [], "from": ["out", 2, 0], "to": ["in", 1, 0]},
        {"type": "operator", "scope": [1], "node": 1, "name": "step", "inputs": 1, "outputs": 1,
         "summary": [[[0]]]},
        {"type": "edge", "scope": [1], "from": ["out", 0, 0], "to": ["in", 1, 0]},
    ]
    for r in records:
        assert replay.apply(r), replay.errors
    region = replay.root.find([1])
    assert cycle_closed_by(region, Source(1, 0), Target(0, 0)) is not None
    region.add_edge(Source(1, 0), Target(0, 0))  # around the per-edge check
    with pytest.raises(CycleError) as info:
        replay.root.schedule()
    assert info.value.cycle and all(loc.node in (1, 2) for loc in info.value.cycle)
