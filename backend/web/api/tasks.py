"""/api/sessions/{sid}/tasks: the executor timeline's bars (``backend/spark/diagnosis/task_timeline.py``), columnar."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from backend.sessions.session import Session
from backend.web.api import deps
from backend.web.api.models import Problem

router = APIRouter(prefix="/api/sessions/{sid}", tags=["blame"])


@router.get("/tasks", responses={404: {"model": Problem}},
            summary="Task attempts as bars: launched, ended (null while running), executor, stage, partition, outcome",
            description="Columns of equal length; `executor` indexes `executors`; `cores` per executor when known; "
                        "`outcome` ok, failed, killed or running; `reasons` maps a failed or killed bar's position to "
                        "why it ended (Spark's task end reason). `partition` is the partition a task computes, `index` "
                        "its position in its stage attempt's task set (they differ in a resubmitted attempt). `phases` "
                        "maps each phase of Spark's event timeline (scheduler_delay, deserialize, fetch_wait, compute, "
                        "gc, shuffle_write, result_serialization, getting_result) to its milliseconds per bar, null "
                        "where the log does not measure it.")
async def tasks(
    session: Session = Depends(deps.session),
    start: float | None = Query(None, description="only bars overlapping [start, end] (wall-clock seconds)"),
    end: float | None = Query(None),
    limit: int = Query(200_000, ge=1, le=1_000_000, description="at most this many bars (the longest when cut)"),
):
    return deps.JSON(session.task_timeline.to_json(start, end, limit))
