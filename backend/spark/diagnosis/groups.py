"""Findings folded into groups: one kind on one stage signature across jobs, micro-batches and attempts.

A driver that runs the same query a thousand times raises the same straggler a thousand times; a person wants one
line ("straggler in stage `collect at job.py:22`, 1,000 times, 1,500 s in all") ranked against everything else the
application wastes. A finding's signature is its kind and where it is in the code, not which run:

* a stage's finding: its stage operator's name (Spark's stage name, its call site; in a streaming query the RDD
  scopes it ran) and, for a SQL stage, the plan operator it ran;
* a SQL plan finding: its execution's description (the query's call site) and the plan operator (name and id);
* an application's finding: the application; a progress-contract finding: the port it broke at.

Groups rank by their summed impact (null impacts count as 0; ties by count); each lists the stages and scopes of
its findings (the first ``MAX_LISTED``, and how many there are), its worst finding (the largest impact) and that
one's recommendation.
"""

from __future__ import annotations

from typing import Any

__all__ = ["signature", "group_findings"]

MAX_LISTED = 1000  # stages and scopes a group lists (its count says how many findings it has)


def signature(row: dict) -> tuple[Any, ...]:
    """What groups a finding row (the Overview's: ``kind``, ``stage``, ``stage_name``, ``plan_operator``,
    ``execution``, ``operator``, ``contract``) with its repeats."""
    kind = row.get("kind")
    if row.get("contract"):
        return (kind, "port", str(row.get("port")))
    if row.get("execution") is not None and row.get("operator") is not None:  # a SQL plan finding
        return (kind, "plan", row.get("description") or "", row.get("operator_name") or "", row.get("operator"))
    if row.get("stage") is None:
        return (kind, "application")
    op = row.get("plan_operator") or {}
    return (kind, "stage", row.get("stage_name") or f"stage {row['stage']}", op.get("name"))


def _label(sig: tuple[Any, ...]) -> str:
    kind, where = sig[0], sig[1]
    if where == "port":
        return f"{kind} at port {sig[2]}"
    if where == "plan":
        desc = f" in `{sig[2]}`" if sig[2] else ""
        return f"{kind} on {sig[3]} (plan node {sig[4]}){desc}"
    if where == "application":
        return f"{kind} in the application"
    return f"{kind} in stage `{sig[2]}`" + (f" ({sig[3]})" if sig[3] else "")


def _impact(row: dict) -> float:
    v = row.get("impact_s")
    return v if isinstance(v, (int, float)) else 0.0


def group_findings(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """``(groups, rows)``: the groups ranked by impact, and every row in group order (largest impact first within
    a group), each with its ``group`` (its index in the groups)."""
    by_sig: dict[tuple, list[dict]] = {}
    for row in rows:
        by_sig.setdefault(signature(row), []).append(row)
    made = []
    for sig, members in by_sig.items():
        members.sort(key=lambda r: -_impact(r))
        worst = members[0]
        known = [r["impact_s"] for r in members if isinstance(r.get("impact_s"), (int, float))]
        stages: dict[Any, None] = {}
        scopes: dict[tuple, None] = {}
        for r in members:
            if r.get("stage") is not None:
                stages[r["stage"]] = None
            if r.get("scope"):
                scopes[tuple(r["scope"])] = None
        group: dict[str, Any] = {
            "kind": sig[0], "label": _label(sig), "count": len(members),
            "impact_s": round(sum(known), 6) if known else None,
            "stages": list(stages)[:MAX_LISTED], "scopes": [list(s) for s in list(scopes)[:MAX_LISTED]],
            "stage_count": len(stages), "scope_count": len(scopes),
            "worst": worst, "recommendation": worst.get("recommendation")}
        if not known:
            group["impact_note"] = worst.get("impact_note")
        hours = [r["core_hours"] for r in members if isinstance(r.get("core_hours"), (int, float))]
        if hours:
            group["core_hours"] = round(sum(hours), 6)
        made.append((group, members))
    made.sort(key=lambda gm: (-(gm[0]["impact_s"] or 0.0), -gm[0]["count"]))
    ordered: list[dict] = []
    groups = []
    for i, (group, members) in enumerate(made):
        for r in members:
            r["group"] = i
        ordered += members
        groups.append(group)
    return groups, ordered
