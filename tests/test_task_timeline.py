"""The executor timeline's bars (backend/spark/diagnosis/task_timeline.py, read from
backend/spark/diagnosis/task_index.py).

Opened by a task's detail, closed by its clear, marked failed or killed with Spark's reason; on the real
task_retries fixture and on records as the Spark model writes them for a killed attempt (no fixture has one).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from backend.eventlog import EventLogReader, find_logs
from backend.spark.diagnosis.task_index import TaskSpans
from backend.spark.diagnosis.task_timeline import TaskTimeline
from backend.spark.recording.convert import SparkLogConversion

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "spark"


def detail(task: int, launched: float, executor: str = "1") -> dict:
    return {"type": "detail", "scope": [1], "port": ["out", 3, 0], "time": 0, "key": f"task {task}", "at": launched,
            "value": {"kind": "task", "task": task, "stage": 2, "index": task, "executor": executor,
                      "launched": launched}}


def clear(task: int, at: float, end: str | None = None) -> dict:
    rec = {"type": "detail", "scope": [1], "port": ["out", 3, 0], "time": 0, "key": f"task {task}", "at": at,
           "value": None}
    if end is not None:
        rec["end"] = end
    return rec


def test_killed_failed_ok_and_running_bars():
    tl = TaskTimeline()
    for rec in [{"type": "mark", "executor_event": "added", "executor": "1", "cores": 2},
                detail(1, 10.0), detail(2, 10.5), detail(3, 11.0), detail(4, 11.5, "2"),
                clear(1, 12.0), clear(2, 12.5, "TaskKilled"), clear(3, 13.0, "ExceptionFailure")]:
        tl.record(rec)
    out = tl.to_json()
    assert out["outcome"] == ["ok", "killed", "failed", "running"]
    assert out["reasons"] == {"1": "TaskKilled", "2": "ExceptionFailure"}
    assert out["ended"] == [12.0, 12.5, 13.0, None]
    assert out["executors"] == ["1", "2"] and out["cores"] == {"1": 2}
    # a window keeps its rows' reasons at their new positions
    late = tl.to_json(start=12.6)
    assert late["task"] == [3, 4] and late["reasons"] == {"0": "ExceptionFailure"}


def test_task_retries_fixture_marks_every_failed_attempt():
    (log,) = find_logs(FIXTURES / "task_retries")
    tl = TaskTimeline()
    for rec in SparkLogConversion(log.path):
        tl.record(rec)
    out = tl.to_json()
    failed = [i for i, o in enumerate(out["outcome"]) if o == "failed"]
    assert len(failed) == 5 and "running" not in out["outcome"]
    assert sorted(int(k) for k in out["reasons"]) == failed
    assert set(out["reasons"].values()) == {"ExceptionFailure"}


def test_a_resubmitted_attempts_bars_carry_the_partition_not_the_index():
    """executor_lost: the re-run attempts hold only the lost partitions, indexed 0, 1, ... in their task sets; a bar
    names the partition the task computed (Spark's Partition ID) and keeps the index apart."""
    (log,) = find_logs(FIXTURES / "executor_lost")
    started = {}
    for ev in EventLogReader(log):
        e = ev.event
        if e["Event"] == "SparkListenerTaskStart":
            info = e["Task Info"]
            started[info["Task ID"]] = (e["Stage Attempt ID"], info["Partition ID"], info["Index"])
    tl = TaskTimeline()
    for rec in SparkLogConversion(log.path):
        tl.record(rec)
    out = tl.to_json()
    assert sorted(out["task"]) == sorted(started)
    for task, partition, index in zip(out["task"], out["partition"], out["index"], strict=True):
        assert (partition, index) == started[task][1:], task
    rerun = [(p, i) for t, p, i in zip(out["task"], out["partition"], out["index"], strict=True) if started[t][0] > 0]
    assert rerun and any(p != i for p, i in rerun), rerun  # a re-run's index is not its partition


def test_a_sessions_timeline_reads_the_task_index_blame_fills():
    """A session keeps one task index: blame fills it as the session ingests, and the executor timeline serves the
    same bars a timeline fed every record on its own draws (task_retries: failed attempts, retried ones)."""
    import asyncio

    from backend.sessions.session import Session
    from backend.spark.diagnosis.blame import SparkVocabulary
    from backend.spark.live.follow_feed import SparkLogFeed

    (log,) = find_logs(FIXTURES / "task_retries")
    alone = TaskTimeline()
    for rec in SparkLogConversion(log.path):
        alone.record(rec)
    session = Session(SparkLogFeed(log.path, follow=False))

    async def run() -> None:
        session.start()
        while session.status not in ("done", "failed"):
            await asyncio.sleep(0.01)

    asyncio.run(run())
    assert session.status == "done"
    served = session.task_timeline.to_json()
    assert served["total"] > 0 and "failed" in served["outcome"]
    assert served == alone.to_json()
    vocabulary = session.blame.vocabulary
    assert isinstance(vocabulary, SparkVocabulary) and vocabulary.tasks is session.task_timeline.index


@settings(max_examples=200, deadline=None)
@given(spans=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 15), st.booleans()), min_size=1, max_size=30),
       asks=st.lists(st.integers(0, 60).map(lambda q: q / 4), min_size=1, max_size=10))
def test_running_at_finds_what_a_scan_of_every_span_finds(spans, asks):
    """Blame's "who held the slots at a launch" looks only at spans that ended within the longest run after the
    moment: it finds the same spans, in the same order, as a scan of every span kept."""
    index = TaskSpans()
    for k, (launched, ran, ended) in enumerate(spans):
        index.start(f"task {k}", launched / 4, 1, "host")
        if ended:
            index.end(f"task {k}", (launched + ran) / 4)
    # the case the bound is for: a moment after which some span ended later than the longest run (left unscanned)
    assume(any(s.ended > at + index.longest for s in index.ended for at in asks))
    for at in asks:
        for key in ("task 0", "task none"):
            mine = index.get(key)
            every = [s for s in list(index.open.values()) + index.ended if s is not mine
                     and s.launched < at and (s.ended is None or s.ended >= at)]
            every.sort(key=lambda s: s.order)
            assert index.running_at(at, key) == every
