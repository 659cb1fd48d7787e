"""What a scope's pointstamps could result in at its sinks: the reach blame completes times and walks holders by.

A *sink* is an operator with ``attrs.role == "sink"`` or with no outputs (in a nested scope without one, the
scope's outputs); a *driver* is an operator with ``attrs.role == "source"``. :class:`ReachTables` derives, per
scope, the sinks, the drivers and the path summaries between ports, sharing the summaries between scopes of the
same structure (an application of many small jobs repeats a few shapes). :class:`SinkReach` keeps, for a scope
without inputs, the sink times its live pointstamps could result in, as they come and go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from heapq import heapify, heappop, heappush
from typing import Any

from tracker.reachability import IN, Location
from tracker.subgraph import Subgraph
from tracker.timestamp import TimeDomain

__all__ = ["SinkReach", "ReachTables", "KEEP_SHAPES"]

KEEP_SHAPES = 4_096  # (structure, port) reaches shared across scopes before the table starts over

Summaries = tuple  # the minimal path summaries from one port to another (or to any sink)


class SinkReach:
    """The sink times a scope's live pointstamps could result in, kept as the pointstamps come and go.

    Whether a time is still held then costs what changed, not what is live.

    ``counts`` holds, per sink time, how many (live pointstamp, path summary to a sink) pairs result in it. A time
    ``t`` is held while some counted time is at or before it. With a total order that is the least counted time
    (a min-heap whose entries for times no longer counted are dropped when they reach the top), and the open times
    are a min-heap too, so a completion check pops exactly the times that completed. With a partial order the
    least counted times (an antichain) are kept, recomputed only when one of them stops being counted.
    """

    __slots__ = ("to_sink", "counts", "total", "heap", "in_heap", "least", "le", "results_in", "open", "order")

    def __init__(self, to_sink: dict[Location, Summaries], domain: TimeDomain, counts: dict[tuple[Location, Any], int],
                 open_times: Iterable[Any]) -> None:
        self.to_sink = to_sink  # port -> the minimal summaries from it to any sink of the scope
        self.counts: dict[Any, int] = {}
        self.total: bool = domain.total
        self.le, self.results_in = domain.le, domain.results_in
        self.heap: list = []  # total order: counted times (and some no longer counted), least first
        self.in_heap: set = set()
        self.least: list | None = []  # partial order: the least counted times (None: to recompute)
        self.open: list[tuple[Any, int]] = []  # total order: (open time, order first held), least first
        self.order = 0
        for (loc, t), count in counts.items():
            if count > 0:
                self.add(loc, t)
        if self.total:
            for t in open_times:
                self.opened(t)

    def add(self, loc: Location, t: Any) -> None:
        """The pointstamp ``(loc, t)`` became positive."""
        counts = self.counts
        for summary in self.to_sink.get(loc, ()):
            result = self.results_in(summary, t)
            n = counts.get(result, 0)
            counts[result] = n + 1
            if n:
                continue
            if self.total:
                if result not in self.in_heap:
                    self.in_heap.add(result)
                    heappush(self.heap, result)
            elif self.least is not None:
                le = self.le
                if not any(le(f, result) for f in self.least):
                    self.least = [f for f in self.least if not le(result, f)]
                    self.least.append(result)

    def remove(self, loc: Location, t: Any) -> None:
        """The pointstamp ``(loc, t)`` stopped being positive."""
        counts = self.counts
        for summary in self.to_sink.get(loc, ()):
            result = self.results_in(summary, t)
            n = counts[result] - 1
            if n:
                counts[result] = n
                continue
            del counts[result]
            if not self.total and self.least is not None and result in self.least:
                self.least = None

    def opened(self, t: Any) -> None:
        """``t`` became an open time of the scope (total order only: the partial order scans them)."""
        heappush(self.open, (t, self.order))
        self.order += 1

    def completed(self, first_seen: dict) -> list:
        """The open times no counted time is at or before, in the order they were first held."""
        if self.total:
            heap, counts = self.heap, self.counts
            while heap and heap[0] not in counts:
                self.in_heap.discard(heappop(heap))
            if len(heap) > 2 * len(counts) + 64:  # stale entries under a long-held least time: start over
                self.heap = heap = list(counts)
                heapify(heap)
                self.in_heap = set(heap)
            least = heap[0] if heap else None
            opened = self.open
            done = []
            while opened and (least is None or opened[0][0] < least):
                t, n = heappop(opened)
                if t in first_seen:
                    done.append((n, t))
            done.sort()
            return [t for _, t in done]
        least = self.least
        le = self.le
        if least is None:
            least = []
            for counted in self.counts:
                if not any(le(f, counted) for f in least):
                    least = [f for f in least if not le(counted, f)]
                    least.append(counted)
            self.least = least
        return [t for t in first_seen if not any(le(f, t) for f in least)]


class ReachTables:
    """Per scope path, what blame derives from the structure: sinks, drivers and the summaries between ports.

    A structure record makes stale what was derived for its scope and the scopes around it (a nested scope's
    summary is part of its parent's paths); ``derived`` lists the paths that have something to forget, so most
    such records find nothing to do and a growing application's structure records cost their depth.
    """

    def __init__(self) -> None:
        self.reach: dict[tuple, dict[Location, dict]] = {}  # scope path -> port -> the summaries to it
        # scope path -> its structure as a key (None: not shared, see structure_key); (key, port) -> the summaries
        # to it, shared by every scope of that structure
        self.shapes: dict[tuple, tuple | None] = {}
        self.shared: dict[tuple, dict] = {}
        self.sinks: dict[tuple, list[Location]] = {}
        self.drivers: dict[tuple, set[int]] = {}
        self.to_sink: dict[tuple, dict[Location, Summaries]] = {}  # scope path -> port -> summaries to any sink
        self.derived: set[tuple] = set()

    def _per_path_tables(self) -> tuple[dict, ...]:
        return self.reach, self.shapes, self.sinks, self.drivers, self.to_sink

    def structure_changed(self, path: Any, every_path: Callable[[], Iterable[tuple]]) -> list[tuple]:
        """Forget what was derived for the scope at ``path`` and each scope around it; return those paths.

        ``every_path``: the candidates when ``path`` is not a path.
        """
        try:
            key = tuple(path)
            chain = [key[:n] for n in range(len(key), -1, -1)]
        except TypeError:  # not a path (the replay rejects such a record first): forget every scope's
            chain = list(every_path()) + [()]
        derived = self.derived
        forgotten = []
        for p in chain:
            if p not in derived:
                continue
            derived.discard(p)
            for table in self._per_path_tables():
                table.pop(p, None)
            forgotten.append(p)
        return forgotten

    def forget_under(self, path: tuple) -> None:
        """Forget every scope at or inside ``path`` (it left the replay)."""
        n = len(path)
        for table in (self.sinks, self.drivers, self.reach, self.shapes, self.to_sink):
            for key in [k for k in table if k[:n] == path]:
                del table[key]
        self.derived.difference_update([k for k in self.derived if k[:n] == path])

    def driver_nodes(self, scope: Subgraph) -> set[int]:
        """The nodes of ``scope``'s drivers (``attrs.role == "source"``)."""
        roles = self.drivers.get(scope.path)
        if roles is None:
            roles = self.drivers[scope.path] = {n for n, op in scope.children.items()
                                                if op.attrs.get("role") == "source"}
            self.derived.add(scope.path)
        return roles

    def sink_ports(self, scope: Subgraph) -> list[Location]:
        """The input ports of ``scope``'s sinks (a nested scope without one: its outputs, where results leave)."""
        sinks = self.sinks.get(scope.path)
        if sinks is None:
            sinks = []
            for node, op in scope.children.items():
                if op.scope is None and (op.attrs.get("role") == "sink" or op.outputs == 0):
                    sinks += [Location(node, IN, p) for p in range(op.inputs)]
            if not sinks and scope.path:  # a nested scope whose results leave it (a loop): its outputs
                sinks = [Location(0, IN, j) for j in range(scope.outputs)]
            self.sinks[scope.path] = sinks
            self.derived.add(scope.path)
        return sinks

    def to_sinks(self, scope: Subgraph) -> dict[Location, Summaries]:
        """Per port, the minimal summaries from it to some sink of ``scope``.

        A pointstamp there holds a time ``t`` at a sink when one of them brings it to ``t`` or before.
        """
        got = self.to_sink.get(scope.path)
        if got is None:
            sinks = self.sink_ports(scope)
            shape = self.shape_of(scope)
            key = None if shape is None else (shape, "to sinks", tuple(sinks))
            got = self.shared.get(key) if key is not None else None
            if got is None:
                merged: dict[Location, set] = {}
                for sink in sinks:
                    for loc, summaries in self.reach_to(scope, sink).items():
                        merged.setdefault(loc, set()).update(summaries)
                got = {loc: tuple(summaries) for loc, summaries in merged.items()}
                if key is not None:
                    self._share(key, got)
            self.to_sink[scope.path] = got
            self.derived.add(scope.path)
        return got

    def reach_to(self, scope: Subgraph, loc: Location) -> dict:
        """Per port of ``scope``, the minimal summaries from it to ``loc``."""
        by_port = self.reach.get(scope.path)
        if by_port is None:
            by_port = self.reach[scope.path] = {}
            self.derived.add(scope.path)
        got = by_port.get(loc)
        if got is None:
            shape = self.shape_of(scope)
            if shape is None:
                got = scope.path_summaries_to(loc)
            else:
                got = self.shared.get((shape, loc))
                if got is None:
                    got = scope.path_summaries_to(loc)
                    self._share((shape, loc), got)
            by_port[loc] = got
        return got

    def _share(self, key: tuple, value: dict) -> None:
        """Keep ``value`` for every scope of the structure ``key`` names (bounded: the table starts over)."""
        shared = self.shared
        if len(shared) >= KEEP_SHAPES:
            shared.clear()
        shared[key] = value

    def shape_of(self, scope: Subgraph) -> tuple | None:
        shapes = self.shapes
        if scope.path in shapes:
            return shapes[scope.path]
        shape = shapes[scope.path] = structure_key(scope)
        self.derived.add(scope.path)
        return shape


def structure_key(scope: Subgraph) -> tuple | None:
    """``scope``'s structure as a key: what the summaries between its ports depend on.

    Its depth, boundary, operators' ports and edges.

    None when an operator has a summary of its own or is a nested scope (what the key would have to hold is not
    worth sharing).
    """
    nodes = []
    for node, op in scope.children.items():
        if op.scope is not None or op.summary is not None:
            return None
        nodes.append((node, op.inputs, op.outputs))
    return scope.domain.depth, scope.inputs, scope.outputs, tuple(nodes), tuple(scope.edges)
