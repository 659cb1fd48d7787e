"""Feeds and the registry that turns paths into them; a followed file that grows; the CLI commands."""

from __future__ import annotations

import asyncio
import gzip
import re
import signal
import subprocess
import sys
import time

import httpx
import pytest

from backend.feeds.progress_feeds import (
    FeedError,
    FeedKind,
    FeedRegistry,
    FollowProgressLog,
    IterFeed,
    ProgressLogFeed,
    PushFeed,
    default_registry,
)
from backend.sessions.session import Session, SessionOptions
from tests.conftest import LOOP_LOG, REPO
from tests.e2e.logs import pipeline_records


def test_registry_identifies_progress_logs_and_explains_refusals(tmp_path):
    reg = default_registry()
    gz = tmp_path / "loop.jsonl.gz"
    gz.write_bytes(gzip.compress(LOOP_LOG.read_bytes()))
    assert reg.identify(gz).name == "progress-log"
    assert isinstance(reg.open(gz), ProgressLogFeed)
    txt = tmp_path / "notes.txt"
    txt.write_text("hello\n")
    with pytest.raises(FeedError, match="not a flowscope progress log: the first line is not JSON"):
        reg.open(txt)
    with pytest.raises(FeedError, match="no such file"):
        reg.open(tmp_path / "missing")
    with pytest.raises(FeedError, match="cannot be followed"):
        reg.open(gz, follow=True)


def test_other_kinds_can_register(tmp_path):
    reg = FeedRegistry()
    reg.register(FeedKind("csv", "CSV file", lambda p: None if p.name.endswith(".csv") else "not .csv",
                          lambda p, follow: IterFeed([{"type": "header"}], p.name, kind="csv")))
    (tmp_path / "x.csv").write_text("a,b\n")
    feed = reg.open(tmp_path / "x.csv")
    assert feed.kind == "csv" and feed.poll(10) == [(None, {"type": "header"})] and feed.poll(10) is None
    with pytest.raises(FeedError, match="not a CSV file: not .csv"):
        reg.open(LOOP_LOG)


def test_a_followed_file_is_read_as_it_grows(tmp_path):
    path = tmp_path / "growing.jsonl"
    lines = LOOP_LOG.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[:20]) + b"\n" + lines[20][:15])  # ends inside a line
    feed = FollowProgressLog(path)
    session = Session(feed, options=SessionOptions(checkpoint_every=8))

    async def run():
        session.start()
        await asyncio.sleep(0.3)
        first = session.records
        with open(path, "ab") as f:
            f.write(lines[20][15:] + b"\n" + b"\n".join(lines[21:]))
        for _ in range(100):
            await asyncio.sleep(0.05)
            if session.head == 91:
                break
        await session.stop()
        return first

    first = asyncio.run(run())
    assert first == 20  # lines 1-20 (the header too); the partial line 21 waited for its end
    assert session.head == 91 and not session.errors()
    assert session.status == "stopped" and feed.live


def test_push_feed_ends_when_drained():
    feed = PushFeed()
    records = list(pipeline_records(5, 3))
    feed.push_many(records[:5])
    assert len(feed.poll(100) or ()) == 5 and feed.poll(100) == []
    feed.push_many(records[5:])
    feed.end()
    assert len(feed.poll(1000) or ()) == len(records) - 5 and feed.poll(10) is None


def test_cli_replay_serves_the_log_and_prints_the_url(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "flowscope.cli", "replay", str(LOOP_LOG), "--port", "0"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.match(r"flowscope: serving (http://127\.0\.0\.1:\d+)/#/s/(\w+)", line)
        assert m, line
        base, sid = m.groups()
        deadline = time.monotonic() + 20
        while httpx.get(f"{base}/api/sessions/{sid}").json()["status"] != "done":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert httpx.get(f"{base}/api/sessions/{sid}").json()["batches"] == 91
        assert httpx.get(base + "/").status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)


def test_cli_refuses_another_host_without_a_token():
    from flowscope.cli import main

    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert main(["replay", "/nonexistent.jsonl"]) == 2
