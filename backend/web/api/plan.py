"""/api/sessions/{sid}/plan: a Spark session's SQL executions' physical plans (``backend/spark/sql_plan``), for the
Plan tab; the same JSON as ``flowscope plan --json``.

The plans are read from the session's event log when asked (in a worker thread), and kept until the log changes
(its size or modification time; a growing log is read again at most every ``REREAD_AFTER_S``): the Spark model does
not carry the tasks' SQL accumulators. A live application's are its feed's (``SparkLiveFeed.plans``), growing as
its executions start and end. The blame route names the plan operator of a stage from them.
The plan findings use the thresholds of the session's Spark model, as its other findings do.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from backend.sessions.session import Session
from backend.spark.diagnosis.thresholds import Thresholds, configured
from backend.spark.sql_plan.layout import plan_layout
from backend.spark.sql_plan.plans import SqlPlans
from backend.spark.sql_plan.read import read_plans
from backend.views.overview import execution_scopes
from backend.web.api import deps
from backend.web.api.models import Problem

router = APIRouter(prefix="/api/sessions/{sid}", tags=["plan"])

_READ: dict[str, tuple[tuple, float, SqlPlans, list[str]]] = {}  # log path -> (stamp, read at, plans, problems)
_KEEP = 8
REREAD_AFTER_S = 5.0  # a log that grows (a followed application) is read again at most this often


def _stamp(path: Path) -> tuple:
    if path.is_dir():
        return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in path.iterdir()))
    st = path.stat()
    return (st.st_size, st.st_mtime_ns)


def _plans_of(path: Path) -> tuple[SqlPlans, list[str]]:
    key = os.fspath(path)
    stamp = _stamp(path)
    got = _READ.get(key)
    if got is None or (got[0] != stamp and time.monotonic() - got[1] >= REREAD_AFTER_S):
        plans, problems = read_plans(path)
        _READ[key] = (stamp, time.monotonic(), plans, problems)
        while len(_READ) > _KEEP:
            del _READ[next(iter(_READ))]
        return plans, problems
    return got[2], got[3]


async def session_plans(session: Session) -> tuple[SqlPlans, list[str], Any] | None:
    """The SQL plans of a session: a live application's as its feed follows them, else its Spark event log's
    (read in a worker thread, kept); with the problems read and the lock to read the plans under (None: no one
    changes them); None for a session with neither."""
    live = getattr(session.feed, "plans", None)
    if isinstance(live, SqlPlans):
        return live, [], getattr(session.feed, "plans_lock", None)
    path = getattr(session.feed, "path", None)
    if not isinstance(path, Path) or not path.exists():
        return None
    plans, problems = await run_in_threadpool(_plans_of, path)
    return plans, problems, None


async def plans_json(session: Session, execution: int | None = None, series: bool = False) -> dict:
    """``SqlPlans.to_json`` of the session's plans with the session's thresholds, in a worker thread (under the
    live feed's lock); raises 404 without plans."""
    got = await session_plans(session)
    if got is None:
        raise HTTPException(404, "this session has no Spark event log or live application to read plans from")
    plans, problems, lock = got
    thresholds = session_thresholds(session)

    def answer() -> dict:
        if lock is None:
            return plans.to_json(execution, thresholds, series)
        with lock:
            return plans.to_json(execution, thresholds, series)

    if execution is not None and execution not in plans.executions:
        raise HTTPException(404, f"no SQL execution {execution} in this log")
    out = await run_in_threadpool(answer)
    regions = execution_scopes(session.replay.root)
    for ex in out["executions"]:
        ex["scope"] = regions.get(ex["execution"])
        for finding in ex["findings"]:
            finding["scope"] = ex["scope"]  # a mark's scope, as the Spark model's findings carry it
    out["problems"] = problems
    return out


@router.get("/plan", responses={404: {"model": Problem}},
            summary="The SQL executions' physical plans, each operator with its metrics and stages",
            description="`{\"executions\": [{execution, description, nodes: [{id, name, desc, children, "
                        "codegen_stage, stages, metrics: [{name, type, value, min, med, max}], time}], findings}], "
                        "\"problems\": [...]}` as `flowscope plan --json` prints it, each execution with its "
                        "`scope` (its region in the job graph, or null); `execution` picks one; `layout` adds where "
                        "to draw.")
async def plan(session: Session = Depends(deps.session),
               execution: int | None = Query(None, ge=0, description="only this SQL execution"),
               layout: bool = Query(False, description="also where the Plan tab draws each operator"),
               series: bool = Query(False, description="also each summed metric's running total over time "
                                                        "(series: [[time ms, total], ...])")):
    answer = await plans_json(session, execution, series)
    if layout:
        for ex in answer["executions"]:
            ex["layout"] = plan_layout(ex)
    return deps.JSON(answer)


def session_thresholds(session: Session) -> Thresholds:
    """The thresholds the session's Spark model finds with (what the server's ``--thresholds`` named), so its plan
    findings and its other findings agree; a session without a Spark model gets those in force in this process."""
    ledger = getattr(getattr(session.feed, "model", None), "tasks", None)  # a Spark model's (a log's, a live one's)
    diagnosis = getattr(ledger, "diagnosis", None)
    if diagnosis is not None:
        return diagnosis.t
    return configured()
