"""Decoding only what the Spark model reads (backend.eventlog.decode, backend.spark.model.event_fields): the model must
produce exactly the records it produces from whole events, on every real log, and damaged lines must be reported as
a whole decode reports them."""

from __future__ import annotations

from typing import TypedDict

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.eventlog import EventLogReader, find_logs
from backend.eventlog.decode import EventDecoder, WholeEvent
from backend.spark.model.event_fields import model_decoder
from backend.spark.model.spark_model import SparkModel
from backend.spark.recording.convert import SparkLogConversion
from tracker.progress_log.replay import Replay

from .conftest import REPO, spark_event_cases


def _logs_under(root) -> list:
    """Every application log in ``root`` and the directories below it (a directory that is itself one rolling log
    is found from its parent)."""
    out: list = []
    for sub in [root] + sorted(p for p in root.rglob("*") if p.is_dir()):
        try:
            out += [log for log in find_logs(sub) if log.path not in {o.path for o in out}]
        except ValueError:
            continue
    return out


FIXTURE_LOGS = _logs_under(REPO / "fixtures" / "spark")
REAL_LOGS = spark_event_cases(_logs_under)


def _whole(log) -> tuple[list[dict], dict]:
    model = SparkModel()
    records = [rec for ev in EventLogReader(log) for rec in model.feed(ev.event, ev.line)]
    return records, dict(model.unknown_events)


def _same_records_slim_or_whole(log) -> None:
    records, unknown = _whole(log)
    conversion = SparkLogConversion(log)
    slim = list(conversion)
    assert slim == records
    assert conversion.summary().unknown_events == unknown


@pytest.mark.parametrize("log", FIXTURE_LOGS, ids=lambda log: log.path.name)
def test_the_model_sees_the_same_events_decoded_slim_or_whole(log):
    _same_records_slim_or_whole(log)


@pytest.mark.parametrize("log", FIXTURE_LOGS, ids=lambda log: log.path.name)
def test_the_models_records_replay_alike_checked_again_or_not(log):
    """A replay that takes the model's records as checked (no second shape check) ends in the same state, with the
    same marks and details, as one that checks every record."""
    records = list(SparkLogConversion(log))
    replays = [Replay(str(log.path), check_contracts=True, checked_records=checked) for checked in (False, True)]
    for replay in replays:
        for rec in records:
            assert replay.apply(rec), replay.errors
        replay.finish()
    checked, trusted = replays
    assert trusted.state() == checked.state() and trusted.marks == checked.marks
    assert trusted.findings == checked.findings
    assert trusted.details.snapshot() == checked.details.snapshot()


def test_marks_are_checked_even_when_records_are_taken_as_checked():
    replay = Replay("<model>", checked_records=True)
    assert not replay.apply({"type": "mark", "at": 1.0, "label": "x", "rows": 1 << 70})
    assert not replay.apply({"type": "mark", "at": 1.0, "label": "x", "deep": json_nested(100)})
    assert len(replay.errors) == 2 and "64 bits" in str(replay.errors[0])


def json_nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.spark_events
@pytest.mark.parametrize("log", REAL_LOGS, ids=lambda log: getattr(getattr(log, "path", None), "name", "none"))
def test_every_real_log_gives_the_same_records_slim_or_whole(log):
    _same_records_slim_or_whole(log)


def test_the_fixtures_have_task_events_and_events_the_model_skips():
    assert len(FIXTURE_LOGS) >= 6
    names = {ev.event.get("Event") for log in FIXTURE_LOGS for ev in EventLogReader(log)}
    assert "SparkListenerTaskEnd" in names and "SparkListenerEnvironmentUpdate" in names


def test_unwanted_types_are_not_decoded_but_still_counted():
    decode = EventDecoder({"A": None})
    assert decode(b'{"Event":"B","plan":"' + b"x" * 1000 + b'"}') == {"Event": "B"}
    assert decode(b'{"Event":"A","k":[1,2]}') == {"Event": "A", "k": [1, 2]}
    assert decode(b'{"k":1,"Event":"B"}') == {"k": 1, "Event": "B"}  # no prefix: decoded whole


def test_damaged_lines_fail_as_a_whole_decode_does():
    decode = model_decoder()
    with pytest.raises(orjson.JSONDecodeError):
        decode(b'{"Event":"SparkListenerEnvironmentUpdate","Spark Properties":{"a":')  # truncated, skipped type
    with pytest.raises(orjson.JSONDecodeError):
        decode(b'{"Event":"SparkListenerTaskEnd","Stage ID":1,')
    # a field of an unexpected type: the whole event, as it is, for the model to judge
    odd = b'{"Event":"SparkListenerTaskEnd","Stage ID":1,"Task Info":"x","Task Metrics":{"x":1}}'
    assert decode(odd) == orjson.loads(odd) and type(decode(odd)) is WholeEvent
    for wide in (b'9223372036854775808', b'-9223372036854775809', b'true', b'1.5'):  # not a Java long
        assert type(decode(b'{"Event":"SparkListenerTaskEnd","Stage ID":' + wide + b'}')) is WholeEvent
    # a null the shape allows is decoded as such, checked
    assert type(decode(b'{"Event":"SparkListenerTaskEnd","Stage ID":1,"Task Info":null}')) is dict
    end = (b'{"Event":"SparkListenerTaskEnd","Stage ID":3,'
           b'"Task Info":{"Task ID":7,"Index":2,"Accumulables":[{"ID":1}]},'
           b'"Task Metrics":{"Updated Blocks":[],"Input Metrics":{"Records Read":4}},"Task Type":"ResultTask"}')
    assert decode(end) == {"Event": "SparkListenerTaskEnd", "Stage ID": 3, "Task Info": {"Task ID": 7, "Index": 2},
                           "Task Metrics": {"Input Metrics": {"Records Read": 4}}}


def test_a_truncated_skipped_line_is_reported(tmp_path):
    log = tmp_path / "app-1"
    log.write_bytes(b'{"Event":"SparkListenerLogStart","Spark Version":"4.0.0"}\n'
                    b'{"Event":"SparkListenerEnvironmentUpdate","JVM Information":{"a":"b"\n'
                    b'{"Event":"SparkListenerApplicationEnd","Timestamp":5}\n')
    conversion = SparkLogConversion(log)
    list(conversion)
    s = conversion.summary()
    assert s.corrupt_lines == 1 and s.events == 2 and "app-1:2" in str(s.errors[0])


@pytest.mark.parametrize("batch", ["x1", "--1", "1" * 30, "\u00b2"])
def test_a_batch_id_that_is_no_long_is_a_damaged_event_decoded_typed_or_whole(tmp_path, batch):
    """Types say a batch id may be a string; only a Java long in decimal is one. A typed decode checks the types,
    and the model still checks what they cannot say."""
    start = {"Event": "SparkListenerJobStart", "Job ID": 0, "Stage Infos": [],
             "Properties": {"sql.streaming.queryId": "q", "streaming.sql.batchId": batch}}
    log = tmp_path / "app-2"
    log.write_bytes(b'{"Event":"SparkListenerLogStart","Spark Version":"4.0.0"}\n' + orjson.dumps(start) + b"\n")
    conversion = SparkLogConversion(log)
    list(conversion)
    s = conversion.summary()
    assert s.damaged_events == 1 and "streaming.sql.batchId" in str(s.errors[0]) and s.uncertain
    model = SparkModel()
    assert model.feed(start, 2) and model.damaged_events == 1


class _Typed(TypedDict, total=False):
    Event: str
    k: int


_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                 max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["A", "T", "B", "Bé", "A\\u0041", "\\u0054"]),
       fields=st.dictionaries(st.sampled_from(["k", "x", "Event", "plan"]), _JSON, max_size=4),
       cut=st.none() | st.integers(0, 200))
def test_each_line_is_decoded_by_the_rule_its_type_name_picks(name, fields, cut):
    """One lookup of the type name picks the rule: a wanted type whole, a typed one checked (whole when it does not
    fit), any other type not decoded, an escaped name (no prefix match) whole; a cut line fails as orjson fails,
    except a skipped type's that still ends in a brace (the documented policy for bytes nobody reads)."""
    decode = EventDecoder({"A": None, "T": _Typed})
    raw = b'{"Event":"' + name.encode() + b'"' + b"".join(b"," + orjson.dumps(k) + b":" + orjson.dumps(v)
                                                          for k, v in fields.items() if k != "Event") + b"}"
    whole = orjson.loads(raw)
    if cut is not None and cut < len(raw):
        raw = raw[:cut]
        try:
            got = decode(raw)
        except orjson.JSONDecodeError:
            return
        assert name not in ("A", "T") and raw.endswith(b"}") and got == {"Event": name}
        return
    got = decode(raw)
    if name in ("B", "Bé"):
        assert got == {"Event": name} and type(got) is dict
    elif name == "T" and isinstance(whole.get("k", 0), int) and not isinstance(whole.get("k"), bool) \
            and -(2**63) <= whole.get("k", 0) < 2**64:
        assert got == {key: v for key, v in whole.items() if key in ("Event", "k")} and type(got) is dict
    else:  # wanted whole, a typed event that does not fit, or an escaped name: the whole event
        assert got == whole and type(got) is WholeEvent
