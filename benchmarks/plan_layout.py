"""How long a large SQL plan takes to lay out for the Plan tab: 200 operators (the issue's bound is 0.5 s) and more.

A synthetic plan the shape real ones take: a chain of sort-merge joins, each side a codegen stage (Sort, Project,
Filter over a scan) behind an Exchange, so that every fifth operator or so starts a new codegen box and every
join adds an exchange edge between stages. Its ``sparkPlanInfo`` goes through what ``GET .../plan?layout=true``
runs: the plan graph (``graph.build_graph``), the execution's JSON (``SqlPlans.execution_json``, findings
included) and the layout (``layout.plan_layout``); each part is timed, best of ``--repeat``.

Run::

    .venv/bin/python benchmarks/plan_layout.py                 # 200, 1,000 and 5,000 operators
    .venv/bin/python benchmarks/plan_layout.py --operators 200
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backend.spark.sql_plan.graph import build_graph  # noqa: E402
from backend.spark.sql_plan.layout import plan_layout  # noqa: E402
from backend.spark.sql_plan.plans import START, SqlPlans  # noqa: E402

_acc = [0]


def _node(name: str, *children: dict, metrics: tuple[tuple[str, str], ...] = ()) -> dict:
    out = []
    for metric, kind in metrics:
        _acc[0] += 1
        out.append({"name": metric, "accumulatorId": _acc[0], "metricType": kind})
    return {"nodeName": name, "simpleString": f"{name} {_acc[0]}", "children": list(children), "metadata": {},
            "metrics": out}


def _side(k: int) -> dict:
    scan = _node("Scan parquet", metrics=(("number of output rows", "sum"), ("scan time", "timing")))
    body = _node("Sort", _node("Project", _node("Filter", scan, metrics=(("number of output rows", "sum"),))),
                 metrics=(("sort time", "timing"), ("peak memory", "size"), ("spill size", "size")))
    return _node("Exchange", _node(f"WholeStageCodegen ({k})", body, metrics=(("duration", "timing"),)),
                 metrics=(("data size", "size"), ("shuffle records written", "sum")))


def synthetic_plan(operators: int) -> dict:
    """A sparkPlanInfo of about ``operators`` graph nodes (codegen boxes counted)."""
    plan = _side(0)
    count, k = 7, 1  # the root and the first side
    while count + 7 <= operators:
        join = _node("SortMergeJoin", plan, _side(k), metrics=(("number of output rows", "sum"),))
        plan, count, k = join, count + 7, k + 1
    return _node("AdaptiveSparkPlan", plan)


def measure(operators: int, repeat: int) -> dict:
    info = synthetic_plan(operators)
    best = {"graph": float("inf"), "json": float("inf"), "layout": float("inf")}
    nodes = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        graph = build_graph(info)
        t1 = time.perf_counter()
        plans = SqlPlans()
        plans.feed({"Event": START, "executionId": 0, "description": "bench", "time": 0, "sparkPlanInfo": info})
        body = plans.execution_json(plans.executions[0])
        t2 = time.perf_counter()
        layout = plan_layout(body)
        t3 = time.perf_counter()
        best = {"graph": min(best["graph"], t1 - t0), "json": min(best["json"], t2 - t1),
                "layout": min(best["layout"], t3 - t2)}
        nodes = len(graph.nodes)
        assert len(layout["nodes"]) + len(layout["clusters"]) == nodes
    return {"operators": nodes, **best}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--operators", type=int, nargs="*", default=[200, 1000, 5000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print(f"{'operators':>9}  {'graph':>9}  {'json':>9}  {'layout':>9}  {'total':>9}")
    for n in args.operators:
        r = measure(n, args.repeat)
        total = r["graph"] + r["json"] + r["layout"]
        print(f"{r['operators']:>9}  {r['graph'] * 1e3:>7.1f}ms  {r['json'] * 1e3:>7.1f}ms  "
              f"{r['layout'] * 1e3:>7.1f}ms  {total * 1e3:>7.1f}ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
