"""A brute-force oracle for progress tracking, written from the definitions rather than from the tracker's code.

Definitions (from the seeds: "Tracking progress in timely dataflow" and the progress-tracking notes):

* A scope is a graph of ports. An edge ``Source(a, o) -> Target(b, i)`` leaves times unchanged. Inside a node, input
  ``i`` reaches output ``o`` with each summary of an antichain ``summary[i][o]`` (an empty antichain: no path).
* The *path summaries* from port ``x`` to port ``y`` are the minimal elements of the compositions of the summaries
  along all paths from ``x`` to ``y``; a port reaches itself with the identity.
* A pointstamp ``(l, t)`` with a strictly positive accumulated count *could result in* ``(p, s(t))`` for every path
  summary ``s`` from ``l`` to ``p``. The frontier at ``p`` is the set of minimal such times.

Nothing here uses the tracker's order functions, antichains or propagation: times and summaries are ints (depth 1)
or nested pairs (products, any depth), compared componentwise by the few lines below. ``Location``/``Target``/
``Source`` are borrowed from the tracker only as names for ports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tracker.reachability import Builder, Location, Source, Target
from tracker.timestamp import domain

__all__ = [
    "Graph", "le", "lt", "add", "identity", "minimal", "path_summaries", "frontiers", "frontier_at",
    "implication_count", "is_global", "dominates",
]


# --- times and summaries ------------------------------------------------------------------------------------


def le(a: Any, b: Any) -> bool:
    """The product partial order: ``<=`` on ints, componentwise on pairs (any nesting)."""
    if isinstance(a, int):
        return a <= b
    return le(a[0], b[0]) and le(a[1], b[1])


def lt(a: Any, b: Any) -> bool:
    return a != b and le(a, b)


def add(s: Any, t: Any) -> Any:
    """Apply summary ``s`` ("add s componentwise") to time ``t``; also composes two summaries."""
    if isinstance(s, int):
        return s + t
    return (add(s[0], t[0]), add(s[1], t[1]))


def identity(depth: int) -> Any:
    """The identity summary (also the minimum time) at a depth: 0, (0, 0), ((0, 0), 0), ..."""
    z: Any = 0
    for _ in range(depth - 1):
        z = (z, 0)
    return z


def minimal(values: Iterable[Any]) -> list[Any]:
    """The minimal elements of a set of times or summaries, sorted (duplicates removed)."""
    vals = set(values)
    return sorted(v for v in vals if not any(w != v and le(w, v) for w in vals))


def dominates(lower: Iterable[Any], upper: Iterable[Any]) -> bool:
    """Antichain order: every element of ``upper`` is ``>=`` some element of ``lower``."""
    lower = list(lower)
    return all(any(le(a, b) for a in lower) for b in upper)


# --- graphs -------------------------------------------------------------------------------------------------


class Graph:
    """Nodes with per (input, output) summary antichains, and edges. Same conventions as the tracker's Builder:
    ``summary=None`` connects every input to every output with the identity, ``[]`` means not connected.
    """

    def __init__(self, depth: int):
        self.depth = depth
        self.nodes: dict[int, tuple[int, int, list[list[list[Any]]]]] = {}
        self.edges: list[tuple[Location, Location]] = []

    def add_node(
        self, index: int, inputs: int, outputs: int, summary: Iterable[Iterable[Iterable[Any]]] | None = None
    ) -> None:
        if summary is None:
            rows = [[[identity(self.depth)] for _ in range(outputs)] for _ in range(inputs)]
        else:
            rows = [[list(s) for s in row] for row in summary]
            assert len(rows) == inputs and all(len(r) == outputs for r in rows)
        self.nodes[index] = (inputs, outputs, rows)

    def add_edge(self, source: Location, target: Location) -> None:
        assert source.kind == 1 and target.kind == 0
        self.edges.append((source, target))

    def builder(self, name: str = "dataflow") -> Builder:
        """The same structure declared to the tracker's :class:`Builder` (not built yet)."""
        b = Builder(domain(self.depth), name)
        for k in sorted(self.nodes):
            inputs, outputs, rows = self.nodes[k]
            b.add_node(k, inputs, outputs, rows)
        for s, t in self.edges:
            b.add_edge(s, t)
        return b

    def ports(self) -> list[Location]:
        out: list = []
        for n, (inputs, outputs, _) in sorted(self.nodes.items()):
            out.extend(Target(n, i) for i in range(inputs))
            out.extend(Source(n, o) for o in range(outputs))
        return out

    def links(self) -> list[tuple[Location, Location, Any]]:
        """Every one-hop link ``(from, to, summary)``: edges (identity) and each minimal internal summary."""
        ident = identity(self.depth)
        out = [(s, t, ident) for s, t in self.edges]
        for n, (_, _, rows) in sorted(self.nodes.items()):
            for i, row in enumerate(rows):
                for o, summaries in enumerate(row):
                    for s in minimal(summaries):
                        out.append((Target(n, i), Source(n, o), s))
        return out

    def identity_links(self) -> list[tuple[Location, Location]]:
        ident = identity(self.depth)
        return [(a, b) for a, b, s in self.links() if s == ident]


def path_summaries(graph: Graph, max_rounds: int | None = None) -> dict[tuple[Location, Location], list[Any]]:
    """All-pairs minimal path summaries by a Bellman-Ford-like fixpoint over antichains.

    For each start port, round k extends the summaries found in round k-1 by one link and keeps a candidate only
    if nothing already known is ``<=`` it. Going around a cycle never yields a smaller summary (summaries are
    non-negative), so every minimal summary is found along a simple path and the fixpoint is reached within
    ``len(ports) + 1`` rounds; not reaching it within the bound raises.
    """
    ports = graph.ports()
    out_links: dict[Location, list[tuple[Location, Any]]] = {}
    for a, b, s in graph.links():
        out_links.setdefault(a, []).append((b, s))
    ident = identity(graph.depth)
    bound = max_rounds if max_rounds is not None else len(ports) + 2
    result: dict[tuple[Location, Location], list[Any]] = {}
    for x in ports:
        known: dict[Location, list[Any]] = {x: [ident]}
        fresh: dict[Location, list[Any]] = {x: [ident]}
        for _ in range(bound):
            if not fresh:
                break
            found: dict[Location, list[Any]] = {}
            for y, summaries in fresh.items():
                for z, c in out_links.get(y, ()):
                    for s in summaries:
                        cand = add(s, c)  # s then c: componentwise addition
                        have = known.setdefault(z, [])
                        if any(le(e, cand) for e in have):
                            continue
                        have[:] = [e for e in have if not le(cand, e)] + [cand]
                        found.setdefault(z, []).append(cand)
            fresh = {z: [c for c in cs if c in known[z]] for z, cs in found.items()}
            fresh = {z: cs for z, cs in fresh.items() if cs}
        else:
            if fresh:
                raise RuntimeError(f"path summaries from {x} did not converge within {bound} rounds")
        for y, ss in known.items():
            if ss:
                result[(x, y)] = sorted(ss)
    return result


def positive(counts: Mapping[tuple[Location, Any], int]) -> list[tuple[Location, Any]]:
    return [key for key, c in counts.items() if c > 0]


def frontier_at(
    paths: Mapping[tuple[Location, Location], list[Any]],
    counts: Mapping[tuple[Location, Any], int],
    port: Location,
    where: Any = None,
) -> list[Any]:
    """Minimal ``s(t)`` over pointstamps ``(loc, t)`` with positive count, ``s`` in the paths loc -> port.

    With ``where``, only the pointstamps whose ``where(loc)`` holds count.
    """
    results = []
    for (loc, t) in positive(counts):
        if where is not None and not where(loc):
            continue
        for s in paths.get((loc, port), ()):
            results.append(add(s, t))
    return minimal(results)


def frontiers(
    graph: Graph, counts: Mapping[tuple[Location, Any], int], paths: Mapping | None = None
) -> dict[Location, list[Any]]:
    """Every port's frontier from the accumulated pointstamp counts (only strictly positive counts count)."""
    if paths is None:
        paths = path_summaries(graph)
    return {p: frontier_at(paths, counts, p) for p in graph.ports()}


def implication_count(
    graph: Graph,
    counts: Mapping[tuple[Location, Any], int],
    fronts: Mapping[Location, list[Any]],
    port: Location,
    time: Any,
) -> int:
    """How many immediate precursors put exactly ``time`` into the frontier at ``port``:

    the port's own minimal positive pointstamp (0 or 1), plus, for every one-hop link ``(p -> port, s)`` and every
    frontier element ``f`` at ``p``, one if ``s(f) == time``.
    """
    own = minimal(t for (loc, t) in positive(counts) if loc == port)
    n = 1 if time in own else 0
    for a, b, s in graph.links():
        if b == port:
            n += sum(1 for f in fronts[a] if add(s, f) == time)
    return n


def is_global(graph: Graph, counts, fronts, port: Location, time: Any) -> bool:
    """Not dominated by the frontier at ``port`` and put there by at most one immediate precursor."""
    dominated = any(lt(f, time) for f in fronts[port])
    return not dominated and implication_count(graph, counts, fronts, port, time) <= 1
