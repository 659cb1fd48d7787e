"""Every SQL execution of a Spark application: its latest plan graph and its operators' combined metrics.

Fed the application's listener events in log order (:meth:`SqlPlans.feed`), it keeps per execution the plan from
``SQLExecutionStart`` replaced by each ``SQLAdaptiveExecutionUpdate``, the metric types of every plan version and
of ``SQLAdaptiveSQLMetricUpdates``, and the stage tables and driver updates ``metrics`` combines (the rules are
listed there). :meth:`SqlPlans.execution_json` is the answer ``flowscope plan --json`` prints and the REST API
serves. A plan that is not a tree is reported with its line and skipped; the rest of the log still counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backend.spark.diagnosis.thresholds import Thresholds
from backend.spark.sql_plan.findings import plan_findings
from backend.spark.sql_plan.graph import PlanGraph, PlanShapeError, build_graph, codegen_stages, node_stages
from backend.spark.sql_plan.metrics import Combined, StageTable, combine
from backend.spark.sql_plan.operator_time import operator_time

__all__ = ["SqlPlans", "Execution", "SQL_EVENTS", "DRIVER", "driver_updates"]

_UI = "org.apache.spark.sql.execution.ui."
START = _UI + "SparkListenerSQLExecutionStart"
END = _UI + "SparkListenerSQLExecutionEnd"
ADAPTIVE = _UI + "SparkListenerSQLAdaptiveExecutionUpdate"
ADAPTIVE_METRICS = _UI + "SparkListenerSQLAdaptiveSQLMetricUpdates"
DRIVER = _UI + "SparkListenerDriverAccumUpdates"
SQL_EVENTS = (START, END, ADAPTIVE, ADAPTIVE_METRICS, DRIVER)
RETAINED_EXECUTIONS = 1000  # as spark.sql.ui.retainedExecutions: the oldest finished ones are forgotten
SERIES_POINTS = 512  # a metric's updates over time kept at most this many points (neighbours merged beyond)


@dataclass(slots=True)
class Execution:
    id: int
    description: str = ""
    submitted: int | None = None
    completed: int | None = None
    graph: PlanGraph | None = None
    plan_updates: int = 0
    types: dict[int, str] = field(default_factory=dict)  # every metric any version of its plan declared
    jobs: dict[int, str] = field(default_factory=dict)  # job id -> RUNNING | SUCCEEDED | FAILED
    stages: dict[int, None] = field(default_factory=dict)  # its jobs' stages, in the order they came
    driver: dict[int, list[int]] = field(default_factory=dict)
    ran_in: dict[int, dict[int, None]] = field(default_factory=dict)  # accumulator -> stages whose tasks set it
    codegen_in: dict[str, dict[int, None]] = field(default_factory=dict)  # "WholeStageCodegen (n)" -> stages run
    series: dict[int, list[list[int]]] = field(default_factory=dict)  # accumulator -> [[time ms, update], ...]
    final: dict[int, Combined] | None = None  # combined at its end
    problem: str | None = None


def spark_set_order(stages: list[int]) -> list[int]:
    """The order Spark's listener visits an execution's stages in (a Scala immutable ``Set[Int]``, which decides
    which of two stages with the same maximum is named): insertion order up to 4 elements, beyond that the hash
    trie's order (each level's 5 bits of Scala's improved hash, single entries before deeper branches)."""
    if len(stages) <= 4:
        return stages

    def improved(x: int) -> int:  # scala.collection.Hashing.improve, in 32-bit arithmetic
        m = 0xFFFFFFFF
        h = (x + ~(x << 9)) & m
        h ^= h >> 14
        h = (h + (h << 4)) & m
        return h ^ (h >> 10)

    def order(xs: list[int], level: int) -> list[int]:
        groups: dict[int, list[int]] = {}
        for x in xs:
            groups.setdefault((improved(x) >> (5 * level)) & 31, []).append(x)
        single = [g[0] for _, g in sorted(groups.items()) if len(g) == 1]
        deeper = [y for _, g in sorted(groups.items()) if len(g) > 1 for y in order(g, level + 1)]
        return single + deeper

    return order(stages, 0)


def _append_point(points: list[list[int]], at: int, value: int) -> None:
    """One update of a metric at a time; past :data:`SERIES_POINTS`, neighbouring points merge (their updates
    added, the later time kept), so a long execution's series stays small and its totals stay exact."""
    points.append([at, value])
    if len(points) > SERIES_POINTS:
        points[:] = [[b[0], a[1] + b[1]] for a, b in zip(points[::2], points[1::2], strict=False)] + \
            ([points[-1]] if len(points) % 2 else [])


def driver_updates(e: dict) -> list[tuple[int, int]]:
    """A ``SparkListenerDriverAccumUpdates``' ``(accumulator, value)`` pairs (a list of pairs, or an object)."""
    updates = e.get("accumUpdates")
    pairs = updates.items() if isinstance(updates, dict) else updates if isinstance(updates, list) else []
    out = []
    for pair in pairs:
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            acc, value = _int(pair[0]), _int(pair[1])
            if acc is not None and value is not None:
                out.append((acc, value))
    return out


def _dict(value: Any) -> dict:
    """A field that should be an object: itself, or empty when the log has something else there."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


class SqlPlans:
    """The SQL executions of one application, from its events (see the module docstring)."""

    def __init__(self) -> None:
        self.executions: dict[int, Execution] = {}
        self.tables: dict[int, StageTable] = {}  # stage id -> its current attempt's metric table
        self.stage_exec: dict[int, Execution] = {}  # stage id -> the running execution whose job listed it
        self.job_exec: dict[int, Execution] = {}  # running job id -> its execution
        self.stage_codegen: dict[int, list[str]] = {}  # stage id -> the codegen stages its RDDs' scopes name
        self.running: dict[int, dict[int, int]] = {}  # stage id -> {task id: launch time (ms)}
        self.problems: list[str] = []  # bad plans and values, each with its line
        self.last_time: int | None = None  # the latest task launch or finish seen (ms): "now" for a running log

    # --- events ----------------------------------------------------------------------------------------------------

    def feed(self, event: dict, line: int | None = None) -> None:
        kind = event.get("Event")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, event, line)

    def _problem(self, line: int | None, text: str) -> None:
        self.problems.append((f"line {line}: " if line is not None else "") + text)

    def _execution(self, event: dict, line: int | None, create: bool = True) -> Execution | None:
        eid = _int(event.get("executionId"))
        if eid is None:
            self._problem(line, f"{str(event.get('Event')).rsplit('.', 1)[-1]} without an executionId")
            return None
        ex = self.executions.get(eid)
        if ex is None and create:
            ex = self.executions[eid] = Execution(eid)
            self._forget_oldest()
        return ex

    def _forget_oldest(self) -> None:
        if len(self.executions) <= RETAINED_EXECUTIONS:
            return
        for eid, ex in self.executions.items():
            if ex.final is not None:
                del self.executions[eid]
                return

    def _plan(self, ex: Execution, info: Any, line: int | None) -> None:
        try:
            graph = build_graph(info)
        except RecursionError:
            e = PlanShapeError("the plan is nested too deeply to read")
            ex.problem = str(e)
            self._problem(line, f"SQL execution {ex.id}: its plan is skipped: {e}")
            return
        except PlanShapeError as e:
            ex.problem = str(e)
            self._problem(line, f"SQL execution {ex.id}: its plan is skipped: {e}")
            return
        ex.graph = graph
        for acc, metric in graph.accumulators().items():
            ex.types[acc] = metric.type

    def _on_start(self, e: dict, line: int | None) -> None:
        ex = self._execution(e, line)
        if ex is None:
            return
        ex.description = str(e.get("description") or "")
        ex.submitted = _int(e.get("time"))
        self._plan(ex, e.get("sparkPlanInfo"), line)

    def _on_adaptive(self, e: dict, line: int | None) -> None:
        ex = self._execution(e, line)
        if ex is None:
            return
        ex.plan_updates += 1
        self._plan(ex, e.get("sparkPlanInfo"), line)

    def _on_adaptive_metrics(self, e: dict, line: int | None) -> None:
        ex = self._execution(e, line)
        if ex is None:
            return
        for m in _list(e.get("sqlPlanMetrics")):
            acc = _int(m.get("accumulatorId")) if isinstance(m, dict) else None
            if acc is not None:
                ex.types[acc] = str(m.get("metricType") or "sum")

    def _on_driver(self, e: dict, line: int | None) -> None:
        ex = self._execution(e, line, create=False)
        if ex is None or ex.final is not None:
            return
        for acc, value in driver_updates(e):
            ex.driver.setdefault(acc, []).append(value)
            if acc in ex.types:
                _append_point(ex.series.setdefault(acc, []), self.last_time or 0, value)

    def _on_end(self, e: dict, line: int | None) -> None:
        ex = self._execution(e, line, create=False)
        if ex is None or ex.final is not None:
            return
        ex.completed = _int(e.get("time"))
        ex.final = self._combine(ex)
        for sid in ex.stages:  # as Spark's listener drops the stage tables of an execution that ended
            if self.stage_exec.get(sid) is ex:
                del self.stage_exec[sid]
                self.tables.pop(sid, None)

    def _live_stage(self, stage: int) -> bool:
        ex = self.stage_exec.get(stage)
        return ex is not None and ex.final is None

    def _on_job_start(self, e: dict, line: int | None) -> None:
        eid = _int(_dict(e.get("Properties")).get("spark.sql.execution.id"))
        job = _int(e.get("Job ID"))
        if eid is None or job is None:
            return
        ex = self.executions.get(eid)
        if ex is None:
            ex = self.executions[eid] = Execution(eid)
        if ex.types:
            for info in map(_dict, _list(e.get("Stage Infos"))):
                sid, n = _int(info.get("Stage ID")), _int(info.get("Number of Tasks"))
                if sid is not None:
                    self.tables[sid] = StageTable(sid, 0, max(n or 0, 0))
        ex.jobs[job] = "RUNNING"
        self.job_exec[job] = ex
        for info in map(_dict, _list(e.get("Stage Infos"))):
            sid = _int(info.get("Stage ID"))
            if sid is not None:
                self.stage_codegen[sid] = codegen_stages(info.get("RDD Info"))
        for sid in _list(e.get("Stage IDs")):
            if _int(sid) is not None:
                ex.stages[int(sid)] = None
                if ex.final is None:
                    self.stage_exec[int(sid)] = ex

    def _on_job_end(self, e: dict, line: int | None) -> None:
        job = _int(e.get("Job ID"))
        result = _dict(e.get("Job Result")).get("Result")
        ex = self.job_exec.pop(job, None) if job is not None else None
        if ex is not None and job in ex.jobs:
            ex.jobs[job] = "SUCCEEDED" if result == "JobSucceeded" else "FAILED"

    def _on_stage_submitted(self, e: dict, line: int | None) -> None:
        info = _dict(e.get("Stage Info"))
        sid, attempt = _int(info.get("Stage ID")), _int(info.get("Stage Attempt ID")) or 0
        if sid is None or not self._live_stage(sid):
            return
        ex = self.stage_exec[sid]
        for name in self.stage_codegen.get(sid, ()):  # the stage runs these codegen stages (its RDDs' scopes)
            ex.codegen_in.setdefault(name, {})[sid] = None
        table = self.tables.get(sid)
        if table is not None and table.attempt != attempt:
            self.tables[sid] = StageTable(sid, attempt, table.tasks)

    def _on_task_start(self, e: dict, line: int | None) -> None:
        info = _dict(e.get("Task Info"))
        sid, tid = _int(e.get("Stage ID")), _int(info.get("Task ID"))
        if sid is not None and tid is not None:
            launch = _int(info.get("Launch Time")) or 0
            self.running.setdefault(sid, {})[tid] = launch
            self.last_time = max(self.last_time or 0, launch)

    def _on_task_end(self, e: dict, line: int | None) -> None:
        info = _dict(e.get("Task Info"))
        sid, tid = _int(e.get("Stage ID")), _int(info.get("Task ID"))
        if sid is None or tid is None:
            return
        finish = _int(info.get("Finish Time"))
        if finish:
            self.last_time = max(self.last_time or 0, finish)
        running = self.running.get(sid)
        if running is not None:
            running.pop(tid, None)
            if not running:
                del self.running[sid]
        if not self._live_stage(sid):
            return
        table = self.tables.get(sid)
        if table is None or table.attempt != (_int(e.get("Stage Attempt ID")) or 0):
            return
        updates = []
        for acc in _list(info.get("Accumulables")):
            if not isinstance(acc, dict) or "Update" not in acc:
                continue
            aid, value = _int(acc.get("ID")), _int(acc.get("Update"))
            if aid is not None and value is not None:
                updates.append((aid, value))
        index = _int(info.get("Index"))
        if index is None:
            return
        ok = not info.get("Failed") and not info.get("Killed") and bool(finish)
        ex = self.stage_exec[sid]
        types = ex.types
        taken = table.update(tid, index, ok, updates, types)
        for aid, value in updates:
            if aid in types:
                ex.ran_in.setdefault(aid, {})[sid] = None
                if ok and taken:
                    _append_point(ex.series.setdefault(aid, []), finish or 0, value)

    # --- answers ---------------------------------------------------------------------------------------------------

    def _combine(self, ex: Execution) -> dict[int, Combined]:
        tables = [self.tables[s] for s in spark_set_order(list(ex.stages)) if s in self.tables]
        out = {}
        for acc, kind in ex.types.items():
            got = combine(kind, tables, acc, ex.driver.get(acc, []))
            if got is not None:
                out[acc] = got
        return out

    def values(self, ex: Execution) -> dict[int, Combined]:
        """Its combined metrics: frozen at its end, else as they stand."""
        return ex.final if ex.final is not None else self._combine(ex)

    def execution_json(self, ex: Execution, thresholds: Thresholds | None = None, series: bool = False) -> dict:
        """One execution as ``flowscope plan --json`` prints it (see README); with ``series``, each metric of a
        summed kind (sum, size, timing, nsTiming) also has ``series``: ``[[time ms, running total], ...]`` as its
        tasks (and the driver) reported it, for the Plan tab's picture of it growing."""
        values = self.values(ex)
        nodes = []
        graph = ex.graph
        if graph is not None:
            for node in graph.nodes.values():
                metrics = []
                for m in node.metrics:
                    got = values.get(m.accumulator)
                    if got is not None:
                        metrics.append({"name": m.name.strip(), "accumulator": m.accumulator, **got.to_json()})
                        if series and got.type != "average":
                            metrics[-1]["series"] = _running_total(ex.series.get(m.accumulator, []), got.type)
                stages = node_stages(node, ex.ran_in, ex.codegen_in)
                out = {"id": node.id, "name": node.name.strip(), "desc": node.desc,
                       "children": graph.children(node.id), "codegen_stage": node.codegen_stage,
                       "stages": sorted(stages), "metrics": metrics,
                       "time": operator_time(node.name, metrics)}
                if node.is_codegen:
                    out["members"] = list(node.members)
                if node.metadata:
                    out["metadata"] = node.metadata
                launches = [launch for s in stages for launch in self.running.get(s, {}).values()]
                if launches and ex.final is None:  # its stages' tasks still running, the longest so far
                    longest = ((self.last_time or 0) - min(launches)) / 1000
                    out["running"] = {"tasks": len(launches), "longest_s": round(max(longest, 0.0), 3)}
                nodes.append(out)
        body = {"execution": ex.id, "description": ex.description, "submitted": ex.submitted,
                "completed": ex.completed, "plan_updates": ex.plan_updates,
                "jobs": sorted(ex.jobs), "stages": sorted(ex.stages), "nodes": nodes}
        if ex.problem:
            body["problem"] = ex.problem
        body["findings"] = plan_findings(body, thresholds)
        return body

    def to_json(self, execution: int | None = None, thresholds: Thresholds | None = None,
                series: bool = False) -> dict:
        picked = [ex for eid, ex in sorted(self.executions.items()) if execution is None or eid == execution]
        return {"executions": [self.execution_json(ex, thresholds, series) for ex in picked]}


def _running_total(points: list[list[int]], kind: str) -> list[list[float]]:
    """A metric's updates in time order as a running total (-1, Spark's "not set", left out; ns shown as ms)."""
    total = 0
    out: list[list[float]] = []
    for at, value in sorted(points, key=lambda p: p[0]):
        if kind != "sum" and value < 0:
            continue
        total += value
        out.append([at, total // 1_000_000 if kind == "nsTiming" else total])
    return out


_HANDLERS = {
    START: SqlPlans._on_start,
    ADAPTIVE: SqlPlans._on_adaptive,
    ADAPTIVE_METRICS: SqlPlans._on_adaptive_metrics,
    DRIVER: SqlPlans._on_driver,
    END: SqlPlans._on_end,
    "SparkListenerJobStart": SqlPlans._on_job_start,
    "SparkListenerJobEnd": SqlPlans._on_job_end,
    "SparkListenerStageSubmitted": SqlPlans._on_stage_submitted,
    "SparkListenerTaskStart": SqlPlans._on_task_start,
    "SparkListenerTaskEnd": SqlPlans._on_task_end,
}
