"""The progress-log reader and writer: round trips, codecs, and bad lines reported without losing the rest."""

from __future__ import annotations

import gzip

import pytest

from tracker.progress_log.log_file import LogError, ProgressLogError, ProgressLogWriter, read_records
from tracker.reachability import Source, Target


def write_small(path):
    with ProgressLogWriter(path, source="test") as log:
        log.scope([2], "loop", inputs=1, outputs=1, depth=2)
        log.operator([], 1, "input", inputs=0, outputs=1, capabilities=[[0, 0]])
        log.edge([], Source(1, 0), Target(2, 0))
        log.progress([], [(Target(2, 0), 0, 1), (Source(1, 0), 0, -1), (Source(1, 0), 1, 1)],
                     worker=1, at=1.5, cause={"k": "v"})
        log.progress([2], [(Source(0, 0), (0, 0), -1)], worker=1, at=2.0)
        log.mark("done", at=3.0, scope=[])


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_round_trip_every_codec(tmp_path, suffix):
    path = tmp_path / f"log{suffix}"
    write_small(path)
    records = [r for _, r in read_records(path)]
    assert [r["type"] for r in records] == ["header", "scope", "operator", "edge", "progress", "progress", "mark"]
    header = records[0]
    assert header["format"] == "flowscope-progress" and header["version"] == 1 and header["source"] == "test"
    assert records[1] == {"type": "scope", "path": [2], "name": "loop", "inputs": 1, "outputs": 1, "depth": 2}
    assert records[3] == {"type": "edge", "scope": [], "from": ["out", 1, 0], "to": ["in", 2, 0]}
    p1, p2 = records[4], records[5]
    assert p1["updates"] == [[["in", 2, 0], 0, 1], [["out", 1, 0], 0, -1], [["out", 1, 0], 1, 1]]
    assert (p1["worker"], p1["seq"], p1["at"], p1["cause"]) == (1, 0, 1.5, {"k": "v"})
    assert p2["seq"] == 1, "seq increases per worker"
    assert p2["updates"] == [[["out", 0, 0], [0, 0], -1]], "product timestamps are two-element arrays"


def test_type_is_the_first_field(tmp_path):
    path = tmp_path / "log.jsonl"
    write_small(path)
    for line in path.read_text().splitlines():
        assert line.startswith('{"type":'), line


def test_corrupt_lines_are_reported_and_skipped(tmp_path):
    path = tmp_path / "log.jsonl"
    write_small(path)
    lines = path.read_text().splitlines()
    lines.insert(3, '{"type":"operator", "scope": [')  # corrupt line 4
    lines.insert(5, "[1, 2, 3]")  # valid JSON, not an object: line 6
    lines.append('{"type":"mark","at":4.0,"lab')  # truncated last line, no newline
    path.write_text("\n".join(lines))
    errors: list[LogError] = []
    seen: list = []
    records = [r for _, r in read_records(path, errors, on_error=seen.append)]
    assert len(records) == 7, "every good record survives"
    assert [(e.line, e.path) for e in errors] == [(4, str(path)), (6, str(path)), (10, str(path))]
    assert "invalid JSON" in errors[0].reason
    assert "expected a JSON object" in errors[1].reason
    assert "truncated" in errors[2].reason
    assert seen == errors
    assert str(errors[0]).startswith(f"{path}:4: ")


def test_not_a_progress_log(tmp_path):
    path = tmp_path / "events.json"
    path.write_text('{"Event":"SparkListenerLogStart","Spark Version":"3.5.0"}\n')
    with pytest.raises(ProgressLogError, match="not a flowscope progress log"):
        list(read_records(path))
    path.write_text("")
    with pytest.raises(ProgressLogError, match="empty file"):
        list(read_records(path))
    path.write_text('{"type":"header","format":"flowscope-progress","version":7}\n')
    with pytest.raises(ProgressLogError, match="version 7"):
        list(read_records(path))


def test_gzip_log_written_by_someone_else(tmp_path):
    path = tmp_path / "other.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write('{"type":"header","format":"flowscope-progress","version":1,"extra":true}\n')
        f.write('{"type":"future-record","x":1}\n')
    records = [r for _, r in read_records(path)]
    assert records[1]["type"] == "future-record", "unknown record types are passed on, not rejected"
