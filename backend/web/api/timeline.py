"""/api/sessions/{sid}/...: what the timeline shows.

Marks, contract findings, read errors, chart series, workers and their batches."""

from __future__ import annotations

import math
from collections.abc import Sequence

from fastapi import APIRouter, Depends, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from backend.sessions.session import Session
from backend.views.projections import mark_json
from backend.web.api import deps
from backend.web.api.models import Batches, Errors, Findings, Marks, Series, Workers, problems

router = APIRouter(prefix="/api/sessions/{sid}", tags=["timeline"])

_ERRORS = problems(400, 404)


@router.get("/marks", response_model=Marks, responses=_ERRORS, summary="Timeline marks (job/batch/query starts, ticks)")
async def marks(session: Session = Depends(deps.session), offset: int = Query(0, ge=0),
                limit: int = Query(5000, ge=1, le=100000),
                finding: bool = Query(False, description="only the marks that are findings (a straggler, a "
                                                         "skewed stage: the Findings tab's list)")):
    marks = session.replay.marks
    if finding:  # by the replay's index of them: the other marks are not read
        which = session.replay.finding_marks
        return deps.JSON({"total": len(which), "marks": [mark_json(marks[i]) for i in which[offset:offset + limit]]})
    return deps.JSON({"total": len(marks), "marks": [mark_json(m) for m in marks[offset:offset + limit]]})


@router.get("/findings", response_model=Findings, responses=_ERRORS, summary="Progress-contract findings")
async def findings(session: Session = Depends(deps.session), offset: int = Query(0, ge=0),
                   limit: int = Query(1000, ge=1, le=100000)):
    found = session.replay.findings
    return deps.JSON({"total": len(found), "findings": [f.to_json() for f in found[offset:offset + limit]]})


@router.get("/errors", response_model=Errors, responses=_ERRORS, summary="Corrupt lines and rejected batches")
async def errors(session: Session = Depends(deps.session), offset: int = Query(0, ge=0),
                 limit: int = Query(1000, ge=1, le=100000)):
    errs = session.errors()
    return deps.JSON({"total": len(errs), "errors": [{"path": e.path, "line": e.line, "reason": e.reason}
                                                      for e in errs[offset:offset + limit]]})


@router.get("/series", response_model=Series, responses=_ERRORS,
            summary="Chart data: each operator's frontier over wall time, counts in flight")
async def series(session: Session = Depends(deps.session), path: tuple = Depends(deps.scope_path),
                 nodes: str | None = Query(None, description="comma-separated operator indices (default: all)")):
    try:
        scope = session.replay.root.find(path)
    except KeyError:
        raise HTTPException(404, f"no scope {list(path)}") from None
    wanted = None
    if nodes:
        try:
            wanted = [int(n) for n in nodes.split(",") if n.strip()]
        except ValueError:
            raise HTTPException(400, "nodes: comma-separated integers") from None
    data = session.series.to_json(scope, wanted)
    data["scope"] = list(path)
    return deps.JSON(data)


def _workers(session: Session, buckets: int) -> dict:
    h = session.history
    n = h.batches
    stats: dict[int, list] = {}
    # the first n batches (the ingest may add more meanwhile), read page by page (history.Column)
    for b, a, w in zip(range(n), h.at, h.worker, strict=False):
        s = stats.get(w)
        if s is None:
            stats[w] = [1, b + 1, b + 1, a, a]
        else:
            s[0] += 1
            s[2] = b + 1
            if a < s[3]:
                s[3] = a
            if a > s[4]:
                s[4] = a
    lo = min((s[3] for s in stats.values()), default=0.0)
    hi = max((s[4] for s in stats.values()), default=0.0)
    width = (hi - lo) / buckets if hi > lo else 1.0
    hist = {str(w): [0] * buckets for w in stats}
    for _, a, w in zip(range(n), h.at, h.worker, strict=False):
        i = min(buckets - 1, int((a - lo) / width)) if width else 0
        hist[str(w)][max(0, i)] += 1
    return {
        "workers": [{"worker": w, "batches": s[0], "first_batch": s[1], "last_batch": s[2], "first_at": s[3],
                     "last_at": s[4]} for w, s in sorted(stats.items())],
        "buckets": [lo + i * width for i in range(buckets)],
        "histogram": hist,
    }


@router.get("/workers", response_model=Workers, responses=_ERRORS,
            summary="Per worker (executor): batches, first and last, and a histogram over wall time")
async def workers(session: Session = Depends(deps.session), buckets: int = Query(60, ge=1, le=1000)):
    return deps.JSON(await run_in_threadpool(_workers, session, buckets))


@router.get("/batches", response_model=Batches, responses=_ERRORS,
            summary="The batches in order (optionally one worker's), with seq, cause and size")
async def batches(session: Session = Depends(deps.session), offset: int = Query(0, ge=0),
                  limit: int = Query(100, ge=1, le=1000), worker: int | None = Query(None)):
    h = session.history

    def rows() -> dict:
        n = h.batches
        numbers: Sequence[int]
        if worker is None:
            numbers = range(offset + 1, min(n, offset + limit) + 1)
            total = n
        else:
            matching = [b + 1 for b, w in zip(range(n), h.worker, strict=False) if w == worker]
            total = len(matching)
            numbers = matching[offset:offset + limit]
        out = []
        for b in numbers:
            rec = h.batch_record(b)
            w, at = h.worker[b - 1], h.at[b - 1]
            out.append({"batch": b, "at": at if not math.isnan(at) else None,
                        "worker": None if w == -1 else w, "scope": list(h.scope_path(h.scope[b - 1])),
                        "seq": rec.get("seq"), "cause": rec.get("cause"), "updates": len(rec.get("updates") or ())})
        return {"total": total, "batches": out}

    return deps.JSON(await run_in_threadpool(rows))
