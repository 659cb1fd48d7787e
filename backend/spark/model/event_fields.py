"""The fields of Spark's events that the Spark model reads, for decoding nothing else and checking them as they are
decoded.

Task events are most of a log (two per task) and a ``SparkListenerTaskEnd`` is mostly metrics and accumulables the
model never looks at; a stage event repeats the stage's RDDs, and the model reads the RDDs from the job's start
instead (of a completed stage it reads the accumulables, the SQL metrics its tasks set: ``plan_naming``); a SQL
execution's start and adaptive updates carry its plan's text besides its plan tree, of which it reads the tree; a
job's start carries every stage's RDDs with their storage levels and the job's properties (tens of them), of which
the model reads a few. :data:`READ` names what ``backend.spark.model.spark_model``, ``backend.spark.model.loops``,
``backend.spark.diagnosis.tasks`` and the gap detector (``backend.spark.model.gaps``) read (keep them in step:
tests/test_event_decode.py replays every fixture log and every real log both ways and compares the records).

The types come from ``event_shape.EVENTS``, the one statement of what each field may hold: :func:`model_decoder` turns
each event type's fields into a msgspec type (``TypedDict``s, integers bounded to 64 bits), so the decoder checks
every type the model would otherwise check again (``event_shape.event_problem``), in C, while it decodes only these
fields. A task's end is decoded with its Python operators' ``Accumulables`` (:data:`TASK_END_WITH_PYTHON`: the SQL
metrics ``diagnosis.python_time`` reads, picked from the tens it lists by :func:`python_accumulables`) only when its
bytes name Python workers: the other task ends, most of a log, cost one substring search more. An event that does not
fit comes out whole (``decode.WholeEvent``) for ``event_problem`` to say what is wrong with it; a field the model
reads that the shape does not constrain is decoded as it is (``Any``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from functools import reduce
from types import GenericAlias
from typing import Annotated, Any, NotRequired, Required, TypedDict

import msgspec

from backend.eventlog.decode import EventDecoder
from backend.spark.diagnosis.python_time import MARKER as PYTHON_MARKER
from backend.spark.diagnosis.python_time import PYTHON_METRICS
from backend.spark.model.event_shape import CORES_PROPERTIES, EVENTS, INT_MAX, INT_MIN, Spec
from backend.spark.model.plan_naming import PLAN_TEXT
from backend.spark.model.spark_model import HANDLED_EVENTS
from backend.spark.sql_plan.plans import ADAPTIVE as SQL_ADAPTIVE
from backend.spark.sql_plan.plans import DRIVER as SQL_DRIVER
from backend.spark.sql_plan.plans import START as SQL_START

__all__ = ["RAW", "READ", "TASK_END_WITH_PYTHON", "fields_decoder", "model_decoder", "python_accumulables"]

RAW = msgspec.Raw  # a field left undecoded, as its JSON bytes (``fields_decoder``'s readers decode it if they must)
PYTHON_NAMES = frozenset(PYTHON_METRICS)

_TASK_INFO = dict.fromkeys(["Task ID", "Index", "Partition ID", "Attempt", "Launch Time", "Finish Time",
                            "Executor ID", "Host", "Speculative", "Killed", "Failed"])
_TASK_END_INFO = {**_TASK_INFO, "Getting Result Time": None}  # task_metrics.split's getting-result time
_STAGE_IDS = {"Stage ID": None, "Stage Attempt ID": None}
_STAGE_EVENT_INFO = {**_STAGE_IDS, "Number of Tasks": None, "Submission Time": None, "Completion Time": None,
                     "Failure Reason": None}

# Event type -> the fields the model reads: field -> None (its value) or the nested fields it reads (of an object,
# or of each object of a list). Event types not listed here are decoded whole.
READ: dict[str, dict[str, Any]] = {
    "SparkListenerLogStart": {"Spark Version": None},
    "SparkListenerApplicationStart": {"Timestamp": None, "App Name": None, "App ID": None},
    "SparkListenerApplicationEnd": {"Timestamp": None},
    "SparkListenerJobStart": {
        "Job ID": None, "Submission Time": None,
        "Properties": dict.fromkeys(["sql.streaming.queryId", "streaming.sql.batchId", "spark.jobGroup.id",
                                     "spark.sql.execution.id", "spark.job.description"]),
        "Stage Infos": {**_STAGE_IDS, "Stage Name": None, "Number of Tasks": None, "Parent IDs": None,
                        "Details": None,
                        "RDD Info": dict.fromkeys(["RDD ID", "Name", "Scope", "Callsite", "Parent IDs"])},
        "Stage IDs": None,  # the gap detector's, when a job lists no stage infos
    },
    "SparkListenerExecutorRemoved": {"Timestamp": None, "Executor ID": None, "Removed Reason": None},
    "SparkListenerJobEnd": {"Job ID": None, "Completion Time": None,
                            "Job Result": {"Result": None, "Exception": {"Message": None}}},
    # the stage's RDDs are not read here (they are read at the job's start); a completed stage's accumulables are
    "SparkListenerStageSubmitted": {"Stage Info": _STAGE_EVENT_INFO},
    "SparkListenerStageCompleted": {"Stage Info": {**_STAGE_EVENT_INFO, "Accumulables": None}},  # plan_naming's
    "SparkListenerTaskStart": {**_STAGE_IDS, "Task Info": _TASK_INFO},
    "SparkListenerTaskEnd": {
        **_STAGE_IDS, "Task Info": _TASK_END_INFO,
        "Task End Reason": {"Reason": None, "Class Name": None, "Description": None, "Message": None,
                            "Executor ID": None, "Loss Reason": None,
                            "Block Manager Address": {"Executor ID": None, "Host": None}},
        # a task's time split and sizes (task_metrics.split), the records and bytes it read (tasks.py)
        "Task Metrics": {
            **dict.fromkeys(["Executor Deserialize Time", "Executor Deserialize CPU Time", "Executor Run Time",
                             "Executor CPU Time", "Peak Execution Memory", "Result Size", "JVM GC Time",
                             "Result Serialization Time", "Memory Bytes Spilled", "Disk Bytes Spilled"]),
            "Input Metrics": dict.fromkeys(["Records Read", "Bytes Read"]),
            "Output Metrics": dict.fromkeys(["Records Written", "Bytes Written"]),
            "Shuffle Read Metrics": dict.fromkeys(["Total Records Read", "Remote Bytes Read", "Local Bytes Read",
                                                   "Fetch Wait Time"]),
            "Shuffle Write Metrics": dict.fromkeys(["Shuffle Bytes Written", "Shuffle Write Time",
                                                    "Shuffle Records Written"])},
        "Task Executor Metrics": {"JVMHeapMemory": None},
    },
    "SparkListenerStageExecutorMetrics": {**_STAGE_IDS, "Executor ID": None,
                                          "Executor Metrics": {"JVMHeapMemory": None}},
    "SparkListenerEnvironmentUpdate": {"Spark Properties": dict.fromkeys(CORES_PROPERTIES)},  # cores, when no
    # executor event says them
}
class _Accumulable(msgspec.Struct):
    """An accumulable as a task end lists it, of which only a Python operator's SQL metrics are kept."""

    ID: Any = None
    Name: Any = None
    Update: Any = None


# a task end whose bytes name Python workers: its accumulables too, as structs, of which its Python operators' SQL
# metrics are kept (python_time reads them)
TASK_END_WITH_PYTHON = {**READ["SparkListenerTaskEnd"],
                        "Task Info": {**_TASK_END_INFO, "Accumulables": list[_Accumulable]}}

class _SqlPlanEvent(TypedDict, total=False):
    Event: Any
    executionId: Any
    sparkPlanInfo: msgspec.Raw


_decode_sql_plan_event = msgspec.json.Decoder(_SqlPlanEvent).decode


def _sql_plan_event(raw: bytes) -> dict:
    """A SQL execution's start or adaptive update with its plan tree left as JSON text, ``PLAN_TEXT`` in place of
    ``sparkPlanInfo``: only the execution's last plan is ever read (``plan_naming``), and text crosses a process
    boundary as JSON carries it (``read_process``)."""
    event: dict = dict(_decode_sql_plan_event(raw))
    info = event.pop("sparkPlanInfo", None)
    if info is not None:
        event[PLAN_TEXT] = bytes(info).decode()
    return event

_INT64 = Annotated[int, msgspec.Meta(ge=INT_MIN, le=INT_MAX)]  # event_shape's range: Spark's longs


def _scalar(t: type) -> Any:
    return _INT64 if t is int else t


def _value_type(name: str, types: tuple, read: Mapping[str, Any] | None, nested: Any) -> Any:
    """The msgspec type of one field: its allowed JSON types, an object's or a list's items narrowed to ``read``."""
    options: list[Any] = []
    for t in types:
        if t is dict and isinstance(nested, dict) and nested:
            options.append(_typed(name, read if read is not None else dict.fromkeys(nested), nested))
        elif t is list and isinstance(nested, dict):
            item = _typed(name, read if read is not None else dict.fromkeys(nested), nested)
            options.append(list[item])  # type: ignore[valid-type]
        elif t is list and isinstance(nested, tuple):
            options.append(list[_either([_scalar(s) for s in nested])])  # type: ignore[misc]
        else:
            options.append(_scalar(t))
    return _either(options)


def _either(options: list[Any]) -> Any:
    """One of these types (a union)."""
    return reduce(operator.or_, options)


def _typed(name: str, read: Mapping[str, Any], spec: Spec) -> type:
    """A ``TypedDict`` of the ``read`` fields, each typed as ``spec`` says (``Any`` where it says nothing, or the
    type ``read`` gives it)."""
    fields: dict[str, Any] = {}
    for key, inner in read.items():
        if inner is RAW:
            fields[key] = NotRequired[msgspec.Raw]
            continue
        entry = spec.get(key)
        if entry is None:
            fields[key] = NotRequired[inner if isinstance(inner, (type, GenericAlias)) else Any]
            continue
        types, required, nullable, nested = entry
        t = _value_type(f"{name} {key}", types, inner, nested)
        if required:
            fields[key] = Required[t]
        else:
            fields[key] = NotRequired[t | None if nullable else t]
    return TypedDict(name.replace(" ", "_"), fields, total=False)  # type: ignore[operator]


def fields_decoder(read: Mapping[str, Mapping[str, Any]], whole: Iterable[str] = ()) -> EventDecoder:
    """A decoder for another reader of Spark's events: of each type in ``read`` (a type :data:`EVENTS` describes)
    only those fields, typed and checked as the model's are (a field read as :data:`RAW` is left as its bytes); the
    ``whole`` types whole; every other type skipped."""
    wanted: dict[str, type | Callable[[bytes], Any] | None] = dict.fromkeys(whole)
    for kind, fields in read.items():
        wanted[kind] = _typed(kind, {"Event": None, **fields}, EVENTS[kind])
    return EventDecoder(wanted)


def python_accumulables(listed: Any) -> list[dict]:
    """Of a task end's accumulables (structs), its Python operators' SQL metrics, as ``{"ID", "Name", "Update"}``."""
    names = PYTHON_NAMES
    return [{"ID": a.ID, "Name": a.Name, "Update": a.Update} for a in listed or () if a.Name in names]


class _PythonSeen:
    """Whether a SQL plan read so far declared a Python operator's metrics: until one does, no task end can carry
    them, and task ends are decoded without looking for them (an application without Python SQL operators pays
    nothing per task)."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = False

    def plan_event(self, decode: Callable[[bytes], Any] | None, kind: str) -> Callable[[bytes], Any]:
        """A SQL execution's start or adaptive update: noted when its plan names Python workers, then decoded by
        ``decode`` (None: not decoded, as a reader that skips them gets it)."""
        skipped = {"Event": kind}

        def plan(raw: bytes) -> Any:
            if not self.seen and PYTHON_MARKER in raw:
                self.seen = True
            if decode is not None:
                return decode(raw)
            if not raw.rstrip().endswith(b"}"):  # a damaged line: decoded whole, so its error is reported
                raise msgspec.DecodeError("truncated")
            return dict(skipped)

        return plan

    def task_end_decoder(self) -> Callable[[bytes], Any]:
        """A task end's decode: :data:`READ`'s fields, and once a plan declared Python metrics, when its bytes name
        Python workers, the Python operators' accumulables too (:data:`TASK_END_WITH_PYTHON`)."""
        kind = "SparkListenerTaskEnd"
        plain: Callable[[bytes], Any] = msgspec.json.Decoder(_typed(kind, {"Event": None, **READ[kind]},
                                                                    EVENTS[kind])).decode
        python: Callable[[bytes], Any] = msgspec.json.Decoder(_typed(kind, {"Event": None, **TASK_END_WITH_PYTHON},
                                                                     EVENTS[kind])).decode

        def decode(raw: bytes) -> Any:
            if not (self.seen and PYTHON_MARKER in raw):
                return plain(raw)
            event = python(raw)
            info = event.get("Task Info")
            if info is not None:  # only the Python metrics stay: they cross the reader's pipe as JSON
                info["Accumulables"] = python_accumulables(info.get("Accumulables"))
            return event

        return decode


def model_decoder(name_plans: bool = True) -> EventDecoder:
    """A decoder for the Spark model's reader: the fields in :data:`READ`, typed and checked as they are decoded;
    other events the model handles whole (its streaming events: one per micro-batch). ``name_plans``: as the
    model's (``SparkModel``); without it the SQL plan events are not decoded (only looked at for Python
    operators)."""
    wanted: dict[str, type | Callable[[bytes], Any] | None] = dict.fromkeys(HANDLED_EVENTS)
    for kind, read in READ.items():
        if not name_plans and kind == "SparkListenerStageCompleted":
            read = {"Stage Info": _STAGE_EVENT_INFO}  # its accumulables are plan_naming's only
        wanted[kind] = _typed(kind, {"Event": None, **read}, EVENTS[kind])
    if not name_plans:
        del wanted[SQL_DRIVER]  # the driver's metric updates: plan_naming's only
    python = _PythonSeen()
    wanted["SparkListenerTaskEnd"] = python.task_end_decoder()
    for kind in (SQL_START, SQL_ADAPTIVE):  # checked as plan_naming reads them, not here: their tree, not its text
        wanted[kind] = python.plan_event(_sql_plan_event if name_plans else None, kind)
    return EventDecoder(wanted)
