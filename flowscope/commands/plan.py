"""``flowscope plan LOG``: every SQL execution's final plan (after adaptive updates), with its operators' metrics.

``--json`` prints ``{"executions": [...]}`` (README, "flowscope plan"; ``backend/spark/sql_plan``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .arguments import add_thresholds_option, non_negative_int
from .offline import dump_json

__all__ = ["register", "cmd_plan", "plan_text"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("plan", help="the SQL executions' physical plans with their operators' metrics",
                              description="Print every SQL execution's final physical plan (after adaptive "
                                          "updates): each operator with its metrics combined over tasks as Spark's "
                                          "UI combines them, the stages that ran it, and the plan's findings.")
    p.add_argument("log", help="a Spark event log (file or rolling directory)")
    p.add_argument("--execution", type=non_negative_int, metavar="N", help="only SQL execution N")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_thresholds_option(p)
    p.set_defaults(func=cmd_plan)


def _metric_text(m: dict) -> str:
    """``name: total (min, med, max; max in stage s.a task t)`` in Spark's units, as its UI writes them."""
    from backend.spark.sql_plan.metrics import bytes_to_string, ms_to_string

    kind = m["type"]
    fmt = bytes_to_string if kind == "size" else ms_to_string if kind in ("timing", "nsTiming") else (
        lambda v: f"{v:,}" if kind == "sum" else f"{v:,.3g}")
    text = f"{m['name']}: {fmt(m['value'])}"
    if m["min"] is not None and m["min"] != m["max"]:
        at = m.get("max_at")
        where = f"; max in stage {at['stage']}.{at['attempt']} task {at['task']}" if at else "; max on the driver"
        text += f" (min {fmt(m['min'])}, med {fmt(m['med'])}, max {fmt(m['max'])}{where})"
    return text


def plan_text(execution: dict) -> list[str]:
    """An execution's plan as indented lines, root first; codegen stages marked ``*(n)`` as Spark's explain does."""
    nodes = {n["id"]: n for n in execution["nodes"]}
    parents = {c for n in nodes.values() for c in n["children"]}
    roots = [i for i, n in nodes.items() if i not in parents and "members" not in n]
    lines = [f"SQL execution {execution['execution']}: {execution['description']}"
             + (f" ({execution['plan_updates']} adaptive plan updates)" if execution["plan_updates"] else "")]
    if execution.get("problem"):
        lines.append(f"  plan not read: {execution['problem']}")
    seen: set[int] = set()

    def walk(nid: int, depth: int) -> None:
        node = nodes[nid]
        pad = "  " * (depth + 1)
        star = f"*({node['codegen_stage']}) " if node["codegen_stage"] is not None else ""
        stages = f"  [stage{'s' if len(node['stages']) > 1 else ''} {', '.join(map(str, node['stages']))}]" \
            if node["stages"] else ""
        again = " (shown above)" if nid in seen else ""
        lines.append(f"{pad}{star}{node['name']} #{nid}{stages}{again}")
        if again:
            return
        seen.add(nid)
        for m in node["metrics"]:
            lines.append(f"{pad}    {_metric_text(m)}")
        t = node["time"]
        within = f"; within it: {', '.join(t['parts'])}" if t.get("parts") else ""
        lines.append(f"{pad}    time: " + (f"{t['ms']:,} ms ({', '.join(t['by'])}{within})" if t["measured"]
                                            else t["note"]))
        for child in node["children"]:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    codegen = [n for n in nodes.values() if "members" in n]
    for n in codegen:
        lines.append(f"  {n['name']} #{n['id']}: " + ", ".join(_metric_text(m) for m in n["metrics"]))
    for f in execution["findings"]:
        lines.append(f"  finding: {f['label']}")
        th = f["threshold"]
        lines.append(f"    metric: {f['metric']} = {f['value']} (threshold {th['name']} = {th['value']:,}"
                     + "".join(f", and {a['name']} = {a['value']:,}" for a in th.get("and", ())) + ")")
        lines.append(f"    recommendation: {f['recommendation']}")
    return lines


def cmd_plan(args: argparse.Namespace) -> int:
    from backend.eventlog import MissingCodecError
    from backend.spark.diagnosis.thresholds import configured
    from backend.spark.sql_plan.read import read_plans

    try:
        plans, problems = read_plans(args.log)
    except (OSError, ValueError, MissingCodecError) as e:  # no such file, not a log, a codec missing
        print(f"flowscope: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(f"flowscope: {p}", file=sys.stderr)
    if args.execution is not None and args.execution not in plans.executions:
        have = ", ".join(map(str, sorted(plans.executions))) or "none"
        print(f"flowscope: {args.log}: no SQL execution {args.execution} (executions: {have})", file=sys.stderr)
        return 2
    answer = plans.to_json(args.execution, configured())  # what --thresholds named (cli.py applied it)
    if args.json:
        sys.stdout.write(dump_json(answer) + "\n")
        return 0
    if not answer["executions"]:
        print(f"{args.log}: no SQL executions")
    for execution in answer["executions"]:
        print("\n".join(plan_text(execution)))
    return 0
