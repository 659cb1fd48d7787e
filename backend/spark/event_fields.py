"""The fields of Spark's task and stage events that the Spark model reads, for decoding nothing else.

Task events are most of a log (two per task) and a ``SparkListenerTaskEnd`` is mostly metrics and accumulables the
model never looks at; a stage event repeats the stage's RDDs and carries its accumulables, and the model reads the
RDDs from the job's start instead. These ``TypedDict`` specs name what ``backend.spark.model`` and
``backend.spark.tasks`` read (keep them in step: tests/test_event_decode.py replays every fixture log and every
real log both ways and compares the records);
:func:`model_decoder` gives the reader a decoder that decodes these fields of these events, every other event
the model handles whole, and skips the types it does not handle (``backend.sources.decode``).
"""

from __future__ import annotations

from typing import Any, TypedDict

from backend.sources.decode import EventDecoder

from .model import HANDLED_EVENTS

__all__ = ["model_decoder"]

TaskInfo = TypedDict("TaskInfo", {
    "Task ID": Any, "Index": Any, "Partition ID": Any, "Attempt": Any, "Launch Time": Any, "Finish Time": Any,
    "Executor ID": Any, "Host": Any, "Speculative": Any, "Killed": Any, "Failed": Any,
}, total=False)

StageInfo = TypedDict("StageInfo", {
    "Stage ID": Any, "Stage Attempt ID": Any, "Number of Tasks": Any, "Submission Time": Any, "Completion Time": Any,
    "Failure Reason": Any,
}, total=False)

StageEvent = TypedDict("StageEvent", {"Event": Any, "Stage Info": StageInfo}, total=False)

TaskMetrics = TypedDict("TaskMetrics", {"Input Metrics": Any, "Shuffle Read Metrics": Any}, total=False)

TaskStart = TypedDict("TaskStart", {
    "Event": Any, "Stage ID": Any, "Stage Attempt ID": Any, "Task Info": TaskInfo,
}, total=False)

TaskEnd = TypedDict("TaskEnd", {
    "Event": Any, "Stage ID": Any, "Stage Attempt ID": Any, "Task End Reason": Any, "Task Info": TaskInfo,
    "Task Metrics": TaskMetrics,
}, total=False)


def model_decoder() -> EventDecoder:
    """A decoder for the Spark model's reader: the task and stage events' fields above, other handled events
    whole."""
    wanted: dict[str, type | None] = dict.fromkeys(HANDLED_EVENTS)
    wanted["SparkListenerTaskStart"] = TaskStart
    wanted["SparkListenerTaskEnd"] = TaskEnd
    wanted["SparkListenerStageSubmitted"] = StageEvent  # the stage's accumulables and RDDs are read at JobStart
    wanted["SparkListenerStageCompleted"] = StageEvent
    return EventDecoder(wanted)
