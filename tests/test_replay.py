"""Replaying progress logs through the scope hierarchy: final states, mid-flight states, atomic rejection, growth."""

from __future__ import annotations

import functools
import json

import pytest

from tests.conftest import tracker_of
from tracker.progress_log.log_file import ProgressLogWriter, read_records
from tracker.progress_log.replay import Replay, replay_file
from tracker.reachability import Source, Target


def frontier_of(state, path, port):
    for scope in state["scopes"]:
        if scope["path"] == path:
            for p in scope["ports"]:
                if p["port"] == port:
                    return p["frontier"]
    raise AssertionError(f"no port {port} in scope {path}")


def test_loop_fixture_completes_with_every_frontier_empty(loop_log):
    replay = replay_file(loop_log, check_contracts=True)
    assert replay.errors == []
    assert replay.findings == []
    assert replay.batches_applied == replay.progress_records > 50
    state = replay.state()
    assert [s["path"] for s in state["scopes"]] == [[], [3]]
    for scope in state["scopes"]:
        for port in scope["ports"]:
            assert port["frontier"] == [] and port["pointstamps"] == [], (scope["path"], port)
    assert any(m["label"] == "input closed" for m in replay.marks)


def test_loop_fixture_mid_flight(loop_log):
    state = replay_file(loop_log, at=20).state()
    # The input has moved on to epoch 2; epoch 0 is still inside the loop, so the sink is held at 0.
    assert frontier_of(state, [], ["out", 1, 0]) == [2]
    assert frontier_of(state, [], ["in", 4, 0]) == [0]
    loop = next(s for s in state["scopes"] if s["path"] == [3])
    assert loop["reported"] == [[0]], "the loop reports outer time 0 as still producible at its output"
    # Inside the loop the records of epochs 0 and 1 sit at the step operator, iteration 2: a two-element frontier.
    assert frontier_of(state, [3], ["in", 2, 0]) == [(0, 2), (2, 0)]
    assert frontier_of(state, [3], ["out", 0, 0]) == [(2, 0)], "the parent's frontier, accepted at child 0"


def test_at_counts_progress_records_in_file_order(loop_log):
    for n in (0, 1, 7):
        replay = replay_file(loop_log, at=n)
        assert replay.batches_applied == n


def log_with(tmp_path, build):
    path = tmp_path / "log.jsonl"
    with ProgressLogWriter(path) as log:
        build(log)
    return path


def test_bad_batch_rejected_whole_and_replay_goes_on(tmp_path):
    def build(log):
        log.operator([], 1, "input", inputs=0, outputs=1, capabilities=[[0]])
        log.operator([], 2, "map")
        log.edge([], Source(1, 0), Target(2, 0))
        # a good first update, then a port that does not exist: nothing of this batch may apply
        log.progress([], [(Source(1, 0), 0, -1), (Source(1, 0), 1, 1), (Target(9, 0), 0, 1)])
        log.progress([], [(Source(1, 0), 0, -1), (Source(1, 0), 3, 1)])
        log.progress([], [(Source(1, 0), [0, 1], -1)])  # wrong depth
        log.progress([7], [])  # no such scope

    path = log_with(tmp_path, build)
    replay = replay_file(path)
    assert [e.line for e in replay.errors] == [5, 7, 8]
    assert "no node 9" in replay.errors[0].reason
    assert "depth" in replay.errors[1].reason
    assert "no scope [7]" in replay.errors[2].reason
    assert replay.batches_applied == 1
    assert tracker_of(replay.root).frontier(Target(2, 0)) == [3], "only the second batch applied"


def test_scope_grows_after_progress_started(tmp_path):
    """Operators and edges declared mid-log give the same frontiers as declaring them up front."""

    def structure(log, late):
        log.operator([], 1, "input", inputs=0, outputs=1, capabilities=[[0]])
        log.operator([], 2, "map")
        log.edge([], Source(1, 0), Target(2, 0))
        if not late:
            late_structure(log)

    def late_structure(log):
        log.operator([], 3, "sink", inputs=1, outputs=0)
        log.edge([], Source(2, 0), Target(3, 0))

    def batches(log, late):
        log.progress([], [(Target(2, 0), 0, 1), (Source(1, 0), 0, -1), (Source(1, 0), 1, 1)])
        if late:
            late_structure(log)
        log.progress([], [(Target(2, 0), 0, -1), (Target(3, 0), 0, 1)])
        log.progress([], [(Source(1, 0), 1, -1), (Source(1, 0), 4, 1)])

    def whole_log(log, late):
        structure(log, late)
        batches(log, late)

    results = {}
    for late_flag in (False, True):
        folder = tmp_path / str(late_flag)
        folder.mkdir()
        results[late_flag] = replay_file(log_with(folder, functools.partial(whole_log, late=late_flag)))
    early, late = results[False], results[True]
    assert early.errors == late.errors == []
    assert late.state() == early.state()
    assert frontier_of(late.state(), [], ["in", 3, 0]) == [0], "the message in flight to the late sink holds 0"


def test_multi_worker_log_is_the_global_view(tmp_path):
    def build(log):
        log.operator([], 1, "input", inputs=0, outputs=1, capabilities=[[0, 0]])  # one capability per worker
        log.operator([], 2, "sink", inputs=1, outputs=0)
        log.edge([], Source(1, 0), Target(2, 0))
        log.progress([], [(Source(1, 0), 0, -1), (Source(1, 0), 1, 1)], worker=0)
        log.progress([], [(Source(1, 0), 0, -1), (Source(1, 0), 1, 1)], worker=1)

    path = log_with(tmp_path, build)
    one = replay_file(path, at=1).state()
    both = replay_file(path).state()
    assert frontier_of(one, [], ["in", 2, 0]) == [0], "worker 1 still holds 0"
    assert frontier_of(both, [], ["in", 2, 0]) == [1]


def test_observer_sees_each_batch_and_its_frontier_changes(loop_log):
    seen = []

    def observe(info, scope, updates, pushed):
        seen.append((info, scope.path, len(updates), pushed))

    replay = Replay(str(loop_log), observer=observe)
    replay.feed(read_records(loop_log), limit=3)
    assert [s[0].index for s in seen] == [0, 1, 2]
    assert seen[0][0].cause == {"operator": "input"} and seen[0][0].line is not None
    # batch 0: the input downgrades 0 -> 1 while a message at 0 goes to map: the input's own frontier moves.
    changes = {(str(loc), t, d) for sc, loc, t, d in seen[0][3] if sc.path == ()}
    assert ("out(1,0)", 0, -1) in changes and ("out(1,0)", 1, 1) in changes
    assert all(json.dumps(t) for _, _, _, pushed in seen for *_, t, _ in pushed)


@pytest.mark.parametrize("settle_every", [1, 3, 1024])
def test_bulk_settling_gives_the_same_state_as_per_batch(loop_log, monkeypatch, settle_every):
    """Without an observer, batches are propagated in groups; every state read must be the same as per batch."""
    import tracker.progress_log.replay as replay_module

    monkeypatch.setattr(replay_module, "SETTLE_EVERY", settle_every)
    for n in (0, 5, 17, 40, 1000):
        bulk = replay_file(loop_log, at=n)
        watched = Replay(str(loop_log), observer=lambda *a: None)
        watched.feed(read_records(loop_log), limit=n)
        watched.finish()
        assert bulk.state() == watched.state(), n
