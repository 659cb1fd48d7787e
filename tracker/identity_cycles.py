"""Would an edge close a cycle along which time never advances?

Asked before a log's edge is added, so such an edge is rejected whole and nothing changes, instead of leaving its scope
impossible to build.

Timely refuses such a graph when it is built; a flowscope scope grows while progress runs, so the question is asked
per edge, on the structure as declared (queued parts included), without building any tracker. An edge ``s -> t``
closes such a cycle in its own scope when a path from ``t`` back to ``s`` keeps times unchanged at every hop. It can
also close one further out: once a nested scope's input reaches its output without advancing its parent's times,
the parent sees an identity operator there (an inner loop's feedback advances only the inner coordinate, so from
outside it is still the identity), and the parent may already lead that output back to that input. Each enclosing
scope is asked in turn, with the nested scope's new identity pairs, up to the root.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from tracker.location import IN, OUT, Location, Source, Target
from tracker.timestamp import TimeDomain, domain

__all__ = ["CycleError", "cycle_closed_by", "find_identity_cycle", "identity_path", "path_between", "rotated_cycle"]

Pairs = set[tuple[int, int]]  # (input, output) of a nested scope joined by a path that keeps times unchanged


class ChildShape(Protocol):
    """What the search asks of a scope's child (``subgraph.OperatorNode``): its ports, summary and nested scope."""

    @property
    def inputs(self) -> int: ...
    @property
    def outputs(self) -> int: ...
    @property
    def summary(self) -> list | None: ...
    @property
    def scope(self) -> ScopeShape | None: ...


class ScopeShape(Protocol):
    """What the search asks of a scope (``subgraph.Subgraph``): its structure, read and never built here.

    A protocol rather than the class, since subgraph.py builds on reachability.py, which raises this module's
    errors."""

    @property
    def label(self) -> str: ...
    @property
    def node(self) -> int: ...
    @property
    def domain(self) -> TimeDomain: ...
    @property
    def parent(self) -> ScopeShape | None: ...
    @property
    def children(self) -> Mapping[int, ChildShape]: ...
    @property
    def inputs(self) -> int: ...
    @property
    def outputs(self) -> int: ...
    @property
    def needs_build(self) -> bool: ...
    @property
    def internal_summary(self) -> list: ...
    def targets_of(self, source: Location) -> list[Location]: ...


class CycleError(ValueError):
    """A cycle along which every summary is the identity: times could circulate forever without advancing."""

    def __init__(self, cycle: list[Location], scope: str = ""):
        self.cycle = cycle
        where = f" in scope {scope}" if scope else ""
        path = " -> ".join(str(loc) for loc in cycle + cycle[:1])
        super().__init__(
            f"cycle without a strictly advancing path summary{where}: {path}; "
            "give some operator on it (usually the feedback) a summary that advances time"
        )


def rotated_cycle(cycle: list[Location]) -> list[Location]:
    """The cycle starting at its least port: one name for it, whatever port the search started from."""
    k = cycle.index(min(cycle))
    return cycle[k:] + cycle[:k]


def path_between(start: Location, goal: Location,
                 hops: Callable[[Location], Iterable[Location]]) -> list[Location] | None:
    """A path ``start`` .. ``goal`` following ``hops`` (a depth-first search), or ``None``.

    How an identity cycle is shown to the person whose edge would close it."""
    came_from = {start: start}
    stack = [start]
    while stack:
        loc = stack.pop()
        if loc == goal:
            path = [loc]
            while loc != start:
                loc = came_from[loc]
                path.append(loc)
            return path[::-1]
        for nxt in hops(loc):
            if nxt not in came_from:
                came_from[nxt] = loc
                stack.append(nxt)
    return None


def find_identity_cycle(shape: Sequence[tuple[int, int]], nodes: Sequence[Any], edges: Sequence[Any],
                        identity: Any) -> list[Location] | None:
    """A cycle of a built scope's structure whose every hop keeps times unchanged, or ``None``.

    The structure is a ``Builder``'s: ``shape``, ``nodes`` (per node, per input, output -> summaries) and ``edges`` (per
    node, per output, targets). Kahn's algorithm over ports."""
    succ: dict[Location, list[Location]] = {}
    indeg: dict[Location, int] = {}
    for n, (inputs, outputs) in enumerate(shape):
        for i in range(inputs):
            indeg.setdefault(Target(n, i), 0)
        for o in range(outputs):
            indeg.setdefault(Source(n, o), 0)
    for n, conn in enumerate(nodes):
        for i, ports in enumerate(conn):
            for o, ac in ports.items():
                if identity in ac:
                    succ.setdefault(Target(n, i), []).append(Source(n, o))
                    indeg[Source(n, o)] += 1
        for o, targets in enumerate(edges[n]):
            for t in targets:
                succ.setdefault(Source(n, o), []).append(t)
                indeg[t] += 1
    ready = [loc for loc, d in indeg.items() if d == 0]
    while ready:
        loc = ready.pop()
        for nxt in succ.get(loc, ()):
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                ready.append(nxt)
    remaining = {loc for loc, d in indeg.items() if d > 0}
    if not remaining:
        return None
    import networkx as nx  # only on the error path: keeps replay start-up fast

    graph = nx.DiGraph()
    for loc in remaining:
        for nxt in succ.get(loc, ()):
            if nxt in remaining:
                graph.add_edge(loc, nxt)
    return rotated_cycle([u for u, _ in nx.find_cycle(graph)])


def identity_path(nodes: Sequence[Any], edges: Sequence[Any], identity: Any, start: Location,
                  goal: Location) -> list[Location] | None:
    """A path from ``start`` to ``goal`` on which every hop keeps times unchanged, or ``None``.

    The structure is a scope's, as :func:`find_identity_cycle` takes it."""

    def hops(loc: Location) -> Iterable[Location]:
        if loc.kind == IN:
            conn = nodes[loc.node]
            ports = conn[loc.port] if loc.port < len(conn) else {}
            return [Source(loc.node, o) for o, ac in ports.items() if identity in ac]
        return edges[loc.node][loc.port]

    return path_between(start, goal, hops)


def cycle_closed_by(scope: ScopeShape, source: Location, target: Location) -> CycleError | None:
    """The identity cycle that adding the edge ``source -> target`` to ``scope`` would close, or None.

    The cycle may run in ``scope`` or an enclosing scope; along it no summary advances time. Malformed edges answer None
    (adding them reports why)."""
    if source.kind != OUT or target.kind != IN:
        return None
    checker = _Checker()
    if not _leads_nowhere(scope, target, source):
        back = checker.path(scope, target, source, scope.domain.depth, {source: [target]}, {})
        if back is not None:
            return CycleError(rotated_cycle([source, *back[:-1]]), scope.label)
    chain = [scope]
    parent = scope.parent
    while parent is not None:
        chain.append(parent)
        parent = parent.parent
    for m in range(1, len(chain)):
        outer = chain[m]
        depth = outer.domain.depth
        edges: dict[Location, list[Location]] = {source: [target]}
        pairs: dict[int, Pairs] = {}
        new: Pairs = set()
        for j in range(m):
            new = checker.new_pairs(chain[j], depth, edges, pairs)
            if not new:
                break
            edges, pairs = {}, {chain[j].node: new}
        if not new:
            continue
        node = chain[m - 1].node
        for i, o in sorted(new):
            back = checker.path(outer, Source(node, o), Target(node, i), depth, {}, pairs)
            if back is not None:
                return CycleError(rotated_cycle([Target(node, i), *back[:-1]]), outer.label)
    return None


def _leads_nowhere(scope: ScopeShape, target: Location, source: Location) -> bool:
    """No path in ``scope`` leaves ``target`` for ``source``.

    Target's node is another node whose outputs have no edges yet (how a dataflow usually grows: an edge into the
    operator just added). Answers the search's question without searching."""
    node = target.node
    op = scope.children.get(node)
    if node == 0 or node == source.node or op is None:
        return False
    return not any(scope.targets_of(Source(node, o)) for o in range(op.outputs))


def _keeps(summaries: Iterable[Any], strip: int, identity: Any) -> bool:
    """Some summary leaves the outermost coordinates (all but the ``strip`` innermost levels) unchanged."""
    for s in summaries:
        for _ in range(strip):
            s = s[0]
        if s == identity:
            return True
    return False


class _Checker:
    """Searches over declared structure, at a given depth.

    A hop keeps times unchanged when its summary leaves that many outermost coordinates as they are. Nested scopes'
    identity pairs are remembered per question."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[int, int], Pairs] = {}

    def path(self, scope: ScopeShape, start: Location, goal: Location, depth: int,
             edges: dict[Location, list[Location]], pairs: dict[int, Pairs]) -> list[Location] | None:
        """A path ``start`` .. ``goal`` in ``scope`` keeping times unchanged, with ``edges`` and ``pairs`` added."""
        return path_between(start, goal, lambda loc: self._hops(scope, loc, depth, edges, pairs))

    def _hops(self, scope: ScopeShape, loc: Location, depth: int, edges: dict[Location, list[Location]],
              pairs: dict[int, Pairs]) -> list[Location]:
        if loc.kind == OUT:
            return scope.targets_of(loc) + edges.get(loc, [])
        op = scope.children.get(loc.node)
        if op is None or loc.port >= op.inputs:  # node 0: a scope output, where paths leave the scope
            return []
        i = loc.port
        extra = pairs.get(loc.node, ())
        if op.scope is not None:
            joined = self.pairs_of(op.scope, depth)
            return [Source(loc.node, o) for o in range(op.outputs) if (i, o) in joined or (i, o) in extra]
        if op.summary is None:
            return [Source(loc.node, o) for o in range(op.outputs)]
        strip, identity = scope.domain.depth - depth, domain(depth).identity
        row = op.summary[i]
        return [Source(loc.node, o) for o in range(op.outputs) if _keeps(row[o], strip, identity) or (i, o) in extra]

    def pairs_of(self, scope: ScopeShape, depth: int) -> Pairs:
        """The (input, output) pairs of nested ``scope`` joined by a path keeping ``depth`` coordinates unchanged."""
        key = (id(scope), depth)
        known = self._pairs.get(key)
        if known is None:
            if not scope.needs_build and scope.parent is not None:  # built: its summary says it already
                strip, identity = scope.parent.domain.depth - depth, domain(depth).identity
                known = {(i, o) for i, row in enumerate(scope.internal_summary) for o, ac in enumerate(row)
                         if _keeps(ac, strip, identity)}
            else:
                known = self._joined(scope, depth, {}, {})
            self._pairs[key] = known
        return known

    def _joined(self, scope: ScopeShape, depth: int, edges: dict[Location, list[Location]],
                pairs: dict[int, Pairs]) -> Pairs:
        joined: Pairs = set()
        for i in range(scope.inputs):
            seen = {Source(0, i)}
            stack = [Source(0, i)]
            while stack:
                loc = stack.pop()
                if loc.node == 0 and loc.kind == IN:
                    joined.add((i, loc.port))
                for nxt in self._hops(scope, loc, depth, edges, pairs):
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
        return joined

    def new_pairs(self, scope: ScopeShape, depth: int, edges: dict[Location, list[Location]],
                  pairs: dict[int, Pairs]) -> Pairs:
        """The pairs of ``scope`` that ``edges`` and ``pairs`` join and that were not joined before."""
        if not scope.inputs or not scope.outputs:
            return set()
        return self._joined(scope, depth, edges, pairs) - self.pairs_of(scope, depth)
