"""Series for the charts: each operator's frontier over wall time, and the counts in flight per scope.

The charts must not cost the tracker anything noticeable, and must stay bounded however long a session runs. So
they are updated only for the ports a slice of batches touched (the session hands them over at the end of each
ingest slice), and each series is a step function stored as change points in typed arrays: when one grows past
``cap`` points, every other point is dropped (the chart keeps its shape; the resolution halves).

A time is plotted as a number: an integer as itself, a product time ``[outer, inner]`` as
``outer + min(inner, 999) / 1000`` (so iterations show as small steps within an epoch), recursively. An operator's
value is the least number over its input ports' frontiers (over its outputs for an operator without inputs);
``nan`` once the frontier is empty (the operator is done).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from typing import Any

from tracker.reachability import IN, Location
from tracker.subgraph import Subgraph

__all__ = ["numeric", "SeriesRecorder"]

NAN = float("nan")


def numeric(t: Any) -> float:
    if type(t) is int:
        return float(t)
    if isinstance(t, (tuple, list)) and len(t) == 2:
        return numeric(t[0]) + min(numeric(t[1]), 999.0) / 1000.0
    return float(t)


class _Steps:
    """A step function: change points (x, y) in two arrays, halved when longer than ``cap``."""

    __slots__ = ("x", "y", "cap")

    def __init__(self, cap: int) -> None:
        self.x = array("d")
        self.y = array("d")
        self.cap = cap

    def add(self, x: float, y: float) -> None:
        ys = self.y
        if ys and (ys[-1] == y or (ys[-1] != ys[-1] and y != y)):  # unchanged (nan == nan here)
            return
        if self.x and self.x[-1] == x:
            ys[-1] = y
            return
        self.x.append(x)
        ys.append(y)
        if len(ys) > self.cap:
            self.x = self.x[::2]
            self.y = ys[::2]

    def to_json(self) -> dict:
        return {"t": list(self.x), "v": [None if v != v else v for v in self.y]}


class _ScopeSeries:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.nodes: dict[int, _Steps] = {}
        self.port_counts: dict[Location, int] = {}
        self.messages = 0
        self.capabilities = 0
        self.t = array("d")
        self.m = array("d")
        self.c = array("d")

    def counts_point(self, at: float) -> None:
        t, m, c = self.t, self.m, self.c
        if t and t[-1] == at:
            m[-1], c[-1] = self.messages, self.capabilities
            return
        if m and m[-1] == self.messages and c[-1] == self.capabilities:
            return
        t.append(at)
        m.append(self.messages)
        c.append(self.capabilities)
        if len(t) > 4 * self.cap:
            self.t, self.m, self.c = t[::2], m[::2], c[::2]


class SeriesRecorder:
    """Per scope: operator frontier values and counts in flight, updated from touched ports."""

    def __init__(self, cap: int = 512) -> None:
        self.cap = cap
        self.scopes: dict[tuple, _ScopeSeries] = {}
        self.last_at: float | None = None  # the latest wall clock seen: steps are drawn up to it

    def update(self, scope: Subgraph, locations: Iterable[Location], at: float) -> None:
        tracker = scope.tracker
        if tracker is None:
            return
        if self.last_at is None or at > self.last_at:
            self.last_at = at
        series = self.scopes.get(scope.path)
        if series is None:
            series = self.scopes[scope.path] = _ScopeSeries(self.cap)
        index = tracker.index
        nodes = set()
        counts = series.port_counts
        for loc in locations:
            k = index.get(loc)
            if k is None:
                continue
            if loc.node != 0:
                nodes.add(loc.node)
                total = sum(c for _, c in tracker.pointstamps[k].updates())
                old = counts.get(loc, 0)
                if total != old:
                    counts[loc] = total
                    if loc.kind == IN:
                        series.messages += total - old
                    else:
                        series.capabilities += total - old
        children = scope.children
        for node in nodes:
            op = children.get(node)
            if op is None:
                continue
            kind, n = (0, op.inputs) if op.inputs else (1, op.outputs)
            best = math.inf
            for p in range(n):
                k = index.get(Location(node, kind, p))
                if k is not None:
                    for t in tracker.implications[k].frontier():
                        v = numeric(t)
                        if v < best:
                            best = v
            steps = series.nodes.get(node)
            if steps is None:
                steps = series.nodes[node] = _Steps(self.cap)
            steps.add(at, NAN if best == math.inf else best)
        series.counts_point(at)

    def forget(self, path: tuple) -> None:
        """Drop the series of the scope at ``path`` and of the scopes it nests.

        The scope was folded: a session keeps bounded memory however many scopes finished."""
        n = len(path)
        for key in [k for k in self.scopes if k[:n] == path]:
            del self.scopes[key]

    def to_json(self, scope: Subgraph, nodes: Iterable[int] | None) -> dict:
        series = self.scopes.get(scope.path)
        if series is None:
            return {"nodes": {}, "counts": {"t": [], "messages": [], "capabilities": []}}
        wanted = sorted(series.nodes) if nodes is None else [n for n in nodes if n in series.nodes]
        now = self.last_at
        out_nodes = {}
        for n in wanted:
            op = scope.children.get(n)
            entry = series.nodes[n].to_json()
            if now is not None and entry["t"] and entry["t"][-1] < now:  # the last step lasts until now
                entry["t"].append(now)
                entry["v"].append(entry["v"][-1])
            entry["name"] = op.name if op else str(n)
            out_nodes[str(n)] = entry
        t, m, c = list(series.t), list(series.m), list(series.c)
        if now is not None and t and t[-1] < now:
            t.append(now)
            m.append(m[-1])
            c.append(c[-1])
        return {"nodes": out_nodes, "counts": {"t": t, "messages": m, "capabilities": c}}
