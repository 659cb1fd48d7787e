"""Would an edge close a cycle along which time never advances? Asked before a log's edge is added, so such an edge
is rejected whole and nothing changes, instead of leaving its scope impossible to build.

Timely refuses such a graph when it is built; a flowscope scope grows while progress runs, so the question is asked
per edge, on the structure as declared (queued parts included), without building any tracker. An edge ``s -> t``
closes such a cycle in its own scope when a path from ``t`` back to ``s`` keeps times unchanged at every hop. It can
also close one further out: once a nested scope's input reaches its output without advancing its parent's times,
the parent sees an identity operator there (an inner loop's feedback advances only the inner coordinate, so from
outside it is still the identity), and the parent may already lead that output back to that input. Each enclosing
scope is asked in turn, with the nested scope's new identity pairs, up to the root.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .reachability import IN, OUT, CycleError, Location, Source, Target, path_between
from .subgraph import Subgraph
from .timestamp import domain

__all__ = ["cycle_closed_by"]

Pairs = set[tuple[int, int]]  # (input, output) of a nested scope joined by a path that keeps times unchanged


def cycle_closed_by(scope: Subgraph, source: Location, target: Location) -> CycleError | None:
    """The cycle (in ``scope`` or an enclosing scope) that adding the edge ``source -> target`` to ``scope`` would
    close without any summary advancing time, or None. Malformed edges answer None (adding them reports why)."""
    if source.kind != OUT or target.kind != IN:
        return None
    checker = _Checker()
    if not _leads_nowhere(scope, target, source):
        back = checker.path(scope, target, source, scope.domain.depth, {source: [target]}, {})
        if back is not None:
            return CycleError(_rotated([source, *back[:-1]]), scope.label)
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
                return CycleError(_rotated([Target(node, i), *back[:-1]]), outer.label)
    return None


def _leads_nowhere(scope: Subgraph, target: Location, source: Location) -> bool:
    """No path in ``scope`` leaves ``target`` for ``source``: target's node is another node whose outputs have no
    edges yet (how a dataflow usually grows: an edge into the operator just added). Answers the search's question
    without searching."""
    node = target.node
    op = scope.children.get(node)
    if node == 0 or node == source.node or op is None:
        return False
    return not any(scope.targets_of(Source(node, o)) for o in range(op.outputs))


def _rotated(cycle: list[Location]) -> list[Location]:
    """The cycle starting at its smallest port (one way to name it, whatever port the search started from)."""
    k = cycle.index(min(cycle))
    return cycle[k:] + cycle[:k]


def _keeps(summaries: Iterable[Any], strip: int, identity: Any) -> bool:
    """Some summary leaves the outermost coordinates (all but the ``strip`` innermost levels) unchanged."""
    for s in summaries:
        for _ in range(strip):
            s = s[0]
        if s == identity:
            return True
    return False


class _Checker:
    """Searches over declared structure, at a given depth: a hop keeps times unchanged when its summary leaves
    that many outermost coordinates as they are. Nested scopes' identity pairs are remembered per question."""

    def __init__(self) -> None:
        self._pairs: dict[tuple[int, int], Pairs] = {}

    def path(self, scope: Subgraph, start: Location, goal: Location, depth: int,
             edges: dict[Location, list[Location]], pairs: dict[int, Pairs]) -> list[Location] | None:
        """A path ``start`` .. ``goal`` in ``scope`` keeping times unchanged, with ``edges`` and ``pairs`` added."""
        return path_between(start, goal, lambda loc: self._hops(scope, loc, depth, edges, pairs))

    def _hops(self, scope: Subgraph, loc: Location, depth: int, edges: dict[Location, list[Location]],
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

    def pairs_of(self, scope: Subgraph, depth: int) -> Pairs:
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

    def _joined(self, scope: Subgraph, depth: int, edges: dict[Location, list[Location]],
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

    def new_pairs(self, scope: Subgraph, depth: int, edges: dict[Location, list[Location]],
                  pairs: dict[int, Pairs]) -> Pairs:
        """The pairs of ``scope`` that ``edges`` and ``pairs`` join and that were not joined before."""
        if not scope.inputs or not scope.outputs:
            return set()
        return self._joined(scope, depth, edges, pairs) - self.pairs_of(scope, depth)
