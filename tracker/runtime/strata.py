"""Strata: Hydroflow's answer to non-monotonic operators, scheduled with timely's progress tracking.

A :class:`Program` is a graph of named operators, each declared monotone or not. A non-monotonic operator (set
difference, negation) must see all of its input for a tick before it emits, so every input of it must come from an
earlier stratum; :func:`stratify` computes the strata with networkx and rejects a negation inside a loop that has
no tick (``next_tick``) on it, naming the cycle. Loops of monotone operators (recursion) run to fixed point inside
an iterative scope, times ``(tick, iteration)``; a ``next_tick`` edge moves facts to the next tick (a feedback
with summary +1 at the tick level), which is what makes a loop through negation legal.

The :class:`StrataRunner` runs one stratum to fixed point before the next (it schedules only the operators of the
lowest stratum not yet complete for the current tick), ticks after the last, and reports each stratum's completion
per tick. Completion is read off the tracker: stratum ``s`` is complete for tick ``t`` once no output of any of its
operators can still produce ``t``. Non-monotonic operators wait for a notification at the tick, so they are correct
under any schedule; the stratum order makes the execution the one the design describes. Strata and completions are
recorded in the worker's progress log (operator ``attrs`` and ``mark`` records).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracker.runtime.context import OperatorContext
from tracker.runtime.graph import Exchange, ScopeBuilder, Stream
from tracker.runtime.operators import Operator
from tracker.runtime.worker import Worker

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Program", "StratificationError", "stratify", "StrataRunner", "stable_hash"]


class StratificationError(ValueError):
    """A negation (non-monotonic operator) sits on a cycle with no tick: no stratification exists."""

    def __init__(self, cycle: list[str], negated: str):
        self.cycle = cycle
        path = " -> ".join(cycle + cycle[:1])
        super().__init__(
            f"non-monotonic operator {negated!r} is inside a loop without a tick: {path}; "
            "it could never see complete input. Put a next_tick on the cycle, or make the operator monotone"
        )


def stable_hash(value: Any) -> int:
    """A hash that is the same in every process (Python's own ``hash`` of a str is salted per process)."""
    return zlib.crc32(repr(value).encode())


@dataclass
class Node:
    name: str
    kind: str
    inputs: list[str]
    monotone: bool = True
    fn: Any = None
    extra: dict = field(default_factory=dict)


class Program:
    """A dataflow program over sets of facts, per tick. Inputs may name operators declared later (recursion)."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}

    def _add(self, node: Node) -> str:
        if node.name in self.nodes:
            raise ValueError(f"operator {node.name!r} is declared twice")
        self.nodes[node.name] = node
        return node.name

    def input(self, name: str) -> str:
        return self._add(Node(name, "input", []))

    def map(self, name: str, source: str, f: Callable[[Any], Any]) -> str:
        return self._add(Node(name, "map", [source], True, f))

    def filter(self, name: str, source: str, pred: Callable[[Any], bool]) -> str:
        return self._add(Node(name, "filter", [source], True, pred))

    def union(self, name: str, *sources: str) -> str:
        """Monotone; distinct per tick (so recursion reaches a fixed point)."""
        return self._add(Node(name, "union", list(sources)))

    def join(self, name: str, left: str, right: str, left_key: Callable, right_key: Callable, combine: Callable) -> str:
        return self._add(Node(name, "join", [left, right], True, combine, {"lkey": left_key, "rkey": right_key}))

    def difference(self, name: str, positive: str, negative: str) -> str:
        """Non-monotone: the facts of ``positive`` not in ``negative``, once both are complete for the tick."""
        return self._add(Node(name, "difference", [positive, negative], False))

    def next_tick(self, name: str, source: str) -> str:
        """Dedalus' ``@next``: the facts of ``source`` at tick t arrive at tick t + 1."""
        return self._add(Node(name, "next_tick", [source]))

    def output(self, name: str, source: str) -> str:
        return self._add(Node(name, "output", [source]))

    def check(self) -> None:
        for node in self.nodes.values():
            for src in node.inputs:
                if src not in self.nodes:
                    raise ValueError(f"operator {node.name!r} reads {src!r}, which is not declared")


def _graph(program: Program):
    import networkx as nx

    g = nx.DiGraph()
    g.add_nodes_from(program.nodes)
    for node in program.nodes.values():
        for src in node.inputs:
            if program.nodes[src].kind != "next_tick":  # a tick edge does not constrain strata
                g.add_edge(src, node.name)
    return g


def stratify(program: Program) -> dict[str, int]:
    """Each operator's stratum: every input of a non-monotonic operator comes from a strictly earlier stratum."""
    import networkx as nx

    program.check()
    g = _graph(program)
    comps = list(nx.strongly_connected_components(g))
    comp_of = {n: k for k, c in enumerate(comps) for n in c}
    for u, v in g.edges:
        if comp_of[u] == comp_of[v] and not program.nodes[v].monotone:
            cycle = nx.shortest_path(g.subgraph(comps[comp_of[u]]), v, u)
            raise StratificationError(cycle, v)
    cond = nx.condensation(g, comps)
    stratum_of_comp: dict[int, int] = {}
    for k in nx.topological_sort(cond):
        s = 0
        for j in cond.predecessors(k):
            for u in comps[j]:
                for v in comps[k]:
                    if g.has_edge(u, v):
                        s = max(s, stratum_of_comp[j] + (0 if program.nodes[v].monotone else 1))
        stratum_of_comp[k] = s
    strata = {n: stratum_of_comp[comp_of[n]] for n in program.nodes}
    for n, node in program.nodes.items():  # a tick edge belongs with what feeds it
        if node.kind == "next_tick":
            strata[n] = strata[node.inputs[0]]
    return strata


# --- compiling to the runtime ------------------------------------------------------------------------


def _map(f: Callable[[Any], Any]) -> Callable[[OperatorContext], None]:
    def logic(ctx: OperatorContext) -> None:
        for t, rs in ctx.input(0):
            ctx.output(0).give_all(t, [f(r) for r in rs])
    return logic


def _filter(pred: Callable[[Any], bool]) -> Callable[[OperatorContext], None]:
    def logic(ctx: OperatorContext) -> None:
        for t, rs in ctx.input(0):
            ctx.output(0).give_all(t, [r for r in rs if pred(r)])
    return logic


def _hashed(key: Callable[[Any], Any]) -> Callable[[Any], int]:
    """An exchange key: the stable hash of ``key(record)``."""
    return lambda r: stable_hash(key(r))


def _distinct(seen: dict) -> Callable[[OperatorContext], None]:
    def logic(ctx: OperatorContext) -> None:
        out = ctx.output(0)
        for i in range(ctx.spec.inputs):
            for time, records in ctx.input(i):
                tick_seen = seen.setdefault(time[0] if type(time) is tuple else time, set())
                new = []
                for r in records:
                    if r not in tick_seen:
                        tick_seen.add(r)
                        new.append(r)
                if new:
                    out.give_all(time, new)
    return logic


def _join(node: Node) -> Callable[[OperatorContext], None]:
    state: dict = {}
    lkey, rkey, combine = node.extra["lkey"], node.extra["rkey"], node.fn

    def logic(ctx: OperatorContext) -> None:
        out = ctx.output(0)
        for side, key in ((0, lkey), (1, rkey)):
            for time, records in ctx.input(side):
                tick = time[0] if type(time) is tuple else time
                left, right = state.setdefault(tick, ({}, {}))
                mine, other = (left, right) if side == 0 else (right, left)
                produced = []
                for r in records:
                    k = key(r)
                    mine.setdefault(k, []).append(r)
                    for o in other.get(k, ()):
                        produced.append(combine(r, o) if side == 0 else combine(o, r))
                if produced:
                    out.give_all(time, produced)
    return logic


def _difference() -> Callable[[OperatorContext], None]:
    pending: dict = {}

    def logic(ctx: OperatorContext) -> None:
        for side in (0, 1):
            for time, records in ctx.input(side):
                if time not in pending:
                    pending[time] = (set(), set())
                    ctx.notify_at(ctx.retain(time))
                pending[time][side].update(records)
        for time, _cap in ctx.notifications():
            pos, neg = pending.pop(time)
            result = pos - neg
            if result:
                ctx.output(0).give_all(time, sorted(result, key=repr))
    return logic


def _logic_and_pacts(node: Node, inputs: int) -> tuple[Callable[[OperatorContext], None], list | None]:
    """What a program operator does, and how its inputs are partitioned (``None``: where they are produced)."""
    if node.kind == "map":
        return _map(node.fn), None
    if node.kind == "filter":
        return _filter(node.fn), None
    if node.kind == "union":
        return _distinct({}), [Exchange(stable_hash)] * inputs
    if node.kind == "join":
        return _join(node), [Exchange(_hashed(node.extra["lkey"])), Exchange(_hashed(node.extra["rkey"]))]
    if node.kind == "difference":
        return _difference(), [Exchange(stable_hash)] * 2
    raise ValueError(f"unknown operator kind {node.kind!r}")  # pragma: no cover


class StrataRunner:
    """Builds a :class:`Program` on a worker and runs it tick by tick, stratum by stratum."""

    def __init__(self, worker: Worker, program: Program, name: str = "strata"):
        self.worker = worker
        self.program = program
        self.strata = stratify(program)
        self.count = max(self.strata.values(), default=-1) + 1
        self.results: dict[str, dict[int, set]] = {n: {} for n, node in program.nodes.items() if node.kind == "output"}
        self.completions: list[tuple[int, int]] = []  # (tick, stratum) in the order they completed
        self._inputs: dict[str, Any] = {}
        self._stratum_ports: dict[int, list] = {s: [] for s in range(self.count)}
        self._ops_by_stratum: dict[int, list] = {}
        self.tick = 0
        worker.dataflow(self._build, name)
        for ctx in worker.ops:
            s = ctx.spec.attrs.get("stratum")
            if ctx.path[:1] == self._path[:1] and s is not None:
                self._ops_by_stratum.setdefault(s, []).append(ctx)

    # --- building --------------------------------------------------------------------------------------

    def _build(self, root: ScopeBuilder) -> None:
        import networkx as nx

        self._path = root.path
        program, strata = self.program, self.strata
        g = _graph(program)
        comps = list(nx.strongly_connected_components(g))
        cyclic = {k for k, c in enumerate(comps) if len(c) > 1 or any(g.has_edge(n, n) for n in c)}
        comp_of = {n: k for k, c in enumerate(comps) for n in c}
        streams: dict[str, Stream] = {}
        ticks: dict[str, Any] = {}
        for name, node in program.nodes.items():  # tick edges first: their streams may be read before they are fed
            if node.kind == "next_tick":
                handle, stream = root.feedback(summary=1, name=name)
                ticks[name] = handle
                streams[name] = stream
        cond = nx.condensation(g, comps)
        for k in nx.topological_sort(cond):
            members = [n for n in program.nodes if comp_of[n] == k and program.nodes[n].kind != "next_tick"]
            if not members:
                continue
            if k in cyclic:
                self._build_loop(root, members, g, streams)
            else:
                (n,) = members
                out = self._build_node(root, program.nodes[n], [streams[s] for s in program.nodes[n].inputs])
                if out is not None:
                    streams[n] = out
        for name, handle in ticks.items():
            handle.connect(streams[program.nodes[name].inputs[0]])
            self._ports(root, streams[name], strata[name])

    def _attrs(self, node: Node) -> dict:
        return {"stratum": self.strata[node.name], "monotone": node.monotone, "kind": node.kind}

    def _build_node(self, scope: ScopeBuilder, node: Node, inputs: list[Stream]) -> Stream | None:
        """One operator of the program as an operator of the runtime; an output has no stream."""
        attrs = self._attrs(node)
        if node.kind == "output":
            self._build_output(scope, node, inputs, attrs)
            return None
        if node.kind == "input":
            handle, out = scope.new_input(node.name)
            scope.ops[out.source.node].attrs.update(attrs)
            self._inputs[node.name] = handle
        else:
            logic, pacts = _logic_and_pacts(node, len(inputs))
            (out,) = scope.add_operator(node.name, inputs, 1, Operator(logic), attrs=attrs, pacts=pacts)
        if scope.parent is None:
            self._ports(scope, out, self.strata[node.name])
        return out

    def _build_output(self, scope: ScopeBuilder, node: Node, inputs: list[Stream], attrs: dict) -> None:
        """A sink collecting the facts of each time into ``self.results[node.name]``."""
        results = self.results[node.name]

        def collect(ctx: OperatorContext) -> None:
            for t, rs in ctx.input(0):
                results.setdefault(t, set()).update(rs)

        scope.add_operator(node.name, inputs, 0, Operator(collect), attrs=attrs)
        self._stratum_ports.setdefault(self.strata[node.name], [])

    def _build_loop(self, root: ScopeBuilder, members: list[str], program_graph: nx.DiGraph, streams: dict) -> None:
        """A recursive (monotone) component as an iterative scope: back edges go through a feedback."""
        import networkx as nx

        program = self.program
        sub = program_graph.subgraph(members)
        order = list(nx.dfs_preorder_nodes(sub, source=min(members)))
        order += [n for n in members if n not in order]
        position = {n: k for k, n in enumerate(order)}

        def body(inner: ScopeBuilder) -> dict:
            local: dict[str, Stream] = {}
            loop_vars: dict[str, Any] = {}
            entered: dict[str, Stream] = {}
            for n in order:  # every back edge target gets a loop variable
                for src in program.nodes[n].inputs:
                    if src in position and position[src] >= position[n] and src not in loop_vars:
                        loop_vars[src] = inner.feedback(name=f"{src} (next iteration)")
            for n in order:
                ins = []
                for src in program.nodes[n].inputs:
                    if src in position and position[src] < position[n]:
                        ins.append(local[src])
                    elif src in position:
                        ins.append(loop_vars[src][1])
                    else:
                        if src not in entered:
                            entered[src] = inner.enter(streams[src])
                        ins.append(entered[src])
                out = self._build_node(inner, program.nodes[n], ins)
                if out is not None:
                    local[n] = out
            for src, (handle, _) in loop_vars.items():
                handle.connect(local[src])
            read_outside = [n for n in members if any(n in program.nodes[m].inputs for m in program.nodes
                                                      if m not in position)]
            return {n: inner.leave(local[n]) for n in read_outside}

        name = "loop: " + ", ".join(sorted(members))
        left = root.iterative(name, body)
        loop_node = root.ops[max(root.ops)]
        loop_node.attrs.update({"stratum": self.strata[members[0]], "monotone": True, "kind": "loop"})
        for n, stream in left.items():
            streams[n] = stream
            self._ports(root, stream, self.strata[n])

    def _ports(self, scope: ScopeBuilder, stream: Stream, stratum: int) -> None:
        self._stratum_ports.setdefault(stratum, []).append(stream.source)

    # --- running -------------------------------------------------------------------------------------

    def stratum_complete(self, stratum: int, tick: int) -> bool:
        """No output of the stratum's operators can still produce ``tick`` (this worker's view)."""
        tracker = self.worker.replica.find(self._path).tracker
        if tracker is None:
            raise RuntimeError(f"the strata dataflow {list(self._path)} is not built on worker {self.worker.index}")
        for src in self._stratum_ports.get(stratum, ()):
            if tracker.implications_at(src).less_equal(tick):
                return False
        for ctx in self._ops_by_stratum.get(stratum, ()):  # sinks: nothing may still arrive for the tick
            if ctx.path == self._path and ctx.spec.outputs == 0 and not ctx.frontier_passed(tick):
                return False
        return True

    def send(self, input_name: str, facts: Iterable[Any]) -> None:
        self._inputs[input_name].send_batch(facts)

    def run_tick(self) -> list[int]:
        """Run the current tick to completion, stratum by stratum; returns the strata in completion order."""
        tick = self.tick
        for handle in self._inputs.values():
            handle.advance_to(tick + 1)
        done: list[int] = []
        worker = self.worker
        for s in range(self.count):
            allowed = [op for op in worker.ops
                       if op.path[:1] != self._path[:1] or op.spec.attrs.get("stratum", -1) <= s]
            while not self.stratum_complete(s, tick):
                worker.step(0.001 if worker.idle else 0.0, operators=allowed)
            done.append(s)
            self.completions.append((tick, s))
            worker.mark(f"tick {tick}: stratum {s} complete", scope=self._path, tick=tick, stratum=s)
        worker.mark(f"tick {tick} complete", scope=self._path, tick=tick)
        self.tick += 1
        return done

    def close(self) -> None:
        for handle in self._inputs.values():
            handle.close()
