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

import httpx
import orjson
import pytest
import zstandard

from backend.feeds.progress_feeds import ProgressLogFeed
from backend.spark.model.spark_model import SparkModel
from backend.spark.recording.convert import record
from backend.web.app import Settings
from tests.e2e.server import running_server
from tests.fuzz_entry_points import PROGRESS_ENTRY_POINTS, SPARK_ENTRY_POINTS, Hung, IngestPort, run_checked, verdict
from tests.fuzz_inputs import (
    PROGRESS_FIXTURE,
    ROOT,
    SPARK_FIXTURES,
    progress_case,
    progress_mutation,
    spark_case,
    spark_mutation,
)
from tracker.progress_log import jsonl
from tracker.progress_log.log_file import ProgressLogError, read_records
from tracker.progress_log.records import record_problem
from tracker.progress_log.replay import Replay, replay_file
from tracker.reachability import CycleError, Location

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


@pytest.mark.parametrize("fields, reason", [
    ('"worker":{"a":1},"at":0,"updates":[]', "worker"),
    ('"worker":0,"at":"noon","updates":[]', "at must be a number"),
    ('"worker":0,"at":0,"updates":{"x":1}', "updates must be a list"),
    ('"worker":0,"at":0,"updates":[[["out",1,0],0,1],[["out",1,0],0]]', "not enough values"),
    ('"worker":0,"at":0,"updates":[[["out",1,0],0,1],[["out",1,0],0,"1"]]', "delta"),
    ('"worker":0,"at":0,"updates":[[["out",1,0],0,1],[["out",7,0],0,1]]', "no node 7"),
])
def test_malformed_progress_record_is_rejected_once_by_the_replay_and_changes_nothing(tmp_path, fields, reason):
    """A progress record's fields are checked where the replay converts them: the reader passes the record on, and
    the replay rejects it whole (its first, valid update is not applied either)."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(HEADER + b'{"type":"operator","scope":[],"node":1,"inputs":0,"outputs":1}\n'
                     + b'{"type":"progress","scope":[],"seq":0,' + fields.encode() + b"}\n"
                     + b'{"type":"progress","scope":[],"worker":0,"seq":1,"at":1,"updates":[[["out",1,0],5,1]]}\n')
    replay = replay_file(path)
    assert [(e.line, e.kind) for e in replay.errors] == [(3, jsonl.REJECTED_RECORD)]
    assert reason in replay.errors[0].reason
    assert replay.batches_applied == 1 and replay.last_at == 1
    port = replay.state()["scopes"][0]["ports"]
    assert [p["pointstamps"] for p in port if p["port"] == ["out", 1, 0]] == [[[5, 1]]]


@pytest.mark.parametrize("where", ["middle", "across a read", "last, unterminated"])
def test_the_reader_scans_each_line_for_huge_integers_wherever_it_falls(tmp_path, where):
    """The reader's byte scans run once per batch of lines: a hostile line is caught in the middle of a batch, when
    it straddles two reads, and as an unterminated last line."""
    mark = b'{"type":"mark","at":%d,"label":"%s"}\n'
    bad = b'{"type":"progress","scope":[],"worker":9223372036854775808,"seq":0,"at":0,"updates":[]}'
    filler = b"".join(mark % (i, b"m" * 40) for i in range(2000))  # about 120 KB: several reads
    if where == "middle":
        cut = filler.index(b"\n", 1000) + 1
        body = filler[:cut] + bad + b"\n" + filler[cut:]
    elif where == "across a read":
        cut = filler.index(b"\n", jsonl.READ_CHUNK - 60) + 1
        body = filler[:cut] + bad + b"\n" + filler[cut:]
        assert cut < jsonl.READ_CHUNK < cut + len(bad)
    else:
        body = filler + bad
    path = tmp_path / "log.jsonl"
    path.write_bytes(HEADER + body)
    errors: list = []
    records = list(read_records(path, errors))
    assert len(records) == 2001
    assert [e.kind for e in errors] == [jsonl.REJECTED_RECORD] and "64 bits" in errors[0].reason


def test_deep_or_huge_values_given_directly_are_rejected_without_recursion_errors():
    """The one-pass walk (depth and 64-bit integers together) stops at the depth limit, whatever the value."""
    deep: list = [1 << 70]
    for _ in range(100_000):
        deep = [deep]
    assert "nested" in (record_problem({"type": "mark", "at": 0, "label": "x", "cause": deep}) or "")
    assert "64 bits" in (record_problem({"type": "detail", "key": "k", "value": {"a": [{"b": -(1 << 63) - 1}]}}) or "")
    assert "64 bits" in (record_problem({"type": "detail", "key": "k", "value": {"a": 1 << 63}}) or "")
    seventy: list = []
    for _ in range(70):  # just deeper than the limit (64)
        seventy = [seventy]
    assert "nested" in (record_problem({"type": "detail", "key": "k", "value": {"a": seventy}}) or "")
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


@pytest.mark.parametrize("field, value", [("Task Info", "x"), ("Stage ID", None), ("Task End Reason", []),
                                          ("Task Metrics", []),
                                          ("Task Metrics", {"Input Metrics": {"Bytes Read": "x"}})])
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


def test_a_spark_line_that_is_not_utf8_is_a_reported_line(tmp_path):
    """A bit flip can leave bytes that are not UTF-8 in a task event: a corrupt line with its number, not a
    UnicodeDecodeError out of the slim decoder (found by the fuzz)."""
    lines = _spark_lines()
    i = next(k for k, raw in enumerate(lines) if b'"SparkListenerTaskEnd"' in raw)
    damaged = [*lines[:i], lines[i].replace(b'"Host":"', b'"Host":"\xef\x28', 1), *lines[i + 1:]]
    src = tmp_path / "app"
    src.write_bytes(b"\n".join(damaged) + b"\n")
    summary = record(src, tmp_path / "out.jsonl")
    assert [(e.line, e.kind) for e in summary.errors] == [(i + 1, jsonl.INVALID_JSON)]
    assert summary.events == len(lines) - 1


@pytest.mark.parametrize("field, value", [("cause", []), ("cause", 1.5), ("clears", "key"), ("clears", [["k"]])])
def test_progress_metadata_of_the_wrong_shape_is_rejected(field, value):
    """``cause`` is an object and ``clears`` a list of keys: a session read both (blame), and a hostile one failed
    the whole session (found by the fuzz)."""
    record_ = {"type": "progress", "scope": [], "worker": 0, "seq": 0, "at": 0, "updates": [], field: value}
    replay = Replay()  # a progress record's fields are the replay's to check (tracker/progress_log/records.py)
    assert not replay.apply(record_, 3) and replay.batches_applied == 0
    assert field in replay.errors[0].reason


def test_a_damaged_zstd_progress_log_is_not_taken_for_a_spark_log(tmp_path):
    """A .zst file has the zstd magic whatever it holds: it is a Spark log only if it decodes to a Spark event."""
    from backend.feeds.progress_feeds import FeedError, default_registry

    path = tmp_path / "loop.jsonl.zst"
    data = PROGRESS_FIXTURE.read_bytes()
    path.write_bytes(zstandard.ZstdCompressor().compress(b"{garbage" + data[8:]))
    with pytest.raises(FeedError, match="not a Spark event log"):
        default_registry().open(path)
    spark = tmp_path / "app.zstd"
    spark.write_bytes(zstandard.ZstdCompressor().compress(b"\n".join(_spark_lines()) + b"\n"))
    assert default_registry().identify(spark).name == "spark-event-log"


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
    """Every case replays to the end or stops at a damaged header with a clear error; each problem on the way is
    reported naming the file, the line and the cause (some damage leaves a valid log: at least one case of the
    25 must have been reported)."""
    rng = random.Random(seed)
    reported = 0
    for n in range(25):  # 300 cases in all
        path = progress_case(rng, tmp_path, n)
        errors: list[jsonl.LineError] = []
        try:
            replay = replay_file(path, on_error=errors.append)
        except ProgressLogError as e:
            assert str(path) in str(e), e  # the damage hit the header: a clear error, not a traceback
            continue
        replay.state()
        for err in errors:
            assert err.path == str(path) and err.line >= 1 and err.kind and err.reason, err
        assert errors == replay.errors
        reported += bool(errors)
        feed = ProgressLogFeed(path)
        while feed.poll(512):
            pass
    assert reported, "no case was damaged enough to be reported"


@pytest.mark.parametrize("seed", range(4))
def test_mutated_spark_logs_convert(tmp_path, seed):
    rng = random.Random(1000 + seed)
    for n in range(10):  # 40 cases in all
        src = spark_case(rng, tmp_path, n)
        summary = record(src, tmp_path / f"out{n}.jsonl")
        assert summary.accounted
        replay_file(tmp_path / f"out{n}.jsonl")


def test_damaged_spark_event_in_follow_and_live_sessions(tmp_path):
    from backend.spark.live.follow_feed import SparkLogFeed
    from backend.spark.live.socket_feed import SparkLiveFeed

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


def _log(tmp_path, name: str, lines: list[bytes]):
    path = tmp_path / name
    path.write_bytes(HEADER + b"\n".join(lines) + b"\n")
    return path


# a -> b -> a with identity summaries: the second edge (line 5) would close a cycle where time never advances
_CYCLE = [
    b'{"type":"operator","scope":[],"node":1,"name":"a","inputs":1,"outputs":1,"summary":[[[0]]],'
    b'"capabilities":[[0]]}',
    b'{"type":"operator","scope":[],"node":2,"name":"b","inputs":1,"outputs":1,"summary":[[[0]]]}',
    b'{"type":"edge","scope":[],"from":["out",1,0],"to":["in",2,0]}',
    b'{"type":"edge","scope":[],"from":["out",2,0],"to":["in",1,0]}',
    b'{"type":"progress","scope":[],"worker":0,"seq":0,"at":1,"updates":[[["out",1,0],0,-1],[["out",1,0],3,1]]}',
]


def _port(state: dict, path: list, port: list) -> dict:
    scope = next(s for s in state["scopes"] if s["path"] == path)
    return next(p for p in scope["ports"] if p["port"] == port)


def test_an_edge_closing_a_zero_summary_cycle_is_a_rejected_record_that_changes_nothing(tmp_path):
    path = _log(tmp_path, "cycle.jsonl", _CYCLE)
    replay = replay_file(path)
    assert [(e.line, e.kind) for e in replay.errors] == [(5, jsonl.REJECTED_RECORD)]
    assert "edge record rejected: cycle without a strictly advancing path summary" in replay.errors[0].reason
    assert "out(2,0) -> in(1,0)" in replay.errors[0].reason
    assert replay.cycle is None and replay.root.edges == [((1, 1, 0), (2, 0, 0))], "the rejected edge was not added"
    assert replay.batches_applied == 1, "the progress after it applies"
    state = replay.state()
    assert _port(state, [], ["in", 2, 0])["frontier"] == [3]
    assert _port(state, [], ["in", 1, 0])["frontier"] == []  # no edge leads back to a
    proc = frontiers_cli(path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{path}:5:" in proc.stderr and "cycle" in proc.stderr
    assert _port(orjson.loads(proc.stdout), [], ["in", 2, 0])["frontier"] == [3]


def test_a_cycle_with_an_advancing_summary_is_accepted(tmp_path):
    lines = list(_CYCLE)
    lines[1] = lines[1].replace(b'"summary":[[[0]]]', b'"summary":[[[1]]]')
    replay = replay_file(_log(tmp_path, "loop.jsonl", lines))
    assert replay.errors == [] and len(replay.root.edges) == 2
    assert _port(replay.state(), [], ["in", 1, 0])["frontier"] == [4]


def _nested(depth: int, feedback: bytes, back_summary: bytes) -> list[bytes]:
    """Scope [1] (``depth``) with an inner operator 1 and a feedback operator 2 (summary ``feedback``); outside,
    operator 2 (summary ``back_summary``) leads the scope's output back to its input. The last edge, inside the
    scope, is the one that joins the scope's input to its output."""
    inner = b"[0,0]" if depth == 2 else b"0"
    return [
        b'{"type":"scope","path":[1],"name":"loop","inputs":1,"outputs":1,"depth":%d}' % depth,
        b'{"type":"operator","scope":[],"node":2,"name":"back","inputs":1,"outputs":1,"summary":[[[%s]]]}'
        % back_summary,
        b'{"type":"edge","scope":[],"from":["out",1,0],"to":["in",2,0]}',
        b'{"type":"edge","scope":[],"from":["out",2,0],"to":["in",1,0]}',
        b'{"type":"operator","scope":[1],"node":1,"name":"step","inputs":2,"outputs":1,'
        b'"summary":[[[%s]],[[%s]]]}' % (inner, inner),
        b'{"type":"operator","scope":[1],"node":2,"name":"feedback","inputs":1,"outputs":1,"summary":[[[%s]]]}'
        % feedback,
        b'{"type":"edge","scope":[1],"from":["out",1,0],"to":["in",2,0]}',
        b'{"type":"edge","scope":[1],"from":["out",2,0],"to":["in",1,1]}',
        b'{"type":"edge","scope":[1],"from":["out",1,0],"to":["in",0,0]}',
        b'{"type":"edge","scope":[1],"from":["out",0,0],"to":["in",1,0]}',
    ]


@pytest.mark.parametrize("depth, feedback, back, rejected", [
    (1, b"1", b"0", True),  # a region passing its input to its output unchanged, fed back unchanged outside
    (2, b"[0,1]", b"0", True),  # an inner loop advances only the inner coordinate: from outside, the identity
    (2, b"[0,1]", b"1", False),  # the outer feedback advances time: a proper loop
    (1, b"1", b"1", False),
])
def test_an_edge_inside_a_scope_that_closes_a_cycle_around_it_is_rejected(tmp_path, depth, feedback, back, rejected):
    replay = replay_file(_log(tmp_path, "nested.jsonl", _nested(depth, feedback, back)))
    scope = replay.root.find([1])
    if rejected:
        assert [e.line for e in replay.errors] == [11]
        assert "cycle without a strictly advancing path summary in scope [] (root)" in replay.errors[0].reason
        assert len(scope.edges) == 3 and replay.cycle is None
        assert replay.state()["scopes"], "the structure stays buildable"
    else:
        assert replay.errors == [] and len(scope.edges) == 4


def test_zero_summary_cycle_in_server_and_follow_sessions(tmp_path):
    """The server's sessions, read whole and followed, reject the same edge with its line and keep going."""
    logs = tmp_path / "logs"
    logs.mkdir()
    path = _log(logs, "cycle.jsonl", _CYCLE)
    with running_server(Settings(allowed_dirs=[logs])) as srv:
        for follow in (False, True):
            r = httpx.post(srv.url + "/api/sessions", json={"path": str(path), "follow": follow}, timeout=10)
            assert r.status_code == 201, r.text
            sid = r.json()["id"]
            info = srv.wait_for(sid, status=("live",) if follow else ("done",))
            assert info["batches"] == 1 and info["errors"] == 1, info
            errors = httpx.get(f"{srv.url}/api/sessions/{sid}/errors", timeout=5).json()["errors"]
            assert [e["line"] for e in errors] == [5] and "cycle" in errors[0]["reason"]
            rows = httpx.get(f"{srv.url}/api/sessions/{sid}/state", timeout=5).json()["ports"]
            assert [r[3] for r in rows if r[:3] == ["in", 2, 0]] == [[3]]


@pytest.mark.parametrize("seed", range(40))
def test_edges_are_rejected_exactly_when_building_with_them_would_fail(seed):
    """Random structure in a root and a nested scope (a region or a loop), edges given one by one: an edge is
    rejected exactly when the hierarchy with it added cannot be built (timely's check, on the whole structure)."""
    rng = random.Random(seed)
    depth = rng.choice([1, 2])
    inner = [b"[0,0]", b"[0,0]", b"[0,1]", b"[1,0]"] if depth == 2 else [b"0", b"0", b"0", b"1"]
    records: list[bytes] = [b'{"type":"scope","path":[1],"name":"s","inputs":2,"outputs":2,"depth":%d}' % depth]
    ports = {(): {0: (2, 2)}, (1,): {0: (2, 2)}}  # scope path -> node -> (inputs it can feed, outputs)
    path: tuple[int, ...]
    for path, count in (((), 3), ((1,), 3)):
        for node in range(2, 2 + count):
            s = rng.choice(inner if path else [b"0", b"0", b"0", b"1"])
            records.append(b'{"type":"operator","scope":%s,"node":%d,"inputs":1,"outputs":1,"summary":[[[%s]]]}'
                           % (orjson.dumps(list(path)), node, s))
            ports[path][node] = (1, 1)
    ports[()][1] = (2, 2)  # the nested scope seen from its parent: node 1 of the root
    edges = []
    for _ in range(14):
        path = rng.choice([(), (1,)])
        src_node = rng.choice(sorted(ports[path]))
        tgt_node = rng.choice(sorted(ports[path]))
        src_outputs = ports[path][src_node][1] if src_node else ports[path][0][0]
        tgt_inputs = ports[path][tgt_node][0] if tgt_node else ports[path][0][1]
        if path == () and 0 in (src_node, tgt_node):
            continue  # the root has no inputs or outputs
        edges.append(b'{"type":"edge","scope":%s,"from":["out",%d,%d],"to":["in",%d,%d]}' % (
            orjson.dumps(list(path)), src_node, rng.randrange(src_outputs), tgt_node, rng.randrange(tgt_inputs)))
    replay = Replay()
    kept: list[bytes] = []
    for line in records + edges:
        record = orjson.loads(line)
        if record["type"] != "edge":
            assert replay.apply(record)
            kept.append(line)
            continue
        trial = Replay()  # the same structure, the edge added below the check, built whole
        for k in kept:
            trial.apply(orjson.loads(k))
        trial.root.find(record["scope"]).add_edge(Location.from_json(record["from"]), Location.from_json(record["to"]))
        try:
            trial.root.schedule()
            buildable = True
        except CycleError:
            buildable = False
        accepted = replay.apply(record)
        assert accepted == buildable, (line, [e.reason for e in replay.errors])
        if accepted:
            kept.append(line)
        replay.root.schedule()  # never raises: every accepted edge left the structure buildable


# --- every entry point, mutated inputs (benchmarks/fuzz_readers.py runs thousands) --------------------------------


@pytest.fixture(scope="module")
def ingest_port():
    port = IngestPort()
    yield port
    port.close()


@pytest.mark.parametrize("seed", range(36))
def test_mutated_progress_logs_through_every_entry_point(tmp_path, seed):
    """frontiers, a server session, follow mode: each ends with every line loaded or reported (or the file refused
    as no progress log), never a crash, a hang or a line lost silently."""
    rng = random.Random(5000 + seed)
    name, data, blob = progress_mutation(rng, seed)
    path = tmp_path / name
    path.write_bytes(blob)
    verdicts = {ep: run_checked(fn, path, data, random.Random(seed)) for ep, fn in PROGRESS_ENTRY_POINTS.items()}
    assert all(v in ("ok", "refused") for v in verdicts.values()), verdicts


@pytest.mark.parametrize("seed", range(12))
def test_mutated_spark_logs_through_every_entry_point(tmp_path, ingest_port, seed):
    """record, a server session, follow mode, the live feed and the ingest port: never a crash, a hang or a line
    lost silently."""
    rng = random.Random(7000 + seed)
    name, data = spark_mutation(rng, seed)
    path = tmp_path / name
    path.write_bytes(data)
    entry_points = {**SPARK_ENTRY_POINTS, "ingest port": ingest_port}
    verdicts = {ep: run_checked(fn, path, data, random.Random(seed)) for ep, fn in entry_points.items()}
    assert all(v == "ok" for v in verdicts.values()), verdicts


def test_the_fuzz_verdicts_can_fail(tmp_path):
    """The harness sees what it counts: a lost line, a crash and a hang are not "ok"."""
    assert verdict(3, [], 5) == "lost"
    assert verdict(3, [jsonl.LineError("x", 4, jsonl.CORRUPT_STREAM, "r")], 5) == "ok"
    assert run_checked(lambda: str(1 / 0)).startswith("crashed: ZeroDivisionError")

    def stuck() -> str:
        raise Hung()

    assert run_checked(stuck) == "hung"
