"""What changed in one scope between two moments.

The comparison a person otherwise makes by scrubbing back and forth.

A moment is what the history can produce for a scope after some batch: its port rows (``[kind, node, port,
frontier, pointstamps, implications]``, as :func:`backend.sessions.session.port_rows` builds them) and the names of its
operators. Between two moments a port's frontier either *advanced* (frontiers only move forward in a correct
tracker; by how much is the difference of the least times, or "done" once nothing can arrive), or did not move.
Ports that did not move while still holding times are the *stuck* part of the graph; ports whose counts changed
show where work happened; operators present only in the later moment *appeared*. Pure functions over plain data:
no session, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Moment:
    """One scope after ``batch`` batches (wall time ``at``): its port rows and its operators' names by node."""

    batch: int
    at: float | None
    ports: list[list]
    operators: dict[int, str] = field(default_factory=dict)


def _total(counts: list) -> int:
    return sum(c for _, c in counts)


def time_difference(later: Any, earlier: Any) -> Any:
    """``later - earlier`` componentwise (integers, or nested pairs of a product time); None if shapes differ."""
    if isinstance(later, int) and isinstance(earlier, int):
        return later - earlier
    if isinstance(later, (list, tuple)) and isinstance(earlier, (list, tuple)) and len(later) == len(earlier):
        parts = [time_difference(a, b) for a, b in zip(later, earlier, strict=True)]
        return None if any(p is None for p in parts) else parts
    return None


def _least(frontier: list) -> Any:
    return min(frontier, key=_sort_key)


def _sort_key(t: Any) -> Any:
    return tuple(_sort_key(x) for x in t) if isinstance(t, (list, tuple)) else t


def _as_json(t: Any) -> Any:
    return [_as_json(x) for x in t] if isinstance(t, (list, tuple)) else t


def diff_moments(before: Moment, after: Moment) -> dict:
    """What changed in one scope between two moments.

    The ports that advanced (and by how much), the ports that did not move while holding times (stuck), the ports whose
    pointstamp or implication counts changed, and the operators that appeared."""
    old = {(r[0], r[1], r[2]): r for r in before.ports}
    advanced, stuck, counts = [], [], []
    for row in after.ports:
        key = (row[0], row[1], row[2])
        prev = old.get(key)
        if prev is None:
            continue  # a port of an operator that appeared
        port = list(key)
        f0 = [_as_json(t) for t in prev[3]]
        f1 = [_as_json(t) for t in row[3]]
        if f0 != f1:
            by: Any = "done" if not f1 else (time_difference(_least(f1), _least(f0)) if f0 else None)
            advanced.append({"port": port, "from": f0, "to": f1, "by": by})
        elif f1:
            stuck.append({"port": port, "frontier": f1})
        p0, p1 = _total(prev[4]), _total(row[4])
        i0, i1 = _total(prev[5]), _total(row[5])
        if p0 != p1 or i0 != i1 or prev[4] != row[4]:
            counts.append({"port": port, "pointstamps": [p0, p1], "implications": [i0, i1]})
    seen = {r[1] for r in before.ports} | set(before.operators)
    appeared = [{"node": n, "name": after.operators[n]} for n in sorted(after.operators) if n not in seen and n != 0]
    return {
        "from": {"batch": before.batch, "at": before.at},
        "to": {"batch": after.batch, "at": after.at},
        "advanced": advanced,
        "stuck": stuck,
        "counts": counts,
        "appeared": appeared,
        "summary": {"ports": len(after.ports), "advanced": len(advanced), "stuck": len(stuck),
                    "counts": len(counts), "appeared": len(appeared)},
    }
