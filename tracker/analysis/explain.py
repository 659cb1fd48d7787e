"""Explain: who holds a frontier.

A time ``t`` may still arrive at a port exactly when some pointstamp with a positive count could result in ``t``
there: a path summary ``s`` from the pointstamp's location to the port has ``s.results_in(time) <= t``. Many
pointstamps may qualify, but most are only there because of another: a message waiting downstream of a capability
at an earlier time is implied by that capability. The answer to "why is this stuck" is the *minimal* set: the
qualifying pointstamps that no other qualifying pointstamp could result in. Each comes with the summary of the
path that connects it to the port. A pointstamp at a scope input (child 0's output) is the parent's frontier: the
hold comes from outside the scope, and asking the parent about the scope's input port continues the explanation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracker.reachability import Location
from tracker.subgraph import Subgraph

__all__ = ["Holder", "Explanation", "explain", "HolderRole", "holder_role"]


@dataclass(frozen=True)
class Holder:
    """A pointstamp that could result in the asked time at the asked port."""

    location: Location
    time: Any
    count: int
    summary: Any  # path summary from ``location`` to the port
    results_in: Any  # the least time this pointstamp could result in at the port

    @property
    def from_parent(self) -> bool:
        """Held by the parent scope's frontier at a scope input, not by anything inside the scope."""
        return self.location.node == 0

    def to_json(self) -> dict:
        return {
            "location": self.location.to_json(),
            "time": self.time,
            "count": self.count,
            "summary": self.summary,
            "results_in": self.results_in,
            "from_parent": self.from_parent,
        }


@dataclass(frozen=True)
class Explanation:
    scope: tuple
    port: Location
    time: Any
    frontier: list
    holders: list[Holder]  # the minimal set
    implied: list[Holder]  # also qualify, but only because a holder could result in them

    @property
    def held(self) -> bool:
        return bool(self.holders)

    def to_json(self) -> dict:
        return {
            "scope": list(self.scope),
            "port": self.port.to_json(),
            "time": self.time,
            "frontier": self.frontier,
            "holders": [h.to_json() for h in self.holders],
            "implied": [h.to_json() for h in self.implied],
        }


def explain(scope: Subgraph, port: Location, time: Any) -> Explanation:
    """The minimal pointstamps that still could result in ``time`` at ``port`` of ``scope``."""
    tracker = scope.built_tracker()
    if port not in tracker.index:
        raise KeyError(f"scope {scope.label} has no port {port}")
    d = scope.domain
    le, results_in = d.le, d.results_in
    to_port = scope.path_summaries_to(port)
    candidates: list[Holder] = []
    for loc, summaries in to_port.items():
        for t, count in tracker.pointstamps_at(loc).updates():
            if count <= 0:
                continue
            best = None
            for s in summaries:
                r = results_in(s, t)
                if le(r, time) and (best is None or le(r, best[1])):
                    best = (s, r)
            if best is not None:
                candidates.append(Holder(loc, t, count, best[0], best[1]))
    # A candidate is implied when another candidate could result in it (a path from the other's location
    # whose summary takes the other's time to <= its time).
    locations = sorted({c.location for c in candidates})
    reach = tracker.structure.summaries_to(locations) if len(candidates) > 1 else {}
    holders: list[Holder] = []
    implied: list[Holder] = []
    for c in candidates:
        into = reach.get(c.location, {})
        is_implied = False
        for other in candidates:
            if other is c:
                continue
            paths = into.get(other.location)
            if not paths:
                continue
            if any(le(results_in(s, other.time), c.time) for s in paths):
                # Mutual implication happens only for identical pointstamps; keep the first of such a pair.
                if (other.location, other.time) == (c.location, c.time):
                    continue
                is_implied = True
                break
        (implied if is_implied else holders).append(c)
    key = lambda h: (h.results_in, h.location, h.time)  # noqa: E731
    frontier = tracker.frontier(port)
    return Explanation(scope.path, port, time, frontier, sorted(holders, key=key), sorted(implied, key=key))


@dataclass(frozen=True)
class HolderRole:
    """What a holder is, seen from the scope it holds, and where the explanation goes on from it.

    ``kind`` is one of:

    - ``parent-frontier``: a pointstamp at a scope input (node 0): the hold comes from outside; the explanation
      continues at the scope's input port in the parent (``next_scope``/``next_port``), unless this is the root.
    - ``nested-scope``: an output of a nested scope: something inside it holds; the explanation continues at that
      output's port inside the nested scope.
    - ``capability``: an operator's output holds a capability at the time.
    - ``message``: a message waits at an operator's input.
    """

    kind: str
    operator: str  # the operator's (or nested scope's) name; "scope input" for the parent's frontier
    attrs: dict
    next_scope: tuple | None = None
    next_port: Location | None = None

    def to_json(self) -> dict:
        nxt = None
        if self.next_scope is not None and self.next_port is not None:
            nxt = {"scope": list(self.next_scope), "port": self.next_port.to_json()}
        return {"what": self.kind, "operator": self.operator, "attrs": self.attrs, "next": nxt}


def holder_role(scope: Subgraph, holder: Holder) -> HolderRole:
    """Classify ``holder`` (found by :func:`explain` in ``scope``): see :class:`HolderRole`."""
    loc = holder.location
    child = scope.children.get(loc.node)
    if loc.node == 0:
        parent = scope.parent
        if parent is None:
            return HolderRole("parent-frontier", "scope input", {})
        return HolderRole("parent-frontier", "scope input", {}, parent.path,
                          Location.from_json(["in", scope.node, loc.port]))
    if loc.is_source and child is not None and child.scope is not None:
        return HolderRole("nested-scope", child.name, child.attrs, child.scope.path,
                          Location.from_json(["in", 0, loc.port]))
    kind = "capability" if loc.is_source else "message"
    if child is None:
        return HolderRole(kind, "", {})
    return HolderRole(kind, child.name, child.attrs)
