"""Which plan operator names a stage: what ``flowscope blame`` says beside a stage ("stage 4 · SortMergeJoin #8").

A stage runs several operators of its SQL execution's plan (a codegen pipeline, the exchange it writes or reads);
the one named is the first by kind in :data:`NAMING_ORDER` (joins, then aggregations, sorts and windows, then
scans, then exchanges), the stage's other operators listed beside it. Operators that only pass rows on (projects,
filters, adapters) never name a stage.
"""

from __future__ import annotations

import os
from typing import Any

from backend.spark.sql_plan.plans import SqlPlans
from backend.spark.sql_plan.read import read_plans

__all__ = ["stage_operators", "name_plan_operators", "name_segments", "NAMING_ORDER"]

NAMING_ORDER = ("Join", "Aggregate", "Sort", "Window", "Scan", "Exchange")
_PASSING = {"Project", "Filter", "InputAdapter", "ColumnarToRow", "AQEShuffleRead", "AdaptiveSparkPlan",
            "WholeStageCodegen", "CollectLimit", "LocalLimit", "GlobalLimit"}


def _rank(name: str) -> int:
    for i, kind in enumerate(NAMING_ORDER):
        if kind in name:
            return i
    return len(NAMING_ORDER)


def stage_operators(plans: SqlPlans) -> dict[int, dict]:
    """``{stage id: {"execution", "id", "name", "operators": [ids]}}`` for every stage a plan operator ran in."""
    out: dict[int, dict] = {}
    for ex in plans.to_json()["executions"]:
        by_stage: dict[int, list[dict]] = {}
        for node in ex["nodes"]:
            if "members" in node or node["name"] in _PASSING or node["name"].startswith("WholeStageCodegen"):
                continue
            for stage in node["stages"]:
                by_stage.setdefault(stage, []).append(node)
        for stage, nodes in by_stage.items():
            best = min(nodes, key=lambda n: (_rank(n["name"]), n["id"]))
            out[stage] = {"execution": ex["execution"], "id": best["id"], "name": best["name"],
                          "operators": sorted(n["id"] for n in nodes)}
    return out


def name_plan_operators(log: str | os.PathLike[str], blamed: list[Any]) -> None:
    """Each blame segment held by a stage of a SQL execution gets ``plan_operator`` (:func:`stage_operators`'s
    entry for its stage); the plans are read in a second pass over ``log``."""
    named = stage_operators(read_plans(log)[0])
    for b in blamed:
        name_segments(b.blame, named)


def name_segments(segments: list[Any], named: dict[int, dict]) -> None:
    """Blame segments (``{kind, ..., holder}``) held by a stage ``named`` knows get its ``plan_operator``."""
    for seg in segments:
        holder = seg.get("holder") if isinstance(seg, dict) else None
        if isinstance(holder, dict) and holder.get("stage") in named:
            holder["plan_operator"] = named[holder["stage"]]
