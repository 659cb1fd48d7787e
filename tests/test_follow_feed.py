"""Spark event logs as feeds, without Spark: replayed and followed logs make the model's records, a growing
in-progress log is followed until Spark's rename finalizes it, new applications in a directory are found once, and
the feed registry recognises Spark logs."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from backend.eventlog import EventLogReader
from backend.feeds.progress_feeds import FeedRegistry, default_registry
from backend.spark.live.follow_feed import SparkDirectoryFollower, SparkLogFeed, check_spark_log, register
from backend.spark.model.spark_model import SparkModel

from .conftest import LOOP_LOG, SPARK_EVENTS

ROLLING = SPARK_EVENTS / "pyspark-4.3" / "events" / "eventlog_v2_local-1795284909880"
SHUFFLE = SPARK_EVENTS / "pyspark-4.3" / "spark430_1000tasks_shuffle.jsonl.gz"


def model_records(path: Path) -> list[dict]:
    model = SparkModel()
    out = []
    for ev in EventLogReader(path):
        out += model.feed(ev.event, ev.line)
    return out


def all_records(feed) -> list[dict]:
    out = []
    while (chunk := feed.poll(100)) is not None:
        out += [r for _, r in chunk]
    return out


@pytest.mark.spark_events
@pytest.mark.parametrize("path", [ROLLING, SHUFFLE], ids=["rolling-zstd", "single-gz"])
def test_a_finished_log_replays_to_the_models_records(path):
    feed = SparkLogFeed(path, follow=False)
    assert not feed.live
    assert all_records(feed) == model_records(path)
    assert feed.errors == [] and not feed.model.uncertain and feed.model.ended


@pytest.mark.spark_events
def test_a_growing_inprogress_log_is_followed_until_spark_renames_it(tmp_path):
    lines = [orjson.dumps(ev.event) + b"\n" for ev in EventLogReader(SHUFFLE)]
    log = tmp_path / "local-123.inprogress"
    log.write_bytes(b"")
    feed = SparkLogFeed(log)  # followed
    assert feed.live and feed.label == "local-123 (followed)"
    got: list[dict] = []
    cut = len(lines) // 3
    with open(log, "ab") as fh:
        fh.write(b"".join(lines[:cut]) + lines[cut][:50])  # half a line: more to come, not an error
    got += [r for _, r in feed.poll(10_000) or ()]
    assert got and feed.poll(10_000) == [] and not feed.finalized
    with open(log, "ab") as fh:
        fh.write(lines[cut][50:] + b"".join(lines[cut + 1:]))
    log.rename(tmp_path / "local-123")  # the application ended
    got += all_records(feed)
    assert feed.finalized and got == model_records(SHUFFLE)
    assert feed.errors == []


@pytest.mark.spark_events
def test_new_applications_are_found_once(tmp_path):
    follower = SparkDirectoryFollower(tmp_path)
    assert follower.scan() == []
    shutil.copytree(ROLLING, tmp_path / ROLLING.name)
    (tmp_path / "local-9.inprogress").write_bytes(b"")
    (tmp_path / "README.md").write_text("not a log")
    feeds = follower.scan()
    assert sorted(f.label for f in feeds) == ["local-1795284909880 (followed)", "local-9 (followed)"]
    (tmp_path / "local-9.inprogress").rename(tmp_path / "local-9")  # same application, not a new one
    assert follower.scan() == []
    rolling = next(f for f in feeds if "1795" in f.label)
    assert all_records(rolling) == model_records(ROLLING) and rolling.finalized


def test_a_log_renamed_while_the_directory_is_listed_is_found_by_its_new_name(tmp_path, monkeypatch):
    """Spark drops `.inprogress` whenever the application ends, also between a scan's listing and its look at the
    file: that scan passes over it, the next finds it finalized, and nothing fails."""
    import backend.eventlog.eventlog_layout as layout

    running = tmp_path / "local-7.inprogress"
    running.write_bytes(orjson.dumps({"Event": "SparkListenerLogStart", "Spark Version": "4.0.0"}) + b"\n")
    sniff = layout.looks_like_event_log

    def renamed_after_the_sniff(path: Path) -> bool:
        ok = sniff(path)
        if path == running and running.exists():
            running.rename(tmp_path / "local-7")  # the application ends right now
        return ok

    monkeypatch.setattr(layout, "looks_like_event_log", renamed_after_the_sniff)
    follower = SparkDirectoryFollower(tmp_path)
    assert follower.scan() == []
    (feed,) = follower.scan()
    assert feed.label == "local-7 (followed)" and feed.path == tmp_path / "local-7"


@pytest.mark.spark_events
def test_the_registry_knows_spark_logs(tmp_path):
    registry = FeedRegistry()
    register(registry)
    assert registry.identify(ROLLING).name == "spark-event-log"
    assert registry.identify(SHUFFLE).name == "spark-event-log"
    feed = registry.open(ROLLING, follow=True)
    assert isinstance(feed, SparkLogFeed) and feed.live
    assert check_spark_log(LOOP_LOG) is not None  # a flowscope progress log is not a Spark log
    (tmp_path / "notes.txt").write_text("hello")
    assert "does not start like" in (check_spark_log(tmp_path / "notes.txt") or "")
    assert "not a rolling event log" in (check_spark_log(tmp_path) or "")
    assert default_registry().identify(LOOP_LOG).name == "progress-log"


@pytest.mark.spark_events
def test_a_followed_session_goes_live_then_done(tmp_path):
    import asyncio

    from backend.sessions.session import Session

    lines = [orjson.dumps(ev.event) + b"\n" for ev in EventLogReader(SHUFFLE)]
    log = tmp_path / "local-5.inprogress"
    log.write_bytes(b"".join(lines[:200]))

    async def run():
        session = Session(SparkLogFeed(log, poll_interval=0.02))
        session.start()
        for _ in range(300):
            await asyncio.sleep(0.01)
            if session.status == "live":
                break
        assert session.status == "live" and session.head > 0
        log.write_bytes(b"".join(lines))
        log.rename(tmp_path / "local-5")
        for _ in range(500):
            await asyncio.sleep(0.01)
            if session.status == "done":
                break
        return session

    session = asyncio.run(run())
    assert session.status == "done" and session.errors() == []
    for scope in session.replay.state()["scopes"]:
        for port in scope["ports"]:
            assert port["frontier"] == []
