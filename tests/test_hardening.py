"""Damaged logs must not take flowscope down: each damaged line or event is reported (file, line, cause) and skipped,
a rejected record changes nothing, damaged compressed bytes keep what decoded, and one line cannot cost gigabytes.

Regression tests for the cases of the hardening issue, and a seeded mutation fuzz over the shipped fixtures
(benchmarks/fuzz_readers.py runs more of the same).
"""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
import tracemalloc

import orjson
import pytest
import zstandard

from backend.feeds import ProgressLogFeed
from backend.spark.model import SparkModel
from backend.spark.convert import record
from tests.fuzz_inputs import PROGRESS_FIXTURE, ROOT, SPARK_FIXTURES, progress_case, spark_case
from tracker import jsonl
from tracker.log_records import record_problem
from tracker.progress_log import ProgressLogError, read_records
from tracker.replay import Replay, replay_file

HEADER = b'{"type":"header","format":"flowscope-progress","version":1}\n'


def frontiers_cli(path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flowscope.cli", "frontiers", str(path), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


# --- progress-log records: rejected with a reason, in the CLI and the server's feeds alike ----------------------


@pytest.mark.parametrize("line, reason", [
    (b'{"type":"operator","scope":[],"node":1,"name":"x","inputs":0,"outputs":1,"capabilities":[[0],[1]]}',
     "capabilities"),
    (b'{"type":"operator","scope":[],"node":1000000000,"name":"x","inputs":0,"outputs":1}', "node"),
    (b'{"type":"operator","scope":[],"node":1,"inputs":1000000,"outputs":1}', "inputs"),
    (b'{"type":"progress","scope":[],"worker":9223372036854775808,"seq":0,"at":0,"updates":[]}', "64 bits"),
    (b'{"type":' + b"[" * 3 + b"1" + b"]" * 3 + b',"x":1}', "type must be a string"),
    (b'{"type":"mark","at":0,"label":"x","cause":' + b"[" * 300 + b"]" * 300 + b"}", "nested"),
])
def test_hostile_record_is_rejected_with_its_reason_and_changes_nothing(tmp_path, line, reason):
    path = tmp_path / "log.jsonl"
    path.write_bytes(HEADER + line + b"\n" + b'{"type":"mark","at":1,"label":"after"}\n')
    replay = replay_file(path)
    assert [(e.line, e.kind) for e in replay.errors] == [(2, jsonl.REJECTED_RECORD)]
    assert reason in replay.errors[0].reason
    assert replay.root.children == {}, "a rejected record adds nothing"
    assert [m["label"] for m in replay.marks] == ["after"], "the records after it load"
    feed = ProgressLogFeed(path)  # the server's feed: the same rejection, before the session sees the record
    records = feed.poll(100) or []
    assert [r["type"] for _, r in records] == ["header", "mark"]
    assert [(e.line, e.kind) for e in feed.errors] == [(2, jsonl.REJECTED_RECORD)]
    proc = frontiers_cli(path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and f"{path}:2:" in proc.stderr


def test_replay_rejects_a_record_given_directly():
    """Records that do not come through the reader (a live feed) get the same shape check."""
    replay = Replay()
    ok = replay.apply({"type": "operator", "scope": [], "node": 1, "inputs": 0, "outputs": 1,
                       "capabilities": [[0], [1]]}, 7)
    assert not ok and replay.root.children == {} and "capabilities" in replay.errors[0].reason
    assert replay.errors[0].line == 7


def test_deep_or_huge_values_given_directly_are_rejected_without_recursion_errors():
    """The one-pass walk (depth and 64-bit integers together) stops at the depth limit, whatever the value."""
    deep: list = [1 << 70]
    for _ in range(100_000):
        deep = [deep]
    assert "nested" in record_problem({"type": "mark", "at": 0, "label": "x", "cause": deep})
    assert "64 bits" in record_problem({"type": "detail", "key": "k", "value": {"a": [{"b": -(1 << 63) - 1}]}})
    assert "64 bits" in record_problem({"type": "detail", "key": "k", "value": {"a": 1 << 63}})
    seventy: list = []
    for _ in range(70):  # just deeper than the limit (64)
        seventy = [seventy]
    assert "nested" in record_problem({"type": "detail", "key": "k", "value": {"a": seventy}})
    assert record_problem({"type": "detail", "key": "k", "value": {"a": [{"b": -(1 << 63)}], "c": (1 << 63) - 1}}) \
        is None


def test_deeply_nested_line_is_a_reported_line_not_a_recursion_error(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_bytes(HEADER + b'{"type":"mark","at":0,"label":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n")
    errors: list = []
    assert [r["type"] for _, r in read_records(path, errors)] == ["header"]
    assert len(errors) == 1 and errors[0].line == 2


def test_validator_is_cheap_on_ordinary_lines():
    raw = PROGRESS_FIXTURE.read_bytes().splitlines()
    assert all(record_problem(orjson.loads(r)) is None for r in raw)


# --- damaged compressed logs --------------------------------------------------------------------------------------


def _lines(n: int) -> bytes:
    return HEADER + b"".join(b'{"type":"mark","at":%d,"label":"m%d"}\n' % (i, i) for i in range(n))


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_truncated_compressed_log_applies_what_decodes_and_says_where(tmp_path, suffix):
    data = _lines(5000)
    if suffix == ".gz":
        blob = gzip.compress(data)
    else:  # many frames, the way a log flushed as it is written looks
        chunks = [data[i:i + 4096] for i in range(0, len(data), 4096)]
        blob = b"".join(zstandard.ZstdCompressor().compress(c) for c in chunks)
    path = tmp_path / f"log.jsonl{suffix}"
    path.write_bytes(blob[: len(blob) * 2 // 3])
    errors: list = []
    records = list(read_records(path, errors))
    assert 1000 < len(records) < 5001
    assert [e.kind for e in errors][-1] == jsonl.TRUNCATED_STREAM
    assert str(path) in str(errors[-1]) and "byte" in errors[-1].reason
    proc = frontiers_cli(path)
    assert proc.returncode == 0 and "truncated-stream" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("suffix", [".gz", ".zst"])
def test_corrupt_compressed_log_keeps_what_came_before(tmp_path, suffix):
    data = _lines(3000)
    blob = bytearray(gzip.compress(data) if suffix == ".gz" else zstandard.ZstdCompressor().compress(data))
    middle = len(blob) // 2
    blob[middle:middle + 32] = b"\xff" * 32
    path = tmp_path / f"log.jsonl{suffix}"
    path.write_bytes(bytes(blob))
    errors: list = []
    records = list(read_records(path, errors))
    assert len(records) >= 1
    assert errors and errors[-1].kind in (jsonl.CORRUPT_STREAM, jsonl.TRUNCATED_STREAM, jsonl.INVALID_JSON,
                                         jsonl.TRUNCATED_LINE)  # zstd without checksums may decode garbage
    assert "Traceback" not in frontiers_cli(path).stderr


def test_unreadable_compressed_header_is_a_clear_error(tmp_path):
    path = tmp_path / "log.jsonl.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(ProgressLogError, match=str(path)):
        list(read_records(path))


# --- bounded cost -------------------------------------------------------------------------------------------------


def test_an_endless_line_is_never_held_whole(tmp_path):
    limits = jsonl.ReadLimits(max_line_bytes=1 << 20)
    path = tmp_path / "endless.jsonl.gz"
    with gzip.open(path, "wb") as f:  # 64 MiB of one line, 64 KiB compressed: a small decompression bomb
        f.write(HEADER)
        for _ in range(64):
            f.write(b" " * (1 << 20))
        f.write(b"\n" + b'{"type":"mark","at":1,"label":"after"}\n')
    errors: list = []
    tracemalloc.start()
    try:
        records = list(read_records(path, errors, limits=limits))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [r["type"] for _, r in records] == ["header", "mark"]
    assert [(e.line, e.kind) for e in errors] == [(2, jsonl.LINE_TOO_LONG)]
    assert peak < 24 << 20, f"peak {peak} bytes for a 64 MiB line with a 1 MiB limit"


def test_stream_limit_stops_a_decompression_bomb(tmp_path):
    path = tmp_path / "bomb.jsonl.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(_lines(20000)))
    errors: list = []
    records = list(read_records(path, errors, limits=jsonl.ReadLimits(max_stream_bytes=100_000)))
    assert 0 < len(records) < 20000 and errors[-1].kind == jsonl.STREAM_TOO_LARGE


# --- one damaged Spark event --------------------------------------------------------------------------------------


def _spark_lines() -> list[bytes]:
    src = next(p for p in SPARK_FIXTURES if "batch_shuffle" in str(p))
    return zstandard.ZstdDecompressor().decompressobj().decompress(src.read_bytes()).splitlines()


@pytest.mark.parametrize("field, value", [("Task Info", "x"), ("Stage ID", None), ("Task End Reason", [])])
def test_one_damaged_spark_event_is_reported_and_skipped(tmp_path, field, value):
    lines = _spark_lines()
    i = next(k for k, raw in enumerate(lines) if b'"SparkListenerTaskEnd"' in raw)
    event = orjson.loads(lines[i])
    event[field] = value
    damaged = [*lines[:i], orjson.dumps(event), *lines[i + 1:]]
    src = tmp_path / "app"
    src.write_bytes(b"\n".join(damaged) + b"\n")
    out = tmp_path / "out.jsonl"
    summary = record(src, out)
    assert summary.damaged_events == 1 and summary.events == len(lines)
    [err] = [e for e in summary.errors if e.kind == jsonl.DAMAGED_EVENT]
    assert (err.path, err.line) == (str(src), i + 1) and "SparkListenerTaskEnd" in err.reason
    assert repr(field) in err.reason
    assert summary.uncertain and summary.ended, "uncertain from there, and the rest of the log still loads"
    replay = replay_file(out)
    assert replay.errors == []


def test_damaged_job_start_leaves_the_model_consistent():
    model = SparkModel()
    seen: list = []
    model.on_damaged = lambda line, kind, problem: seen.append((line, kind, problem))
    assert model.feed({"Event": "SparkListenerJobStart", "Job ID": None, "Stage Infos": []}, 3)
    assert model.jobs == {} and seen and seen[0][:2] == (3, "SparkListenerJobStart")
    model.feed({"Event": "SparkListenerJobStart", "Job ID": 1, "Stage Infos": {"a": 1}}, 4)
    assert model.jobs == {} and len(seen) == 2 and model.damaged_events == 2


# --- the fuzz -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_mutated_progress_logs_never_end_in_a_traceback(tmp_path, seed):
    rng = random.Random(seed)
    for n in range(25):  # 300 cases in all
        path = progress_case(rng, tmp_path, n)
        errors: list = []
        try:
            replay = replay_file(path, on_error=errors.append)
        except ProgressLogError:
            continue  # the damage hit the header: a clear error, not a traceback
        replay.state()
        feed = ProgressLogFeed(path)
        while feed.poll(512):
            pass


@pytest.mark.parametrize("seed", range(4))
def test_mutated_spark_logs_convert(tmp_path, seed):
    rng = random.Random(1000 + seed)
    for n in range(10):  # 40 cases in all
        src = spark_case(rng, tmp_path, n)
        summary = record(src, tmp_path / f"out{n}.jsonl")
        assert summary.accounted
        replay_file(tmp_path / f"out{n}.jsonl")


def test_damaged_spark_event_in_follow_and_live_sessions(tmp_path):
    from backend.spark.follow_feed import SparkLogFeed
    from backend.spark.live import SparkLiveFeed

    lines = _spark_lines()
    i = next(k for k, raw in enumerate(lines) if b'"SparkListenerTaskEnd"' in raw)
    event = orjson.loads(lines[i])
    event["Task Info"] = "x"
    damaged = [*lines[:i], orjson.dumps(event), *lines[i + 1:]]
    src = tmp_path / "app"
    src.write_bytes(b"\n".join(damaged) + b"\n")
    feed = SparkLogFeed(src, follow=False)
    while feed.poll(512) is not None:
        pass
    assert [(e.path, e.line, e.kind) for e in feed.errors] == [(str(src), i + 1, jsonl.DAMAGED_EVENT)]
    assert feed.model.ended and feed.model.uncertain

    live = SparkLiveFeed("app (live)")
    live.put(damaged)
    live.end()
    while live.poll(512) is not None:
        pass
    assert [(e.line, e.kind) for e in live.errors] == [(i + 1, jsonl.DAMAGED_EVENT)]
    assert live.model.ended and live.model.uncertain


def test_zero_summary_cycle_is_reported_not_raised(tmp_path):
    path = tmp_path / "cycle.jsonl"
    path.write_bytes(HEADER + b"\n".join([
        b'{"type":"operator","scope":[],"node":1,"name":"a","inputs":1,"outputs":1,"summary":[[[0]]],'
        b'"capabilities":[[0]]}',
        b'{"type":"operator","scope":[],"node":2,"name":"b","inputs":1,"outputs":1,"summary":[[[0]]]}',
        b'{"type":"edge","scope":[],"from":["out",1,0],"to":["in",2,0]}',
        b'{"type":"edge","scope":[],"from":["out",2,0],"to":["in",1,0]}',
    ]) + b"\n")
    replay = replay_file(path)
    assert replay.cycle is not None and "cycle" in replay.errors[-1].reason
    assert replay.state() == {"scopes": []}
    proc = frontiers_cli(path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr and "cannot be replayed" in proc.stderr
