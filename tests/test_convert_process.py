"""A Spark log's conversion in a child process (backend.spark.convert_process): the same records, the same summary
and the same corrupt lines as SparkLogConversion in this process, with the reading and the model on another core."""

from __future__ import annotations

import pytest

from backend.spark.convert import SparkLogConversion
from backend.spark.convert_process import ConversionProcess

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
