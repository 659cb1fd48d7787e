"""The shape of the Spark listener events the model reads: checked once, at the boundary, before anything uses them.

A damaged event log (a bit flip, a hand edit, another tool's bug) can carry an event whose fields have the wrong
type: a TaskEnd with ``"Task Info": "x"``, a JobStart whose ``"Job ID"`` is null, a stage list that is an object.
Such an event is not modelled at all (half of it would leave the model inconsistent): :func:`event_problem` says
what is wrong with it, the model skips it and marks the session uncertain from there (the event may have carried
progress), and the reader reports it with its file and line. Only the fields the model, the gap detector and the
redactor read are checked, and only their types: what the values mean is the model's business.
"""

from __future__ import annotations

from typing import Any

from tracker.progress_log.records import INT64_MAX as INT_MAX
from tracker.progress_log.records import INT64_MIN as INT_MIN

__all__ = ["CORES_PROPERTIES", "EVENTS", "INT_MAX", "INT_MIN", "STREAMING_PREFIX", "Spec", "event_problem"]

# the Spark properties that say how many task slots an application has (event_handlers.configured_cores)
CORES_PROPERTIES = ("spark.master", "spark.cores.max", "spark.executor.cores", "spark.executor.instances",
                    "spark.dynamicAllocation.enabled", "spark.task.cpus")

INT = (int,)
# INT_MIN, INT_MAX: what Spark writes (its ids and times are Java longs) is what a progress-log record can carry
NUM = (int, float)
STR = (str,)
BOOL = (bool,)

# field -> (allowed types, required, allow null, nested: a field spec for each dict value / list element)
Spec = dict[str, tuple]

_RDD: Spec = {"Name": (STR, False, True, None), "Scope": (STR, False, True, None),
              "Callsite": (STR, False, True, None)}
_STAGE_INFO: Spec = {
    "Stage ID": (INT, True, False, None),
    "Stage Attempt ID": (INT, False, False, None),
    "Stage Name": (STR, False, True, None),
    "Number of Tasks": (INT, False, False, None),
    "Parent IDs": ((list,), False, True, INT),
    "RDD Info": ((list,), False, True, _RDD),
    "Details": (STR, False, True, None),
    "Failure Reason": (STR, False, True, None),
    "Submission Time": (NUM, False, True, None),
    "Completion Time": (NUM, False, True, None),
}
_TASK_INFO: Spec = {
    "Task ID": (INT, False, False, None),
    "Index": (INT, False, False, None),
    "Partition ID": (INT, False, True, None),  # since Spark 3.3
    "Attempt": (INT, False, True, None),
    "Launch Time": (NUM, False, True, None),
    "Finish Time": (NUM, False, True, None),
    "Executor ID": (STR, False, True, None),
    "Host": (STR, False, True, None),
    "Speculative": (BOOL, False, True, None),
    "Killed": (BOOL, False, True, None),
    "Failed": (BOOL, False, True, None),
    "Getting Result Time": (NUM, False, True, None),
}
_PROPERTIES: Spec = {
    "sql.streaming.queryId": (STR, False, True, None),
    "streaming.sql.batchId": ((str, int), False, True, None),
    "spark.jobGroup.id": (STR, False, True, None),
    "spark.job.description": (STR, False, True, None),
}
_REASON: Spec = {  # what a failure names (tasks.task_failure)
    "Reason": (STR, False, True, None), "Class Name": (STR, False, True, None),
    "Description": (STR, False, True, None), "Message": (STR, False, True, None),
    "Executor ID": (STR, False, True, None), "Loss Reason": (STR, False, True, None),
    "Block Manager Address": ((dict,), False, True, {"Executor ID": (STR, False, True, None),
                                                     "Host": (STR, False, True, None)}),
}
_N = (NUM, False, True, None)  # a metric: a number, absent or null in logs that lack it
_METRICS: Spec = {  # a task's time split and sizes (task_metrics.split; the ledger sums records and bytes read)
    "Executor Deserialize Time": _N, "Executor Deserialize CPU Time": _N, "Executor Run Time": _N,
    "Executor CPU Time": _N, "Peak Execution Memory": _N, "Result Size": _N, "JVM GC Time": _N,
    "Result Serialization Time": _N, "Memory Bytes Spilled": _N, "Disk Bytes Spilled": _N,
    "Input Metrics": ((dict,), False, True, {"Records Read": _N, "Bytes Read": _N}),
    "Output Metrics": ((dict,), False, True, {"Records Written": _N, "Bytes Written": _N}),
    "Shuffle Read Metrics": ((dict,), False, True, {"Total Records Read": _N, "Remote Bytes Read": _N,
                                                    "Local Bytes Read": _N, "Fetch Wait Time": _N}),
    "Shuffle Write Metrics": ((dict,), False, True, {"Shuffle Bytes Written": _N, "Shuffle Write Time": _N,
                                                     "Shuffle Records Written": _N}),
}
_EXECUTOR_METRICS: Spec = {"JVMHeapMemory": _N}  # peak memory (Spark 3.0+)
_PROGRESS: Spec = {
    "id": (STR, False, True, None),
    "batchId": (INT, False, True, None),
    "eventTime": ((dict,), False, True, {}),
    "durationMs": ((dict,), False, True, {}),
    "sources": ((list,), False, True, None),
}

EVENTS: dict[str, Spec] = {
    "SparkListenerApplicationStart": {"Timestamp": (NUM, False, True, None), "App Name": (STR, False, True, None),
                                      "App ID": (STR, False, True, None)},
    "SparkListenerApplicationEnd": {"Timestamp": (NUM, False, True, None)},
    "SparkListenerJobStart": {
        "Job ID": (INT, True, False, None),
        "Submission Time": (NUM, False, True, None),
        "Properties": ((dict,), False, True, _PROPERTIES),
        "Stage Infos": ((list,), False, True, _STAGE_INFO),
        "Stage IDs": ((list,), False, True, INT),
    },
    "SparkListenerJobEnd": {"Job ID": (INT, True, False, None), "Completion Time": (NUM, False, True, None),
                            "Job Result": ((dict,), False, True, {
                                "Result": (STR, False, True, None),
                                "Exception": ((dict,), False, True, {"Message": (STR, False, True, None)})})},
    "SparkListenerStageSubmitted": {"Stage Info": ((dict,), True, False, _STAGE_INFO)},
    "SparkListenerStageCompleted": {"Stage Info": ((dict,), True, False, _STAGE_INFO)},
    "SparkListenerTaskStart": {"Stage ID": (INT, True, False, None), "Stage Attempt ID": (INT, False, False, None),
                               "Task Info": ((dict,), False, True, _TASK_INFO)},
    "SparkListenerTaskEnd": {"Stage ID": (INT, True, False, None), "Stage Attempt ID": (INT, False, False, None),
                             "Task Info": ((dict,), False, True, _TASK_INFO),
                             "Task End Reason": ((dict,), False, True, _REASON),
                             "Task Metrics": ((dict,), False, True, _METRICS),
                             "Task Executor Metrics": ((dict,), False, True, _EXECUTOR_METRICS)},
    "SparkListenerStageExecutorMetrics": {"Stage ID": (INT, False, False, None),
                                          "Stage Attempt ID": (INT, False, False, None),
                                          "Executor ID": ((str, int), False, True, None),
                                          "Executor Metrics": ((dict,), False, True, _EXECUTOR_METRICS)},
    "SparkListenerLogStart": {"Spark Version": (STR, False, True, None)},
    "SparkListenerEnvironmentUpdate": {"Spark Properties": ((dict,), False, True,
                                                            {k: (STR, False, True, None) for k in CORES_PROPERTIES})},
    "SparkListenerExecutorAdded": {"Executor ID": ((str, int), False, True, None),
                                   "Executor Info": ((dict,), False, True, {"Host": (STR, False, True, None),
                                                                            "Total Cores": (INT, False, True, None)})},
    "SparkListenerExecutorRemoved": {"Executor ID": ((str, int), False, True, None),
                                     "Removed Reason": (STR, False, True, None)},
    "QueryStartedEvent": {"id": (STR, False, True, None), "name": (STR, False, True, None)},
    "QueryProgressEvent": {"progress": ((dict,), False, True, _PROGRESS)},
    "QueryTerminatedEvent": {"id": (STR, False, True, None), "exception": (STR, False, True, None)},
}
STREAMING_PREFIX = "org.apache.spark.sql.streaming.StreamingQueryListener$"


def _type_name(v: Any) -> str:
    return "null" if v is None else {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(v), "a number")


def _want(types: tuple) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "a boolean", dict: "an object",
             list: "an array"}
    return " or ".join(dict.fromkeys(names[t] for t in types))


def _check(obj: dict, spec: Spec, where: str) -> str | None:
    for key, (types, required, nullable, nested) in spec.items():
        if key not in obj:
            if required:
                return f"{where}{key!r} is missing"
            continue
        value = obj[key]
        if value is None:
            if nullable and not required:
                continue
            return f"{where}{key!r} is null"
        if type(value) not in types or (bool in types) != (type(value) is bool):
            return f"{where}{key!r} is {_type_name(value)}, not {_want(types)}"
        if type(value) is int and not INT_MIN <= value <= INT_MAX:
            return f"{where}{key!r} is an integer beyond 64 signed bits"
        if nested is None:
            continue
        if type(value) is dict:
            problem = _check(value, nested, f"{where}{key!r}: ")
            if problem:
                return problem
        elif type(value) is list:
            for i, item in enumerate(value):
                if type(nested) is tuple:  # a list of scalars
                    if type(item) not in nested or type(item) is bool:
                        return f"{where}{key!r}[{i}] is {_type_name(item)}, not {_want(nested)}"
                    if type(item) is int and not INT_MIN <= item <= INT_MAX:
                        return f"{where}{key!r}[{i}] is an integer beyond 64 signed bits"
                elif type(item) is not dict:
                    return f"{where}{key!r}[{i}] is {_type_name(item)}, not an object"
                else:
                    problem = _check(item, nested, f"{where}{key!r}[{i}]: ")
                    if problem:
                        return problem
    return None


def event_problem(event: dict, types_checked: bool = False) -> str | None:
    """None if the fields the model reads have the types Spark writes (or the event is not one the model reads),
    else what is wrong, e.g. ``'Task Info' is a string, not an object``. ``types_checked``: a typed decode checked
    the types already (``event_fields``); only what types cannot say is checked (a batch id written as a string)."""
    kind = event.get("Event")
    if type(kind) is not str:
        return None
    if types_checked:
        problem = None
    else:
        spec = EVENTS.get(kind.removeprefix(STREAMING_PREFIX))
        if spec is None:
            return None
        problem = _check(event, spec, "")
    if problem is None and kind == "SparkListenerJobStart":
        batch = (event.get("Properties") or {}).get("streaming.sql.batchId")
        if type(batch) is str and not _long(batch):
            problem = f"'Properties': 'streaming.sql.batchId' is {batch[:20]!r}, not a 64-bit integer"
    return problem


def _long(text: str) -> bool:
    """Is ``text`` a Java long written in decimal?"""
    digits = text[1:] if text.startswith("-") else text
    return 0 < len(digits) <= 19 and digits.isascii() and digits.isdigit() and INT_MIN <= int(text) <= INT_MAX
