"""Time per plan operator, only where Spark measures it.

Spark times some operators itself (their ``timing`` and ``nsTiming`` SQL metrics: a codegen stage's ``duration``,
aggregation build time, sort time, spill time, shuffle write and fetch wait time, broadcast collect/build/broadcast
time, scan and metadata time). Those are shown as measured, each operator's own; a codegen stage's ``duration`` is
the whole pipeline's time (every operator fused into it), so it is said to be the pipeline's. An operator without
such a metric gets "not measured by Spark", never an estimate.
"""

from __future__ import annotations

__all__ = ["operator_time", "NOT_MEASURED"]

NOT_MEASURED = "not measured by Spark"
TIME_TYPES = ("timing", "nsTiming")


def operator_time(name: str, metrics: list[dict]) -> dict:
    """``{"measured": True, "ms": total, "by": [metric names], "of": "pipeline" | "operator"}`` from an operator's
    combined metrics (each with ``name``, ``type``, ``value`` in ms), or ``{"measured": False, "note": ...}``."""
    timed = [m for m in metrics if m.get("type") in TIME_TYPES and isinstance(m.get("value"), (int, float))]
    if not timed:
        return {"measured": False, "note": NOT_MEASURED}
    return {"measured": True, "ms": sum(m["value"] for m in timed), "by": [m["name"] for m in timed],
            "of": "pipeline" if name.startswith("WholeStageCodegen") else "operator"}
