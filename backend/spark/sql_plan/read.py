"""Read a Spark event log into its SQL plans: what ``flowscope plan`` and the REST API's plan routes run.

Only what the plans read is decoded (:func:`plan_decoder`: the SQL events whole, of the job, stage and task events
the few fields ``plans`` reads, the tasks' accumulables among them; other events not at all). Corrupt lines are
reported (file and line) by the reader and skipped; the plans of the rest still count.
"""

from __future__ import annotations

from typing import Any, TypedDict

from backend.eventlog import EventLogReader
from backend.eventlog.decode import EventDecoder
from backend.spark.diagnosis.thresholds import configured
from backend.spark.sql_plan.plans import SQL_EVENTS, SqlPlans
from backend.stores import PathOrUrl

__all__ = ["read_plans", "read_plan_findings", "plan_decoder"]

# the fields plans.py reads; a value of another shape than declared makes the decoder take the event whole
class _Accumulable(TypedDict, total=False):
    ID: Any
    Update: Any


_TaskEndInfo = TypedDict("_TaskEndInfo", {"Task ID": Any, "Index": Any, "Finish Time": Any, "Failed": Any,
                                          "Killed": Any, "Accumulables": list[_Accumulable]}, total=False)
_TaskEnd = TypedDict("_TaskEnd", {"Event": str, "Stage ID": Any, "Stage Attempt ID": Any,
                                  "Task Info": _TaskEndInfo}, total=False)
_TaskStartInfo = TypedDict("_TaskStartInfo", {"Task ID": Any, "Launch Time": Any}, total=False)
_TaskStart = TypedDict("_TaskStart", {"Event": str, "Stage ID": Any, "Task Info": _TaskStartInfo}, total=False)


class _Rdd(TypedDict, total=False):
    Scope: Any


_StageInfo = TypedDict("_StageInfo", {"Stage ID": Any, "Stage Attempt ID": Any, "Number of Tasks": Any,
                                      "RDD Info": list[_Rdd]}, total=False)
_StageSubmitted = TypedDict("_StageSubmitted", {"Event": str, "Stage Info": _StageInfo}, total=False)
_JobStart = TypedDict("_JobStart", {"Event": str, "Job ID": Any, "Properties": Any, "Stage IDs": Any,
                                    "Stage Infos": list[_StageInfo]}, total=False)
_JobEnd = TypedDict("_JobEnd", {"Event": str, "Job ID": Any, "Job Result": Any}, total=False)


def plan_decoder() -> EventDecoder:
    """A decoder of just what :class:`SqlPlans` reads."""
    wanted: dict[str, type | None] = dict.fromkeys(SQL_EVENTS)
    wanted.update({"SparkListenerTaskEnd": _TaskEnd, "SparkListenerTaskStart": _TaskStart,
                   "SparkListenerStageSubmitted": _StageSubmitted, "SparkListenerJobStart": _JobStart,
                   "SparkListenerJobEnd": _JobEnd})
    return EventDecoder(wanted)


def read_plans(path: PathOrUrl) -> tuple[SqlPlans, list[str]]:
    """The log's SQL plans and its problems (corrupt lines, bad plans), each as ``file:line: cause`` text.
    Raises ``FileNotFoundError`` or ``MissingCodecError`` as ``EventLogReader`` does."""
    plans = SqlPlans()
    reader = EventLogReader(path, decode=plan_decoder())
    for ev in reader:
        plans.feed(ev.event, ev.line)
    problems = [str(e) for e in reader.errors] + [f"{path}: {p}" for p in plans.problems]
    return plans, problems


def read_plan_findings(path: PathOrUrl) -> tuple[list[dict], list[str]]:
    """The SQL plan findings of the log's executions (those ``read_plans`` keeps, with the thresholds in force),
    and the log's problems: what ``flowscope report`` adds to the Spark model's findings."""
    plans, problems = read_plans(path)
    found = [f for ex in plans.to_json(None, configured())["executions"] for f in ex["findings"]]
    return found, problems
