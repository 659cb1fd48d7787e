"""Scopes that grow while progress flows: a hierarchy grown piece by piece equals one built from the final structure.

The tracker grows by what was added (tracker/reachability.py, growth; tests/test_properties.py checks one scope
against the oracle). Here the whole hierarchy: a root with a feedback loop around a nested scope (a region or an
iterative scope) that has a loop of its own. Its declarations are applied in a random order (each once what it
names exists; a node below the last makes the scope build afresh), progress batches in between, the hierarchy
scheduled after every step. After every step every scope's ports (frontier, pointstamps, implications) and the
nested scope's reports equal those of a hierarchy given the same declarations and batches at once, and the frontier
changes observed along the way add up to the frontiers. Then retiring finished scopes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracker.reachability import CycleError, Location, Source, Target
from tracker.subgraph import Subgraph

SETTINGS: dict[str, Any] = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ROOT = ()
NESTED = (3,)


def declarations(depth: int) -> list[tuple]:
    """The final structure, one declaration per entry: (kind, scope path, ...)."""
    advance = 1 if depth == 1 else (0, 1)
    return [
        ("operator", ROOT, 1, 0, 1, None, [[0]]),
        ("operator", ROOT, 2, 2, 1, None, None),
        ("scope", ROOT, 3, 1, 1, depth),
        ("operator", ROOT, 4, 1, 1, [[[1]]], None),  # the root's feedback
        ("operator", ROOT, 5, 1, 0, None, None),
        ("edge", ROOT, Source(1, 0), Target(2, 0)),
        ("edge", ROOT, Source(2, 0), Target(3, 0)),
        ("edge", ROOT, Source(3, 0), Target(4, 0)),
        ("edge", ROOT, Source(4, 0), Target(2, 1)),
        ("edge", ROOT, Source(3, 0), Target(5, 0)),
        ("operator", NESTED, 1, 2, 1, None, None),
        ("operator", NESTED, 2, 1, 1, [[[advance]]], None),  # the nested scope's feedback
        ("operator", NESTED, 3, 1, 1, None, None),
        ("edge", NESTED, Source(0, 0), Target(1, 0)),
        ("edge", NESTED, Source(1, 0), Target(2, 0)),
        ("edge", NESTED, Source(2, 0), Target(1, 1)),
        ("edge", NESTED, Source(1, 0), Target(3, 0)),
        ("edge", NESTED, Source(3, 0), Target(0, 0)),
    ]


def ready(item: tuple, root: Subgraph) -> bool:
    kind, path = item[0], item[1]
    try:
        scope = root.find(path)
    except KeyError:
        return False
    if kind != "edge":
        return True
    return all(loc.node == 0 or loc.node in scope.children for loc in item[2:])


def declare(root: Subgraph, item: tuple) -> None:
    kind, path = item[0], item[1]
    scope = root.find(path)
    if kind == "operator":
        _, _, node, inputs, outputs, summary, caps = item
        scope.add_operator(node, f"op {node}", inputs, outputs, summary, caps)
    elif kind == "scope":
        _, _, node, inputs, outputs, depth = item
        scope.add_scope(node, "nested", inputs, outputs, depth)
    else:
        scope.add_edge(item[2], item[3])


def progress_keys(depth: int) -> list[tuple]:
    """(scope path, port, time): leaf operators' ports, never a nested scope's or a boundary's."""
    inner = [0, 1, 2] if depth == 1 else [(0, 0), (0, 1), (1, 0), (1, 2)]
    root_ports = [Source(1, 0), Target(2, 0), Target(2, 1), Source(2, 0), Target(4, 0), Target(5, 0)]
    nested_ports = [Source(1, 0), Target(1, 1), Target(2, 0), Source(3, 0)]
    return ([(ROOT, p, t) for p in root_ports for t in (0, 1, 2)]
            + [(NESTED, p, t) for p in nested_ports for t in inner])


@st.composite
def growths(draw):
    depth = draw(st.sampled_from([1, 2]))
    items = draw(st.permutations(declarations(depth)))
    first = draw(st.integers(1, len(items)))  # declarations before the first build
    keys = progress_keys(depth)
    update = st.tuples(st.sampled_from(keys), st.sampled_from([-1, 1, 1, 2]))
    batches = [draw(st.lists(st.lists(update, min_size=1, max_size=3), max_size=2)) for _ in range(len(items) + 1)]
    return depth, items, first, batches


def apply_batch(root: Subgraph, batch: list) -> list:
    """Receive a batch per scope, skipping ports that do not exist yet; returns what was applied."""
    applied = []
    for (path, port, t), d in batch:
        try:
            scope = root.find(path)
        except KeyError:
            continue
        child = scope.children.get(port.node)
        if child is None or child.scope is not None:
            continue
        if port.port >= (child.inputs if port.is_target else child.outputs):
            continue
        scope.receive([(port, t, d)])
        applied.append(((path, port, t), d))
    return applied


def snapshot(root: Subgraph) -> dict:
    out = {}
    for scope in root.scopes():
        out[scope.path] = (scope.port_state(), scope.reported_outputs() if scope.parent else None)
    return out


@settings(max_examples=150, **SETTINGS)
@given(growths())
def test_grown_hierarchy_equals_one_built_at_once(growth):
    depth, items, first, batches = growth
    root = Subgraph(name="root")
    sink: list = []
    root.set_pushed_sink(sink)
    seen: Counter = Counter()  # (scope path, port, time) -> accumulated frontier changes
    declared: list[tuple] = []
    received: list = []
    pending = list(items)

    def next_declaration() -> None:
        item = next(i for i in pending if ready(i, root))
        pending.remove(item)
        declare(root, item)
        if item[0] == "scope":
            root.find(item[1] + (item[2],)).set_pushed_sink(sink)
        declared.append(item)

    def check() -> None:
        root.schedule()
        for scope, loc, t, d in sink:
            seen[(scope.path, loc, t)] += d
        sink.clear()
        fresh = Subgraph(name="root")
        for item in declared:
            declare(fresh, item)
        for (path, port, t), d in received:
            fresh.find(path).receive([(port, t, d)])
        fresh.schedule()
        assert snapshot(root) == snapshot(fresh)
        for scope in root.scopes():
            for row in scope.port_state():
                loc = Location.from_json(row["port"])
                shown = sorted(t for (path, l2, t), c in seen.items() if path == scope.path and l2 == loc and c)
                assert shown == row["frontier"], f"frontier changes at {scope.path} {loc}"

    for _ in range(first):
        next_declaration()
    received.extend(apply_batch(root, [u for b in batches[0] for u in b]))
    check()
    step = 1
    while pending:
        next_declaration()
        check()
        for batch in batches[step]:
            received.extend(apply_batch(root, batch))
            check()
        step += 1


def test_growth_changes_the_parent_through_the_nested_summary():
    """A nested scope that gains a path from its input to its output changes its parent's frontiers downstream."""
    root = Subgraph(name="root")
    root.add_operator(1, "source", 0, 1, capabilities=[[5]])
    inner = root.add_scope(2, "region", 1, 1)
    root.add_operator(3, "after", 1, 0)
    root.add_edge(Source(1, 0), Target(2, 0))
    root.add_edge(Source(2, 0), Target(3, 0))
    root.schedule()
    assert root.tracker is not None
    assert root.tracker.frontier(Target(2, 0)) == [5]
    assert root.tracker.frontier(Target(3, 0)) == []  # nothing inside connects the region's input to its output
    inner.add_operator(1, "map", 1, 1, [[[2]]])
    inner.add_edge(Source(0, 0), Target(1, 0))
    inner.add_edge(Source(1, 0), Target(0, 0))
    root.schedule()
    assert root.tracker.frontier(Target(3, 0)) == [7]
    assert inner.tracker is not None and inner.tracker.frontier(Target(1, 0)) == [5]


def test_retire_a_finished_region():
    """A finished region leaves the live hierarchy; its summary stays, and what is still running is untouched."""
    root = Subgraph(name="root")
    regions = []
    for r in (1, 2):
        region = root.add_scope(r, f"job {r}")
        region.add_operator(1, "driver", 0, 1, capabilities=[[0]])
        region.add_operator(2, "stage", 1, 0)
        region.add_edge(Source(1, 0), Target(2, 0))
        regions.append(region)
    root.schedule()
    with pytest.raises(ValueError, match="still tracks"):
        root.retire(1)
    regions[0].receive([(Source(1, 0), 0, -1)])
    root.schedule()
    root.retire(1)
    assert root.children[1].retired and root.children[1].scope is None
    with pytest.raises(KeyError):
        root.find((1,))
    assert [s.path for s in root.scopes()] == [(), (2,)]
    with pytest.raises(ValueError, match="retired"):
        root.retire(1)
    root.schedule()
    assert regions[1].built_tracker().tracking_anything()  # region 2 still holds its capability
    regions[1].receive([(Source(1, 0), 0, -1)])
    root.schedule()
    root.retire(2)
    job3 = root.add_scope(3, "job 3")
    job3.add_operator(1, "driver", 0, 1, capabilities=[[1]])
    root.schedule()
    assert job3.built_tracker().frontier(Source(1, 0)) == [1]
    assert [s.path for s in root.scopes()] == [(), (3,)]


def test_retire_waits_until_nothing_more_can_arrive():
    """A scope with inputs retires only once its inputs' frontier is empty; it still connects them afterwards."""
    root = Subgraph(name="root")
    root.add_operator(1, "source", 0, 1, capabilities=[[0]])
    inner = root.add_scope(2, "region", 1, 1)
    inner.add_operator(1, "map", 1, 1, [[[3]]])
    inner.add_edge(Source(0, 0), Target(1, 0))
    inner.add_edge(Source(1, 0), Target(0, 0))
    root.add_operator(3, "after", 1, 0)
    root.add_edge(Source(1, 0), Target(2, 0))
    root.add_edge(Source(2, 0), Target(3, 0))
    root.schedule()
    assert root.tracker is not None
    assert root.tracker.frontier(Target(3, 0)) == [3]
    with pytest.raises(ValueError, match="not finished"):
        root.retire(2)
    root.receive([(Source(1, 0), 0, -1)])
    root.schedule()
    root.retire(2)
    assert root.structure.path_summaries_to(Target(3, 0))[Target(2, 0)].elements() == [3]
    root.add_operator(4, "late source", 0, 1, capabilities=[[10]])
    root.add_edge(Source(4, 0), Target(3, 0))
    root.schedule()
    assert root.tracker.frontier(Target(3, 0)) == [10]


def test_growth_that_closes_an_identity_cycle_is_refused_and_stays_queued():
    """An edge closing a cycle of identity summaries raises at the next schedule; the scope keeps its state, and
    the edge stays queued (every schedule raises) since structure cannot be taken back."""
    root = Subgraph(name="root")
    root.add_operator(1, "a", 1, 1, capabilities=[[0]])
    root.add_operator(2, "b", 1, 1)
    root.add_edge(Source(1, 0), Target(2, 0))
    root.schedule()
    assert root.tracker is not None and root.tracker.frontier(Target(2, 0)) == [0]
    root.add_edge(Source(2, 0), Target(1, 0))
    for _ in range(2):
        with pytest.raises(CycleError) as info:
            root.schedule()
        assert set(info.value.cycle) == {Source(1, 0), Target(2, 0), Source(2, 0), Target(1, 0)}
    assert root.needs_build
    assert root.tracker.frontier(Target(2, 0)) == [0]
    assert root.tracker.frontier(Target(1, 0)) == []
