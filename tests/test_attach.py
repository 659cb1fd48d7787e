"""The live path without Spark: the ingest socket and its protocol, the live feed (bounded, in order, drops and
gaps marked uncertain), where ``attach`` sends events, and building the JVM listener's jar.

A fake listener replays a real pyspark 4.3 event log over the socket; the records must be exactly what the Spark
model makes of the same log read from disk."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from backend.eventlog import EventLogReader
from backend.spark.live.follow_feed import SparkLogFeed
from backend.spark.live.listener import ListenerBuildError, listener_jar
from backend.spark.live.socket_feed import SparkIngestServer, SparkLiveFeed
from backend.spark.model.gaps import GapDetector
from backend.spark.model.spark_model import SparkModel
from flowscope.attach import AttachError, _open_target

from .conftest import SPARK_EVENTS, wait_until

PYSPARK43 = SPARK_EVENTS / "pyspark-4.3"
SMALL = PYSPARK43 / "spark430_batch_rdd_sql.jsonl.gz"
SHUFFLE = PYSPARK43 / "spark430_1000tasks_shuffle.jsonl.gz"


def events_of(path: Path) -> list[dict]:
    return [ev.event for ev in EventLogReader(path)]


def modelled(events: list[dict]) -> list[dict]:
    model = SparkModel()
    out: list = []
    for i, e in enumerate(events, 1):
        out += model.feed(e, i)
    return out


def hello(token: str = "", **extra) -> bytes:
    return orjson.dumps({"Event": "flowscope.Hello", "protocol": 1, "listener": "test", "token": token,
                         "app": "demo", "appId": "local-1", **extra}) + b"\n"


class Ingest:
    """A SparkIngestServer collecting its feeds."""

    def __init__(self, **kw) -> None:
        self.feeds: list[SparkLiveFeed] = []
        self.arrived = threading.Event()
        self.server = SparkIngestServer(self._on_feed, **kw)

    def _on_feed(self, feed: SparkLiveFeed) -> None:
        self.feeds.append(feed)
        self.arrived.set()

    def send(self, *chunks: bytes, close: bool = True) -> socket.socket:
        sock = socket.create_connection(self.server.address)
        for c in chunks:
            sock.sendall(c)
        if close:
            sock.close()
        return sock

    def feed(self) -> SparkLiveFeed:
        assert self.arrived.wait(5), "no feed arrived"
        return self.feeds[0]


def drain(feed: SparkLiveFeed, timeout: float = 10.0) -> list[dict]:
    out: list[dict] = []
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        chunk = feed.take(256, 0.05)
        if chunk is None:
            return out
        out += [r for _, r in chunk]
    raise AssertionError("the feed did not end")



def lines(events: list[dict]) -> bytes:
    return b"".join(orjson.dumps(e) + b"\n" for e in events)


@pytest.fixture
def ingest():
    ing = Ingest()
    yield ing
    ing.server.close()


@pytest.mark.spark_events
def test_events_over_the_socket_become_the_same_records_as_the_log(ingest):
    events = events_of(SMALL)
    data = hello() + lines(events)
    # in pieces that split lines, as TCP may
    ingest.send(*(data[i:i + 977] for i in range(0, len(data), 977)))
    feed = ingest.feed()
    assert feed.label == "demo (local-1)"
    records = drain(feed)
    assert records == modelled(events)
    assert feed.hello["listener"] == "test" and "token" not in feed.hello
    assert feed.model.ended and not feed.model.uncertain and feed.errors == []


@pytest.mark.spark_events
def test_a_small_buffer_pushes_back_and_loses_nothing():
    ing = Ingest(capacity=8)
    try:
        events = events_of(SHUFFLE)
        sender = threading.Thread(target=ing.send, args=(hello() + lines(events),))
        sender.start()
        feed = ing.feed()
        wait_until(lambda: feed.stats()["queued"] >= 8, "the buffer to fill", timeout=10.0)
        assert feed.stats()["queued"] == 8 and feed.lines == 0  # full, and bounded while the consumer does nothing
        records = drain(feed)
        sender.join(5)
        assert records == modelled(events)
        assert feed.events == len(events) and not feed.model.uncertain
    finally:
        ing.server.close()


@pytest.mark.spark_events
def test_the_token_is_checked_and_strangers_are_refused():
    ing = Ingest(token="s3cret")
    try:
        ing.send(hello("wrong") + lines(events_of(SMALL)[:3]))
        ing.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        ing.send(orjson.dumps({"Event": "flowscope.Hello", "protocol": 99, "token": "s3cret"}) + b"\n")
        wait_until(lambda: len(ing.server.refused) >= 3, "three refusals", timeout=10.0)
        assert ing.feeds == []
        assert len(ing.server.refused) == 3
        # three connections, each served on its own thread: the refusals come in any order
        reasons = sorted(r.split(": ", 1)[1] for r in ing.server.refused)
        assert sum("token" in r for r in reasons) == 1
        assert sum("protocol 99" in r for r in reasons) == 1
        assert sum("not a flowscope hello" in r for r in reasons) == 1
        ing.send(hello("s3cret") + lines(events_of(SMALL)))
        assert ing.feed().label == "demo (local-1)"
    finally:
        ing.server.close()
    with pytest.raises(ValueError, match="token"):
        SparkIngestServer(lambda f: None, "0.0.0.0", 0)


def uncertain_marks(records: list[dict]) -> list[str]:
    return [r["label"] for r in records if r.get("type") == "mark" and r.get("uncertain")]


@pytest.mark.spark_events
def test_drop_counters_mark_the_session_uncertain_from_where_they_moved(ingest):
    events = events_of(SMALL)
    dropped = {"Event": "flowscope.Dropped", "count": 0, "sent": 10,
               "spark": {"queue.appStatus.numDroppedEvents": 5}}  # another queue's drops do not matter
    ours = {"Event": "flowscope.Dropped", "count": 0, "sent": 20, "spark": {"queue.flowscope.numDroppedEvents": 3}}
    queue = {"Event": "flowscope.Queue", "name": "flowscope"}
    ingest.send(hello() + lines([queue] + events[:10] + [dropped] + events[10:20] + [ours] + events[20:]))
    feed = ingest.feed()
    records = drain(feed)
    marks = uncertain_marks(records)
    assert len(marks) == 1 and "Spark dropped 3 events" in marks[0]
    assert feed.model.uncertain and feed.spark_dropped["queue.appStatus.numDroppedEvents"] == 5
    first_uncertain = next(i for i, r in enumerate(records) if r.get("uncertain"))
    assert records[:first_uncertain] == modelled(events[:20])[:first_uncertain]


@pytest.mark.spark_events
def test_the_listeners_own_drops_and_a_cut_connection_are_uncertain(ingest):
    events = events_of(SMALL)
    ingest.send(hello() + lines(events[:30] + [{"Event": "flowscope.Dropped", "count": 2, "sent": 30, "spark": {}}]))
    records = drain(ingest.feed())
    labels = [r["label"] for r in records if r.get("type") == "mark" and r.get("uncertain")]
    assert labels and "listener dropped 2 events" in labels[0]
    assert "the connection closed before the application ended" in ingest.feed().model.uncertain


@pytest.mark.spark_events
def test_gaps_in_the_events_are_uncertain(ingest):
    events = events_of(SHUFFLE)
    k = next(i for i, e in enumerate(events) if e["Event"] == "SparkListenerTaskEnd")
    ingest.send(hello() + lines(events[:k] + events[k + 1:]))
    feed = ingest.feed()
    drain(feed)
    assert any("task ends lost" in r for r in feed.model.uncertain), feed.model.uncertain


@pytest.mark.spark_events
@pytest.mark.parametrize("drop,expect", [
    ("SparkListenerStageSubmitted", "submission was lost"),
    ("SparkListenerStageCompleted", "completion of stage"),
    ("SparkListenerJobEnd", "never ended"),
])
def test_gap_detector_notices_each_kind_of_lost_event(drop, expect):
    events = events_of(SHUFFLE)
    k = next(i for i, e in enumerate(events) if e["Event"] == drop)
    gaps = GapDetector()
    reasons = [r for e in events[:k] + events[k + 1:] if (r := gaps.check(e))] + gaps.finish()
    assert reasons and expect in reasons[0], reasons


@pytest.mark.spark_events
def test_gap_detector_is_quiet_on_complete_logs():
    for path in (SMALL, SHUFFLE):
        gaps = GapDetector()
        assert [r for e in events_of(path) if (r := gaps.check(e))] + gaps.finish() == []


@pytest.mark.spark_events
def test_notes_and_detach_become_marks(ingest):
    events = events_of(SMALL)
    note = {"Event": "flowscope.Note", "label": "attached while running: the 3 earlier jobs are not shown"}
    ingest.send(hello() + lines(events[:5] + [note] + events[5:12] + [{"Event": "flowscope.Detach"}]))
    feed = ingest.feed()
    labels = [r["label"] for r in drain(feed) if r.get("type") == "mark"]
    assert note["label"] in labels and labels[-1] == "flowscope detached"
    assert not feed.model.uncertain  # a detach is not a loss


@pytest.mark.spark_events
def test_live_feed_session_in_the_web_server(ingest):
    """The live feed is a backend Feed: a session ingests it and follows it until the connection ends."""
    import asyncio

    from backend.sessions.session import Session

    events = events_of(SMALL)

    async def run():
        sock = ingest.send(hello() + lines(events[:40]), close=False)
        feed = await asyncio.get_running_loop().run_in_executor(None, ingest.feed)
        session = Session(feed)
        session.start()
        for _ in range(200):
            await asyncio.sleep(0.02)
            if session.status == "live" and feed.events == 40:
                break
        assert session.status == "live"
        sock.sendall(lines(events[40:]))
        sock.close()
        for _ in range(200):
            await asyncio.sleep(0.02)
            if session.status == "done":
                break
        return session

    session = asyncio.run(run())
    assert session.status == "done" and session.errors() == []
    reference = SparkLogFeed(SMALL, follow=False)
    from tracker.progress_log.replay import Replay

    replay = Replay("ref")
    while (chunk := reference.poll(1000)) is not None:
        for _, r in chunk:
            replay.apply(r)
    assert session.replay.state() == replay.state()


# --- where attach sends events -------------------------------------------------------------------------------


def test_attach_targets_are_parsed_with_clear_errors(tmp_path):
    with pytest.raises(AttachError, match="tcp://HOST:PORT"):
        _open_target("tcp://nohost", None, True)
    with pytest.raises(AttachError, match="http://, https:// or tcp://"):
        _open_target("ftp://x/y", None, True)
    t = _open_target("tcp://10.0.0.5:7337?token=abc", None, True)
    assert t.address == ("10.0.0.5", 7337, "abc")
    sink = _open_target(tmp_path / "live.jsonl", None, True)
    try:
        assert sink.address[0] == "127.0.0.1" and sink.address[1] > 0
    finally:
        sink.close(0)


class _Health(http.server.BaseHTTPRequestHandler):
    body: dict[str, Any] = {"ok": True}

    def do_GET(self):  # noqa: N802
        data = json.dumps(self.body).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


def test_attach_to_a_server_asks_it_for_its_spark_port():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with pytest.raises(AttachError, match="--spark-port"):
            _open_target(url, None, True)
        _Health.body = {"ok": True, "spark_ingest": {"host": "0.0.0.0", "port": 7400}}
        t = _open_target(url + "/?token=T", None, True)
        assert t.address == ("127.0.0.1", 7400, "T")
    finally:
        httpd.shutdown()
        httpd.server_close()
    with pytest.raises(AttachError, match="no flowscope server"):
        _open_target(url, None, True)


# --- the JVM listener's jar ------------------------------------------------------------------------------------


def test_the_listener_jar_is_built_once_and_cached(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FLOWSCOPE_CACHE", str(tmp_path))
    jar = listener_jar()
    import zipfile

    assert "flowscope/FlowscopeListener.class" in zipfile.ZipFile(jar).namelist()
    mtime = jar.stat().st_mtime_ns
    assert listener_jar() == jar and jar.stat().st_mtime_ns == mtime
    import argparse

    from flowscope.commands.listener_jar import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["listener-jar"])
    assert args.func(args) == 0 and capsys.readouterr().out.strip() == str(jar)  # `flowscope listener-jar`
    with pytest.raises(ListenerBuildError, match="could not compile|failed to run"):
        listener_jar(rebuild=True, javac="/bin/false")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("FLOWSCOPE_CACHE", str(tmp_path / "empty"))
    with pytest.raises(ListenerBuildError, match="javac not found"):
        listener_jar()
