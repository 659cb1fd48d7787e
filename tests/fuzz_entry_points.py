"""Each public entry point run on one mutated input (tests/fuzz_inputs.py), with a verdict: what the fuzz counts.

Shared by tests/test_hardening.py (a few dozen seeded cases per entry point) and benchmarks/fuzz_readers.py (as many
as asked for). Verdicts:

* ``ok``: it ran to the end; every non-blank line of the input was either loaded or reported (a damaged stream, or
  a header that makes the file no log at all, is reported once for everything after it);
* ``refused``: the input was refused as a whole with a clear error (not a log of this kind);
* ``crashed``: an exception escaped, or a server session ended "failed";
* ``hung``: it did not finish within its bounds (a session's time limit, a follow loop's polls, the ingest port's
  feed never ending);
* ``lost``: it finished, reported nothing that covers them, and lines are missing (lost silently).

Progress logs go through ``flowscope frontiers`` (its reader and replay, in-process), a server session (the
registry, a :class:`~backend.sessions.session.Session` run to its end), and follow mode (the file written in pieces
while a
followed feed reads it, then deleted, as a writer that gives up would leave it). Spark logs go through
``flowscope record``, a server session, follow mode (an ``.inprogress`` file written in pieces, then renamed as
Spark finalizes it), the live feed (lines put in pieces) and the ingest port (a real TCP connection on 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import queue
import random
import socket
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

from backend.feeds.progress_feeds import FeedError, FollowProgressLog, default_registry
from backend.sessions.session import Session, SessionOptions
from backend.spark.live.follow_feed import SparkLogFeed
from backend.spark.live.socket_feed import PROTOCOL, SparkIngestServer, SparkLiveFeed
from backend.spark.recording.convert import EventLogError, record
from tracker.progress_log import jsonl
from tracker.progress_log.log_file import ProgressLogError, read_records
from tracker.progress_log.replay import Replay

__all__ = ["PROGRESS_ENTRY_POINTS", "SPARK_ENTRY_POINTS", "IngestPort", "expected_lines", "pieces", "run_checked"]

SESSION_SECONDS = 60.0  # a server session on one small input that takes longer than this is hung
MAX_POLLS = 100_000  # a follow loop that polls more than this without ending is hung
INGEST_SECONDS = 30.0  # a connection's feed that has not ended this long after the connection closed is hung

# Errors that speak for every line after them: the rest of the stream could not be read, or the file is no log.
COVERING = frozenset((jsonl.CORRUPT_STREAM, jsonl.TRUNCATED_STREAM, jsonl.STREAM_TOO_LARGE, jsonl.FILE_VANISHED,
                      "not-a-progress-log", "unreadable"))


class Hung(Exception):
    """The entry point did not finish within its bounds."""


def expected_lines(data: bytes) -> int:
    """Non-blank lines in a log's (uncompressed) content: each must be loaded or reported."""
    return sum(1 for line in data.split(b"\n") if line.strip())


def verdict(loaded: int, errors: Iterable[Any], expected: int) -> str:
    errors = list(errors)
    if loaded + len(errors) >= expected or any(e.kind in COVERING for e in errors):
        return "ok"
    return "lost"


def run_checked(entry: Callable[..., str], *args: Any) -> str:
    """``entry(*args)``'s verdict, or ``crashed: <the exception>`` / ``hung``."""
    try:
        return entry(*args)
    except Hung:
        return "hung"
    except Exception:
        return "crashed: " + traceback.format_exc().strip().splitlines()[-1][:160]


def pieces(rng: random.Random, data: bytes, most: int = 5) -> list[bytes]:
    """``data`` cut at random bytes (lines and compressed blocks split anywhere), as a writer flushes it."""
    if len(data) < 2:
        return [data]
    cuts = sorted(rng.sample(range(1, len(data)), k=min(len(data) - 1, rng.randint(1, most - 1))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def _run_session(feed: Any) -> Session:
    session = Session(feed, options=SessionOptions(checkpoint_every=64))

    async def run() -> None:
        await asyncio.wait_for(session.run(), SESSION_SECONDS)

    try:
        asyncio.run(run())
    except TimeoutError:
        raise Hung() from None
    if session.status == "failed":
        raise RuntimeError(f"session failed: {session.error}")
    return session


# --- progress logs ------------------------------------------------------------------------------------------------


def progress_frontiers(path: Path, data: bytes, rng: random.Random) -> str:
    """``flowscope frontiers``: the one reader, the replay, the state it prints."""
    errors: list = []
    try:
        records = list(read_records(path, errors))
    except ProgressLogError:
        return "refused"
    replay = Replay(str(path))
    replay.feed(records)
    replay.finish()
    replay.state()
    return verdict(len(records), errors, expected_lines(data))


def progress_session(path: Path, data: bytes, rng: random.Random) -> str:
    """A server session: the registry identifies the file, a Session ingests it to its end."""
    try:
        feed = default_registry().open(path, False)
    except FeedError:
        return "refused"
    session = _run_session(feed)
    return verdict(session.records, session.feed.errors, expected_lines(data))


def progress_follow(path: Path, data: bytes, rng: random.Random) -> str:
    """Follow mode: the (uncompressed) log written in pieces while followed, each read as it lands, then deleted;
    the records go through a replay as a session applies them."""
    followed = path.with_name(path.name.split(".")[0] + ".followed.jsonl")
    followed.write_bytes(b"")
    feed = FollowProgressLog(followed, poll_interval=0, grace=0)
    replay = Replay(str(followed))
    loaded = polls = 0

    def drain(until_end: bool) -> None:
        nonlocal loaded, polls
        while True:
            polls += 1
            if polls > MAX_POLLS:
                raise Hung()
            got = feed.poll(512)
            if got is None:
                return
            if not got and not until_end:
                return
            for line, rec in got:
                loaded += 1
                replay.apply(rec, line)

    try:
        for piece in pieces(rng, data):
            with open(followed, "ab") as f:
                f.write(piece)
            drain(False)
        followed.unlink()
        drain(True)
    finally:
        feed.close()
        followed.unlink(missing_ok=True)
    replay.finish()
    if any(e.kind == "not-a-progress-log" for e in feed.errors):
        return "refused"  # the header was damaged: the feed said so and read nothing more
    return verdict(loaded, feed.errors, expected_lines(data))


PROGRESS_ENTRY_POINTS: dict[str, Callable[[Path, bytes, random.Random], str]] = {
    "frontiers": progress_frontiers,
    "session": progress_session,
    "follow": progress_follow,
}


# --- Spark event logs ---------------------------------------------------------------------------------------------


def spark_record(path: Path, data: bytes, rng: random.Random) -> str:
    """``flowscope record``: the conversion, written to a progress log."""
    out = path.with_name(path.name + ".progress.jsonl")
    try:
        summary = record(path, out)
    except EventLogError:
        return "refused"
    finally:
        out.unlink(missing_ok=True)
    return verdict(summary.events, summary.errors, expected_lines(data))


def spark_session(path: Path, data: bytes, rng: random.Random) -> str:
    """A server session on the finished log."""
    try:
        feed: Any = default_registry().open(path, False)  # a Spark log's feed, which counts its events
    except FeedError:
        return "refused"
    _run_session(feed)
    return verdict(feed.events, feed.errors, expected_lines(data))


def spark_follow(path: Path, data: bytes, rng: random.Random) -> str:
    """Follow mode: ``<app>.inprogress`` written in pieces while followed, then renamed as Spark finalizes it."""
    final = path.with_name(path.name + "-app")
    growing = final.with_name(final.name + ".inprogress")
    growing.write_bytes(b"")
    feed = SparkLogFeed(final, follow=True, poll_interval=0)
    polls = 0

    def drain(until_end: bool) -> None:
        nonlocal polls
        while True:
            polls += 1
            if polls > MAX_POLLS:
                raise Hung()
            got = feed.poll(512)
            if got is None or (not got and not until_end):
                return

    try:
        for piece in pieces(rng, data):
            with open(growing, "ab") as f:
                f.write(piece)
            drain(False)
        growing.rename(final)
        drain(True)
    finally:
        feed.close()
        growing.unlink(missing_ok=True)
        final.unlink(missing_ok=True)
    return verdict(feed.events, feed.errors, expected_lines(data))


def spark_live(path: Path, data: bytes, rng: random.Random) -> str:
    """The live feed: the lines put in pieces as the ingest thread puts them, consumed as a session polls."""
    feed = SparkLiveFeed("fuzz (live)")
    lines = data.split(b"\n")
    cuts = sorted(rng.sample(range(len(lines) + 1), k=min(len(lines), 4)))
    polls = 0
    for a, b in zip([0, *cuts], [*cuts, len(lines)], strict=True):
        part = [line for line in lines[a:b] if line.strip()]
        if part:
            feed.put(part)
        while feed.poll(512):
            polls += 1
    feed.end()
    while feed.poll(512) is not None:
        polls += 1
        if polls > MAX_POLLS:
            raise Hung()
    return verdict(feed.events, feed.errors, expected_lines(data))


class IngestPort:
    """A real Spark ingest port on 127.0.0.1 for a run of cases (one connection per case)."""

    def __init__(self) -> None:
        self.feeds: queue.Queue[SparkLiveFeed] = queue.Queue()
        self.server = SparkIngestServer(self.feeds.put, "127.0.0.1", 0)

    def close(self) -> None:
        self.server.close()

    def __call__(self, path: Path, data: bytes, rng: random.Random) -> str:
        """One application over TCP: hello, the log's bytes in pieces, close; the feed consumed to its end."""
        hello = orjson.dumps({"Event": "flowscope.Hello", "protocol": PROTOCOL, "app": "fuzz"}) + b"\n"
        with socket.create_connection(self.server.address, timeout=10) as conn:
            for piece in pieces(rng, hello + data):
                conn.sendall(piece)
        try:
            feed = self.feeds.get(timeout=10)
        except queue.Empty:
            raise Hung() from None
        deadline = time.monotonic() + INGEST_SECONDS
        while feed.take(512, 0.05) is not None:
            if time.monotonic() > deadline:
                raise Hung()
        return verdict(feed.events, feed.errors, expected_lines(data))


def spark_plan(path: Path, data: bytes, rng: random.Random) -> str:
    """``flowscope plan``: the SQL plans of whatever the log still holds, to the JSON answer."""
    from backend.eventlog import EventLogReader
    from backend.spark.sql_plan.plans import SqlPlans

    plans = SqlPlans()
    reader = EventLogReader(path)
    for ev in reader:
        plans.feed(ev.event, ev.line)
    orjson.dumps(plans.to_json())
    return verdict(reader.stats.events, reader.errors, expected_lines(data))


SPARK_ENTRY_POINTS: dict[str, Callable[[Path, bytes, random.Random], str]] = {
    "record": spark_record,
    "plan": spark_plan,
    "session": spark_session,
    "follow": spark_follow,
    "live": spark_live,
}
