"""The fields blame reads inside the Spark model's records, checked where blame takes a record in.

The replay checks a record's shape (a cause is an object, a mark's ``at`` a number); the fields blame reads inside
them are conventions (the Spark model's), free metadata to the replay. A field of the wrong type is reported (with
the record's line, beside the replay's problems) and left out, so a hostile log gets a blame without it, never a
failed session or a failed GET .../blame.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tracker.progress_log.records import short_repr

__all__ = ["Report", "is_seconds", "is_id_or_none", "is_failure", "without", "checked_cause", "checked_detail_value",
           "checked_mark"]

Report = Callable[[str], None]  # told of each field left out, with why


def is_seconds(v: Any) -> bool:
    """Epoch seconds: a finite number (not a bool)."""
    return type(v) in (int, float) and math.isfinite(v)


def is_id(v: Any) -> bool:
    """An id blame keys and sorts by (a stage, a job): an integer or a string."""
    return type(v) in (int, str)


def is_id_or_none(v: Any) -> bool:
    return v is None or type(v) is int or type(v) is str


def without(rec: dict, where: str, bad: dict[str, str], report: Report) -> dict:
    """``rec`` without the fields ``bad`` names (field -> why), reported."""
    if not bad:
        return rec
    report("; ".join(f"{where}.{k} {short_repr(rec[k])}: {why}" for k, why in bad.items()))
    return {k: v for k, v in rec.items() if k not in bad}


def is_failure(v: Any) -> bool:
    """A cause's ``failure`` (the Spark model's ``tasks.task_failure``): an object of short scalar fields."""
    return type(v) is dict and all(type(k) is str and (x is None or type(x) in (str, int, float)) for k, x in v.items())


def checked_cause(cause: dict, at: float, report: Report) -> dict:
    """A progress batch's cause with ``launched`` and ``attempt`` as blame reads them, else left out.

    ``launched``: a task's launch, epoch seconds, not after the batch that ended it; ``attempt``: a stage
    attempt, a count.
    """
    bad = {}
    launched = cause.get("launched")
    if launched is not None and not (is_seconds(launched) and launched <= at):
        bad["launched"] = "is not a launch time in seconds at or before the batch's at"
    attempt = cause.get("attempt")
    if attempt is not None and not (type(attempt) is int and attempt >= 0):
        bad["attempt"] = "is not a stage attempt number (an integer >= 0)"
    return without(cause, "cause", bad, report)


def checked_detail_value(value: dict, report: Report) -> dict:
    """A task's or stage's detail value: ``stage`` and ``job`` (ids), ``launched`` (seconds), ``host``."""
    bad = {k: "is not an id (an integer or a string)" for k in ("stage", "job") if k in value and
           value[k] is not None and not is_id(value[k])}
    if value.get("launched") is not None and not is_seconds(value["launched"]):
        bad["launched"] = "is not a time in seconds"
    if value.get("host") is not None and type(value["host"]) is not str:
        bad["host"] = "is not a string"
    return without(value, "detail value", bad, report)


def checked_mark(rec: dict, report: Report) -> dict:
    """A mark with its job or micro-batch fields as blame reads them, else left out.

    A job's ``job``, ``epoch``, a loop's ``loop`` and ``iteration``, ``status``, ``failure``; a micro-batch's
    ``batch``, ``trigger_start``, ``phases_ms``; a SQL execution's ``plan_operators``.
    """
    bad = {}
    if "job" in rec and type(rec["job"]) is not int:
        bad["job"] = "is not a job id (an integer)"
    if "epoch" in rec and type(rec["epoch"]) is not int:
        bad["epoch"] = "is not an epoch (an integer)"
    loop = rec.get("loop")
    if loop is not None and not (type(loop) is list and all(type(k) is int for k in loop)):
        bad["loop"] = "is not a scope path"
    if rec.get("iteration") is not None and type(rec["iteration"]) is not int:
        bad["iteration"] = "is not an integer"
    if rec.get("status") is not None and type(rec["status"]) is not str:
        bad["status"] = "is not a job status (a string)"
    if rec.get("failure") is not None and type(rec["failure"]) is not str:
        bad["failure"] = "is not a failure message (a string)"
    if "batch" in rec and type(rec["batch"]) is not int:
        bad["batch"] = "is not a batch id (an integer)"
    if rec.get("trigger_start") is not None and not is_seconds(rec["trigger_start"]):
        bad["trigger_start"] = "is not a time in seconds"
    phases = rec.get("phases_ms")
    if phases is not None and not (type(phases) is dict and all(is_seconds(v) for v in phases.values())):
        bad["phases_ms"] = "is not an object of durations in milliseconds"
    named = rec.get("plan_operators")
    if named is not None and not (type(named) is dict and all(_stage_key(k) and _plan_operator(v)
                                                               for k, v in named.items())):
        bad["plan_operators"] = "is not an object of stage id -> {execution, id, name, operators}"
    return without(rec, "mark", bad, report)


def _stage_key(key: Any) -> bool:
    """A stage id as a JSON object's key: a decimal integer."""
    return type(key) is str and key.isascii() and key.isdigit() and len(key) <= 19


def _plan_operator(value: Any) -> bool:
    """A stage's SQL plan operator as the Spark model names it (``plan_naming``)."""
    return (type(value) is dict and type(value.get("execution")) is int and type(value.get("id")) is int
            and type(value.get("name")) is str and type(value.get("operators")) is list
            and all(type(o) is int for o in value["operators"]))
