"""What-if: had this pointstamp been released at batch k, which frontiers would have advanced?

A person looking at a holder wants to know what it is blocking: releasing it (all its count, or part) on a *copy*
of the state and propagating shows every port, in every scope, whose frontier would move, and to where. The
released pointstamp's downstream may still be held by something else; then nothing moves, which is an answer too
(another holder is also late). The caller passes a replay it owns (a restored copy, never the live one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracker.progress_log.replay import Replay
from tracker.reachability import Location

__all__ = ["Advance", "release"]


@dataclass(frozen=True)
class Advance:
    scope: tuple
    port: Location
    operator: str
    before: list
    after: list

    def to_json(self) -> dict:
        return {"scope": list(self.scope), "port": self.port.to_json(), "operator": self.operator,
                "before": self.before, "after": self.after}


def _frontiers(replay: Replay) -> dict[tuple, list]:
    replay.root.schedule()
    return {(sc.path, tuple(p["port"])): p["frontier"] for sc in replay.root.scopes() for p in sc.port_state()}


def release(replay: Replay, path: tuple, location: Location, time: Any, count: int | None = None) -> tuple[int, list]:
    """Release ``count`` (default: all) of the pointstamp ``(location, time)`` in scope ``path``.

    ``replay`` is mutated: give a copy. Returns the count released and the :class:`Advance` of every port that moved.
    Raises ``KeyError`` for an unknown scope or port and ``ValueError`` when nothing is held there."""
    scope = replay.root.find(path)
    before = _frontiers(replay)
    tracker = scope.tracker
    if tracker is None or location not in tracker.index:
        raise KeyError(f"scope {list(path)} has no port {location}")
    held = dict(tracker.pointstamps_at(location).updates()).get(time, 0)
    if held <= 0:
        raise ValueError(f"nothing is held at {location} for time {time!r} in scope {list(path)}")
    n = held if count is None else max(0, min(count, held))
    scope.receive([(location, time, -n)])
    after = _frontiers(replay)
    moved = []
    for key, old in before.items():
        new = after.get(key, old)
        if new != old:
            sc = replay.root.find(key[0])
            loc = Location.from_json(list(key[1]))
            child = sc.children.get(loc.node)
            moved.append(Advance(key[0], loc, child.name if child is not None else "scope boundary", old, new))
    return n, moved
