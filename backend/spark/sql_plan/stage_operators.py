"""Which plan operator names a stage: what ``flowscope blame`` says beside a stage ("stage 4 · SortMergeJoin #8").

A stage runs several operators of its SQL execution's plan (a codegen pipeline, the exchange it writes or reads);
the one named is the first by kind in :data:`NAMING_ORDER` (joins, then aggregations, sorts and windows, then
scans, then exchanges), the stage's other operators listed beside it. Operators that only pass rows on (projects,
filters, adapters) and codegen clusters never name a stage. The Spark model names them as it reads the log
(``backend.spark.model.plan_naming``); :func:`stage_operators` says the same of plans read whole (``read_plans``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backend.spark.sql_plan.plans import SqlPlans

__all__ = ["stage_operators", "name_stages", "NAMING_ORDER"]

NAMING_ORDER = ("Join", "Aggregate", "Sort", "Window", "Scan", "Exchange")
_PASSING = {"Project", "Filter", "InputAdapter", "ColumnarToRow", "AQEShuffleRead", "AdaptiveSparkPlan",
            "WholeStageCodegen", "CollectLimit", "LocalLimit", "GlobalLimit"}


def _rank(name: str) -> int:
    for i, kind in enumerate(NAMING_ORDER):
        if kind in name:
            return i
    return len(NAMING_ORDER)


def name_stages(execution: int, nodes: Iterable[tuple[int, str, Iterable[int]]]) -> dict[int, dict]:
    """``{stage id: {"execution", "id", "name", "operators": [ids]}}`` of one execution, from its plan's operators
    as ``(id, name, stages it ran in)`` (codegen clusters left out by the caller)."""
    by_stage: dict[int, list[tuple[int, str]]] = {}
    for node_id, name, stages in nodes:
        if name in _PASSING or name.startswith("WholeStageCodegen"):
            continue
        for stage in stages:
            by_stage.setdefault(stage, []).append((node_id, name))
    out: dict[int, dict] = {}
    for stage, named in by_stage.items():
        best = min(named, key=lambda n: (_rank(n[1]), n[0]))
        out[stage] = {"execution": execution, "id": best[0], "name": best[1],
                      "operators": sorted(n[0] for n in named)}
    return out


def stage_operators(plans: SqlPlans) -> dict[int, dict]:
    """:func:`name_stages` of every execution of ``plans`` (a later execution's naming of a stage wins)."""
    out: dict[int, dict] = {}
    for ex in plans.to_json()["executions"]:
        out.update(name_stages(ex["execution"], ((n["id"], n["name"], n["stages"]) for n in ex["nodes"]
                                                 if "members" not in n)))
    return out
