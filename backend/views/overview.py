"""The Overview: what a person opening an application wants first, each line pointing at a time and a holder.

One answer for the page's Overview (``GET /api/sessions/{sid}/overview``), ``flowscope report`` and the bundle:

* ``application``: its wall time, jobs, completed times (jobs, micro-batches), streaming queries, tasks, recorded
  cores, idle cores (task slots idle over the wall time), and the cores what-if's line for twice and half the cores;
* ``slowest``: the slowest completed times with the blame segment that held each longest (its holder, from, to);
* ``findings``: every timeline mark with a ``finding`` (stragglers and skew from the Spark model, and whatever
  else raises one), the SQL plans' findings and the progress contract's, each with what to change
  (``recommendation``), the figure that fired (``metric``), the rule it passed (``threshold``), its impact
  (``impact_s``, ``impact_note``: ``backend/spark/diagnosis/impact.py``) and its ``group``;
* ``groups``: the findings folded by kind and stage signature (``backend/spark/diagnosis/groups.py``), ranked by
  their summed impact; ``findings`` lists every finding in that order.

A progress log from another engine gets what applies to it: its slowest times, their blame, the contract findings
(no tasks: no what-if, no idle cores).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from backend.spark.diagnosis.blame import plan_operators as blamed_plan_operators
from backend.spark.diagnosis.cores_whatif import CoresSpec, cores_whatif
from backend.spark.diagnosis.groups import group_findings
from backend.spark.diagnosis.impact import ImpactContext, estimate
from backend.spark.diagnosis.recorded_schedule import RecordedSchedule
from backend.spark.diagnosis.task_timeline import TaskTimeline
from backend.spark.diagnosis.tasks import SKEW_FINDING, STRAGGLER_FACTOR, STRAGGLER_MIN_S
from backend.views.projections import mark_json

__all__ = ["build_overview", "session_overview", "plan_operators_of", "plan_findings_possible", "execution_scopes",
           "SLOWEST"]

SLOWEST = 5  # slowest times listed

# What to change, for the findings whose marks do not say it themselves (the Spark model's stragglers and skew)
_RECOMMEND = {
    "straggler": "If it read far more than the median, spread the data (repartition on a better key, salt hot keys; "
                 "spark.sql.adaptive.skewJoin.enabled=true for joins); if it read about the median, look at its "
                 "executor (spark.speculation=true re-runs such tasks elsewhere).",
    "skew": "Spread the stage's input evenly: repartition on a better key or salt hot keys; for joins "
            "spark.sql.adaptive.skewJoin.enabled=true lets adaptive execution split the large partitions.",
}
_CONTRACT_RECOMMEND = "The producer broke the progress contract here: check the records it wrote at this batch."
_CONTRACT_IMPACT = "a broken progress contract costs no time: it makes the frontiers shown wrong"
# a Spark stage resubmitted after lost output takes back a passed frontier: Spark recomputing lineage, not a bug in
# the log (docs/spark-model.md)
_RESUBMITTED = ("Spark re-ran a stage whose output was lost (a resubmitted stage attempt): not a bug in the log; "
                "blame's recompute segments say why (a lost executor, a fetch failure). If it recurs, look at the "
                "executors' losses (memory, spark.executor.memoryOverhead) or keep shuffle output safe "
                "(spark.shuffle.service.enabled=true).")


def _straggler_figures(m: dict) -> tuple[dict, dict]:
    d, med = m.get("duration_s") or 0.0, m.get("median_task_s") or 0.0
    metric = {"duration_s": d, "median_task_s": med, "ratio": round(d / med, 2) if med else None}
    return metric, {"factor": STRAGGLER_FACTOR, "min_excess_s": STRAGGLER_MIN_S}


def _skew_figures(m: dict) -> tuple[dict, dict]:
    s = m.get("summary") or {}
    d = s.get("duration_s") or {}
    metric = {"skew": s.get("skew"), "tasks": s.get("tasks"), "median_task_s": d.get("median"),
              "max_task_s": d.get("max")}
    return metric, {"skew": SKEW_FINDING, "min_tasks": 4}


_FIGURES = {"straggler": _straggler_figures, "skew": _skew_figures}


def _finding_row(m: dict, impacts: ImpactContext, named: dict[int, dict]) -> dict:
    """A finding mark as the Overview lists it, with its impact (``impact.py``) and, for a SQL stage, the plan
    operator it ran (what groups it)."""
    kind = m["finding"]
    row = mark_json(m)  # what the page needs to open it (scope, node, after, time, ended_at, ...)
    row.pop("summary", None)  # a skewed stage's whole aggregate: the marks' API has it, the metric says enough
    row.pop("label", None)  # it is the row's ``text``
    metric, threshold = m.get("metric"), m.get("threshold")
    if kind in _FIGURES and (metric is None or threshold is None):
        own_metric, own_threshold = _FIGURES[kind](m)
        metric = own_metric if metric is None else metric
        threshold = own_threshold if threshold is None else threshold
    row.update({"kind": kind, "stage": m.get("stage"), "attempt": m.get("attempt"), "scope": m.get("scope") or [],
                "batch": m.get("after"), "text": str(m.get("label", "")),
                "recommendation": m.get("recommendation") or _RECOMMEND.get(kind),
                "metric": metric or {}, "threshold": threshold or {}})
    if m.get("stage") in named:
        row["plan_operator"] = named[m["stage"]]
    row.update(estimate(m, impacts).to_json())
    return row


def _plan_row(f: dict, impacts: ImpactContext) -> dict:
    """A SQL plan finding (``sql_plan/findings.py``, as the plan route answers it) as the Overview lists it."""
    row = {"kind": f["finding"], "stage": f.get("stage"), "attempt": None, "scope": f.get("scope") or [],
           "batch": None, "text": str(f.get("label", "")), "recommendation": f.get("recommendation"),
           "metric": {"name": f.get("metric"), "value": f.get("value")}, "threshold": f.get("threshold") or {},
           "execution": f.get("execution"), "operator": f.get("operator"), "operator_name": f.get("operator_name"),
           "description": f.get("description"), "stages": f.get("stages") or [], "plan": True}
    row.update(estimate(f, impacts).to_json())
    return row


def _contract_row(f: Any) -> dict:
    b = f.batch.to_json()
    index = b.get("index")
    cause = b.get("cause") if isinstance(b.get("cause"), dict) else {}
    resubmitted = cause.get("event") == "StageSubmitted" and bool(cause.get("attempt"))
    return {"kind": f.kind, "stage": cause.get("stage") if resubmitted else None,
            "attempt": cause.get("attempt") if resubmitted else None, "scope": list(f.scope),
            "batch": index + 1 if isinstance(index, int) else None, "text": f.message,
            "recommendation": _RESUBMITTED if resubmitted else _CONTRACT_RECOMMEND,
            "metric": {"port": f.location.to_json(), "time": f.time},
            "threshold": {}, "contract": True, "port": f.location.to_json(), "time": f.time,
            "impact_s": None, "impact_note": _CONTRACT_IMPACT}


def _slowest_row(t: Any) -> dict:
    row = t.to_json()
    segments = row.pop("blame")
    top = max(segments, key=lambda s: s["seconds"], default=None)
    row["top"] = top
    row["segments"] = len(segments)
    return row


def _whatif_line(schedule: RecordedSchedule, timeline: TaskTimeline, impacts: ImpactContext) -> dict | None:
    """The application's estimated wall time at twice and half its recorded cores (None: no cores recorded)."""
    recorded = schedule.peak_cores
    if not recorded or not len(timeline):
        return None
    double, half = CoresSpec(str(2 * recorded), 2 * recorded), CoresSpec(str(max(1, recorded // 2)),
                                                                         max(1, recorded // 2))
    answer = cores_whatif(schedule, timeline, [double, half], rescheduler=impacts.rescheduler)
    app = answer["application"]
    wall = app["wall_s"]

    def line(spec: CoresSpec) -> dict:
        est = app["estimates_s"][spec.label]
        return {"cores": spec.slots, "wall_s": est,
                "change_pct": round(100.0 * (est - wall) / wall, 1) if wall > 0 else None}

    return {"recorded_cores": recorded, "2x": line(double), "0.5x": line(half),
            "critical_path_s": app["critical_path_s"], "assumptions": answer["assumptions"]}


def build_overview(name: str, times: list[Any], marks: Iterable[dict], contract_findings: Iterable[Any],
                   schedule: RecordedSchedule, timeline: TaskTimeline, slowest: int = SLOWEST,
                   plan_findings: Iterable[dict] = (), plan_operators: dict[int, dict] | None = None) -> dict:
    """The Overview's answer (see the module docstring) from a replay's blamed ``times``, its finding ``marks``
    and contract findings, the cores what-if's inputs, the SQL plans' findings (each with its execution's
    ``description`` and its ``operator_name``) and the plan operator each SQL stage ran (``plan_operators``)."""
    impacts = ImpactContext(schedule, timeline, times)
    named = plan_operators or {}
    rows = [_finding_row(m, impacts, named) for m in marks if isinstance(m.get("finding"), str)]
    rows += [_plan_row(f, impacts) for f in plan_findings]
    rows += [_contract_row(f) for f in contract_findings]
    groups, found = group_findings(rows)
    tasks = len(timeline)
    spark = bool(schedule.jobs or tasks)
    whatif = _whatif_line(schedule, timeline, impacts) if spark else None
    bars = timeline.index.bars
    task_s = sum(e - s for s, e in zip(bars.launched, bars.ended, strict=True) if e == e)
    wall = schedule.wall_s
    cores = schedule.peak_cores or None
    queries = {tuple(t.scope[:1]) for t in times if t.batch_id is not None}
    application = {
        "name": name, "engine": "spark" if spark else "progress-log",
        "start": schedule.first_at, "end": schedule.last_at, "duration_s": round(wall, 6),
        "jobs": len(schedule.jobs), "times": len(times), "failed_times": sum(1 for t in times if t.failure),
        "streaming_queries": len(queries), "tasks": tasks, "task_seconds": round(task_s, 6),
        "recorded_cores": cores,
        "idle_cores_pct": (round(max(0.0, 100.0 * (1 - task_s / (cores * wall))), 1) if cores and wall > 0
                           else None),
        "whatif": whatif,
    }
    return {"application": application,
            "slowest": [_slowest_row(t) for t in sorted(times, key=lambda t: -t.latency_s)[:max(0, slowest)]],
            "groups": groups, "findings": found, "findings_total": len(found)}


def plan_operators_of(marks: Iterable[dict]) -> tuple[dict[int, dict], bool]:
    """``{stage id: plan operator}`` from the Spark model's ``plan_operators`` marks (one per SQL execution), and
    whether one says its execution's plan could raise a plan finding (``plan_findings``): else the log's plans need
    not be read for them."""
    out: dict[int, dict] = {}
    findable = False
    for m in marks:
        named = m.get("plan_operators")
        if type(named) is dict:
            findable = findable or m.get("plan_findings") is True
            for stage, op in named.items():
                if str(stage).isdigit() and type(op) is dict:
                    out[int(stage)] = op
    return out, findable


def execution_scopes(root: Any) -> dict[int, list[int]]:
    """Each SQL execution's region in the job graph (the Spark model names it ``SQL execution N``) under the
    replay's ``root`` scope."""
    out = {}
    for scope in root.scopes():
        name = scope.name or ""
        if name.startswith("SQL execution ") and name[len("SQL execution "):].isdigit():
            out[int(name[len("SQL execution "):])] = list(scope.path)
    return out


def plan_findings_possible(session: Any) -> bool:
    """Whether a session's Spark model said some SQL execution's plan could raise a plan finding (so the Overview
    reads its plans for them)."""
    return plan_operators_of(session.replay.marks)[1]


def session_overview(session: Any, plan_findings: Iterable[dict] = ()) -> dict:
    """The Overview of a server session (what ``GET .../overview`` answers), as it stands, with its SQL plans'
    findings (``plan_findings``: the plan route's, which the caller read where ``plan_findings_possible``)."""
    replay = session.replay
    marks = (replay.marks[i] for i in replay.finding_marks)
    return build_overview(session.name, session.blame.times(), marks, replay.findings, session.schedule,
                          session.task_timeline, plan_findings=plan_findings,
                          plan_operators=blamed_plan_operators(session.blame))
