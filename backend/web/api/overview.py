"""/api/sessions/{sid}/overview and /cores-whatif: the answer first (``backend/views/overview.py``), and how long the
application would take with other core counts (``backend/spark/diagnosis/cores_whatif.py``; not ``/whatif``, which
releases a pointstamp).

Both are computed on the event loop between ingest slices, from the session's blame, marks, task bars and recorded
schedule: a live session's answer is the one as it stands.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from backend.sessions.session import Session
from backend.spark.diagnosis.cores_whatif import cores_whatif, default_cores, parse_cores
from backend.spark_api.catalog import rest_path
from backend.stores import locate
from backend.views.overview import plan_findings_possible, session_overview
from backend.web.api import deps
from backend.web.api.models import Problem
from backend.web.api.plan import plans_json

router = APIRouter(prefix="/api/sessions/{sid}", tags=["overview"])


@router.get("/overview", responses={404: {"model": Problem}},
            summary="The Overview: the application, its slowest times and what held them, the findings, the what-if",
            description="`{application: {name, engine, start, end, duration_s, jobs, times, failed_times, "
                        "streaming_queries, tasks, task_seconds, recorded_cores, idle_cores_pct, rest (a Spark "
                        "event log's /api/v1/applications/<id>[/<attempt>]: Spark's REST API of it), whatif: "
                        "{recorded_cores, 2x: {cores, wall_s, change_pct}, 0.5x: {...}, critical_path_s, "
                        "assumptions} | null}, slowest: [{scope, name, time, job_ids, batch_id, latency_s, start, "
                        "end, top: {kind, seconds, from, to, holder}}], groups: [{kind, label, count, impact_s, "
                        "stages, scopes, worst, recommendation}], findings: [{kind, stage, attempt, scope, batch, "
                        "text, recommendation, metric, threshold, impact_s, impact_note, group, ...}], "
                        "findings_total}` (docs/blame.md, docs/findings.md, docs/cores-whatif.md)")
async def overview(session: Session = Depends(deps.session)):
    planned: dict = {"executions": []}
    if plan_findings_possible(session):  # else no plan could raise one: the plans are not read for them
        try:
            planned = await plans_json(session)
        except HTTPException:  # no plans to read: a session without a Spark log
            pass
    found = [f for ex in planned["executions"] for f in ex["findings"]]
    answer = session_overview(session, found)
    path = getattr(session.feed, "path", None)
    if path is not None and getattr(session.feed, "kind", None) == "spark-event-log":
        # the application's documents in Spark's REST API (backend/spark_api), linked from the Overview
        answer["application"]["rest"] = await run_in_threadpool(rest_path, locate(path))
    return deps.JSON(answer)


@router.get("/cores-whatif", responses={400: {"model": Problem}, 404: {"model": Problem}},
            summary="What if the application had more or fewer cores: the recorded tasks rescheduled on N slots",
            description="`{cores, times: [{scope, time, job_ids, batch_id, latency_s, estimates_s: {N: s}, "
                        "critical_path_s, perfect_parallelism_s}], application: {wall_s, estimates_s, critical_path_s, "
                        "perfect_parallelism_s, recorded_cores, ...}, assumptions: [...]}` (docs/cores-whatif.md)")
async def cores(session: Session = Depends(deps.session),
                cores: str = Query("", description="task slots: 2,4,8,16 or executors x cores such as 2x4 "
                                                   "(default: half, the recorded count, twice and four times)")):
    try:
        specs = parse_cores(cores) if cores.strip() else default_cores(session.schedule.peak_cores or None)
    except ValueError as e:
        raise HTTPException(400, f"cores: {e}") from None
    return deps.JSON(cores_whatif(session.schedule, session.task_timeline, specs, session.blame.times()))
