"""Stretches of a session whose events never arrived, and the answers they put in doubt.

A live Spark session marks each outage of its listener (and each full listener queue) with an "events lost" mark
(``SparkModel.note_lost``): ``lost`` events, from the mark's ``at`` (the last event received before) to
``lost_until`` (when the listener was back). The replay indexes those marks (``Replay.lost_marks``). A state shown
after such a mark may be wrong (the events that would have moved it are missing), and a blamed time whose wall-clock
span overlaps a stretch is missing part of its story: explain and blame say so with these stretches.
"""

from __future__ import annotations

from typing import Any

from tracker.progress_log.replay import Replay

__all__ = ["lost_stretches", "lost_before", "lost_during"]


def lost_stretches(replay: Replay) -> list[dict[str, Any]]:
    """Every "events lost" stretch: after which batch, how many events, from and until when (wall-clock s)."""
    out = []
    for i in replay.lost_marks:
        m = replay.marks[i]
        start = m.get("at")
        out.append({"after": m["after"], "lost": m["lost"], "from": start, "until": m.get("lost_until", start),
                    "label": m.get("label", "")})
    return out


def lost_before(replay: Replay, batch: int) -> list[dict[str, Any]]:
    """The stretches a state after ``batch`` batches comes after (so it may be missing what they lost)."""
    return [s for s in lost_stretches(replay) if s["after"] <= batch]


def lost_during(stretches: list[dict[str, Any]], start: float | None, end: float | None) -> list[dict[str, Any]]:
    """The stretches that overlap the wall-clock span ``start``..``end`` (an open end: up to now)."""
    out = []
    for s in stretches:
        s_from, s_until = s["from"], s["until"]
        if s_from is None:
            continue
        if (end is None or s_from <= end) and (start is None or (s_until if s_until is not None else s_from) >= start):
            out.append(s)
    return out
