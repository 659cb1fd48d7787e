"""Blame's bookkeeping stays bounded however many times complete in a scope that lives on (a long application)."""

from __future__ import annotations

import tracker.analysis.blame as blame_module
from backend.spark.diagnosis.blame import spark_blame
from tracker.progress_log.replay import Replay

STRUCTURE: list[dict] = [
    {"type": "operator", "scope": [], "node": 1, "name": "driver", "inputs": 0, "outputs": 1,
     "attrs": {"role": "source"}},
    {"type": "operator", "scope": [], "node": 2, "name": "work", "inputs": 1, "outputs": 1},
    {"type": "operator", "scope": [], "node": 3, "name": "results", "inputs": 1, "outputs": 0,
     "attrs": {"role": "sink"}},
    {"type": "edge", "scope": [], "from": ["out", 1, 0], "to": ["in", 2, 0]},
    {"type": "edge", "scope": [], "from": ["out", 2, 0], "to": ["in", 3, 0]},
]


def held(t: int, at: float, delta: int) -> dict:
    return {"type": "progress", "scope": [], "worker": 0, "at": at, "updates": [[["out", 2, 0], t, delta]]}


def test_completed_times_are_remembered_up_to_a_bound_and_an_old_one_is_not_blamed_again(monkeypatch):
    monkeypatch.setattr(blame_module, "KEEP_DONE", 50)
    replay = Replay("bounded", checked_records=True)
    tracker = spark_blame(replay)

    def feed(rec: dict) -> None:
        assert replay.apply(rec)
        tracker.record(rec)

    for rec in STRUCTURE:
        feed(rec)
    for t in range(300):
        feed(held(t, 10.0 + t, 1))
        feed(held(t, 10.5 + t, -1))
    times = tracker.times()
    assert [b.time for b in times] == list(range(300))  # every time blamed once, in order
    (sb,) = tracker.scopes.values()
    assert len(sb.done) == 50 and sb.done_floor is not None and sb.done_floor[1] == 249
    # a pointstamp at a time completed long ago (forgotten by value, at or before the floor) opens nothing
    feed(held(3, 400.0, 1))
    feed(held(3, 401.0, -1))
    # a new time still opens and completes
    feed(held(300, 402.0, 1))
    feed(held(300, 403.0, -1))
    assert [b.time for b in tracker.times()[300:]] == [300]
    assert not sb.first_seen and len(sb.done) == 50


def region(k: int, at: float) -> list[dict]:
    """Region ``[k]`` of a growing application: its structure, then its time 0 held and released (completed)."""
    nested = [dict(r, scope=[k]) for r in STRUCTURE]
    return [{"type": "scope", "path": [k], "name": f"job {k}", "inputs": 0, "outputs": 0, "depth": 1}, *nested,
            dict(held(0, at, 1), scope=[k]), dict(held(0, at + 0.5, -1), scope=[k])]


def test_a_growing_application_costs_blame_its_new_scope_not_every_scope_so_far():
    """A new region's structure records leave what blame counted for the other regions (it reads them again only
    in the scope that changed and around it), and a prune visits only the scopes that still hold something."""
    replay = Replay("growing", checked_records=True)
    tracker = spark_blame(replay)
    for k in range(1, 301):
        for rec in region(k, 10.0 + k):
            assert replay.apply(rec)
            tracker.record(rec)
    times = tracker.times()
    assert [b.scope for b in times] == [[k] for k in range(1, 301)]  # every region's time blamed
    first = tracker.scopes[(1,)]
    assert first.reach is not None  # counted once, at its completion, and not thrown away as the others came
    assert len(tracker._unpruned) <= blame_module.PRUNE_EVERY + 1  # finished regions are idle: not visited
