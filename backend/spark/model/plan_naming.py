"""Which SQL plan operator each stage of a SQL execution ran, followed as the Spark model reads the log.

Blame says it beside a stage ("stage 4.0 · SortMergeJoin #8"). The model keeps, per running SQL execution, its
latest plan tree (``SQLExecutionStart``, replaced by each ``SQLAdaptiveExecutionUpdate``; read only at the end, as
most versions are replaced), which stages its jobs
listed, the codegen stages each stage runs (its RDDs' scopes, from the job's start) and the SQL metrics each stage's
tasks set (the accumulator ids in the ``Accumulables`` of the stage's ``StageCompleted``: Spark lists there every
named accumulator its tasks updated). At the execution's end (or the application's) the stages are named against
the final plan, whose operator ids are those of ``flowscope plan`` and the Plan tab (an adaptive re-plan renumbers
them, so a stage is not named when it completes), by the rules ``flowscope plan`` reads: ``graph.node_stages`` and
``stage_operators.name_stages``. As there, only a stage's attempt Spark's SQL listener would count is read (its
latest submitted attempt, while the execution runs, listed once a plan was known). Unlike ``flowscope plan``, which
keeps the 1,000 latest executions as Spark's UI does, every execution is named (its state forgotten at its end).

At its end an execution's final plan is also checked against the plan findings' rules (``findable``): whether any
could fire, its metrics' values unknown except those only the driver set (``SparkListenerDriverAccumUpdates``,
such as a broadcast's data size), so that ``flowscope report`` reads a log's plans again only when they could
raise a finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from backend.spark.diagnosis.thresholds import Thresholds
from backend.spark.sql_plan.findings import could_find
from backend.spark.sql_plan.graph import PlanGraph, PlanShapeError, build_graph, codegen_stages, node_stages
from backend.spark.sql_plan.plans import driver_updates
from backend.spark.sql_plan.stage_operators import name_stages

__all__ = ["PlanNaming", "PLAN_TEXT"]

PLAN_TEXT = "sparkPlanInfo text"  # a slim decode's field: the event's ``sparkPlanInfo`` as its JSON text


@dataclass(slots=True)
class _Execution:
    id: int
    plan: Any = None  # its latest ``sparkPlanInfo`` (its JSON text from a slim decode), read at its end
    stages: dict[int, None] = field(default_factory=dict)  # its jobs' stages
    ran_in: dict[int, dict[int, None]] = field(default_factory=dict)  # accumulator -> stages whose tasks set it
    codegen_in: dict[str, dict[int, None]] = field(default_factory=dict)  # "WholeStageCodegen (n)" -> stages
    driver: dict[int, int] = field(default_factory=dict)  # accumulator -> the driver's updates, summed


def _id(value: Any) -> int | None:
    """An id as Spark writes it: an integer, or (a job property) its decimal string."""
    if type(value) is int:
        return value
    if type(value) is str:
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


class PlanNaming:
    """The plan operator of each stage of the SQL executions (see the module docstring)."""

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        """``thresholds``: the plan findings' (what ``findable`` is checked against; default: the table's)."""
        self.thresholds = thresholds
        self.findable = False  # the last ended execution's plan could raise a plan finding
        self.executions: dict[int, _Execution] = {}  # running (not yet ended) executions
        self.stage_exec: dict[int, _Execution] = {}  # stage id -> the running execution whose job listed it
        self.attempt: dict[int, int] = {}  # stage id -> the attempt counted (a stage listed once the plan was known)
        self.stage_codegen: dict[int, list[str]] = {}  # stage id -> the codegen stages its RDDs' scopes name

    def _execution(self, eid: int) -> _Execution:
        ex = self.executions.get(eid)
        if ex is None:
            ex = self.executions[eid] = _Execution(eid)
        return ex

    def plan(self, event: dict) -> None:
        """A ``SQLExecutionStart`` or ``SQLAdaptiveExecutionUpdate``: its plan replaces the execution's."""
        eid = _id(event.get("executionId"))
        info = event.get(PLAN_TEXT)
        if type(info) is not str:
            info = event.get("sparkPlanInfo")
            info = info if isinstance(info, dict) else None
        if eid is not None and info is not None:
            self._execution(eid).plan = info

    def job_started(self, execution: Any, infos: list, stage_ids: Any) -> None:
        """A job of SQL execution ``execution`` (its ``spark.sql.execution.id``, None outside one) started."""
        eid = _id(execution)
        if eid is None:
            return
        ex = self._execution(eid)
        for info in infos:
            sid = info.get("Stage ID")
            if type(sid) is not int:
                continue
            if ex.plan is not None:
                self.attempt[sid] = 0
            self.stage_codegen[sid] = codegen_stages(info.get("RDD Info"))
        for sid in stage_ids if isinstance(stage_ids, list) else ():
            if type(sid) is int:
                ex.stages[sid] = None
                self.stage_exec[sid] = ex

    def stage_submitted(self, sid: int, attempt: int) -> None:
        ex = self.stage_exec.get(sid)
        if ex is None:
            return
        for name in self.stage_codegen.get(sid, ()):
            ex.codegen_in.setdefault(name, {})[sid] = None
        if sid in self.attempt:
            self.attempt[sid] = attempt

    def stage_completed(self, sid: int, attempt: int, accumulables: Any) -> None:
        """A stage attempt ended; ``accumulables``: its ``Stage Info``'s, the accumulators its tasks updated."""
        ex = self.stage_exec.get(sid)
        if ex is None or self.attempt.get(sid) != attempt or not isinstance(accumulables, list):
            return
        ran_in = ex.ran_in
        for acc in accumulables:
            aid = acc.get("ID") if type(acc) is dict else None
            if type(aid) is int:  # Spark writes a long
                got = ran_in.get(aid)
                if got is None:
                    ran_in[aid] = {sid: None}
                else:
                    got[sid] = None

    def driver_updated(self, event: dict) -> None:
        """A ``SparkListenerDriverAccumUpdates``: metrics the driver set (a file scan's files, a broadcast's size)."""
        ex = self.executions.get(_id(event.get("executionId")))  # type: ignore[arg-type]
        if ex is not None:
            for acc, value in driver_updates(event):
                ex.driver[acc] = ex.driver.get(acc, 0) + value

    def _findable(self, ex: _Execution, graph: PlanGraph) -> bool:
        """Whether a plan finding could fire on the execution's final plan: a metric only the driver set (no
        task did) has its value, any other may have any."""
        def value(acc: int) -> float | None:
            return ex.driver.get(acc, 0) if acc not in ex.ran_in else None

        return any(could_find(n.name, n.desc, {m.name.strip(): value(m.accumulator) for m in n.metrics},
                              self.thresholds)
                   for n in graph.nodes.values() if not n.is_codegen)

    def operator_of(self, sid: int, accumulator: int) -> str | None:
        """The name of the plan operator declaring SQL metric ``accumulator``, in the latest plan of the running
        execution whose job listed stage ``sid`` (a Python finding names the operator its time came from); None when
        no plan says. Adaptive re-plans keep an operator's metrics, so the latest plan has it."""
        ex = self.stage_exec.get(sid)
        if ex is None or ex.plan is None:
            return None
        try:
            plan = orjson.loads(ex.plan) if isinstance(ex.plan, str) else ex.plan
            graph = build_graph(plan)
        except (PlanShapeError, RecursionError, orjson.JSONDecodeError):
            return None
        for node in graph.nodes.values():
            if any(m.accumulator == accumulator for m in node.metrics):
                return node.name.strip()
        return None

    def execution_ended(self, execution: Any) -> dict[int, dict]:
        """The naming of an ended execution's stages (``{stage id: {execution, id, name, operators}}``); the
        execution is forgotten. ``findable`` says whether a plan finding could fire on its final plan
        (``sql_plan/findings.could_find``), what a reader checks before reading the log's plans for them."""
        self.findable = False
        eid = _id(execution)
        ex = self.executions.pop(eid, None) if eid is not None else None
        if ex is None:
            return {}
        for sid in ex.stages:
            if self.stage_exec.get(sid) is ex:
                del self.stage_exec[sid]
                self.attempt.pop(sid, None)
                self.stage_codegen.pop(sid, None)
        try:
            plan = orjson.loads(ex.plan) if isinstance(ex.plan, str) else ex.plan
            graph = build_graph(plan) if plan is not None else None
        except (PlanShapeError, RecursionError, orjson.JSONDecodeError):  # not a tree: ``flowscope plan`` says so
            graph = None
        if graph is None:
            return {}
        self.findable = self._findable(ex, graph)
        return name_stages(ex.id, ((n.id, n.name.strip(), node_stages(n, ex.ran_in, ex.codegen_in))
                                   for n in graph.nodes.values() if not n.is_codegen))

    def running(self) -> list[int]:
        """The executions that have not ended."""
        return list(self.executions)
