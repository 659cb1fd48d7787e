"""The WebSocket stream against a real server: snapshot + deltas, reconnect and resume, a slow client, deletion."""

from __future__ import annotations

import threading
import time

import httpx
import orjson
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from backend.feeds.progress_feeds import PushFeed
from backend.web.app import Settings
from tests.e2e.logs import pipeline_records
from tests.e2e.rawws import RawWebSocket
from tests.e2e.server import running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    settings = Settings(allowed_dirs=[tmp_path_factory.mktemp("none")], checkpoint_every=512)
    with running_server(settings, sndbuf=8192) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=20) as c:
        yield c


def live_session(server, name="live"):
    feed = PushFeed(name)
    session = server.call(server.manager.add, feed, name, False)
    return feed, session.id


def key(row):
    return (row[0], row[1], row[2])


def apply(state: dict, msg: dict) -> dict:
    if msg["type"] == "snapshot":
        state = {}
    for row in msg["ports"]:
        state[key(row)] = row
    return state


def rest_state(client, sid, scope="") -> tuple[dict, int]:
    st = client.get(f"/api/sessions/{sid}/state", params={"scope": scope}).json()
    return {key(r): r for r in st["ports"]}, st["batch"]


def read_until(ws, pred, timeout=20.0):
    """Messages until pred(msg) is true (inclusive)."""
    out = []
    deadline = time.monotonic() + timeout
    while True:
        msg = orjson.loads(ws.recv(timeout=max(0.01, deadline - time.monotonic())))
        out.append(msg)
        if pred(msg):
            return out


def test_snapshot_then_deltas_reproduce_the_state(server, client):
    feed, sid = live_session(server)
    records = list(pipeline_records(15, 25, header=False))
    feed.push_many(records[: len(records) // 2])
    with connect(f"{server.ws_url}/api/sessions/{sid}/stream?interval=0.005") as ws:
        first = orjson.loads(ws.recv(timeout=10))
        assert first["type"] == "snapshot" and first["scope"] == []
        state = apply({}, first)
        for r in records[len(records) // 2:]:
            feed.push(r)
        feed.end()
        msgs = read_until(ws, lambda m: m["status"] == "done")
        for m in msgs:
            assert m["type"] == "delta"
            state = apply(state, m)
        marks = [mk["label"] for m in [first] + msgs for mk in (m.get("marks") or [])]
    want, head = rest_state(client, sid)
    assert msgs[-1]["batch"] == head == sum(1 for r in records if r["type"] == "progress")
    assert state == want
    assert len(want) == 2 * 15 - 2
    assert "epoch 24 started" in marks
    assert any(m["ports"] and m["t_first"] for m in msgs)


def test_reconnect_resumes_from_the_clients_state(server, client):
    feed, sid = live_session(server)
    records = list(pipeline_records(30, 6, in_flight=1, header=False))
    progress = [i for i, r in enumerate(records) if r["type"] == "progress"]
    cut = progress[40]
    feed.push_many(records[:cut])
    deadline = time.monotonic() + 10
    while client.get(f"/api/sessions/{sid}").json()["batches"] < 40:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with connect(f"{server.ws_url}/api/sessions/{sid}/stream") as ws:
        snap = orjson.loads(ws.recv(timeout=10))
        state, since = apply({}, snap), snap["batch"]
    assert since == 40
    feed.push_many(records[cut:progress[43]])  # three more batches while disconnected
    while client.get(f"/api/sessions/{sid}").json()["batches"] < 43:
        time.sleep(0.01)
    with connect(f"{server.ws_url}/api/sessions/{sid}/stream?since={since}") as ws:
        resume = orjson.loads(ws.recv(timeout=10))
    assert resume["type"] == "resume" and resume["since"] == 40 and resume["batch"] == 43
    assert 0 < len(resume["ports"]) < len(state) / 4  # only what changed, not the whole scope
    state = apply(state, resume)
    want, head = rest_state(client, sid)
    assert head == 43 and state == want
    feed.end()


def test_a_slow_client_gets_coalesced_updates_and_slows_nobody(server, client):
    feed, sid = live_session(server, "busy")
    records = list(pipeline_records(300, 60, in_flight=20, header=False))
    url = f"{server.ws_url}/api/sessions/{sid}/stream?interval=0"
    fast_msgs: list[dict] = []
    fast_done = threading.Event()
    slow = RawWebSocket(server.port, f"/api/sessions/{sid}/stream?interval=0")
    assert slow.status == 101
    slow_first = orjson.loads(slow.recv(timeout=10))  # the (empty) snapshot; then it stops reading

    fast_connected = threading.Event()

    def fast_reader():
        with connect(url) as ws:
            fast_connected.set()
            for m in read_until(ws, lambda m: m["status"] == "done", timeout=60):
                fast_msgs.append(m)
        fast_done.set()

    reader = threading.Thread(target=fast_reader)
    reader.start()
    assert fast_connected.wait(10), "the fast client never connected"
    feed.push_many(records)
    feed.end()
    assert fast_done.wait(60), "the fast client never saw the end"
    reader.join()
    batches = sum(1 for r in records if r["type"] == "progress")
    assert client.get(f"/api/sessions/{sid}").json()["batches"] == batches
    # the slow client has read nothing since its snapshot, and the session finished anyway
    slow_msgs = [slow_first]
    while True:
        m = orjson.loads(slow.recv(timeout=20))
        slow_msgs.append(m)
        if m["status"] == "done" and m["batch"] == batches:
            break
    slow.close()
    want, head = rest_state(client, sid)
    fast_state: dict = {}
    for m in fast_msgs:
        fast_state = apply(fast_state, m)
    slow_state: dict = {}
    for m in slow_msgs:
        slow_state = apply(slow_state, m)
    assert fast_state == want and slow_state == want
    print("slow", len(slow_msgs), "fast", len(fast_msgs), "batches", batches)
    assert len(slow_msgs) < len(fast_msgs) / 2, (len(slow_msgs), len(fast_msgs))
    assert len(fast_msgs) < batches / 10  # even a fast client is sent slices, not single batches


def test_switching_scope_and_deleting_the_session(server, client, tmp_path):
    from tests.conftest import LOOP_LOG
    from tracker.progress_log.log_file import read_records

    feed, sid = live_session(server, "loop")
    records = [r for _, r in read_records(LOOP_LOG)]
    feed.push_many(records)
    with connect(f"{server.ws_url}/api/sessions/{sid}/stream") as ws:
        first = orjson.loads(ws.recv(timeout=10))
        assert first["type"] == "snapshot"
        ws.send(orjson.dumps({"type": "watch", "scope": [3]}).decode())
        inner = read_until(ws, lambda m: m["type"] == "snapshot" and m["scope"] == [3])[-1]
        want, _ = rest_state(client, sid, "3")
        assert {key(r) for r in inner["ports"]} == set(want)
        assert client.delete(f"/api/sessions/{sid}").status_code == 204
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=10)
        assert "1001" in str(closed.value) or "session deleted" in str(closed.value)


def test_unknown_session_is_reported_and_closed(server):
    with connect(f"{server.ws_url}/api/sessions/nope/stream") as ws:
        msg = orjson.loads(ws.recv(timeout=5))
        assert msg == {"type": "error", "detail": "no session 'nope'"}
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=5)
        assert ws.close_code == 4404


def test_clients_of_a_scope_share_one_encoding_of_each_row(monkeypatch):
    """Many subscribers of one scope: each port's row is read once per ingest slice, whatever the number of
    clients, and each message still carries exactly the live rows of its own dirty ports."""
    import asyncio

    import backend.sessions.fanout as stream
    from backend.sessions.session import Session
    from backend.views.projections import port_rows

    reads: list[int] = []

    def counting(scope, locations=None):
        rows = port_rows(scope, locations)
        reads.append(len(rows))
        return rows

    monkeypatch.setattr(stream, "port_rows", counting)

    async def run() -> None:
        records = list(pipeline_records(12, 6, in_flight=2, header=False))
        structure = [r for r in records if r["type"] != "progress"]
        batches = [r for r in records if r["type"] == "progress"]
        feed = PushFeed("shared")
        feed.push_many(structure + batches[:5])
        session = Session(feed)
        session.start()
        while session.head < 5:
            await asyncio.sleep(0.01)
        subs = [stream.Subscriber(session, ()) for _ in range(20)]
        session.subscribers.update(subs)
        snapshots = [orjson.loads(s.take()) for s in subs]
        everything = orjson.loads(orjson.dumps(port_rows(session.scope(()))))
        assert all(m["type"] == "snapshot" and m["ports"] == everything for m in snapshots)
        assert sum(reads) == len(everything), "one read of each port for 20 snapshots"
        for at in (6, 9, len(batches)):
            reads.clear()
            feed.push_many(batches[session.head:at])
            while session.head < at:
                await asyncio.sleep(0.01)
            messages = [orjson.loads(s.take()) for s in subs]
            live = {key(r): r for r in orjson.loads(orjson.dumps(port_rows(session.scope(()))))}
            for m in messages:
                assert m["type"] == "delta" and m["ports"], m
                assert all(live[key(r)] == r for r in m["ports"]), "a row from an earlier slice"
            dirty = {key(r) for m in messages for r in m["ports"]}
            assert sum(reads) == len(dirty), "rows were read per client, not once for all"
        feed.end()
        await session.stop()

    asyncio.run(run())


def test_a_first_snapshot_waits_for_the_settle_so_the_layout_is_made_before_the_trackers(monkeypatch):
    """A client that connects while a loaded session lays its root out gets its snapshot once the settle has
    made the layout and then built the trackers: its own build never races the layout (which would hold back
    the picture its snapshot colours), and the snapshot is every port of the built scope."""
    import asyncio

    import backend.sessions.fanout as stream
    import backend.sessions.session as session_module
    from backend.sessions.session import Session
    from backend.views.projections import port_rows

    events: list[str] = []
    real_layout = session_module.layout_graph

    def layout(g):
        events.append("layout start")
        out = real_layout(g)
        events.append("layout end")
        return out

    monkeypatch.setattr(session_module, "layout_graph", layout)

    async def run() -> None:
        records = list(pipeline_records(400, 2, in_flight=2, header=False))
        structure = [r for r in records if r["type"] != "progress"]
        feed = PushFeed("settle")
        feed.push_many(structure)
        session = Session(feed)
        root = session.replay.root
        real_build = root.ensure_built

        def build() -> None:
            if root.needs_build:
                events.append("build")
            real_build()

        monkeypatch.setattr(root, "ensure_built", build)
        session.start()
        while session._settling is None:  # the structure is in and the feed quiet: the settle has begun
            await asyncio.sleep(0.002)
        sub = stream.Subscriber(session, ())
        session.subscribers.add(sub)
        got: list[bytes] = []
        seen_then: list[list[str]] = []

        async def send(msg: bytes) -> None:
            got.append(msg)
            seen_then.append(list(events))

        task = asyncio.create_task(stream.pump(sub, send))
        while not got:
            await asyncio.sleep(0.005)
        task.cancel()
        msg = orjson.loads(got[0])
        assert msg["type"] == "snapshot"
        assert seen_then[0] == ["layout start", "layout end", "build"], seen_then[0]
        assert session.graph_ready(())
        assert msg["ports"] == orjson.loads(orjson.dumps(port_rows(root))) and len(msg["ports"]) == 798
        feed.end()
        await session.stop()

    asyncio.run(run())
