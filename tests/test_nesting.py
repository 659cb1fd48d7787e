"""Nested scopes are a lossless abstraction: frontiers at outer ports do not depend on whether part of the graph is
tracked inside a nested scope or flattened into its parent (the seeds' "zero-cost abstraction" claim).

A random outer dataflow contains one nested scope K. K is either a *region* (same depth as its parent) or an
*iterative* scope (one level deeper, with feedback ``(…, +1)`` in the new inner coordinate). The same computation
is tracked three ways:

* **nested**: a root :class:`~tracker.subgraph.Subgraph` with K added by ``add_scope``. Each action is one atomic
  batch for the scope it happens in. A message produced into K's input waits at the parent's ``Target(K, i)``. When
  K takes it in, K's batch has ``Source(0, i) -d`` plus ``+d`` at the inner targets, and the parent learns of the
  consumption through K's consumed report. Messages that reach K's output ``j`` are ``Target(0, j) +d`` in K's batch,
  and the parent sees them produced at every target of ``Source(K, j)``.
* **flat**: one Tracker over the whole graph. K's boundary is replaced by pass-through identity nodes: ``E_i`` for
  each scope input (its input port plays ``Target(K, i)``, where messages wait to enter) and ``L_j`` for each scope
  output (its output port plays ``Source(K, j)``). For a region this is literally the same graph. For an iterative
  scope every time is lifted to the inner depth (outer ``t`` becomes ``(t, 0)`` and outer summaries ``s`` become
  ``(s, 0)``), and an outer port's frontier is compared through ``to_outer``. Inner loops still strictly advance,
  so the Builder accepts the graph.
* **oracle**: the brute-force oracle on the flattened graph at the *outer* depth: inner summaries mapped with
  ``summarize``, inner pointstamps with ``to_outer``. Inner loops become identity cycles there, which a Builder
  rejects but the oracle's fixpoint handles.

After every action (and ``schedule()`` of the root), at every outer port, the nested frontier equals the flat one
and the oracle's. K's reported internal capabilities equal the oracle's minimal ``to_outer(s(t))`` over inner
pointstamps. Every inner port's frontier equals the oracle's, given the inner pointstamps and the parent's frontier
at K's inputs. For a region, every inner port also equals the flat tracker. At the end everything drains to empty.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import oracle
from tests.conftest import tracker_of
from tracker.reachability import Builder, Location, Source, Target
from tracker.subgraph import Subgraph
from tracker.timestamp import domain

OFF, ENTER, LEAVE = 100, 200, 300  # flat node numbers: inner node x -> OFF + x; E_i -> ENTER + i; L_j -> LEAVE + j

# --- times of any depth -------------------------------------------------------------------------------------


def units(depth: int) -> list:
    """The unit summaries of a depth (one coordinate +1): the smallest strict advances."""
    if depth == 1:
        return [1]
    return [(u, 0) for u in units(depth - 1)] + [(oracle.identity(depth - 1), 1)]


def bound_for(depth: int, outer_depth: int):
    """Times stay below this (componentwise), so every execution terminates."""
    if depth == 1:
        return 4
    if depth == 2:
        return (3, 3) if outer_depth == 1 else (2, 2)
    return ((1, 2), 3)


def small_summaries(depth: int):
    if depth == 1:
        return st.integers(0, 2)
    return st.tuples(small_summaries(depth - 1), st.integers(0, 1))


def summary_rows(depth: int, inputs: int, outputs: int):
    ident = oracle.identity(depth)
    cell = st.one_of(
        st.just([ident]), st.just([ident]), st.just([]), st.lists(small_summaries(depth), min_size=1, max_size=2)
    )
    return st.lists(st.lists(cell, min_size=outputs, max_size=outputs), min_size=inputs, max_size=inputs)


def advancing(depth: int):
    return st.lists(small_summaries(depth).filter(lambda s: s != oracle.identity(depth)), min_size=1, max_size=2)


# --- random structure ---------------------------------------------------------------------------------------


@dataclass
class Node:
    inputs: int
    outputs: int
    summary: list | None  # None: the identity
    caps: list = field(default_factory=list)  # initial capabilities at output 0


@dataclass
class Structure:
    outer_depth: int
    inner_depth: int
    k: int  # the nested scope's node number in the parent
    k_inputs: int
    k_outputs: int
    outer: dict  # node -> Node (K excluded)
    outer_edges: list
    inner: dict  # node -> Node
    inner_edges: list

    @property
    def iterative(self) -> bool:
        return self.inner_depth > self.outer_depth


@st.composite
def structures(draw):
    d = draw(st.sampled_from([1, 1, 2]))
    iterative = draw(st.booleans())
    di = d + 1 if iterative else d
    # outer: node 1 is an input holding a capability; then 1..3 operators with K among them; feedback nodes last.
    n_mid = draw(st.integers(1, 3))
    k = draw(st.integers(2, n_mid + 2))
    k_inputs, k_outputs = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    outer = {1: Node(0, 1, [], [oracle.identity(d)])}
    shapes = {}
    for n in range(2, n_mid + 3):
        if n == k:
            shapes[n] = (k_inputs, k_outputs)
        else:
            ins, outs = draw(st.integers(1, 2)), draw(st.integers(0, 2))
            shapes[n] = (ins, outs)
            outer[n] = Node(ins, outs, draw(summary_rows(d, ins, outs)))
    shapes[1] = (0, 1)

    def wire(shapes, first_sources):
        """Each input of node n takes one or two sources from earlier nodes (DAG)."""
        edges = []
        for n in sorted(shapes):
            for i in range(shapes[n][0]):
                earlier = [Source(m, o) for m in sorted(shapes) if m < n for o in range(shapes[m][1])]
                cands = list(first_sources) + earlier
                if cands:
                    for src in draw(st.lists(st.sampled_from(cands), min_size=1, max_size=2, unique=True)):
                        edges.append((src, Target(n, i)))
        return edges

    outer_edges = wire(shapes, [])
    # Outer feedback: from any source back to an input of a node at or before it (often through K).
    nxt = n_mid + 3
    sources = [Source(m, o) for m in sorted(shapes) for o in range(shapes[m][1])]
    for _ in range(draw(st.integers(0, 2))):
        src = draw(st.sampled_from(sources))
        back = [Target(m, i) for m in sorted(shapes) if 1 < m <= max(src.node, 2) for i in range(shapes[m][0])]
        outer[nxt] = Node(1, 1, [[draw(advancing(d))]])
        outer_edges += [(src, Target(nxt, 0)), (Source(nxt, 0), draw(st.sampled_from(back)))]
        sources.append(Source(nxt, 0))
        nxt += 1
    # inner: 1..3 operators, wired from the scope inputs; each scope output takes 1..2 sources; inner feedback.
    q = draw(st.integers(1, 3))
    inner = {}
    ishapes = {}
    for x in range(1, q + 1):
        ins, outs = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        ishapes[x] = (ins, outs)
        caps = [oracle.identity(di)] if draw(st.integers(0, 3)) == 0 else []
        inner[x] = Node(ins, outs, draw(summary_rows(di, ins, outs)), caps)
    entry = [Source(0, i) for i in range(k_inputs)]
    inner_edges = wire(ishapes, entry)
    isources = entry + [Source(x, o) for x in ishapes for o in range(ishapes[x][1])]
    for j in range(k_outputs):
        for src in draw(st.lists(st.sampled_from(isources), min_size=1, max_size=2, unique=True)):
            inner_edges.append((src, Target(0, j)))
    # Inner feedback: in an iterative scope usually the loop summary (0, +1) in the new coordinate, sometimes any
    # strictly advancing antichain; in a region any strictly advancing antichain.
    loop = (oracle.identity(d), 1)
    nxt = q + 1
    for _ in range(draw(st.integers(1 if iterative else 0, 2))):
        src = draw(st.sampled_from(isources[k_inputs:]))
        back = [Target(x, i) for x in ishapes if x <= src.node for i in range(ishapes[x][0])]
        if iterative and draw(st.sampled_from([True, True, False])):
            summ = [loop]
        else:
            summ = draw(advancing(di))
        inner[nxt] = Node(1, 1, [[summ]])
        inner_edges += [(src, Target(nxt, 0)), (Source(nxt, 0), draw(st.sampled_from(back)))]
        nxt += 1
    return Structure(d, di, k, k_inputs, k_outputs, outer, outer_edges, inner, inner_edges)


# --- the three trackings ------------------------------------------------------------------------------------


class Setup:
    def __init__(self, s: Structure):
        self.s = s
        d, di = s.outer_depth, s.inner_depth
        self.iterative = s.iterative
        # nested
        root = Subgraph((), "root", 0, 0, depth=d)
        for n, node in sorted(s.outer.items()):
            root.add_operator(n, f"op{n}", node.inputs, node.outputs, node.summary or None,
                              capabilities=[node.caps] if node.caps else None)
        scope = root.add_scope(s.k, "K", s.k_inputs, s.k_outputs, depth=di)
        for x, node in sorted(s.inner.items()):
            scope.add_operator(x, f"in{x}", node.inputs, node.outputs, node.summary,
                               capabilities=[node.caps] if node.caps else None)
        for a, b in s.inner_edges:
            scope.add_edge(a, b)
        for a, b in s.outer_edges:
            root.add_edge(a, b)
        self.root, self.scope = root, scope
        # flat tracker (lifted to the inner depth for an iterative scope) and the oracle's flat graph (outer depth)
        fd = di
        self.flat_builder = Builder(domain(fd), "flat")
        self.flat_graph = oracle.Graph(d)
        fb, fg = self.flat_builder, self.flat_graph
        lift = self.lift
        fb.add_node(0, 0, 0)
        fg.add_node(0, 0, 0)
        for n, node in sorted(s.outer.items()):
            rows = None if not node.summary else [[[lift(x) for x in cell] for cell in row] for row in node.summary]
            fb.add_node(n, node.inputs, node.outputs, rows)
            fg.add_node(n, node.inputs, node.outputs, node.summary or None)
        for x, node in sorted(s.inner.items()):
            fb.add_node(OFF + x, node.inputs, node.outputs, node.summary)
            fg.add_node(OFF + x, node.inputs, node.outputs,
                        [[[self.summarize(v) for v in cell] for cell in row] for row in node.summary])
        for i in range(s.k_inputs):
            fb.add_node(ENTER + i, 1, 1)
            fg.add_node(ENTER + i, 1, 1)
        for j in range(s.k_outputs):
            fb.add_node(LEAVE + j, 1, 1)
            fg.add_node(LEAVE + j, 1, 1)
        for a, b in s.outer_edges:
            e = (self.flat_loc("o", a), self.flat_loc("o", b))
            fb.add_edge(*e)
            fg.add_edge(*e)
        for a, b in s.inner_edges:
            e = (self.flat_loc("i", a), self.flat_loc("i", b))
            fb.add_edge(*e)
            fg.add_edge(*e)
        self.flat, _ = fb.build()
        self.flat_paths = oracle.path_summaries(fg)
        # the inner graph alone, for checking K's own tracker
        self.inner_graph = oracle.Graph(di)
        no_paths: list[list[list]] = [[[] for _ in range(s.k_inputs)] for _ in range(s.k_outputs)]
        self.inner_graph.add_node(0, s.k_outputs, s.k_inputs, no_paths)
        for x, node in sorted(s.inner.items()):
            self.inner_graph.add_node(x, node.inputs, node.outputs, node.summary)
        for a, b in s.inner_edges:
            self.inner_graph.add_edge(a, b)
        self.inner_paths = oracle.path_summaries(self.inner_graph)
        # edges per scope, for producing
        self.out_edges: dict[str, dict] = {"o": {}, "i": {}}
        for a, b in s.outer_edges:
            self.out_edges["o"].setdefault(a, []).append(b)
        for a, b in s.inner_edges:
            self.out_edges["i"].setdefault(a, []).append(b)

    # time and location maps

    def to_inner(self, t):
        return (t, 0) if self.iterative else t

    def to_outer(self, t):
        return t[0] if self.iterative else t

    def summarize(self, s):
        return s[0] if self.iterative else s

    lift = to_inner  # outer times and summaries into the flat tracker

    def flat_loc(self, scope: str, loc: Location) -> Location:
        k = self.s.k
        if scope == "o":
            if loc.node == k:
                return Target(ENTER + loc.port, 0) if loc.is_target else Source(LEAVE + loc.port, 0)
            return loc
        if loc.node == 0:
            return Source(ENTER + loc.port, 0) if loc.is_source else Target(LEAVE + loc.port, 0)
        return Location(OFF + loc.node, loc.kind, loc.port)

    def flat_time(self, scope: str, t):
        return self.lift(t) if scope == "o" else t

    def oracle_time(self, scope: str, t):
        return t if scope == "o" else self.to_outer(t)


# --- the execution ------------------------------------------------------------------------------------------


class Execution:
    """A single-worker execution: real messages and capabilities, each action one atomic batch per scope."""

    def __init__(self, setup: Setup, rng: random.Random):
        self.x = setup
        self.rng = rng
        s = setup.s
        self.bounds = {"o": bound_for(s.outer_depth, s.outer_depth), "i": bound_for(s.inner_depth, s.outer_depth)}
        self.units = {"o": units(s.outer_depth), "i": units(s.inner_depth)}
        # ((scope, location), time) -> count: messages at targets, capabilities at sources
        self.state: Counter = Counter()
        self.nodes = {"o": s.outer, "i": s.inner}
        for scope, nodes in self.nodes.items():
            for n, node in nodes.items():
                for t in node.caps:
                    self.state[((scope, Source(n, 0)), t)] += 1
        for ((scope, loc), t), c in self.state.items():
            self.x.flat.update(setup.flat_loc(scope, loc), setup.flat_time(scope, t), c)
        self.finishing = False

    def ok(self, scope, t) -> bool:
        return oracle.le(t, self.bounds[scope])

    def up(self, scope, t):
        u = oracle.add(self.rng.choice(self.units[scope]), t)
        return u if self.ok(scope, u) else None

    # producing

    def emit(self, scope: str, src: Location, t, nested: list, logical: list) -> None:
        """Messages at time t to every target of src (in its scope)."""
        x = self.x
        for tgt in x.out_edges[scope].get(src, ()):
            if scope == "i" and tgt.node == 0:
                nested.append((tgt, t, 1))  # K reports it as produced at its output
                for z in x.out_edges["o"].get(Source(x.s.k, tgt.port), ()):
                    logical.append((("o", z), x.to_outer(t), 1))
            else:
                nested.append((tgt, t, 1))
                logical.append(((scope, tgt), t, 1))

    def actions(self) -> list:
        acts = []
        k = self.x.s.k
        for ((scope, loc), t), c in self.state.items():
            if c <= 0:
                continue
            if loc.is_source:
                acts.append(("drop", scope, loc, t))
                if not self.finishing:
                    acts.append(("downgrade", scope, loc, t))
                    if self.x.out_edges[scope].get(loc):
                        acts += [("produce", scope, loc, t)] * 2
            elif scope == "o" and loc.node == k:
                acts += [("enter", scope, loc, t)] * 2
            else:
                acts += [("consume", scope, loc, t)] * 2
        return acts

    def perform(self, action) -> None:
        kind, scope, loc, t = action
        x, rng = self.x, self.rng
        nested: list = []
        logical: list = []
        target_scope = scope
        if kind == "drop":
            nested.append((loc, t, -1))
            logical.append(((scope, loc), t, -1))
        elif kind == "downgrade":
            u = self.up(scope, t)
            nested.append((loc, t, -1))
            logical.append(((scope, loc), t, -1))
            if u is not None:
                nested.append((loc, u, 1))
                logical.append(((scope, loc), u, 1))
        elif kind == "produce":
            u = t if rng.random() < 0.5 else (self.up(scope, t) or t)
            self.emit(scope, loc, u, nested, logical)
        elif kind == "enter":
            target_scope = "i"
            ti = x.to_inner(t)
            logical.append((("o", loc), t, -1))
            nested.append((Source(0, loc.port), ti, -1))
            if not self.finishing:  # when finishing, the message enters and is dropped at once
                self.emit("i", Source(0, loc.port), ti, nested, logical)
        else:  # consume
            nested.append((loc, t, -1))
            logical.append(((scope, loc), t, -1))
            node = self.nodes[scope][loc.node]
            identity = [oracle.identity(x.s.outer_depth)]
            options = [(o, s) for o in range(node.outputs)
                       for s in oracle.minimal(node.summary[loc.port][o] if node.summary else identity)]
            if options and not self.finishing:
                o, s = rng.choice(options)
                u = oracle.add(s, t)
                if rng.random() < 0.3:
                    u = self.up(scope, u) or u
                if self.ok(scope, u):
                    src = Source(loc.node, o)
                    how = rng.choice(["capability", "produce", "both", "nothing"])
                    if how in ("capability", "both"):
                        nested.append((src, u, 1))
                        logical.append(((scope, src), u, 1))
                    if how in ("produce", "both"):
                        self.emit(scope, src, u, nested, logical)
        # nested: one atomic batch for the scope the action happened in
        (x.root if target_scope == "o" else x.scope).receive(nested)
        x.root.schedule()
        # flat: the same action as one batch
        for (sc, location), tt, d in logical:
            self.state[((sc, location), tt)] += d
            x.flat.update(x.flat_loc(sc, location), x.flat_time(sc, tt), d)
        x.flat.propagate_all()
        assert all(c >= 0 for c in self.state.values()), "the execution consumed something that was not there"

    # checks

    def check(self) -> None:
        x = self.x
        s = x.s
        root, scope, flat = x.root, x.scope, x.flat
        ocounts: Counter = Counter()
        for ((sc, location), t), c in self.state.items():
            ocounts[(x.flat_loc(sc, location), x.oracle_time(sc, t))] += c
        expected = oracle.frontiers(x.flat_graph, ocounts, x.flat_paths)
        # every outer port
        for loc in tracker_of(root).locations:
            if loc.node == 0:
                continue
            fl = x.flat_loc("o", loc)
            nested = tracker_of(root).frontier(loc)
            flat_f = oracle.minimal(x.to_outer(t) for t in flat.frontier(fl)) if x.iterative else flat.frontier(fl)
            assert nested == expected[fl], f"outer {loc}: nested {nested}, oracle {expected[fl]}"
            assert nested == flat_f, f"outer {loc}: nested {nested}, flat {flat_f}"
        # K's internal capabilities, as reported to the parent
        inner_counts = Counter({(location, t): c for ((sc, location), t), c in self.state.items() if sc == "i"})
        for j in range(s.k_outputs):
            expect = oracle.minimal(
                x.to_outer(oracle.add(p, t))
                for (location, t), c in inner_counts.items() if c > 0
                for p in x.inner_paths.get((location, Target(0, j)), ())
            )
            assert scope.reported_outputs()[j] == expect, f"K's capabilities at output {j}"
            assert tracker_of(root).pointstamps_at(Source(s.k, j)).frontier() == expect
        # every inner port: K's tracker from the inner pointstamps and the parent's frontier at K's inputs
        for i in range(s.k_inputs):
            for f in tracker_of(root).frontier(Target(s.k, i)):
                inner_counts[(Source(0, i), x.to_inner(f))] += 1
        inner_expected = oracle.frontiers(x.inner_graph, inner_counts, x.inner_paths)
        for loc in tracker_of(scope).locations:
            assert tracker_of(scope).frontier(loc) == inner_expected[loc], f"inner {loc}"
            if not x.iterative:
                assert tracker_of(scope).frontier(loc) == flat.frontier(x.flat_loc("i", loc)), f"inner {loc} vs flat"

    def run(self, steps: int) -> None:
        self.x.root.schedule()
        self.x.flat.propagate_all()
        self.check()
        for _ in range(steps):
            acts = self.actions()
            if not acts:
                break
            self.perform(self.rng.choice(acts))
            self.check()
        self.finishing = True
        while True:
            acts = self.actions()
            if not acts:
                break
            self.perform(self.rng.choice(acts))
            self.check()
        assert not +self.state
        assert self.x.root.schedule() is False
        assert not tracker_of(self.x.scope).tracking_anything()
        assert not self.x.flat.tracking_anything()
        for sc in self.x.root.scopes():
            assert all(tracker_of(sc).frontier(loc) == [] for loc in tracker_of(sc).locations)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(structures(), st.integers(0, 2**32 - 1))
def test_nested_scope_is_a_lossless_abstraction(structure, seed):
    setup = Setup(structure)
    Execution(setup, random.Random(seed)).run(steps=40)


def test_region_and_iterative_examples():
    """A fixed shape, as a region and as an iterative scope: input(1) -> concat(5) -> K(2) -> sink(3), with an outer
    +1 feedback(4) from K back to the concat, and inside K a concat(1) with an inner loop through feedback(2)."""
    for iterative in (False, True):
        d, di = 1, 2 if iterative else 1
        loop = [(0, 1)] if iterative else [1]
        s = Structure(
            outer_depth=d, inner_depth=di, k=2, k_inputs=1, k_outputs=1,
            outer={1: Node(0, 1, [], [0]), 3: Node(1, 0, [[]]), 4: Node(1, 1, [[[1]]]), 5: Node(2, 1, None)},
            outer_edges=[(Source(1, 0), Target(5, 0)), (Source(5, 0), Target(2, 0)), (Source(2, 0), Target(3, 0)),
                         (Source(2, 0), Target(4, 0)), (Source(4, 0), Target(5, 1))],
            inner={1: Node(2, 1, [[[oracle.identity(di)]], [[oracle.identity(di)]]]), 2: Node(1, 1, [[loop]])},
            inner_edges=[(Source(0, 0), Target(1, 0)), (Source(1, 0), Target(2, 0)), (Source(2, 0), Target(1, 1)),
                         (Source(1, 0), Target(0, 0))],
        )
        for seed in range(5):
            setup = Setup(s)
            ex = Execution(setup, random.Random(seed))
            ex.run(steps=60)
