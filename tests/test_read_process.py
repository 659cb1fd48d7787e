"""Reading and decoding in a child process (backend.eventlog.read_process, backend.eventlog.child): the same events,
corrupt lines, counts and records as reading in this process, whether the child is forked or spawned."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from backend.eventlog import EventLogReader
from backend.eventlog.child import ChildStream
from backend.eventlog.decode import WholeEvent
from backend.eventlog.read_process import EventReaderProcess
from backend.spark.model.event_fields import model_decoder
from backend.spark.recording.convert import SparkLogConversion

from .test_event_decode import FIXTURE_LOGS

ROOT = Path(__file__).resolve().parent.parent
_DAMAGED = (b'{"Event":"SparkListenerLogStart","Spark Version":"4.0.0"}\n{"Event": nope}\n'
            b'{"Event":"SparkListenerApplicationStart","App Name":"a","App ID":"app-1","Timestamp":5}\n'
            b'{"Event":"SparkListenerTaskStart","Stage ID":"x"}\n\n'
            b'{"Event":"SparkListenerApplicationEnd","Timestamp":9}\n{"Event":"Spark')


def _events(reader) -> list[tuple]:
    return [(ev.path, ev.line, type(ev.event) is WholeEvent, ev.event) for ev in reader]


@pytest.mark.parametrize("log", FIXTURE_LOGS[:6], ids=lambda log: log.path.name)
def test_the_child_reads_what_this_process_reads(log):
    here = EventLogReader(log, decode=model_decoder())
    child = EventReaderProcess(log, decode=model_decoder, batch=5)  # small batches: events split across many
    assert _events(child) == _events(here)
    assert child.stats == here.stats and child.pending == here.pending


def test_corrupt_lines_arrive_in_order_with_the_events_around_them(tmp_path):
    log = tmp_path / "app-1"
    log.write_bytes(_DAMAGED)
    here_errors: list = []
    child_errors: list = []
    here = EventLogReader(log, on_error=here_errors.append, decode=model_decoder())
    child = EventReaderProcess(log, on_error=child_errors.append, decode=model_decoder, batch=1)
    assert _events(child) == _events(here)
    assert child_errors == here_errors == child.errors
    assert [(e.line, e.kind) for e in child_errors] == [(2, "invalid-json"), (7, "truncated-line")]
    assert child.stats == here.stats and child.stats.lines_corrupt == 2 and child.stats.lines_blank == 1


@pytest.mark.parametrize("log", FIXTURE_LOGS[:6], ids=lambda log: log.path.name)
def test_a_conversion_reading_in_a_child_gives_the_same_records(log):
    here = SparkLogConversion(log)
    child = SparkLogConversion(log, read_in_child=True)
    assert child.source_name() == here.source_name()
    assert list(child) == list(here)
    want, got = here.summary().to_json(), child.summary().to_json()
    want.pop("seconds"), got.pop("seconds")
    assert got == want


def test_a_damaged_event_is_reported_by_the_model_reading_in_a_child_too(tmp_path):
    log = tmp_path / "app-1"
    log.write_bytes(_DAMAGED)
    child = SparkLogConversion(log, read_in_child=True)
    records = list(child)
    assert any(r.get("uncertain") for r in records if r["type"] == "mark")
    summary = child.summary()
    assert summary.damaged_events == 1 and summary.corrupt_lines == 2
    assert [e.kind for e in summary.errors] == ["invalid-json", "damaged-event", "truncated-line"]


def test_a_process_running_threads_spawns_its_child_instead_of_forking(tmp_path):
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        child = EventReaderProcess(FIXTURE_LOGS[0], decode=model_decoder)
        assert child.method == "spawn"
        assert _events(child) == _events(EventLogReader(FIXTURE_LOGS[0], decode=model_decoder()))
    finally:
        stop.set()
        other.join()


def _fails(put, text):
    put(b"first")
    raise ValueError(text)


def test_a_producer_that_fails_is_raised_here_with_its_traceback():
    stream = ChildStream(_fails, ("the producer broke",))
    got = []
    with pytest.raises(RuntimeError, match="the producer broke"):
        for message in stream:
            got.append(message)
    assert got == [b"first"] and not stream.running


def test_a_reader_not_read_to_its_end_stops_its_child():
    child = EventReaderProcess(FIXTURE_LOGS[0], decode=model_decoder, batch=1)
    next(iter(child))
    child.close()
    assert not child.running


def test_a_redacted_conversion_reading_whole_events_in_a_child_gives_the_same_records():
    log = FIXTURE_LOGS[0]
    here = list(SparkLogConversion(log, redact=True))
    assert list(SparkLogConversion(log, redact=True, read_in_child=True)) == here


_ABANDONED = """
import os, select, sys
from backend.eventlog.child import ChildStream

def forever(put):
    while True:
        put(b"x" * 65536)

def relay(put):
    for message in ChildStream(forever):
        put(message)

if __name__ == "__main__":
    read_end, write_end = os.pipe()  # every process forked meanwhile holds write_end until it exits
    try:
        stream = ChildStream(relay)
        assert stream.method == "fork", stream.method
        assert next(iter(stream)) == b"x" * 65536
        stream.close()
    finally:
        os.close(write_end)
    ready, _, _ = select.select([read_end], [], [], 30)
    assert ready and os.read(read_end, 1) == b"", "a descendant still runs"
    print("no descendant left")
"""


def test_a_stream_abandoned_midway_leaves_no_process_behind(tmp_path):
    """A child of a child that is stopped half-way ends too: it does not keep its own pipe's read end open (so
    its writes break), nor whatever its parent held (a command's output would never close). Run in a fresh
    interpreter, as a command runs: a process with no other thread, so its children are forked."""
    script = tmp_path / "abandon.py"
    script.write_text(_ABANDONED)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0 and "no descendant left" in run.stdout, run.stderr


_UNCLOSED = """
from backend.eventlog.child import ChildStream

def forever(put):
    while True:
        put(b"x" * 65536)

if __name__ == "__main__":
    stream = ChildStream(forever)  # never read nor closed, still referenced when the interpreter exits
    print("exiting")
"""


def test_an_unclosed_stream_does_not_hold_the_interpreters_exit(tmp_path):
    """A stream left open (a failure's traceback keeps it) is closed at exit: its child is not a daemon, and
    multiprocessing would otherwise wait for it forever while it blocks on a pipe nobody reads."""
    script = tmp_path / "unclosed.py"
    script.write_text(_UNCLOSED)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0 and "exiting" in run.stdout, run.stderr
