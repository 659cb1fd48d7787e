"""``flowscope blame`` on a Spark event log goes through the conversion pipeline ``flowscope frontiers`` uses
(``event_log_conversion``: the log converted in other processes, the records replayed and blamed here) and prints
what blaming the log in one process gives; corrupt lines are still reported with their file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard

from backend.spark.diagnosis.blame import blame_replay
from backend.spark.recording.convert import SparkLogConversion
from backend.spark.recording.convert_process import ConversionProcess, event_log_conversion
from flowscope.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "spark"
LOGS = sorted(FIXTURES.glob("*/eventlog_v2_*"))


def blame_json(capsys, *argv: str) -> tuple[dict, list[str]]:
    assert main(["blame", *argv, "--json"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err.splitlines()


def test_the_threshold_chooses_the_pipeline():
    log = FIXTURES / "skewed_straggler"
    log = next(log.glob("eventlog_v2_*"))
    through_children = event_log_conversion(log, threshold=0)
    here = event_log_conversion(log)  # a fixture is far below READ_IN_CHILD_BYTES
    try:
        assert isinstance(through_children, ConversionProcess)
        assert type(here) is SparkLogConversion
        assert list(through_children) == list(here)
    finally:
        through_children.close()
        here.close()


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name)
def test_blame_through_the_pipeline_is_blame_in_one_process(capsys, log):
    times = blame_replay(SparkLogConversion(log), name_plans=True)[1]  # as the command: SQL plan operators named
    want = {"times": [t.to_json() for t in times]}
    assert want["times"], "the fixture has completed times to blame"
    piped, piped_err = blame_json(capsys, str(log), "--pipeline-bytes", "0")
    here, here_err = blame_json(capsys, str(log))
    assert json.dumps(piped) == json.dumps(here) == json.dumps(json.loads(json.dumps(want)))
    assert piped_err == here_err


def test_corrupt_lines_are_reported_with_their_line_through_the_pipeline(capsys, tmp_path):
    src = next((FIXTURES / "batch_shuffle").glob("eventlog_v2_*/events_1_*.zstd"))
    lines = zstandard.ZstdDecompressor().decompressobj().decompress(src.read_bytes()).splitlines(keepends=True)
    lines[4] = b'{"Event": "SparkListenerTaskEnd", broken\n'
    lines.insert(20, b"not json at all\n")
    log = tmp_path / "app-damaged"
    log.write_bytes(b"".join(lines))
    for extra in ([], ["--pipeline-bytes", "0"]):
        _, err = blame_json(capsys, str(log), *extra)
        corrupt = [e for e in err if "invalid-json" in e]
        assert [e.split(": invalid-json")[0] for e in corrupt] == [f"flowscope: {log}:5", f"flowscope: {log}:21"]
