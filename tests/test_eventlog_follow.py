"""Following a Spark event log while it is written: a simulated Spark writer appends to plain, compressed and
rolling logs in a temp dir, in pieces that split lines and compressed blocks, interleaved with polls."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import orjson
import pytest

from backend.eventlog import EventLogFollower, EventLogReader, LogDirectoryScanner
from backend.eventlog import events as log_events
from backend.eventlog.encoders import encode_end, encode_flush
from backend.eventlog.eventlog_layout import rolling_parts

from .conftest import SPARK_EVENTS

pytestmark = pytest.mark.spark_events

ROLLING_ZSTD = SPARK_EVENTS / "pyspark-4.3" / "events" / "eventlog_v2_local-1795284909880"
ALL_CODECS = [None, "gz", "zstd", "lz4", "snappy", "lzf"]


def real_lines() -> list[bytes]:
    """The 65 lines of the pyspark-4.3 application, as Spark wrote them."""
    lines = [orjson.dumps(e.event) + b"\n" for e in EventLogReader(ROLLING_ZSTD)]
    assert len(lines) == 65
    return lines


class SparkLikeWriter:
    """Appends a log the way Spark's writer does: lines go into flushes (a zstd frame, an lz4 block, ...), and the
    bytes of a flush reach the file in pieces of any size, so a poll can see half a line or half a block."""

    def __init__(self, path: Path, codec: str | None, rng: random.Random) -> None:
        self.path, self.codec, self.rng = path, codec, rng
        self.first = True
        self.unwritten = b""  # encoded bytes not yet in the file
        path.touch()

    def flush(self, lines: list[bytes]) -> None:
        self.unwritten += encode_flush(self.codec, b"".join(lines), first=self.first)
        self.first = False

    def write_some(self) -> None:
        """Write a random prefix of what is buffered (possibly nothing, possibly all)."""
        n = self.rng.randint(0, len(self.unwritten))
        self._append(self.unwritten[:n])
        self.unwritten = self.unwritten[n:]

    def write_all(self, close: bool = False) -> None:
        self._append(self.unwritten + (encode_end(self.codec) if close else b""))
        self.unwritten = b""

    def _append(self, data: bytes) -> None:
        with open(self.path, "ab") as fh:
            fh.write(data)


def expected(lines: list[bytes]) -> list[dict]:
    return [orjson.loads(line) for line in lines]


def assert_split_seen(follower_pending_seen: int) -> None:
    assert follower_pending_seen > 0, "the test never caught a partial line or block: it tested nothing"


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_follow_single_file_until_renamed(tmp_path, codec):
    lines = real_lines()
    rng = random.Random(42)
    suffix = f".{codec}" if codec else ""
    running = tmp_path / f"local-1{suffix}.inprogress"
    follower = EventLogFollower(running)
    assert follower.poll() == [] and not follower.finalized  # nothing there yet
    writer = SparkLikeWriter(running, codec, rng)
    got, pending_seen, i = [], 0, 0
    while i < len(lines):
        k = rng.randint(1, 6)
        writer.flush(lines[i : i + k])
        i += k
        writer.write_some()
        got += follower.poll()
        pending_seen += follower.pending is not None
        assert not follower.finalized
        assert [e.event for e in got] == expected(lines)[: len(got)]  # in order, never ahead of the writer
    writer.write_all(close=True)
    got += follower.poll()
    assert len(got) == 65 and not follower.finalized  # everything is there, but Spark has not said it is done
    running.rename(tmp_path / f"local-1{suffix}")
    got += follower.poll()
    assert follower.finalized
    assert [e.event for e in got] == expected(lines)
    assert [e.line for e in got] == list(range(1, 66))
    assert follower.poll() == [] and follower.errors == [] and follower.pending is None
    assert follower.stats.events == 65 and follower.stats.accounted
    assert_split_seen(pending_seen)


@pytest.mark.parametrize("codec", [None, "zstd", "lz4"])
def test_follow_rolling_directory(tmp_path, codec):
    """New events_<N> parts appear (11 of them, so 10 and 11 must not sort before 2), the marker is renamed."""
    lines = real_lines()
    rng = random.Random(7)
    suffix = f".{codec}" if codec else ""
    d = tmp_path / "eventlog_v2_local-1"
    follower = EventLogFollower(d)
    assert follower.poll() == [] and not follower.finalized
    d.mkdir()
    (d / "appstatus_local-1.inprogress").touch()
    assert follower.poll() == []
    got, pending_seen, written = [], 0, 0
    bounds = list(range(0, 65, 6)) + [65]  # 11 parts
    for n, (lo, hi) in enumerate(itertools.pairwise(bounds), start=1):
        writer = SparkLikeWriter(d / f"events_{n}_local-1{suffix}", codec, rng)
        i = lo
        while i < hi:
            k = rng.randint(1, 3)
            writer.flush(lines[i : min(i + k, hi)])
            i = min(i + k, hi)
            writer.write_some()
            got += follower.poll()
            pending_seen += follower.pending is not None
        writer.write_all(close=True)  # Spark closes a part before it creates the next
        written = hi
        assert [e.event for e in got] == expected(lines)[: len(got)]
        assert len(got) <= written
    got += follower.poll()
    assert len(got) == 65 and not follower.finalized
    (d / "appstatus_local-1.inprogress").rename(d / "appstatus_local-1")
    got += follower.poll()
    assert follower.finalized
    assert [e.event for e in got] == expected(lines)
    parts = rolling_parts(d)
    assert len(parts) == 11 and parts[-1].name.startswith("events_11_")
    assert [(Path(e.path).name.split("_")[1], e.line) for e in got[5:8]] == [("1", 6), ("2", 1), ("2", 2)]
    assert follower.errors == [] and follower.stats.files == 11
    assert_split_seen(pending_seen)


def test_follow_zstd_frames_appended_one_by_one(tmp_path):
    """Spark's zstd stream closes a frame at each flush: a poll between frames, and in the middle of one."""
    lines = real_lines()
    path = tmp_path / "local-1.zstd.inprogress"
    follower = EventLogFollower(path)
    frames = [encode_flush("zstd", b"".join(lines[i : i + 5])) for i in range(0, 65, 5)]
    got = []
    with open(path, "wb") as fh:
        for n, frame in enumerate(frames):
            half = len(frame) // 2
            fh.write(frame[:half])
            fh.flush()
            got += follower.poll()
            fh.write(frame[half:])
            fh.flush()
            got += follower.poll()
            assert len(got) == 5 * (n + 1)  # a whole frame: every line in it is complete
            assert follower.pending is None
    path.rename(tmp_path / "local-1.zstd")
    got += follower.poll()
    assert follower.finalized and [e.event for e in got] == expected(lines)


def test_poll_limit_returns_everything_once_in_order(tmp_path):
    lines = real_lines()
    path = tmp_path / "local-1"
    path.write_bytes(b"".join(lines))  # already finished
    follower = EventLogFollower(path)
    got = []
    sizes = []
    while not follower.finalized:
        batch = follower.poll(limit=7)
        sizes.append(len(batch))
        got += batch
        assert len(sizes) < 100
    assert max(sizes) == 7 and sum(sizes) == 65
    assert [e.event for e in got] == expected(lines)


def test_poll_limit_across_rolling_parts(tmp_path):
    lines = real_lines()
    d = tmp_path / "eventlog_v2_app"
    d.mkdir()
    (d / "appstatus_app").touch()
    for n, (lo, hi) in enumerate([(0, 10), (10, 11), (11, 65)], start=1):
        (d / f"events_{n}_app").write_bytes(b"".join(lines[lo:hi]))
    follower = EventLogFollower(d)
    got = []
    for _ in range(100):
        if follower.finalized:
            break
        batch = follower.poll(limit=4)
        assert len(batch) <= 4
        got += batch
    assert follower.finalized and [e.event for e in got] == expected(lines)


def test_follow_a_finished_log_at_once(tmp_path):
    lines = real_lines()
    path = tmp_path / "local-1.lz4"
    path.write_bytes(encode_flush("lz4", b"".join(lines)) + encode_end("lz4"))
    follower = EventLogFollower(tmp_path / "local-1.lz4.inprogress")  # the name it had while running
    got = follower.poll()
    assert follower.finalized and len(got) == 65


def test_follow_reports_a_corrupt_line_once_and_goes_on(tmp_path):
    lines = real_lines()
    path = tmp_path / "app.inprogress"
    seen: list = []
    follower = EventLogFollower(path, on_error=seen.append)
    with open(path, "wb") as fh:
        fh.write(b"".join(lines[:10]) + b'{"Event": broken\n')
        fh.flush()
        first = follower.poll()
        fh.write(b"".join(lines[10:]))
    rest = follower.poll()
    path.rename(tmp_path / "app")
    rest += follower.poll()
    assert len(first) == 10 and len(rest) == 55 and follower.finalized
    assert [(e.line, e.kind) for e in seen] == [(11, log_events.INVALID_JSON)]
    assert follower.errors == seen and rest[0].line == 12


def test_follow_finalized_with_a_truncated_last_line(tmp_path):
    lines = real_lines()
    path = tmp_path / "app.inprogress"
    path.write_bytes(b"".join(lines[:20]) + lines[20][:50])
    follower = EventLogFollower(path)
    assert len(follower.poll()) == 20
    assert follower.pending is not None and follower.pending.line == 21 and follower.errors == []
    path.rename(tmp_path / "app")  # Spark died mid-line and something renamed the file
    assert follower.poll() == []
    assert follower.finalized
    assert [(e.line, e.kind) for e in follower.errors] == [(21, log_events.TRUNCATED_LINE)]


def test_renamed_between_writes_with_data_only_in_the_final_file(tmp_path):
    """The writer appends its last lines and renames between two polls: nothing is lost."""
    lines = real_lines()
    running = tmp_path / "app.snappy.inprogress"
    writer = SparkLikeWriter(running, "snappy", random.Random(1))
    writer.flush(lines[:30])
    writer.write_all()
    follower = EventLogFollower(running)
    got = follower.poll()
    writer.flush(lines[30:])
    writer.write_all(close=True)
    running.rename(tmp_path / "app.snappy")
    got += follower.poll()
    assert follower.finalized and [e.event for e in got] == expected(lines)
    assert got[29].path == str(running) and got[30].path == str(tmp_path / "app.snappy")  # read after the rename


def test_rolling_part_vanishing_is_reported(tmp_path):
    lines = real_lines()
    d = tmp_path / "eventlog_v2_app"
    d.mkdir()
    (d / "appstatus_app.inprogress").touch()
    (d / "events_1_app").write_bytes(b"".join(lines[:10]) + lines[10][:5])
    follower = EventLogFollower(d)
    assert len(follower.poll()) == 10
    (d / "events_1_app").unlink()
    (d / "events_2_app").write_bytes(b"".join(lines[11:20]))
    got = follower.poll()
    assert [e.kind for e in follower.errors] == [log_events.FILE_VANISHED]
    assert [e.event for e in got] == expected(lines[11:20])


def test_directory_scanner_finds_each_application_once(tmp_path):
    lines = real_lines()
    scanner = LogDirectoryScanner(tmp_path)
    assert scanner.scan() == []
    (tmp_path / "local-1.zstd.inprogress").touch()  # Spark just created it
    (tmp_path / "README.md").write_text("not a log")
    assert [log.name for log in scanner.scan()] == ["local-1"]
    d = tmp_path / "eventlog_v2_local-2"
    d.mkdir()
    (d / "appstatus_local-2.inprogress").touch()
    (tmp_path / "local-1.zstd.inprogress").write_bytes(encode_flush("zstd", b"".join(lines)))
    found = scanner.scan()
    assert [(log.name, log.rolling, log.state) for log in found] == [("local-2", True, "in_progress")]
    (tmp_path / "local-1.zstd.inprogress").rename(tmp_path / "local-1.zstd")  # finished: not a new application
    assert scanner.scan() == []
    follower = EventLogFollower(found[0].path)
    assert follower.poll() == [] and not follower.finalized
