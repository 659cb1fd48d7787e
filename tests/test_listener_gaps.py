"""Listener outages as the server sees them, without Spark: a real pyspark 4.3 event log sent over the Spark ingest
socket of a running server, the connection cut in the middle and resumed by the same listener instance (as the JVM and
Py4J listeners do when they reconnect), with events lost in between.

The session continues (one session, not two), the gap is one "events lost" mark with its count, the session's status
carries the count, and explain and blame answers that span the gap say so. With ``--data-dir`` semantics (a journal),
a restarted server brings the live session back under its id, still waiting for its listener.
"""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import orjson
import pytest

from backend.eventlog import EventLogReader
from backend.web.app import Settings

from .conftest import SPARK_EVENTS, wait_until
from .e2e.server import running_server

SHUFFLE = SPARK_EVENTS / "pyspark-4.3" / "spark430_1000tasks_shuffle.jsonl.gz"
RDD_SQL = SPARK_EVENTS / "pyspark-4.3" / "spark430_batch_rdd_sql.jsonl.gz"  # an RDD job, then three SQL jobs
LOST = 40  # events the listener took from Spark and never delivered


def events_of(path: Path) -> list[bytes]:
    return [orjson.dumps(ev.event) for ev in EventLogReader(path)]


def hello(instance: str, connection: int, seq: int, dropped: int = 0) -> bytes:
    return orjson.dumps({"Event": "flowscope.Hello", "protocol": 1, "listener": "test", "token": "",
                         "app": "gappy", "appId": "local-7", "instance": instance, "connection": connection,
                         "seq": seq, "dropped": dropped}) + b"\n"


def send(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(data)



def live_sessions(client: httpx.Client) -> list[dict]:
    return [s for s in client.get("/api/sessions").json() if s["kind"] == "spark-live"]


def outage(port: int, events: list[bytes], cut: int, dropped: int = 0, lost: int = LOST) -> None:
    """The first ``cut`` events, a broken connection, ``lost`` events never delivered (``dropped`` of them dropped
    by the listener's full queue, the rest lost with the connection), the rest after the reconnection."""
    send(port, hello("inst-1", 1, 0) + b"\n".join(events[:cut]) + b"\n")
    in_transit = lost - dropped
    send(port, hello("inst-1", 2, cut + in_transit, dropped) + b"\n".join(events[cut + lost:]) + b"\n")


def ended_after_outage(client: httpx.Client, events: list[bytes], cut: int, dropped: int = 0,
                       lost: int = LOST) -> list[dict]:
    """``outage`` through the server's Spark ingest port; the live sessions that ended."""
    outage(client.get("/api/health").json()["spark_ingest"]["port"], events, cut, dropped, lost)
    return wait_until(lambda: [s for s in live_sessions(client) if s["status"] == "done"], "the session to end",
                      timeout=30.0)


@pytest.mark.spark_events
def test_an_outage_is_one_session_with_its_lost_events_marked_and_answers_say_so(tmp_path):
    events = events_of(SHUFFLE)
    cut = next(i for i, e in enumerate(events) if b'"SparkListenerTaskEnd"' in e) + 200
    with running_server(Settings(spark_port=0, data_dir=tmp_path / "data")) as srv:
        client = httpx.Client(base_url=srv.url, timeout=30)
        sessions = ended_after_outage(client, events, cut, dropped=15)
        assert len(live_sessions(client)) == 1  # the reconnection resumed the session
        info = sessions[0]
        assert info["events_lost"] == LOST
        marks = client.get(f"/api/sessions/{info['id']}/marks").json()["marks"]
        lost = [m for m in marks if m.get("lost")]
        assert len(lost) == 1 and lost[0]["lost"] == LOST and lost[0]["label"].startswith(f"events lost: {LOST}: ")
        assert lost[0]["lost_until"] >= lost[0]["at"]
        gap_batch = lost[0]["after"]

        # explain: a state after the gap says so, one before it does not
        job = ",".join(map(str, client.get(f"/api/sessions/{info['id']}/scopes").json()["scopes"][0]["path"]))
        row = client.get(f"/api/sessions/{info['id']}/state", params={"scope": job}).json()["ports"][0]
        port = ",".join(map(str, row[:3]))

        def explained(batch: int) -> dict:
            r = client.get(f"/api/sessions/{info['id']}/explain", params={"scope": job, "port": port, "batch": batch})
            assert r.status_code == 200, r.text
            return r.json()

        assert explained(1)["events_lost"] == []
        assert [s["lost"] for s in explained(gap_batch + 1)["events_lost"]] == [LOST]

        # blame: the one time (the SQL execution) spans the gap and carries it
        times = client.get(f"/api/sessions/{info['id']}/blame").json()["times"]
        assert len(times) == 1 and [s["lost"] for s in times[0]["events_lost"]] == [LOST]
        assert times[0]["start"] <= lost[0]["lost_until"] and times[0]["end"] >= lost[0]["at"]


@pytest.mark.spark_events
def test_only_the_times_that_span_the_gap_say_so(tmp_path):
    """Four jobs, two events lost in the last: its time carries the gap, the three before it do not."""
    events = events_of(RDD_SQL)
    cut = max(i for i, e in enumerate(events) if b'"SparkListenerJobStart"' in e) + 2
    with running_server(Settings(spark_port=0, data_dir=tmp_path / "data")) as srv:
        client = httpx.Client(base_url=srv.url, timeout=30)
        (info,) = ended_after_outage(client, events, cut, lost=2)
        (gap,) = [m for m in client.get(f"/api/sessions/{info['id']}/marks").json()["marks"] if m.get("lost")]
        times = client.get(f"/api/sessions/{info['id']}/blame").json()["times"]
    spanning = [t for t in times if t.get("events_lost")]
    clear = [t for t in times if not t.get("events_lost")]
    assert len(spanning) == 1 and len(clear) == 3
    assert spanning[0]["start"] <= gap["lost_until"] and spanning[0]["end"] >= gap["at"]
    assert all(t["end"] < gap["at"] or t["start"] > gap["lost_until"] for t in clear)


@pytest.mark.spark_events
def test_a_restarted_server_brings_the_live_session_back_and_the_listener_resumes_it(tmp_path):
    events = events_of(SHUFFLE)
    cut = len(events) // 2
    data = tmp_path / "data"
    with running_server(Settings(spark_port=0, data_dir=data)) as srv:
        client = httpx.Client(base_url=srv.url, timeout=30)
        port = client.get("/api/health").json()["spark_ingest"]["port"]
        send(port, hello("inst-9", 1, 0) + b"\n".join(events[:cut]) + b"\n")
        first = wait_until(lambda: [s for s in live_sessions(client) if s["connected"] is False],
                           "the disconnection", timeout=30.0)[0]
        assert first["status"] in ("loading", "live")  # waiting for its listener, not ended
        records_before = first["records"]
    with running_server(Settings(spark_port=0, data_dir=data)) as srv:  # the same --data-dir
        client = httpx.Client(base_url=srv.url, timeout=30)
        back = wait_until(lambda: [s for s in live_sessions(client) if s["records"] >= records_before],
                          "the restore", timeout=30.0)
        assert [s["id"] for s in back] == [first["id"]] and back[0]["status"] in ("loading", "live")
        port = client.get("/api/health").json()["spark_ingest"]["port"]
        send(port, hello("inst-9", 2, cut + LOST) + b"\n".join(events[cut + LOST:]) + b"\n")
        done = wait_until(lambda: [s for s in live_sessions(client) if s["status"] == "done"],
                          "the session to end", timeout=30.0)
        assert [s["id"] for s in done] == [first["id"]] and done[0]["events_lost"] == LOST
        marks = client.get(f"/api/sessions/{first['id']}/marks").json()["marks"]
        assert any(m["label"] == "application ended" for m in marks)
        assert [m["lost"] for m in marks if m.get("lost")] == [LOST]
