"""Stage and job ids as bytes (backend/spark/model/dense_keys.py): a KeySet answers as a set does, whatever the keys,
and the gap detector built on it grows by a few bytes per job of a long application."""

from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from backend.spark.model.dense_keys import DENSE_SLACK, KeySet
from backend.spark.model.gaps import GapDetector
from backend.spark.model.retention import StatusTable

# ids near 0, ids around the array's reach (so a far id may later fall inside it), negative ids, later attempts
IDS = st.one_of(st.integers(0, 40), st.integers(DENSE_SLACK - 5, DENSE_SLACK + 60), st.integers(-3, -1))
ATTEMPTS = st.tuples(IDS, st.integers(0, 2))


@settings(max_examples=300, deadline=None)
@given(st.one_of(IDS, ATTEMPTS).flatmap(lambda first: st.tuples(
    st.lists(st.tuples(st.sampled_from(["add", "discard"]), IDS if type(first) is int else ATTEMPTS), max_size=60),
    st.lists(IDS if type(first) is int else ATTEMPTS, max_size=20))))
def test_a_key_set_answers_as_a_set(case):
    """A set holds ids, or ``(id, attempt)`` keys (``i`` and ``(i, 0)`` are the same byte: one kind per set)."""
    ops, probes = case
    got, want = KeySet(), set[int]()
    for op, key in ops:
        getattr(got, op)(key)
        getattr(want, op)(key)
        assert (key in got) == (key in want), (op, key)
    for key in probes + [k for _, k in ops]:
        assert (key in got) == (key in want), key


def test_an_id_kept_beside_the_array_is_found_after_the_array_grew_past_it():
    keys = KeySet()
    far = DENSE_SLACK + 10
    keys.add(far)  # past the reach of an empty array: beside it
    keys.add(DENSE_SLACK)  # the array grows to reach it
    assert far in keys and DENSE_SLACK in keys and 5 not in keys
    keys.add(far)  # now in the array as well
    keys.discard(far)
    assert far not in keys


def _job(job: int, stage: int) -> list[dict]:
    """One job of one stage of one task, start to end, as the gap detector reads it."""
    info = {"Stage ID": stage, "Stage Attempt ID": 0, "Number of Tasks": 1}
    return [{"Event": "SparkListenerJobStart", "Job ID": job, "Stage Infos": [info]},
            {"Event": "SparkListenerStageSubmitted", "Stage Info": info},
            {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Stage Attempt ID": 0,
             "Task Info": {"Index": 0}, "Task End Reason": {"Reason": "Success"}},
            {"Event": "SparkListenerStageCompleted", "Stage Info": info},
            {"Event": "SparkListenerJobEnd", "Job ID": job, "Job Result": {"Result": "JobSucceeded"}}]


def _size(gaps: GapDetector) -> int:
    return sum(sys.getsizeof(part) for part in (gaps.listed, gaps.finished, gaps.jobs, gaps.running))


def test_the_gap_detector_grows_by_bytes_per_job():
    gaps = GapDetector()
    for job in range(1000):
        for event in _job(job, job):
            assert gaps.check(event) is None
    before = _size(gaps)
    for job in range(1000, 11000):
        for event in _job(job, job):
            assert gaps.check(event) is None
    after = _size(gaps)
    assert (after - before) / 10000 < 4  # a byte per stage in each set (and the array's slack), not ~400 bytes
    assert gaps.jobs == {} and gaps.running == {}
    # and it still knows them: a late task of a listed stage attempt that finished is a duplicate, not a gap
    assert gaps.check({"Event": "SparkListenerTaskEnd", "Stage ID": 5, "Stage Attempt ID": 0, "Task Info": {}}) is None
    assert 10999 in gaps.listed and (10999, 0) in gaps.finished and (10999, 1) not in gaps.finished


STATUSES = st.sampled_from(["SUCCEEDED", "FAILED", "COMPLETE", "SKIPPED", "an unheard-of status"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(st.tuples(IDS, STATUSES), max_size=60), st.lists(st.tuples(ATTEMPTS, STATUSES), max_size=60)))
def test_a_status_table_answers_as_a_dict(sets):
    """The model's folded statuses (``StatusTable``: job ids, or ``(stage, attempt)`` keys) hold each key once,
    however it came: first far past the array and then again once the array grew past it, or with a status that
    has no byte code after one that has."""
    got, want = StatusTable(), {}
    for key, status in sets:
        got[key] = status
        want[key] = status
        assert got.get(key) == status
        assert len(got) == len(want), key
    stage_keys = bool(sets) and type(sets[0][0]) is tuple
    assert sorted(got.items(stage_keys), key=repr) == sorted(want.items(), key=repr)


def test_a_far_job_id_folded_again_after_the_array_grew_is_one_job():
    table = StatusTable()
    far = DENSE_SLACK + 10
    table[far] = "SUCCEEDED"  # beside the array
    table[100] = "SUCCEEDED"  # the array grows: the far id is now within its reach
    table[far] = "FAILED"
    assert len(table) == 2 and sorted(table.items(False)) == [(100, "SUCCEEDED"), (far, "FAILED")]
