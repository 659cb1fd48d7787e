"""``/sql`` and ``/sql/{id}``: Spark SQL's ``ExecutionData``: an execution's jobs by outcome and, with ``details``, its
plan's nodes (each with its metrics as Spark prints them, ``backend.spark.sql_plan``) and edges."""

from __future__ import annotations

import time

from backend.spark.sql_plan.metrics import spark_string
from backend.spark.sql_plan.plans import Execution, SqlPlans, spark_set_order
from backend.spark_api.times import spark_time

__all__ = ["execution_doc", "execution_list"]


def execution_doc(plans: SqlPlans, ex: Execution, start: dict, details: bool, plan_description: bool) -> dict:
    """One execution; ``start`` holds what its start and end events said that the plan model does not keep."""
    by_status: dict[str, list[int]] = {"RUNNING": [], "SUCCEEDED": [], "FAILED": []}
    for job in spark_set_order(list(ex.jobs)):  # the order Spark's map of an execution's jobs iterates in
        by_status.setdefault(ex.jobs[job], []).append(job)
    if len(by_status["SUCCEEDED"]) == len(ex.jobs):
        status = "COMPLETED"
    elif by_status["FAILED"]:
        status = "FAILED"
    else:
        status = "RUNNING"
    nodes: list[dict] = []
    edges: list[dict] = []
    if details and ex.graph is not None:
        values = plans.values(ex)
        for node in sorted(ex.graph.nodes.values(), key=lambda n: n.id, reverse=True):
            doc: dict = {"nodeId": node.id, "nodeName": node.name.strip()}
            codegen = None if node.members else node.codegen_stage
            if codegen is not None:
                doc["wholeStageCodegenId"] = codegen
            doc["metrics"] = [{"name": m.name.strip(), "value": spark_string(values[m.accumulator])}
                              for m in node.metrics if m.accumulator in values]
            doc["desc"] = node.desc
            nodes.append(doc)
        edges = [{"fromId": a, "toId": b} for a, b in sorted(ex.graph.edges)]
    submitted = ex.submitted or 0
    end = ex.completed if ex.completed is not None else int(time.time() * 1000)
    out = {"id": ex.id, "status": status, "description": ex.description,
           "planDescription": start.get("planDescription", "") if plan_description else "",
           "submissionTime": spark_time(submitted), "duration": end - submitted,
           "runningJobIds": by_status["RUNNING"], "successJobIds": by_status["SUCCEEDED"],
           "failedJobIds": by_status["FAILED"], "nodes": nodes, "edges": edges}
    if "queryId" in start:
        out["queryId"] = start["queryId"]
    if "errorMessage" in start:
        out["errorMessage"] = start["errorMessage"]
    out["rootExecutionId"] = start.get("rootExecutionId", ex.id)
    out["modifiedConfigs"] = start.get("modifiedConfigs", {})
    return out


def execution_list(plans: SqlPlans, starts: dict[int, dict], details: bool, plan_description: bool, offset: int,
                   length: int) -> list[dict]:
    ids = sorted(plans.executions)[max(offset, 0):max(offset, 0) + max(length, 0)]
    return [execution_doc(plans, plans.executions[i], starts.get(i, {}), details, plan_description) for i in ids]
