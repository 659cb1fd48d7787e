"""/api/sessions/{sid}/whatif: release a pointstamp on a copy of the state at a batch, see which frontiers move.

The copy is restored from the history in a worker thread and thrown away (never returned to the history's pool),
so the live replay and other readers never see the release.
"""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Depends, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from backend.sessions.session import Session
from backend.views.projections import parse_port
from backend.web.api import deps
from backend.web.api.models import Problem
from tracker.analysis.whatif import release

router = APIRouter(prefix="/api/sessions/{sid}", tags=["what-if"])


@router.get("/whatif", responses={400: {"model": Problem}, 404: {"model": Problem}},
            summary="What if this pointstamp were released at batch k: the frontiers that would advance",
            description="`{scope, port, time, batch, released, advanced: [{scope, port, operator, before, after}]}`")
async def whatif(
    session: Session = Depends(deps.session),
    path: tuple = Depends(deps.scope_path),
    port: str = Query(..., description="in,NODE,PORT or out,NODE,PORT"),
    time: str = Query(..., description="the pointstamp's time, as JSON"),
    batch: int | None = Query(None, description="after this many batches (default: the head)"),
    count: int | None = Query(None, ge=1, description="how much of its count to release (default: all)"),
):
    try:
        loc = parse_port(port)
        t_json = orjson.loads(time)
    except (ValueError, orjson.JSONDecodeError):
        raise HTTPException(400, f"port {port!r} / time {time!r}: give in,NODE,PORT and a JSON time") from None
    k = session.head if batch is None or batch > session.head else max(0, batch)

    def run() -> dict:
        replay = session.history.restore(k)  # a copy of our own: not released back to the pool
        try:
            scope = replay.root.find(path)
            t = scope.domain.parse(t_json)
            n, moved = release(replay, path, loc, t, count)
        except KeyError as e:
            raise HTTPException(404, str(e.args[0] if e.args else e)) from None
        except ValueError as e:
            raise HTTPException(400, str(e)) from None
        return {"scope": list(path), "port": loc.to_json(), "time": t, "batch": k, "released": n,
                "advanced": [a.to_json() for a in moved]}

    return deps.JSON(await run_in_threadpool(run))
