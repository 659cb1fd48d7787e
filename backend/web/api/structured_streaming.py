"""/api/sessions/{sid}/streaming: each streaming query's micro-batches, for the Streaming tab.

Its micro-batches against its trigger interval and its event-time watermark against processing time
(``backend/spark/diagnosis/structured_streaming.py``)."""

from __future__ import annotations

import math

import orjson
from fastapi import APIRouter, Depends, HTTPException, Query

from backend.sessions.session import Session
from backend.spark.diagnosis.structured_streaming import streaming_queries
from backend.web.api import deps
from backend.web.api.models import Problem

router = APIRouter(prefix="/api/sessions/{sid}", tags=["blame"])


@router.get("/streaming", responses={404: {"model": Problem}},
            summary="Streaming queries: batch durations against the trigger interval, watermark against time",
            description="`{\"queries\": [{query, scope, name, trigger: {interval_s, source: inferred|setting|unknown, "
                        "how}, batches: [{batch, start, end, duration_s, late, watermark, input_rows}]}]}`; times "
                        "are epoch seconds; the interval is inferred from the trigger starts unless the user gives "
                        "it: `triggers` per query, `trigger_s` for the others (the rule: docs/spark-model.md).")
async def streaming(
    session: Session = Depends(deps.session),
    trigger_s: float | None = Query(None, gt=0, le=86_400, description="the trigger interval of every query, when "
                                                                       "the user knows it"),
    triggers: str | None = Query(None, description='per query: a JSON object {"<query id>": seconds}'),
):
    per_query = _triggers(triggers)
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
    return deps.JSON({"queries": streaming_queries(marks, names, trigger_s, per_query)})


def _triggers(text: str | None) -> dict[str, float] | None:
    """``triggers`` read: query ids to intervals in seconds (as ``trigger_s``: above 0, at most a day), else 400."""
    if not text:
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise HTTPException(400, f"triggers: not JSON: {e}") from None
    if type(value) is not dict or not all(
            type(s) in (int, float) and math.isfinite(s) and 0 < s <= 86_400 for s in value.values()):
        raise HTTPException(400, 'triggers must be a JSON object {"<query id>": seconds above 0, at most 86400}')
    return {q: float(s) for q, s in value.items()}
