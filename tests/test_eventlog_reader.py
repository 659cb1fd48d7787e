"""Reading Spark event logs in one pass: every real log in $FLOWSCOPE_SPARK_EVENTS, every codec, broken lines."""

from __future__ import annotations

import gzip
import itertools
import os
import shutil
from pathlib import Path

import orjson
import pytest
import zstandard

from backend.eventlog import (
    EventLogReader,
    MissingCodecError,
    describe_log,
    find_logs,
    read_events,
)
from backend.eventlog import codecs as codecs_mod
from backend.eventlog import events as log_events
from backend.eventlog.codecs import make_decoder
from backend.eventlog.encoders import encode, encode_flush, xxh32
from backend.eventlog.eventlog_layout import looks_like_event_log, rolling_parts, rolling_state
from backend.stores import StoreUrl

from .conftest import SPARK_EVENTS

PYSPARK = SPARK_EVENTS / "pyspark-4.3"
ROLLING_ZSTD = PYSPARK / "events" / "eventlog_v2_local-1795284909880"
ALL_CODECS = [None, "gz", "zstd", "lz4", "snappy", "lzf"]


def raw_lines(where: Path | StoreUrl) -> list[bytes]:
    """The log's lines, decoded independently of backend.eventlog (plain, gzip or zstd only; local files)."""
    path = Path(str(where))
    if path.name.endswith(".gz"):
        data = gzip.decompress(path.read_bytes())
    elif path.name.endswith(".zstd"):
        with open(path, "rb") as fh:
            data = zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
    else:
        data = path.read_bytes()
    return [line for line in data.split(b"\n") if line.strip()]


def rolling_reference() -> list[dict]:
    return [orjson.loads(line) for part in rolling_parts(ROLLING_ZSTD) for line in raw_lines(part)]


def lines_of(events: list[dict]) -> list[bytes]:
    return [orjson.dumps(e) + b"\n" for e in events]


# -- every real log -------------------------------------------------------------------------------------------


@pytest.mark.spark_events
def test_finds_every_shared_log_and_skips_what_is_not_one():
    root = SPARK_EVENTS
    logs = find_logs(root, recursive=True)
    names = [log.name for log in logs]
    # 19 top level (18 files + 1 rolling dir), 3 historical, 4 broken attempts, 4 pyspark-4.3.
    assert len(logs) == 30, names
    assert "README" not in names and "SHA256SUMS" not in names
    assert not any("expectation" in n for n in names)
    assert sum(log.rolling for log in logs) == 2
    by_name = {log.name: log for log in logs}
    assert by_name["local-1795284909880"].state == "complete"  # appstatus_ marker without .inprogress
    assert by_name["local-1766844910796"].state == "unknown"  # no appstatus_ file in the copy
    assert by_name["local-1795286983642"].codec == "zstd"
    assert by_name["spark430_1000tasks_shuffle.jsonl"].codec == "gz"
    top = find_logs(root)  # not recursive: only the top level
    assert len(top) == 19


@pytest.mark.spark_events
def test_every_shared_log_reads_with_every_line_accounted_for():
    logs = find_logs(SPARK_EVENTS, recursive=True)
    total = 0
    for log in logs:
        reader = EventLogReader(log)
        events = list(reader)
        expected = [line for f in log.files for line in raw_lines(f)]
        assert reader.errors == [], (log.path, reader.errors[:3])
        assert reader.stats.accounted, log.path
        assert reader.stats.lines_corrupt == 0
        assert len(events) == len(expected) == reader.stats.events, log.path
        assert [e.event for e in events] == [orjson.loads(line) for line in expected]
        assert all(isinstance(e.event.get("Event"), str) for e in events), log.path
        assert reader.pending is None
        assert reader.stats.files == len(log.files)
        assert reader.stats.bytes_compressed == sum(os.path.getsize(str(f)) for f in log.files)
        # Provenance: the first event of each file is line 1 of that file.
        assert events[0].line == 1 and events[0].path == str(log.files[0])
        total += len(events)
    assert total == 3898  # every event of the 30 logs


@pytest.mark.spark_events
def test_known_event_counts_and_versions():
    root = SPARK_EVENTS
    counts = {
        root / "local-1430917381534": 231,
        root / "local-1430917381535_1": 5,  # its last line has no newline: still an event
        root / "eventlog_v2_local-1766844910796": 15,
        PYSPARK / "spark430_1000tasks_shuffle.jsonl.gz": 2024,
        ROLLING_ZSTD: 65,
        root / "spark-events-broken" / "last-attempt-incomplete" / "application_1656321732247_0006_2": 9,
    }
    for path, n in counts.items():
        events = [e.event for e in read_events(path)]
        assert len(events) == n, path
    first = next(iter(EventLogReader(ROLLING_ZSTD))).event
    assert first == {"Event": "SparkListenerLogStart", "Spark Version": "4.3.0"}
    old = next(iter(EventLogReader(root / "local-1422981780767"))).event
    assert old["Event"] != "SparkListenerLogStart"  # Spark 1.2 wrote no version event


@pytest.mark.spark_events
def test_same_application_gzip_and_rolling_zstd_identical():
    a = [e.event for e in read_events(PYSPARK / "spark430_batch_rdd_sql.jsonl.gz")]
    b = [e.event for e in read_events(ROLLING_ZSTD)]
    assert len(a) == 65
    assert a == b


@pytest.mark.spark_events
@pytest.mark.parametrize("codec", ALL_CODECS)
def test_same_application_in_every_codec(tmp_path, codec):
    """The pyspark-4.3 application re-written in each of Spark's codecs, flushed in pieces like Spark does, as a
    single file and as a rolling directory of several parts: the same events, the same line numbers."""
    reference = rolling_reference()
    lines = lines_of(reference)
    suffix = f".{codec}" if codec else ""

    single = tmp_path / f"local-1{suffix}"
    flushes = [b"".join(lines[i : i + 7]) for i in range(0, len(lines), 7)]
    single.write_bytes(encode(codec, flushes))
    reader = EventLogReader(single)
    events = list(reader)
    assert [e.event for e in events] == reference
    assert [e.line for e in events] == list(range(1, 66))
    assert reader.errors == [] and reader.stats.accounted
    assert reader.stats.bytes_uncompressed == sum(map(len, lines))
    if codec is not None:
        assert reader.stats.bytes_compressed == single.stat().st_size != reader.stats.bytes_uncompressed

    rolling = tmp_path / "eventlog_v2_local-2"
    rolling.mkdir()
    (rolling / "appstatus_local-2").touch()
    cuts = [0, 20, 21, 50, 65]
    for n, (lo, hi) in enumerate(itertools.pairwise(cuts), start=1):
        (rolling / f"events_{n}_local-2{suffix}").write_bytes(encode(codec, [b"".join(lines[lo:hi])]))
    events = list(EventLogReader(rolling))
    assert [e.event for e in events] == reference
    assert [(Path(e.path).name.split("_")[1], e.line) for e in events][19:22] == [("1", 20), ("2", 1), ("3", 1)]


@pytest.mark.spark_events
def test_tiny_chunks_give_the_same_events():
    """Lines and compressed blocks split across reads at every possible place."""
    reference = [e.event for e in read_events(ROLLING_ZSTD)]
    reader = EventLogReader(ROLLING_ZSTD, chunk_size=13)
    assert [e.event for e in reader] == reference
    assert reader.stats.accounted and reader.errors == []


@pytest.mark.spark_events
def test_reading_is_streaming(tmp_path):
    """The reader has read about one chunk when the first event comes out, not the whole file."""
    src = PYSPARK / "spark430_1000tasks_shuffle.jsonl.gz"
    plain = tmp_path / "big"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    for path in (src, plain):
        reader = EventLogReader(path, chunk_size=4096)
        it = iter(reader)
        next(it)
        assert reader.stats.bytes_compressed <= 4096
        assert reader.stats.bytes_uncompressed < 200_000 < plain.stat().st_size
        rest = sum(1 for _ in it)
        assert rest == 2023


# -- broken logs ----------------------------------------------------------------------------------------------


def corrupt_copy(tmp_path: Path, name: str) -> tuple[Path, list[bytes]]:
    """A real log with, from line 100 on: a truncated event, garbage, a JSON array, a blank line."""
    lines = (SPARK_EVENTS / "local-1430917381534").read_bytes().splitlines(keepends=True)
    assert len(lines) == 231
    broken = lines[:99] + [lines[99][:40] + b"\n", b"this is not json\n", b"[1, 2, 3]\n", b"\n"] + lines[100:]
    path = tmp_path / name
    return path, broken


@pytest.mark.spark_events
def test_corrupt_lines_in_the_middle_are_reported_and_skipped(tmp_path):
    path, lines = corrupt_copy(tmp_path, "local-1430917381534")
    path.write_bytes(b"".join(lines))
    seen: list = []
    reader = EventLogReader(path, on_error=seen.append)
    events = list(reader)
    assert len(events) == 230  # 231 events, one of them cut in half
    assert [(e.line, e.kind) for e in reader.errors] == [
        (100, log_events.INVALID_JSON),
        (101, log_events.INVALID_JSON),
        (102, log_events.NOT_AN_OBJECT),
    ]
    assert seen == reader.errors
    err = reader.errors[0]
    assert err.path == str(path) and "not valid JSON" in err.reason and err.excerpt == lines[99][:40].decode()
    assert str(path) in str(err) and ":100:" in str(err)
    # The events after the damage are all there, with their own line numbers.
    assert events[99].line == 104 and events[99].event == orjson.loads(lines[103])
    assert events[-1].line == 234
    s = reader.stats
    assert (s.lines_read, s.events, s.lines_corrupt, s.lines_blank) == (234, 230, 3, 1)
    assert s.accounted
    assert s.errors_by_kind == {log_events.INVALID_JSON: 2, log_events.NOT_AN_OBJECT: 1}


@pytest.mark.spark_events
@pytest.mark.parametrize("codec", ["zstd", "lz4", "snappy", "gz"])
def test_corrupt_lines_inside_compressed_logs(tmp_path, codec):
    path, lines = corrupt_copy(tmp_path, f"local-1430917381534.{codec}")
    path.write_bytes(encode(codec, [b"".join(lines[i : i + 10]) for i in range(0, len(lines), 10)]))
    reader = EventLogReader(path)
    assert len(list(reader)) == 230
    assert [e.line for e in reader.errors] == [100, 101, 102]


@pytest.mark.spark_events
@pytest.mark.parametrize("codec", ["zstd", "lz4", "snappy", "lzf", "gz"])
def test_corrupt_compressed_stream_stops_that_file_only(tmp_path, codec):
    lines = lines_of(rolling_reference())
    d = tmp_path / "eventlog_v2_app"
    d.mkdir()
    (d / "appstatus_app").touch()
    flushes = [b"".join(lines[i : i + 5]) for i in range(0, 30, 5)]
    damaged = bytearray(encode(codec, flushes))
    last_flush = sum(len(encode_flush(codec, f, first=i == 0)) for i, f in enumerate(flushes[:-1]))
    damaged[last_flush + 8 : last_flush + 72] = b"\xff" * 64
    (d / f"events_1_app.{codec}").write_bytes(bytes(damaged))
    (d / f"events_2_app.{codec}").write_bytes(encode(codec, [b"".join(lines[30:])]))
    reader = EventLogReader(d)
    events = list(reader)
    stream_errors = [e for e in reader.errors if e.kind == log_events.CORRUPT_STREAM]
    assert len(stream_errors) == 1 and stream_errors[0].path.endswith(f"events_1_app.{codec}")
    assert codec in stream_errors[0].reason or "gzip" in stream_errors[0].reason
    part2 = [e for e in events if e.path.endswith(f"events_2_app.{codec}")]
    assert [e.event for e in part2] == [orjson.loads(x) for x in lines[30:]]
    assert [e.event for e in events[: len(events) - len(part2)]] == [orjson.loads(x) for x in lines[:25]]
    assert reader.stats.streams_corrupt == 1


@pytest.mark.spark_events
def test_truncated_last_line_of_a_finished_log_is_an_error(tmp_path):
    lines = (SPARK_EVENTS / "local-1430917381534").read_bytes().splitlines(keepends=True)
    path = tmp_path / "app"
    path.write_bytes(b"".join(lines[:50]) + lines[50][:30])
    reader = EventLogReader(path)
    assert len(list(reader)) == 50
    assert [(e.line, e.kind) for e in reader.errors] == [(51, log_events.TRUNCATED_LINE)]
    assert reader.pending is None
    assert reader.stats.accounted and reader.stats.lines_read == 51


@pytest.mark.spark_events
def test_truncated_last_line_of_an_inprogress_log_is_pending(tmp_path):
    lines = (SPARK_EVENTS / "local-1430917381534").read_bytes().splitlines(keepends=True)
    path = tmp_path / "app.inprogress"
    path.write_bytes(b"".join(lines[:50]) + lines[50][:30])
    log = describe_log(path)
    assert log.in_progress and log.name == "app"
    reader = EventLogReader(path)
    assert len(list(reader)) == 50
    assert reader.errors == []
    assert reader.pending is not None
    assert (reader.pending.line, reader.pending.size) == (51, 30)
    assert reader.stats.lines_read == 50 and reader.stats.accounted


@pytest.mark.spark_events
def test_inprogress_zstd_cut_inside_a_frame(tmp_path):
    lines = lines_of(rolling_reference())
    blob = encode("zstd", [b"".join(lines[:40]), b"".join(lines[40:])])
    first_frame = len(encode_flush("zstd", b"".join(lines[:40])))
    cut = blob[: first_frame + (len(blob) - first_frame) // 2]
    running = tmp_path / "app.zstd.inprogress"
    running.write_bytes(cut)
    reader = EventLogReader(running)
    events = list(reader)
    assert len(events) >= 40 and reader.errors == []
    assert reader.pending is not None and reader.pending.line == len(events) + 1
    # The same bytes under a final name: the log was cut short.
    done = tmp_path / "app.zstd"
    done.write_bytes(cut)
    reader = EventLogReader(done)
    list(reader)
    assert [e.kind for e in reader.errors][-1] == log_events.TRUNCATED_STREAM


@pytest.mark.spark_events
def test_rolling_inprogress_only_the_last_part_may_be_unfinished(tmp_path):
    lines = lines_of(rolling_reference())
    d = tmp_path / "eventlog_v2_app"
    d.mkdir()
    (d / "appstatus_app.inprogress").touch()
    (d / "events_1_app").write_bytes(b"".join(lines[:30]))
    (d / "events_2_app").write_bytes(b"".join(lines[30:40]) + lines[40][:25])
    log = describe_log(d)
    assert log.state == "in_progress"
    reader = EventLogReader(log)
    assert len(list(reader)) == 40
    assert reader.errors == [] and reader.pending is not None and reader.pending.line == 11
    # Complete the marker: the same tail is now a truncated line.
    (d / "appstatus_app.inprogress").rename(d / "appstatus_app")
    reader = EventLogReader(d)
    assert len(list(reader)) == 40
    assert [(e.line, e.kind) for e in reader.errors] == [(11, log_events.TRUNCATED_LINE)]


def test_missing_lzf_library_is_a_clear_error(tmp_path, monkeypatch):
    path = tmp_path / "local-1.lzf"
    path.write_bytes(b"ZV\x00\x00\x02{}")
    monkeypatch.setattr(codecs_mod, "_lzf_block_decompress_fn", lambda: None)
    with pytest.raises(MissingCodecError) as info:
        EventLogReader(path)
    message = str(info.value)
    assert str(path) in message and "lzf" in message and "pip install" in message


def test_lzf_stored_and_compressed_chunks(tmp_path):
    """ning LZF chunks of type 0 (stored) and 1 (compressed) both decode."""
    payload = b'{"Event":"A"}\n' * 5000
    stored = b"".join(
        b"ZV\x00" + len(payload[i : i + 60000]).to_bytes(2, "big") + payload[i : i + 60000]
        for i in range(0, len(payload), 60000)
    )
    path = tmp_path / "app.lzf"
    path.write_bytes(stored + encode("lzf", [payload]))
    assert sum(1 for _ in read_events(path)) == 10000


# -- codecs and layout details --------------------------------------------------------------------------------


def test_lz4_checksums_match_lz4_java():
    # XXH32 test vectors; lz4-java checksums each block with seed 0x9747b28c, masked to 28 bits.
    assert xxh32(b"", 0) == 0x02CC5D05
    assert xxh32(b"abc", 0) == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition", 0) == 0xE2293B2F


def test_lz4_raw_blocks_end_marker_and_concatenated_streams():
    data = b'{"Event":"X"}\n'
    raw_block = b"LZ4Block" + bytes([0x10]) + (len(data)).to_bytes(4, "little") * 2 + b"\0\0\0\0" + data
    end = b"LZ4Block" + bytes([0x15]) + b"\0" * 12
    stream = raw_block + end + raw_block + end
    dec = make_decoder("lz4")
    assert b"".join(dec.decode(stream[i : i + 5]) for i in range(0, len(stream), 5)) == data * 2
    assert dec.pending == 0
    with pytest.raises(codecs_mod.CodecError):
        make_decoder("lz4").decode(b"LZ4Frame" + b"\0" * 20)


def test_snappy_concatenated_streams():
    data = b'{"Event":"Y"}\n' * 100
    stream = encode("snappy", [data]) + encode("snappy", [data])
    dec = make_decoder("snappy")
    assert dec.decode(stream) == data * 2 and dec.pending == 0


def test_rolling_parts_in_numeric_order_with_compaction(tmp_path):
    d = tmp_path / "eventlog_v2_app_1"
    d.mkdir()
    for n in (1, 2, 10, 11, 3):
        (d / f"events_{n}_app_1.zstd").touch()
    (d / ".events_1_app_1.zstd.crc").touch()
    (d / "appstatus_app_1.inprogress").touch()
    assert [p.name.split("_")[1] for p in rolling_parts(d)] == ["1", "2", "3", "10", "11"]
    assert rolling_state(d) == "in_progress"
    (d / "events_3_app_1.zstd.compact").touch()
    assert [p.name for p in rolling_parts(d)] == [
        "events_3_app_1.zstd.compact",
        "events_10_app_1.zstd",
        "events_11_app_1.zstd",
    ]
    (d / "appstatus_app_1").touch()  # the rename half-seen: the final marker wins
    assert rolling_state(d) == "complete"
    assert describe_log(d).name == "app_1" and describe_log(d).codec == "zstd"


def test_compacted_rolling_log_reads_from_the_compact_part(tmp_path):
    d = tmp_path / "eventlog_v2_app"
    d.mkdir()
    (d / "appstatus_app").touch()
    (d / "events_1_app").write_bytes(b'{"Event":"old"}\n')
    (d / "events_2_app.compact").write_bytes(b'{"Event":"compacted"}\n')
    (d / "events_3_app").write_bytes(b'{"Event":"new"}\n')
    assert [e.event["Event"] for e in read_events(d)] == ["compacted", "new"]


@pytest.mark.spark_events
def test_find_logs_in_a_directory_of_applications(tmp_path):
    (tmp_path / "README.md").write_text("# not a log\n")
    (tmp_path / "notes.json").write_text('{"a": 1}\n')
    (tmp_path / ".hidden").write_text('{"Event":"x"}\n')
    (tmp_path / "local-1").write_bytes(b'{"Event":"SparkListenerLogStart","Spark Version":"3.5.7"}\n')
    (tmp_path / "local-2.lz4.inprogress").write_bytes(b"")  # just created by Spark
    (tmp_path / "local-3.zstd").write_bytes(encode("zstd", [b'{"Event":"A"}\n']))
    (tmp_path / "local-4.snappy").write_bytes(b"garbage that is not snappy")
    shutil.copytree(ROLLING_ZSTD, tmp_path / ROLLING_ZSTD.name)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "local-5").write_bytes(b'{"Event":"A"}\n')
    logs = find_logs(tmp_path)
    assert [(log.name, log.state) for log in logs] == [
        ("local-1795284909880", "complete"),
        ("local-1", "complete"),
        ("local-2", "in_progress"),
        ("local-3", "complete"),
    ]
    assert [log.name for log in find_logs(tmp_path, recursive=True)][-1] == "local-5"
    assert not looks_like_event_log(tmp_path / "notes.json")
    with pytest.raises(ValueError, match="find_logs"):
        describe_log(tmp_path)
    with pytest.raises(ValueError, match="find_logs"):
        EventLogReader(tmp_path)


def test_reader_reads_once(tmp_path):
    path = tmp_path / "a"
    path.write_bytes(b'{"Event":"A"}\n')
    reader = EventLogReader(path)
    assert len(list(reader)) == 1
    with pytest.raises(RuntimeError):
        list(reader)


def test_utf8_and_crlf_lines(tmp_path):
    path = tmp_path / "a"
    path.write_bytes('{"Event":"A","App Name":"<script>alert(\'XSS\')</script> ü"}\r\n{"Event":"B"}\r\n'.encode())
    reader = EventLogReader(path)
    events = [e.event for e in reader]
    assert events[0]["App Name"].endswith("ü") and events[1] == {"Event": "B"}
    path.write_bytes(b'{"Event":"A"}\n{"Event":"\xff\xfe"}\n')
    reader = EventLogReader(path)
    assert len(list(reader)) == 1 and reader.errors[0].line == 2


@pytest.mark.spark_events
def test_chunk_sizes_do_not_change_results_on_every_codec(tmp_path):
    lines = lines_of(rolling_reference())
    for codec in ALL_CODECS:
        path = tmp_path / (f"app.{codec}" if codec else "app")
        path.write_bytes(encode(codec, [b"".join(lines[i : i + 3]) for i in range(0, len(lines), 3)]))
        a = [tuple(e) for e in EventLogReader(path, chunk_size=97)]
        b = [tuple(e) for e in EventLogReader(path)]
        assert a == b and len(a) == 65, codec
    assert os.path.exists(path)


def test_missing_lz4_library_is_a_clear_error(tmp_path, monkeypatch):
    path = tmp_path / "eventlog_v2_local-1"
    path.mkdir()
    (path / "events_1_local-1.lz4").write_bytes(encode("lz4", [b'{"Event":"A"}\n']))
    real_import = codecs_mod.importlib.import_module

    def no_lz4(name, *args):
        if name.startswith("lz4"):
            raise ImportError(name)
        return real_import(name, *args)

    monkeypatch.setattr(codecs_mod.importlib, "import_module", no_lz4)
    with pytest.raises(MissingCodecError, match=r"events_1_local-1\.lz4.*lz4 codec.*pip install lz4"):
        EventLogReader(path)
