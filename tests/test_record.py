"""`flowscope record`: Spark event logs in every form become progress logs, in one streaming pass, with every line
accounted for; the command names the file and exits 2 when it cannot read a log at all."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest

from backend.eventlog import codecs as codecs_mod
from backend.eventlog import find_logs
from backend.eventlog.encoders import encode
from backend.spark.model.spark_model import SparkModel
from backend.spark.recording import convert as record_mod
from backend.spark.recording.convert import EventLogError, SparkLogConversion, open_event_log, record
from tracker.progress_log.log_file import read_records
from tracker.progress_log.replay import replay_file

from .conftest import REPO, SPARK_EVENTS, spark_event_cases

PYSPARK = SPARK_EVENTS / "pyspark-4.3"
ROLLING = PYSPARK / "events" / "eventlog_v2_local-1795284909880"
THOUSAND = PYSPARK / "spark430_1000tasks_shuffle.jsonl.gz"


def direct(lines: list[bytes]) -> list[dict]:
    """What the model makes of the lines when fed straight from `json`, without the readers."""
    model, out = SparkModel(), []
    for n, raw in enumerate(lines, 1):
        out += model.feed(json.loads(raw), n)
    return out


def thousand_lines() -> list[bytes]:
    return [line for line in gzip.decompress(THOUSAND.read_bytes()).split(b"\n") if line.strip()]


def progress_log(path: Path) -> tuple[dict, list[dict]]:
    records = [rec for _, rec in read_records(path)]
    return records[0], records[1:]


@pytest.mark.spark_events
@pytest.mark.parametrize("log", spark_event_cases(lambda root: find_logs(root, recursive=True)),
                         ids=lambda log: f"{log.path.parent.name}/{log.path.name}" if log else None)
def test_every_shared_log_records(log, tmp_path):
    out = tmp_path / "progress.jsonl.zst"
    summary = record(log, out)
    assert summary.accounted and summary.corrupt_lines == 0 and summary.errors == []
    header, records = progress_log(out)
    assert header["source"].startswith("Spark application") and log.path.name in header["source"]
    if summary.app_id:
        assert summary.app_id in header["source"]
    assert summary.records == len(records)
    assert summary.batches == sum(r["type"] == "progress" for r in records)
    assert summary.marks == sum(r["type"] == "mark" for r in records)
    if not log.rolling and log.codec is None:
        assert records == direct([line for line in log.path.read_bytes().split(b"\n") if line.strip()])
    replay = replay_file(out, check_contracts=True)
    assert replay.errors == [] and replay.findings == []
    if summary.ended:
        assert all(not p["frontier"] for s in replay.state()["scopes"] for p in s["ports"])


@pytest.mark.spark_events
def test_the_summary_counts_what_the_model_could_not_use(tmp_path):
    summary = record(SPARK_EVENTS / "app-20161115172038-0000", tmp_path / "p.jsonl")
    assert summary.app_id == "app-20161115172038-0000" and summary.ended
    # executors added are modelled (marks with their cores, the slots blame counts); block managers are not
    assert summary.unknown_events["SparkListenerBlockManagerAdded"] >= 1
    assert "SparkListenerExecutorAdded" not in summary.unknown_events
    assert summary.events == summary.lines - summary.blank_lines
    assert summary.uncertain == []
    text = str(summary)
    assert "events" in text and "not modelled" in text
    assert json.loads(json.dumps(summary.to_json()))["events"] == summary.events


@pytest.mark.spark_events
@pytest.mark.parametrize("codec", [None, "gz", "zstd", "lz4", "snappy", "lzf"])
def test_every_codec_gives_the_same_records(codec, tmp_path):
    lines = thousand_lines()
    suffix = f".{codec}" if codec else ""
    src = tmp_path / f"local-1795287248517{suffix}"
    data = b"\n".join(lines) + b"\n"
    src.write_bytes(encode(codec, [data[i: i + 300_000] for i in range(0, len(data), 300_000)]))
    summary = record(src, tmp_path / "out.jsonl")
    assert summary.events == len(lines)
    assert progress_log(tmp_path / "out.jsonl")[1] == direct(lines)


@pytest.mark.spark_events
def test_a_rolling_log_in_several_parts_names_the_part_in_each_cause(tmp_path):
    lines = thousand_lines()
    app = "local-1795287248517"
    d = tmp_path / f"eventlog_v2_{app}"
    d.mkdir()
    cut = len(lines) // 2
    (d / f"events_1_{app}.zstd").write_bytes(encode("zstd", [b"\n".join(lines[:cut]) + b"\n"]))
    (d / f"events_2_{app}.zstd").write_bytes(encode("zstd", [b"\n".join(lines[cut:]) + b"\n"]))
    (d / f"appstatus_{app}").touch()
    summary = record(d, tmp_path / "out.jsonl")
    assert summary.state == "complete" and summary.events == len(lines)
    records = progress_log(tmp_path / "out.jsonl")[1]
    causes = [r["cause"] for r in records if r["type"] == "progress"]
    assert {c["file"] for c in causes} == {f"events_1_{app}.zstd", f"events_2_{app}.zstd"}
    for rec in records:
        if rec["type"] == "progress":
            del rec["cause"]["file"]
    expected = direct(lines)
    for rec in expected:  # line numbers restart in the second part
        if rec["type"] == "progress" and rec["cause"]["line"] > cut:
            rec["cause"]["line"] -= cut
    assert records == expected


@pytest.mark.spark_events
def test_an_in_progress_log_ends_with_its_tail_pending_not_corrupt(tmp_path):
    lines = thousand_lines()
    src = tmp_path / "local-1795287248517.inprogress"
    src.write_bytes(b"\n".join(lines[:1500]) + b"\n" + lines[1500][:200])
    summary = record(src, tmp_path / "out.jsonl")
    assert summary.state == "in_progress" and summary.corrupt_lines == 0 and summary.errors == []
    assert summary.events == 1500 and (summary.pending or "").startswith(f"{src.name}:1501 ")
    assert not summary.ended and "in progress" in str(summary)
    state = replay_file(tmp_path / "out.jsonl").state()
    assert any(p["frontier"] for s in state["scopes"] for p in s["ports"]), "a running application holds work"


@pytest.mark.spark_events
def test_corrupt_lines_are_reported_with_file_and_line_and_skipped(tmp_path):
    lines = thousand_lines()
    broken = lines[:100] + [b'{"Event": "SparkListenerTaskEnd", "Stage ID": 0,', b"[1, 2]"] + lines[100:]
    broken.insert(5, orjson.dumps({"Event": "com.example.MyOwnListenerEvent", "x": 1}))
    src = tmp_path / "local-1795287248517"
    src.write_bytes(b"\n".join(broken) + b"\n")
    seen: list = []
    summary = record(src, tmp_path / "out.jsonl", on_error=seen.append)
    assert [(e.line, e.kind) for e in summary.errors] == [(102, "invalid-json"), (103, "not-an-object")]
    assert seen == summary.errors
    assert str(seen[0]).startswith(f"{src}:102: invalid-json:")
    assert summary.corrupt_lines == 2 and summary.accounted and summary.events == len(lines) + 1
    assert summary.unknown_events["com.example.MyOwnListenerEvent"] == 1
    assert summary.ended and summary.batches == sum(r["type"] == "progress" for r in direct(lines))


@pytest.mark.spark_events
def test_records_stream_out_before_the_log_is_read_to_its_end(tmp_path):
    lines = thousand_lines()
    src = tmp_path / "local-1795287248517.zstd"
    data = b"\n".join(lines) + b"\n"
    src.write_bytes(encode("zstd", [data[i: i + 50_000] for i in range(0, len(data), 50_000)]))
    conversion = SparkLogConversion(src)
    total = src.stat().st_size
    for rec in conversion:
        if rec["type"] == "progress":
            assert conversion.reader.stats.bytes_compressed < total / 2
            break


@pytest.mark.spark_events
def test_progress_is_reported_by_bytes_read(tmp_path):
    calls = []
    record(THOUSAND, tmp_path / "out.jsonl", progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1] == (THOUSAND.stat().st_size, THOUSAND.stat().st_size)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


@pytest.mark.spark_events
def test_redact_removes_the_machine_from_names_and_keeps_the_structure(tmp_path):
    log = SPARK_EVENTS / "local-1642039451826"
    plain = SparkLogConversion(log)
    redacted = SparkLogConversion(log, redact=True)
    a, b = list(plain), list(redacted)
    assert len(a) == len(b)
    assert [r["type"] for r in a] == [r["type"] for r in b]
    assert [r.get("updates") for r in a] == [r.get("updates") for r in b]
    text = orjson.dumps(b).decode()
    assert "/home/" not in text and "/Users/" not in text
    assert redacted.model.summary() == plain.model.summary()


@pytest.mark.spark_events
def test_open_event_log_explains_what_it_cannot_read(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing"):
        open_event_log(tmp_path / "missing")
    with pytest.raises(EventLogError, match="not a Spark event log"):
        open_event_log(SPARK_EVENTS / "README.md")
    with pytest.raises(EventLogError, match="19 application logs"):
        open_event_log(SPARK_EVENTS)
    (tmp_path / "empty").mkdir()
    with pytest.raises(EventLogError, match="no Spark event log"):
        open_event_log(tmp_path / "empty")
    one = tmp_path / "one"
    one.mkdir()
    (one / "local-1").write_bytes(b'{"Event":"SparkListenerLogStart","Spark Version":"4.3.0"}\n')
    assert open_event_log(one).name == "local-1"


# --- the command ----------------------------------------------------------------------------------------------------


def run(capsys, *argv) -> tuple[int, str, str]:
    code = record_mod.main(["record", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.spark_events
def test_command_writes_a_progress_log_and_a_summary(tmp_path, capsys):
    out = tmp_path / "p.jsonl.zst"
    code, stdout, err = run(capsys, ROLLING, "-o", out)
    assert code == 0 and stdout == ""
    assert "recorded 'p1_batch' (local-1795284909880)" in err and str(out) in err
    assert progress_log(out)[0]["source"].startswith("Spark application 'p1_batch'")
    code, stdout, _ = run(capsys, ROLLING, "-o", tmp_path / "q.jsonl", "--json", "--redact")
    assert code == 0 and json.loads(stdout)["app_id"] == "local-1795284909880"


@pytest.mark.spark_events
def test_command_writes_to_stdout(tmp_path, capsysbinary):
    assert record_mod.main(["record", str(SPARK_EVENTS / "local-1430917381534"), "-o", "-", "-q"]) == 0
    out = capsysbinary.readouterr().out
    first = orjson.loads(out.split(b"\n", 1)[0])
    assert first["type"] == "header" and "local-1430917381534" in first["source"]


@pytest.mark.parametrize("target,message", [
    ("missing", "no such file or directory"),
    pytest.param("readme", "not a Spark event log", marks=pytest.mark.spark_events),
    ("progress", "a flowscope progress log already"),
    pytest.param("many", "application logs", marks=pytest.mark.spark_events),
    pytest.param("lzf", "pip install python-lzf", marks=pytest.mark.spark_events),
])
def test_command_exits_2_naming_the_file(target, message, tmp_path, capsys, monkeypatch):
    paths = {"missing": tmp_path / "nope", "readme": SPARK_EVENTS / "README.md",
             "progress": REPO / "fixtures" / "progress" / "loop.jsonl",
             "many": SPARK_EVENTS, "lzf": tmp_path / "local-1.lzf"}
    if target == "lzf":
        paths["lzf"].write_bytes(encode("lzf", [thousand_lines()[0] + b"\n"]))
        monkeypatch.setattr(codecs_mod, "_lzf_block_decompress_fn", lambda: None)
    code, _, err = run(capsys, paths[target], "-o", tmp_path / "out.jsonl")
    assert code == 2
    assert str(paths[target]) in err and message in err
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.spark_events
def test_command_exits_2_when_the_output_cannot_be_written(tmp_path, capsys):
    code, _, err = run(capsys, ROLLING, "-o", tmp_path / "no" / "such" / "dir" / "p.jsonl")
    assert code == 2 and "does not exist" in err
