"""Session history: the state restored at batch k is the state the live replay had after batch k."""

from __future__ import annotations

import random
import threading

import httpx
import orjson
import pytest

from backend.sessions.history import History
from backend.views.projections import port_rows
from backend.web.app import Settings
from tests.conftest import LOOP_LOG
from tests.e2e.logs import growing_records, pipeline_records
from tests.e2e.server import running_server
from tracker.progress_log.log_file import read_records
from tracker.progress_log.replay import Replay


def _norm(state: dict) -> dict:
    for s in state["scopes"]:
        for p in s["ports"]:
            p["frontier"] = sorted(p["frontier"])
        if "reported" in s:
            s["reported"] = [sorted(r) for r in s["reported"]]
    return state


def _rows(replay) -> dict:
    """What the API serves: every scope's port rows, read without any further scheduling."""
    return {scope.path: orjson.loads(orjson.dumps(port_rows(scope))) for scope in replay.root.scopes()}


def _record(records, every: int):
    """Replay ``records`` with a history; return it and the live state after every batch."""
    history = History(checkpoint_every=every)

    def observe(info, scope, updates, pushed):
        history.batch_applied(replay, replay.last_at, info.worker, scope.path)

    replay = Replay("test", observer=observe)
    states, rows = {}, {}
    for rec in records:
        if rec.get("type") == "progress":
            states[replay.batches_applied] = _norm(replay.state())
            rows[replay.batches_applied] = _rows(replay)
        history.record(rec)
        replay.apply(rec)
    states[replay.batches_applied] = _norm(replay.state())
    rows[replay.batches_applied] = _rows(replay)
    return history, replay, states, rows


@pytest.mark.parametrize("every", [1, 5, 64])
def test_every_batch_of_a_nested_log_restores_exactly(every):
    records = [r for _, r in read_records(LOOP_LOG)]
    history, replay, states, rows = _record(records, every)
    assert history.batches == replay.batches_applied == 91
    assert len(history.segments) == 91 // every + 1
    for k in sorted(states):
        with history.at_batch(k) as r:
            assert _rows(r) == rows[k], f"batch {k} (port rows, as served)"
            assert _norm(r.state()) == states[k], f"batch {k}"
    # seeking backwards and forwards in random order through the cursor pool gives the same answers
    order = list(states)
    random.Random(7).shuffle(order)
    for k in order:
        with history.at_batch(k) as r:
            assert r.batches_applied == k
            assert _norm(r.state()) == states[k], f"batch {k} (random order)"


def test_structure_that_grows_mid_stream_and_two_workers():
    history, replay, states, rows = _record(list(growing_records()), 4)
    assert set(history.worker) == {0, 1}
    for k in sorted(states):
        with history.at_batch(k) as r:
            assert _norm(r.state()) == states[k], f"batch {k}"
    # before the late sink was declared, it is not in the restored structure; after, it is
    early = [s for s in states[0]["scopes"] if s["path"] == []][0]
    assert not any(p["port"][1] == 3 for p in early["ports"])
    with history.at_batch(history.batches) as r:
        assert 3 in r.root.children


def test_wall_clock_seek_and_batch_records():
    history, replay, states, rows = _record(list(pipeline_records(6, 8)), 16)
    n = history.batches
    assert history.batch_at_time(0) == 0
    assert history.batch_at_time(history.at[n - 1]) == n
    mid = history.at[n // 2 - 1]
    assert history.batch_at_time(mid) == n // 2
    rec = history.batch_record(n // 2)
    assert rec["type"] == "progress" and rec["at"] == pytest.approx(mid)


def test_seek_work_does_not_grow_with_the_session(monkeypatch):
    """A seek restores the nearest checkpoint and re-applies at most one segment's records, however long the session
    (counted records, not time: benchmarks/seek_cost.py measures the time)."""
    records = list(pipeline_records(40, 400, in_flight=4))
    history = History(checkpoint_every=2048)
    replay = Replay("t", observer=lambda info, scope, u, p: history.batch_applied(
        replay, replay.last_at, info.worker, scope.path))
    for rec in records:
        history.record(rec)
        replay.apply(rec)
    n = history.batches
    assert n > 15000
    # sealed segments are compressed: far smaller than the records they hold
    raw = sum(len(orjson.dumps(r)) for r in records)
    assert sum(s.stored for s in history.segments) < raw / 5
    applied = [0]
    original = Replay.apply

    def counting(self, record, line=None):
        applied[0] += 1
        return original(self, record, line)

    monkeypatch.setattr(Replay, "apply", counting)
    structure = len(history.structure)
    rng = random.Random(1)
    for k in [n, 1, n // 2] + [rng.randrange(n) for _ in range(8)]:
        applied[0] = 0
        r = history.restore(k)
        assert r.batches_applied == k
        # the structure, then the records of at most one segment (its batches and what was declared among them)
        assert applied[0] <= structure + history.segments[min(k // 2048, len(history.segments) - 1)].count
        assert applied[0] <= structure + 2048 + 1
        history.release(r)


def _slow_seeks(session):
    """Make every seek of ``session`` wait until the test lets it go: (entered, release) events."""
    entered, release = threading.Event(), threading.Event()
    original = session.history.restore

    def restore(batch):
        entered.set()
        assert release.wait(30), "the test never let the seek go"
        return original(batch)

    session.history.restore = restore
    return entered, release


@pytest.mark.parametrize("route", ["state?batch=20", "explain?port=in,2,0&batch=20", "diff?from=10&to=20",
                                   "whatif?port=out,1,0&time=0&batch=20"])
def test_the_server_answers_while_a_seek_runs(tmp_path, route):
    """A seek restores the past in a worker thread: while one is held up (deterministically, on an event), the
    health check and the session's head state still answer, and the seek then completes."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "loop.jsonl").write_bytes(LOOP_LOG.read_bytes())
    with running_server(Settings(allowed_dirs=[logs], checkpoint_every=8)) as srv, \
            httpx.Client(base_url=srv.url, timeout=20) as client:
        sid = client.post("/api/sessions", json={"path": str(logs / "loop.jsonl")}).json()["id"]
        srv.wait_for(sid, client=client)
        entered, release = _slow_seeks(srv.manager.get(sid))
        result: dict = {}

        def seek() -> None:
            result["response"] = httpx.get(f"{srv.url}/api/sessions/{sid}/{route}", timeout=60)

        seeker = threading.Thread(target=seek)
        seeker.start()
        try:
            assert entered.wait(20), "the seek never started"
            assert client.get("/api/health").status_code == 200
            assert client.get(f"/api/sessions/{sid}/state").status_code == 200  # the head: no seek
            assert "response" not in result, "the seek finished while it was held up"
        finally:
            release.set()
            seeker.join(30)
        assert result["response"].status_code < 500, result["response"].text
