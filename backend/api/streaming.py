"""/api/sessions/{sid}/streaming: each streaming query's micro-batches against its trigger interval and its
event-time watermark against processing time (``backend/streaming_progress.py``), for the Streaming tab."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from ..session import Session
from ..streaming_progress import streaming_queries
from . import deps
from .models import Problem

router = APIRouter(prefix="/api/sessions/{sid}", tags=["blame"])


@router.get("/streaming", responses={404: {"model": Problem}},
            summary="Streaming queries: batch durations against the trigger interval, watermark against time",
            description="`{\"queries\": [{query, scope, name, trigger: {interval_s, source: inferred|setting|unknown, "
                        "how}, batches: [{batch, start, end, duration_s, late, watermark, input_rows}]}]}`; times "
                        "are epoch seconds; the interval is inferred from the trigger starts unless `trigger_s` "
                        "gives it (the rule: docs/spark-model.md).")
async def streaming(
    session: Session = Depends(deps.session),
    trigger_s: float | None = Query(None, gt=0, le=86_400, description="the trigger interval, when the user knows it"),
):
    root = session.replay.root
    names: dict[tuple, str] = {}
    marks = session.replay.marks
    for m in marks:
        scope = m.get("scope")
        if "trigger_start" in m and isinstance(scope, list) and tuple(scope) not in names:
            try:
                names[tuple(scope)] = root.find(tuple(scope)).name or ""
            except KeyError:
                names[tuple(scope)] = ""
    return deps.JSON({"queries": streaming_queries(marks, names, trigger_s)})
