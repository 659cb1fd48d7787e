"""Property tests: the tracker against the brute-force oracle in tests/oracle.py.

Random graphs are a random DAG (forward edges only, with random multi-summary antichains inside nodes, some of them
the identity, some empty) plus feedback nodes whose summaries strictly advance, wired from anywhere to anywhere, so
there are cycles, but none with an identity summary. Random batches of pointstamp updates, with signed deltas over a
small set of (port, time) pairs so that counts go transiently negative and back, are applied one batch (one
``propagate_all``) at a time, and after every batch:

* every port's implications frontier equals the oracle's frontier from the strictly positive accumulated counts;
* the frontier changes reported by ``drain_pushed`` accumulate to exactly the current frontiers;
* the accumulated ``output_changes`` have the oracle's minimal results at each scope output from the
  non-boundary pointstamps (and exactly the counts of timely's definition);
* ``is_global`` agrees with a brute-force definition.

Separately: the Builder rejects exactly the graphs that have a cycle of identity summaries (compared with
networkx on the identity-link subgraph), and its path summaries and scope summary match the oracle's.

Growth: a built tracker grown one node, edge or node summary at a time, batches in between, equals after every step
the oracle and a tracker built from scratch for the structure so far (frontiers, implication and pointstamp counts,
reported frontier changes, output reports, scope summary); an edge that would close an identity cycle is refused.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import oracle
from tracker.reachability import CycleError, Source, Target

SETTINGS: dict[str, Any] = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# --- strategies ---------------------------------------------------------------------------------------------


def summary_values(depth: int):
    if depth == 1:
        return st.integers(0, 2)
    return st.tuples(st.integers(0, 2), st.integers(0, 2))


def advancing_summaries(depth: int):
    """Antichains (as lists) of summaries that strictly advance every time."""
    if depth == 1:
        return st.sampled_from([[1], [2], [1, 2]])
    return st.sampled_from([[(0, 1)], [(1, 0)], [(1, 0), (0, 1)], [(1, 1)], [(0, 2), (1, 0)], [(2, 0), (0, 1), (1, 1)]])


def times(depth: int):
    if depth == 1:
        return st.integers(0, 6)
    return st.tuples(st.integers(0, 3), st.integers(0, 3))


def node_summary(draw, depth: int, inputs: int, outputs: int):
    ident = oracle.identity(depth)
    rows = []
    for _ in range(inputs):
        row = []
        for _ in range(outputs):
            kind = draw(st.sampled_from(["identity", "identity", "empty", "random"]))
            if kind == "identity":
                row.append([ident])
            elif kind == "empty":
                row.append([])
            else:
                row.append(draw(st.lists(summary_values(depth), min_size=1, max_size=3)))
        rows.append(row)
    return rows


@st.composite
def graphs(draw, depth: int | None = None):
    """A random scope: (depth, oracle.Graph). Forward edges form a DAG; feedback nodes close cycles that advance."""
    if depth is None:
        depth = draw(st.sampled_from([1, 2, 2]))
    g = oracle.Graph(depth)
    scope_inputs = draw(st.integers(0, 2))
    scope_outputs = draw(st.integers(0, 2))
    n = draw(st.integers(1, 5))
    shapes = [(draw(st.integers(0, 2)), draw(st.integers(1 if k == 0 else 0, 2))) for k in range(n)]
    # Node 0: the boundary. Usually no connectivity (as in a Subgraph); sometimes an advancing one (as in V1).
    if scope_outputs and scope_inputs and draw(st.booleans()) and draw(st.booleans()):
        rows = [[draw(st.sampled_from([[], draw(advancing_summaries(depth))])) for _ in range(scope_inputs)]
                for _ in range(scope_outputs)]
        g.add_node(0, scope_outputs, scope_inputs, rows)
    else:
        g.add_node(0, scope_outputs, scope_inputs, [[[] for _ in range(scope_inputs)] for _ in range(scope_outputs)])
    for k, (inputs, outputs) in enumerate(shapes, start=1):
        g.add_node(k, inputs, outputs, node_summary(draw, depth, inputs, outputs))
    # Forward edges: a target of node k takes 0..2 sources from node 0 (scope inputs) and nodes < k; scope outputs
    # (node 0's targets) may take sources from any node.
    def sources_before(k):
        out = [Source(0, i) for i in range(scope_inputs)]
        for j in range(1, k):
            out.extend(Source(j, o) for o in range(shapes[j - 1][1]))
        return out

    targets = [(Target(k, i), k) for k, (inputs, _) in enumerate(shapes, start=1) for i in range(inputs)]
    targets += [(Target(0, j), n + 1) for j in range(scope_outputs)]
    for tgt, k in targets:
        cands = sources_before(k)
        if cands:
            lo = draw(st.sampled_from([0, 1, 1, 1]))
            for src in draw(st.lists(st.sampled_from(cands), min_size=lo, max_size=2, unique=True)):
                g.add_edge(src, tgt)
    # Feedback nodes: any source -> feedback -> any target, with a strictly advancing summary.
    all_sources = sources_before(n + 1)
    all_targets = [t for t, _ in targets]
    feedbacks = draw(st.sampled_from([0, 1, 1, 2, 2, 3])) if all_sources and all_targets else 0
    for f in range(feedbacks):
        idx = n + 1 + f
        g.add_node(idx, 1, 1, [[draw(advancing_summaries(depth))]])
        src = draw(st.sampled_from(all_sources))
        backward = [t for t, k in targets if k <= src.node and t.node != 0] if src.node else []
        if backward and draw(st.booleans()):
            tgt = draw(st.sampled_from(backward))  # closes a cycle through the feedback
        else:
            tgt = draw(st.sampled_from(all_targets))
        g.add_edge(src, Target(idx, 0))
        g.add_edge(Source(idx, 0), tgt)
    # Often, a guaranteed cycle: a node's first input reaches its first output and a feedback closes the loop.
    loopable = [k for k, (inputs, outputs) in enumerate(shapes, start=1) if inputs and outputs]
    if loopable and draw(st.sampled_from([False, True, True])):
        k = draw(st.sampled_from(loopable))
        inputs, outputs, rows = g.nodes[k]
        if not rows[0][0]:
            rows[0][0] = [oracle.identity(depth)]
        idx = max(g.nodes) + 1
        g.add_node(idx, 1, 1, [[draw(advancing_summaries(depth))]])
        g.add_edge(Source(k, 0), Target(idx, 0))
        g.add_edge(Source(idx, 0), Target(k, 0))
    return depth, g


@st.composite
def scenarios(draw):
    depth, g = draw(graphs())
    ports = g.ports()
    keys = draw(st.lists(st.tuples(st.sampled_from(ports), times(depth)), min_size=1, max_size=6, unique=True))
    update = st.tuples(st.sampled_from(keys), st.sampled_from([-2, -1, -1, 1, 1, 1, 2]))
    batches = draw(st.lists(st.lists(update, min_size=1, max_size=4), min_size=1, max_size=10))
    return depth, g, [[(loc, t, d) for (loc, t), d in batch] for batch in batches]


# --- checks -------------------------------------------------------------------------------------------------


def check_state(g, paths, tracker, counts, pushed_acc, outputs_acc):
    fronts = oracle.frontiers(g, counts, paths)
    for p in g.ports():
        assert tracker.frontier(p) == fronts[p], f"frontier at {p}: tracker {tracker.frontier(p)} oracle {fronts[p]}"
        shown = sorted(t for (loc, t), c in pushed_acc.items() if loc == p and c)
        assert all(c in (0, 1) for (loc, _), c in pushed_acc.items() if loc == p), f"pushed at {p} not 0/1"
        assert shown == fronts[p], f"pushed changes at {p} accumulate to {shown}, frontier is {fronts[p]}"
    # Scope outputs: minimal results of non-boundary pointstamps, and timely's counts (one per pair of a
    # pointstamp-frontier element and a minimal summary to the output).
    scope_outputs = g.nodes[0][0]
    for j in range(scope_outputs):
        out = Target(0, j)
        expect = oracle.frontier_at(paths, counts, out, where=lambda loc: loc.node != 0)
        acc = outputs_acc[j]
        assert all(c >= 0 for c in acc.values()), f"negative output count at output {j}: {acc}"
        got = oracle.minimal(t for t, c in acc.items() if c > 0)
        assert got == expect, f"output {j}: accumulated output_changes give {got}, oracle {expect}"
        exact: Counter = Counter()
        for loc in {location for (location, _) in counts if location.node != 0}:
            own = oracle.minimal(t for (location, t), c in counts.items() if location == loc and c > 0)
            for t in own:
                for s in paths.get((loc, out), ()):
                    exact[oracle.add(s, t)] += 1
        assert {t: c for t, c in acc.items() if c} == {t: c for t, c in exact.items() if c}
    return fronts


def check_is_global(g, paths, tracker, counts, fronts, depth):
    for p in g.ports():
        candidates = set(fronts[p])
        for f in fronts[p]:
            for s in ([1, 2] if depth == 1 else [(0, 1), (1, 0), (1, 1)]):
                candidates.add(oracle.add(s, f))
        candidates.add(oracle.identity(depth))
        candidates.update(t for (loc, t) in counts if loc == p)
        for t in candidates:
            expect = oracle.is_global(g, counts, fronts, p, t)
            assert tracker.is_global(p, t) == expect, f"is_global({p}, {t}): tracker {not expect}, oracle {expect}"
        # Semantic reading for times with a positive pointstamp at p: is_global iff removing that pointstamp
        # would change the frontier at p.
        for (loc, t), c in counts.items():
            if loc == p and c > 0:
                without = dict(counts)
                without[(loc, t)] = 0
                changes = oracle.frontier_at(paths, without, p) != fronts[p]
                assert tracker.is_global(p, t) == changes, f"is_global({p}, {t}) vs removing it"


# --- tests --------------------------------------------------------------------------------------------------


@settings(max_examples=400, **SETTINGS)
@given(scenarios())
def test_frontiers_match_oracle_after_every_batch(scenario):
    depth, g, batches = scenario
    tracker, _ = g.builder().build()
    paths = oracle.path_summaries(g)
    counts: Counter = Counter()
    pushed_acc: Counter = Counter()
    outputs_acc: list[Counter] = [Counter() for _ in range(g.nodes[0][0])]

    def step(batch):
        for loc, t, d in batch:
            tracker.update(loc, t, d)
            counts[(loc, t)] += d
        tracker.propagate_all()
        for loc, t, d in tracker.drain_pushed():
            assert d in (1, -1)
            pushed_acc[(loc, t)] += d
        for j, batch_j in enumerate(tracker.output_changes):
            for t, d in batch_j.drain():
                outputs_acc[j][t] += d
        return check_state(g, paths, tracker, counts, pushed_acc, outputs_acc)

    for batch in batches:
        fronts = step(batch)
        check_is_global(g, paths, tracker, counts, fronts, depth)
    assert tracker.tracking_anything() == any(c > 0 for c in counts.values())
    # Retract everything that is left: every frontier and every output report ends empty.
    fronts = step([(loc, t, -c) for (loc, t), c in counts.items() if c])
    assert all(not f for f in fronts.values())
    assert all(not any(acc.values()) for acc in outputs_acc)
    assert not tracker.tracking_anything()


@settings(max_examples=200, **SETTINGS)
@given(graphs())
def test_path_summaries_and_scope_summary_match_oracle(dg):
    depth, g = dg
    builder = g.builder()
    paths = oracle.path_summaries(g)
    ports = g.ports()
    for dest in ports:
        got = builder.path_summaries_to(dest)
        for src in ports:
            expect = paths.get((src, dest), [])
            have = got[src].elements() if src in got else []
            assert have == expect, f"summaries {src} -> {dest}: builder {have}, oracle {expect}"
    tracker, scope_summary = builder.build()
    scope_outputs, scope_inputs = g.nodes[0][0], g.nodes[0][1]
    assert len(scope_summary) == scope_inputs
    for i in range(scope_inputs):
        for j in range(scope_outputs):
            expect = paths.get((Source(0, i), Target(0, j)), [])
            have = scope_summary[i][j].elements() if j in scope_summary[i] else []
            assert have == expect


# --- cycles -------------------------------------------------------------------------------------------------


@st.composite
def arbitrary_graphs(draw):
    """Random nodes, random summaries (some identity), edges from any output to any input: cycles of all kinds."""
    depth = draw(st.sampled_from([1, 2]))
    g = oracle.Graph(depth)
    n = draw(st.integers(1, 5))
    shapes = [(draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(n + 1)]
    for k, (inputs, outputs) in enumerate(shapes):
        rows = []
        for _ in range(inputs):
            row = []
            for _ in range(outputs):
                choice = draw(st.sampled_from(["identity", "empty", "advance", "random"]))
                if choice == "identity":
                    row.append([oracle.identity(depth)])
                elif choice == "empty":
                    row.append([])
                elif choice == "advance":
                    row.append(draw(advancing_summaries(depth)))
                else:
                    row.append(draw(st.lists(summary_values(depth), min_size=1, max_size=2)))
            rows.append(row)
        g.add_node(k, inputs, outputs, rows)
    sources = [Source(k, o) for k, (_, outs) in enumerate(shapes) for o in range(outs)]
    targets = [Target(k, i) for k, (ins, _) in enumerate(shapes) for i in range(ins)]
    if sources and targets:
        for s, t in draw(st.lists(st.tuples(st.sampled_from(sources), st.sampled_from(targets)), max_size=8)):
            g.add_edge(s, t)
    return g


@settings(max_examples=500, **SETTINGS)
@given(arbitrary_graphs())
def test_builder_rejects_exactly_identity_cycles(g):
    ident_graph = nx.DiGraph()
    ident_graph.add_nodes_from(g.ports())
    ident_graph.add_edges_from(g.identity_links())
    has_identity_cycle = not nx.is_directed_acyclic_graph(ident_graph)
    builder = g.builder()
    if has_identity_cycle:
        with pytest.raises(CycleError) as info:
            builder.build()
        cycle = info.value.cycle
        assert cycle, "CycleError without a cycle"
        for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True):  # each hop, the last back to the first
            assert ident_graph.has_edge(a, b), f"reported cycle hop {a} -> {b} is not an identity link"
    else:
        tracker, _ = builder.build()
        # Accepted graphs are trackable: one pointstamp anywhere settles to the oracle's frontiers.
        paths = oracle.path_summaries(g)
        ports = g.ports()
        if ports:
            loc = ports[len(ports) // 2]
            t0 = oracle.identity(g.depth)
            tracker.update(loc, t0, 1)
            tracker.propagate_all()
            fronts = oracle.frontiers(g, {(loc, t0): 1}, paths)
            for p in ports:
                assert tracker.frontier(p) == fronts[p]
            tracker.update(loc, t0, -1)
            tracker.propagate_all()
            assert all(not tracker.frontier(p) for p in ports)
            assert not tracker.tracking_anything()


# --- fixed vectors through the same checks ------------------------------------------------------------------


def test_v6_incomparable_summaries_against_oracle():
    """V6 of timely-reference.md, checked with the oracle and the reference's expected values."""
    g = oracle.Graph(2)
    g.add_node(0, 1, 1, [[[]]])
    g.add_node(1, 1, 1, [[[(1, 0), (0, 1)]]])
    g.add_node(2, 1, 1)
    g.add_edge(Source(0, 0), Target(1, 0))
    g.add_edge(Source(1, 0), Target(2, 0))
    g.add_edge(Source(2, 0), Target(0, 0))
    tracker, scope_summary = g.builder().build()
    assert scope_summary[0][0].elements() == [(0, 1), (1, 0)]
    paths = oracle.path_summaries(g)
    counts = Counter({(Source(0, 0), (0, 0)): 1})
    tracker.update(Source(0, 0), (0, 0), 1)
    tracker.propagate_all()
    fronts = oracle.frontiers(g, counts, paths)
    assert fronts[Source(1, 0)] == [(0, 1), (1, 0)]
    for p in g.ports():
        assert tracker.frontier(p) == fronts[p]
    batch = [(Target(1, 0), (0, 5), 1), (Source(0, 0), (0, 0), -1), (Source(0, 0), (1, 0), 1)]
    for loc, t, d in batch:
        tracker.update(loc, t, d)
        counts[(loc, t)] += d
    tracker.propagate_all()
    fronts = oracle.frontiers(g, counts, paths)
    assert fronts[Target(1, 0)] == [(0, 5), (1, 0)]
    assert fronts[Target(0, 0)] == [(0, 6), (1, 1), (2, 0)]
    for p in g.ports():
        assert tracker.frontier(p) == fronts[p]
    assert dict(tracker.output_changes[0].drain()) == {(0, 6): 1, (1, 5): 1}
    expected_global = {(0, 6): True, (1, 1): True, (2, 0): True, (1, 6): False, (3, 0): False, (0, 0): True}
    for t, v in expected_global.items():
        assert tracker.is_global(Source(1, 0), t) is v
        assert oracle.is_global(g, counts, fronts, Source(1, 0), t) is v
    for t, v in {(0, 5): True, (1, 0): True, (1, 5): False}.items():
        assert tracker.is_global(Target(1, 0), t) is v
        assert oracle.is_global(g, counts, fronts, Target(1, 0), t) is v


def test_oracle_detects_a_wrong_frontier():
    """The oracle is not vacuous: a frontier computed without the feedback path differs from it."""
    g = oracle.Graph(1)
    g.add_node(0, 0, 0)
    g.add_node(1, 2, 1)
    g.add_node(2, 1, 1, [[[1]]])
    g.add_edge(Source(1, 0), Target(2, 0))
    g.add_edge(Source(2, 0), Target(1, 1))
    fronts = oracle.frontiers(g, {(Target(1, 0), 3): 1})
    assert fronts[Target(1, 1)] == [4]
    assert fronts[Target(1, 0)] == [3]
    assert fronts[Source(2, 0)] == [4]
    assert oracle.frontiers(g, {(Target(1, 0), 3): -1}) == {p: [] for p in g.ports()}


# --- growth -------------------------------------------------------------------------------------------------


def weakened(draw, depth: int, rows):
    """A summary that the given one dominates (some paths missing or slower): what a nested scope had earlier."""
    slower = 1 if depth == 1 else (1, 0)
    out = []
    for row in rows:
        new_row = []
        for summaries in row:
            kind = draw(st.sampled_from(["same", "empty", "slower"]))
            if kind == "same":
                new_row.append(list(summaries))
            elif kind == "empty":
                new_row.append([])
            else:
                new_row.append([oracle.add(slower, s) for s in summaries])
        out.append(new_row)
    return out


@st.composite
def growth_scenarios(draw):
    """A final graph, the part of it built first, and the rest added one piece at a time between batches.

    Nodes are added in index order; an edge once both its nodes exist; a node may start with a weaker summary and
    get its final one later (sometimes weaker again and final again, which is not growth: the tracker recomputes).
    """
    depth, final = draw(graphs())
    nodes = sorted(final.nodes)
    m = draw(st.integers(0, len(nodes) - 1))
    initial_nodes = nodes[: m + 1]
    weaker = {k: weakened(draw, depth, final.nodes[k][2]) for k in nodes[1:] if draw(st.booleans())}
    again = [k for k in weaker if draw(st.booleans())]
    initial_edges = [e for e in final.edges if e[0].node in initial_nodes and e[1].node in initial_nodes
                     and draw(st.booleans())]
    items: list[tuple] = [("node", k) for k in nodes[m + 1:]]
    items += [("edge", s, t) for s, t in final.edges if (s, t) not in initial_edges]
    items += [("summary", k) for k in weaker] + [("summary", k) for k in again for _ in range(2)]
    items = draw(st.permutations(items))
    keys = draw(st.lists(st.tuples(st.sampled_from(final.ports()), times(depth)), min_size=1, max_size=6, unique=True))
    update = st.tuples(st.sampled_from(keys), st.sampled_from([-2, -1, -1, 1, 1, 1, 2]))
    batches = [draw(st.lists(st.lists(update, min_size=1, max_size=3), max_size=2)) for _ in range(len(items) + 1)]
    sequences = {k: ["final", "weaker", "final"] if k in again else ["final"] for k in weaker}
    return depth, final, initial_nodes, weaker, sequences, initial_edges, items, batches


@settings(max_examples=150, **SETTINGS)
@given(growth_scenarios())
def test_growth_matches_a_fresh_build_and_the_oracle(scenario):
    """Grow a built tracker step by step, batches in between: after every step its frontiers, implications, frontier
    changes and output reports equal the oracle's and a tracker built from scratch for the structure so far."""
    depth, final, initial_nodes, weaker, sequences, initial_edges, items, batches = scenario
    current = oracle.Graph(depth)
    for k in initial_nodes:
        inputs, outputs, rows = final.nodes[k]
        current.add_node(k, inputs, outputs, weaker.get(k, rows))
    for s, t in initial_edges:
        current.add_edge(s, t)
    tracker, _ = current.builder().build()
    counts: Counter = Counter()
    pushed_acc: Counter = Counter()
    outputs_acc: list[Counter] = [Counter() for _ in range(final.nodes[0][0])]

    def settle_and_check():
        tracker.propagate_all()
        for loc, t, d in tracker.drain_pushed():
            pushed_acc[(loc, t)] += d
        for j, batch_j in enumerate(tracker.output_changes):
            for t, d in batch_j.drain():
                outputs_acc[j][t] += d
        paths = oracle.path_summaries(current)
        check_state(current, paths, tracker, counts, pushed_acc, outputs_acc)
        scratch, scope_summary = current.builder().build()
        for (loc, t), c in counts.items():
            if c:
                scratch.update(loc, t, c)
        scratch.propagate_all()
        assert tracker.locations == scratch.locations
        for p in current.ports():
            assert tracker.implications_at(p).updates() == scratch.implications_at(p).updates(), f"implications at {p}"
            assert tracker.pointstamps_at(p).updates() == scratch.pointstamps_at(p).updates(), f"pointstamps at {p}"
        for i, row in enumerate(tracker.scope_summary):
            for j in range(final.nodes[0][0]):
                have = row[j].elements() if j in row else []
                assert have == paths.get((Source(0, i), Target(0, j)), []), f"scope summary {i} -> {j}"

    def apply(batch):
        ports = set(current.ports())
        for (loc, t), d in batch:
            if loc in ports:
                tracker.update(loc, t, d)
                counts[(loc, t)] += d

    for batch in batches[0]:
        apply(batch)
        settle_and_check()
    pending = list(items)
    step = 0
    while pending:
        ready = next(item for item in pending if _ready(item, current, pending))
        pending.remove(ready)
        kind, *what = ready
        if kind == "node":
            k = what[0]
            inputs, outputs, rows = final.nodes[k]
            rows = weaker.get(k, rows)
            tracker.add_node(k, inputs, outputs, rows)
            current.add_node(k, inputs, outputs, rows)
        elif kind == "edge":
            tracker.add_edge(*what)
            current.add_edge(*what)
        else:
            k = what[0]
            inputs, outputs, rows = final.nodes[k]
            rows = weaker[k] if sequences[k].pop(0) == "weaker" else rows
            tracker.set_node_summary(k, rows)
            current.add_node(k, inputs, outputs, rows)
        settle_and_check()
        step += 1
        for batch in batches[step]:
            apply(batch)
            settle_and_check()
    assert sorted(current.edges) == sorted(final.edges) and current.nodes == final.nodes
    apply([((loc, t), -c) for (loc, t), c in counts.items() if c])
    settle_and_check()
    assert not tracker.tracking_anything()


def _ready(item, current: oracle.Graph, pending: list) -> bool:
    """Nodes come in index order, edges once both nodes exist, a node's summaries once it exists."""
    kind, *what = item
    if kind == "node":
        return what[0] == min(k for kind2, *w in pending if kind2 == "node" for k in w)
    if kind == "edge":
        return what[0].node in current.nodes and what[1].node in current.nodes
    return what[0] in current.nodes


@settings(max_examples=200, **SETTINGS)
@given(arbitrary_graphs())
def test_growth_rejects_exactly_the_edge_that_closes_an_identity_cycle(g):
    """Edges added one by one to a built tracker: each that would close an identity cycle raises and is left out."""
    start = oracle.Graph(g.depth)
    for k, (inputs, outputs, rows) in sorted(g.nodes.items()):
        start.add_node(k, inputs, outputs, rows)
    tracker, _ = start.builder().build()
    kept = oracle.Graph(g.depth)
    kept.nodes = dict(start.nodes)
    for s, t in g.edges:
        ident = nx.DiGraph()
        ident.add_edges_from(kept.identity_links() + ([(s, t)]))
        closes = not nx.is_directed_acyclic_graph(ident)
        if closes:
            with pytest.raises(CycleError) as info:
                tracker.add_edge(s, t)
            cycle = info.value.cycle
            for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True):  # each hop, the last back to the first
                assert ident.has_edge(a, b), f"reported cycle hop {a} -> {b} is not an identity link"
        else:
            tracker.add_edge(s, t)
            kept.add_edge(s, t)
    assert sorted(loc for loc in tracker.locations) == tracker.locations
    ports = kept.ports()
    if ports:
        t0 = oracle.identity(g.depth)
        tracker.update(ports[0], t0, 1)
        tracker.propagate_all()
        fronts = oracle.frontiers(kept, {(ports[0], t0): 1})
        assert all(tracker.frontier(p) == fronts[p] for p in ports)
