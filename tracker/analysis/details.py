"""Holder details: what a pointstamp is made of, as the log says it (``detail`` records).

The tracker counts pointstamps; it does not know that the 3 capabilities a Spark stage holds at batch 4 are tasks
9, 10 and 11, or that task 9 has run for 4 s on executor 2. A producer that knows says so with ``detail`` records
(format v1, ``docs/progress-log.md``): ``{"type": "detail", "scope", "port", "time", "key", "value", "at"}`` sets
(``value`` an object) or clears (``value`` null) one keyed entry of the pointstamp ``(port, time)`` in ``scope``.
This module keeps them and answers "which entries does this holder have", and orders an explanation's holders by
who is actually late: a capability at a *driver* operator (``attrs.role == "source"``: it stands for the ability
to start new work) holds every time downstream of it, but while downstream pointstamps it implies have running
work (entries of kind ``task``), those are what the time waits for, so they come first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracker.reachability import OUT, Location
from tracker.timestamp import time_from_json

if TYPE_CHECKING:
    from tracker.analysis.explain import Explanation, Holder
    from tracker.subgraph import Subgraph

__all__ = ["HolderDetails", "Entry", "late_holders", "describe"]


@dataclass(frozen=True)
class Entry:
    key: str
    value: dict
    batch: int  # batches applied when it was set
    at: float | None


class HolderDetails:
    """The entries ``detail`` records set, per scope path and pointstamp; only the present ones are kept."""

    def __init__(self) -> None:
        self._by_scope: dict[tuple, dict[tuple[Location, Any], dict[str, tuple]]] = {}  # (value, batch, at)
        self._ports: dict[tuple, Location] = {}
        # (scope path, port) as records spell them -> (that scope's pointstamps, the port's Location): most records
        # name a place named before (every task of a stage attempt the same), so one lookup finds both
        self._places: dict[tuple, tuple[dict, Location]] = {}

    def apply(self, record: dict, batch: int) -> None:
        """Set or clear one entry; a malformed record raises ``ValueError`` naming the field."""
        path = record.get("scope", ())
        port = record.get("port")
        try:
            place = self._places.get((tuple(path), tuple(port))) if type(path) is list and type(port) is list else None
        except TypeError:  # an unhashable element: _place says what is wrong with the record
            place = None
        if place is None:
            place = self._place(path, port)
        pointstamps, loc = place
        time = record.get("time")
        if type(time) is not int:
            time = time_from_json(time)
        key = record.get("key")
        if type(key) is not str:
            raise ValueError(f"detail key {key!r} is not a string")
        value = record.get("value")
        ps = (loc, time)
        if value is None:
            entries = pointstamps.get(ps)
            if entries is not None:
                entries.pop(key, None)
                if not entries:
                    del pointstamps[ps]
            return
        if type(value) is not dict:
            raise ValueError("detail value must be a JSON object or null")
        entries = pointstamps.get(ps)
        if entries is None:
            entries = pointstamps[ps] = {}
        entries[key] = (value, batch, record.get("at"))

    def _place(self, path: Any, port: Any) -> tuple[dict, Location]:
        """The pointstamps of the scope at ``path`` and the Location of ``port``, checked.

        Remembered when both are lists."""
        key_path = tuple(path) if type(path) is list else path
        pointstamps = self._by_scope.get(key_path)
        if pointstamps is None:
            if not isinstance(path, list) or not all(type(k) is int for k in path):
                raise ValueError(f"scope path {path!r} is not a list of child indices")
            pointstamps = self._by_scope[key_path] = {}
        pkey = tuple(port) if isinstance(port, list) else None
        loc = self._ports.get(pkey) if pkey is not None else None
        if loc is None:
            loc = Location.from_json(port)
            if pkey is not None:
                self._ports[pkey] = loc
        if type(path) is list and type(port) is list:
            self._places[(key_path, pkey)] = (pointstamps, loc)
        return pointstamps, loc

    def clear(self, path: tuple, updates: list, keys: list) -> None:
        """A progress batch's ``clears``: remove these keys from the pointstamps the batch decrements."""
        pointstamps = self._by_scope.get(tuple(path))
        if not pointstamps:
            return
        for loc, time, delta in updates:
            if delta < 0:
                entries = pointstamps.get((loc, time))
                if entries:
                    for key in keys:
                        entries.pop(key, None)
                    if not entries:
                        del pointstamps[(loc, time)]

    def of(self, path: tuple, location: Location, time: Any, batch: int | None = None) -> list[Entry]:
        """The entries of a pointstamp.

        With ``batch``: only those set at or before it, a lower bound for the past, since entries cleared since are
        gone."""
        entries = self._by_scope.get(tuple(path), {}).get((location, time))
        if not entries:
            return []
        return [Entry(k, v, b, at) for k, (v, b, at) in entries.items() if batch is None or b <= batch]

    def latest_at(self) -> float | None:
        """The greatest ``at`` of the entries present (None if none has one).

        How far a live tail's state has seen, where no next batch says yet how long it lasts."""
        return max((at for pointstamps in self._by_scope.values() for entries in pointstamps.values()
                    for _, _, at in entries.values() if type(at) is float or type(at) is int), default=None)

    def busy(self, path: tuple, location: Location, time: Any) -> bool:
        """Does this pointstamp have running work (an entry of kind ``task``)?"""
        return any(e.value.get("kind") == "task" for e in self.of(path, location, time))

    def forget(self, path: tuple) -> None:
        """Drop every entry of the scope at ``path`` and of the scopes it nests (it was folded: finished)."""
        n = len(path)
        for key in [k for k in self._by_scope if k[:n] == path]:
            del self._by_scope[key]
        self._places.clear()

    def snapshot(self) -> dict:
        """A copy of every present entry (a history checkpoint keeps it)."""
        return {path: {ps: dict(entries) for ps, entries in pointstamps.items()}
                for path, pointstamps in self._by_scope.items() if pointstamps}

    def restore(self, snapshot: dict) -> None:
        """Replace every entry with a :meth:`snapshot`'s (copied: the snapshot stays as it was)."""
        self._by_scope = {path: {ps: dict(entries) for ps, entries in pointstamps.items()}
                          for path, pointstamps in snapshot.items()}
        self._places.clear()

    def __len__(self) -> int:
        return sum(len(v) for p in self._by_scope.values() for v in p.values())


def describe(entries: list[Entry], count: int, now: float | None) -> dict:
    """A holder's entries for a person.

    Running tasks (longest first, with ``running_s``: from the task's launch to ``now``, the end of the state shown,
    never below 0), pending tasks (how many, since when: the count held minus those running, since the latest stage
    attempt's submission), anything else."""
    running, stages, other = [], [], []
    for e in entries:
        kind = e.value.get("kind")
        if kind == "task":
            t = dict(e.value)
            launched = t.get("launched")
            if now is not None and isinstance(launched, (int, float)):
                t["running_s"] = round(max(0.0, now - launched), 3)
            running.append(t)
        elif kind == "stage":
            stages.append(e.value)
        else:
            other.append({"key": e.key, **e.value})
    running.sort(key=lambda t: (t.get("launched") or 0, t.get("task") or 0))
    out: dict = {"running": running}
    if stages or running:
        since = max((s.get("submitted") or 0 for s in stages), default=None)
        out["pending"] = {"count": max(0, count - len(running)), "since": since}
    if stages:
        out["stages"] = stages
    if other:
        out["other"] = other
    return out


def late_holders(explanation: Explanation, scope: Subgraph, details: HolderDetails) -> list[Holder]:
    """The explanation's pointstamps ordered by who is actually late (see the module docstring).

    Pointstamps with running work first (holders, then implied ones a driver holder waits on), then the other
    holders."""
    path = tuple(explanation.scope)

    def is_driver(h: Holder) -> bool:
        child = scope.children.get(h.location.node)
        return h.location.kind == OUT and child is not None and child.attrs.get("role") == "source"

    busy = [h for h in explanation.holders if details.busy(path, h.location, h.time)]
    if any(is_driver(h) for h in explanation.holders):
        busy += [h for h in explanation.implied if details.busy(path, h.location, h.time)]
    rest = [h for h in explanation.holders if h not in busy]
    return busy + rest


def late_json(explanation: Explanation, scope: Subgraph, details: HolderDetails, now: float | None,
              batch: int | None = None) -> list[dict]:
    """:func:`late_holders` as JSON.

    Each pointstamp with its operator's name and :func:`describe`'s details. ``now`` is the wall clock the state shown
    lasts until (a replay's ``state_until``, the one rule for how long a task has run in that state)."""
    path = tuple(explanation.scope)
    implied = set(map(id, explanation.implied))
    out = []
    for h in late_holders(explanation, scope, details):
        child = scope.children.get(h.location.node)
        entry = {"location": h.location.to_json(), "time": h.time, "count": h.count,
                 "operator": child.name if child is not None else "", "implied": id(h) in implied}
        entry.update(describe(details.of(path, h.location, h.time, batch), h.count, now))
        out.append(entry)
    return out
