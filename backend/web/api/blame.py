"""/api/sessions/{sid}/blame: where the seconds of each completed time went (docs/blame.md).

The session's :class:`~tracker.analysis.blame.BlameTracker` follows the ingest, so a live session's answer grows as
times complete; reads run on the event loop between ingest slices (a consistent state).
"""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Depends, HTTPException, Query

from backend.sessions.session import Session
from backend.spark.diagnosis.blame import name_segments, plan_operators, select
from backend.views.lost_events import lost_during, lost_stretches
from backend.views.projections import parse_scope
from backend.web.api import deps
from backend.web.api.models import Problem

router = APIRouter(prefix="/api/sessions/{sid}", tags=["blame"])


@router.get("/blame", responses={400: {"model": Problem}, 404: {"model": Problem}},
            summary="Blame: each completed time's latency split along its critical path of holders",
            description="`{\"times\": [{scope, name, time, job_ids, batch_id, iteration, start, end, latency_s, "
                        "blame: [{kind, seconds, from, to, holder}]}]}`; kinds: task, waiting-for-slots, scheduler, "
                        "recompute, driver (capability, message for other logs). `iteration`: a loop's time "
                        "`[epoch, iteration]`'s iteration, else null. A time whose job failed has "
                        "`\"status\": \"failed\"` and `failure` (what Spark says failed it); a succeeded one has "
                        "neither. A recompute holder's `failure`: why the work is redone (reason, executor, host, "
                        "message, executor_removed). A holder of a stage that ran SQL plan operators has "
                        "`plan_operator` (execution, id, name, operators), as `flowscope blame --json`. A time whose "
                        "span overlaps a stretch of events that never arrived (a live session's listener outage) has "
                        "`events_lost`: those stretches.")
async def blame(
    session: Session = Depends(deps.session),
    scope: str | None = Query(None, description="only this scope, e.g. 2"),
    time: str | None = Query(None, description="only this time, as JSON"),
    top: int | None = Query(None, ge=1, le=10_000, description="only the N slowest times, slowest first"),
    nested: bool = Query(False, description="with `scope`: also the times of the scopes nested in it (a region's "
                                            "loop: its iterations, each with its `iteration`)"),
):
    try:
        path = list(parse_scope(scope)) if scope is not None else None
        t = orjson.loads(time) if time else None
    except (ValueError, orjson.JSONDecodeError) as e:
        raise HTTPException(400, f"scope/time: {e}") from None
    times = [b.to_json() for b in select(session.blame.times(), path, t, top, nested)]
    named = plan_operators(session.blame)
    if named:
        for b in times:  # copies: the session's blame state is not the answer's to change
            b["blame"] = [{**seg, "holder": dict(seg["holder"])} if isinstance(seg.get("holder"), dict) else seg
                          for seg in b["blame"]]
            name_segments(b["blame"], named)
    stretches = lost_stretches(session.replay)
    if stretches:  # a time whose span overlaps a stretch of lost events is missing part of its story
        for entry in times:
            overlap = lost_during(stretches, entry.get("start"), entry.get("end"))
            if overlap:
                entry["events_lost"] = overlap
    return deps.JSON({"times": times})
