"""A Spark log's conversion in a child process (backend.spark.recording.convert_process): the same records, the same
summary and the same corrupt lines as SparkLogConversion in this process, with the reading and the model on another
core."""

from __future__ import annotations

import pytest

from backend.spark.recording.convert import SparkLogConversion
from backend.spark.recording.convert_process import ConversionProcess

from .test_event_decode import FIXTURE_LOGS


@pytest.mark.parametrize("log", FIXTURE_LOGS, ids=lambda log: log.path.name)
def test_the_child_converts_as_this_process_does(log):
    here = SparkLogConversion(log)
    expected = list(here)
    child = ConversionProcess(log, batch=7)  # small batches: many messages, records split across them
    assert list(child) == expected
    want, got = here.summary().to_json(), child.summary().to_json()
    want.pop("seconds"), got.pop("seconds")
    assert got == want
    assert child.model_summary() == here.model.summary()


def test_corrupt_lines_reach_on_error_as_they_are_found(tmp_path):
    log = tmp_path / "app-1"
    log.write_bytes(b'{"Event":"SparkListenerLogStart","Spark Version":"4.0.0"}\n{"Event": nope}\n'
                    b'{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"app-1","Timestamp":5}\n'
                    b'{"Event":"SparkListenerApplicationEnd","Timestamp":9}\n')
    seen: list = []
    child = ConversionProcess(log, on_error=seen.append)
    records = list(child)
    assert [r["type"] for r in records] == ["mark", "mark"]
    assert [(e.line, e.kind) for e in seen] == [(2, "invalid-json")] and child.summary().errors == seen
    assert child.summary().corrupt_lines == 1 and child.summary().ended


def test_a_log_that_cannot_be_read_fails_here_not_in_the_child(tmp_path):
    with pytest.raises(FileNotFoundError):
        ConversionProcess(tmp_path / "missing")
    unread = ConversionProcess(FIXTURE_LOGS[0])
    with pytest.raises(RuntimeError, match="iterate"):
        unread.summary()
    unread.close()
    assert not unread.running


@pytest.mark.parametrize("in_child", [True, False])
def test_replay_event_log_reaches_the_state_of_the_records_replayed(in_child, monkeypatch):
    """What ``frontiers`` does with a Spark log: converted in a child (a large log) or here, the same state."""
    from backend.spark.recording import convert_process
    from tracker.progress_log.replay import Replay

    monkeypatch.setattr(convert_process, "READ_IN_CHILD_BYTES", 0 if in_child else 1 << 40)
    log = FIXTURE_LOGS[0]
    replay, conversion_used = convert_process.replay_event_log(log)
    assert isinstance(conversion_used, ConversionProcess) == in_child
    expected = Replay(str(log.path), checked_records=True)
    conversion = SparkLogConversion(log)
    for rec in conversion:
        expected.apply(rec, conversion.line)
    expected.finish()
    assert replay.state() == expected.state() and replay.batches_applied == expected.batches_applied > 0
    assert conversion_used.summary().events == conversion.summary().events and not replay.errors
    assert conversion_used.model_summary() == conversion.model_summary()
