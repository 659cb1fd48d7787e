"""Time per plan operator, only where Spark measures it.

Spark times some operators itself (their ``timing`` and ``nsTiming`` SQL metrics: a codegen stage's ``duration``,
aggregation build time, sort time, spill time, shuffle write and fetch wait time, broadcast collect/build/broadcast
time, scan and metadata time). Those are shown as measured, each operator's own; a codegen stage's ``duration`` is
the whole pipeline's time (every operator fused into it), so it is said to be the pipeline's. An operator without
such a metric gets "not measured by Spark", never an estimate.

A metric that measures part of another of the same operator is not added to it: a Python operator's "time to run
Python workers" contains its workers' start, initialization and Python code's execution
(``backend.spark.diagnosis.python_time``), so its time is that one metric's, the parts listed beside it.
"""

from __future__ import annotations

from backend.spark.diagnosis.python_time import BOOT, EXEC, INIT, TOTAL

__all__ = ["operator_time", "NOT_MEASURED"]

NOT_MEASURED = "not measured by Spark"
TIME_TYPES = ("timing", "nsTiming")
CONTAINED_IN = {BOOT: TOTAL, INIT: TOTAL, EXEC: TOTAL}  # a metric -> the one of its operator that contains it


def operator_time(name: str, metrics: list[dict]) -> dict:
    """``{"measured": True, "ms": total, "by": [metric names], "of": "pipeline" | "operator"}`` from an operator's
    combined metrics (each with ``name``, ``type``, ``value`` in ms), or ``{"measured": False, "note": ...}``;
    ``parts``: the metrics inside one of ``by`` (:data:`CONTAINED_IN`), not added, when there are any."""
    timed = [m for m in metrics if m.get("type") in TIME_TYPES and isinstance(m.get("value"), (int, float))]
    if not timed:
        return {"measured": False, "note": NOT_MEASURED}
    names = {m.get("name") for m in timed}
    parts = [m for m in timed if CONTAINED_IN.get(m.get("name")) in names]  # type: ignore[arg-type]
    own = [m for m in timed if m not in parts]
    out = {"measured": True, "ms": sum(m["value"] for m in own), "by": [m["name"] for m in own],
           "of": "pipeline" if name.startswith("WholeStageCodegen") else "operator"}
    if parts:
        out["parts"] = [m["name"] for m in parts]
    return out
