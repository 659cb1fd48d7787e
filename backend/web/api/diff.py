"""/api/sessions/{sid}/diff: what changed in a scope between two moments (backend/views/diff.py does the comparing).

A moment is a batch number (negative: from the head), ``mark:N`` (the state right after the N-th timeline mark),
or ``at:SECONDS`` (the state at a wall-clock time). Past states are restored from the history in a worker
thread, as /state does, so a diff never stalls the stream.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from backend.sessions.session import Session
from backend.views.diff import Moment, diff_moments
from backend.views.projections import port_rows
from backend.web.api import deps

router = APIRouter(prefix="/api/sessions/{sid}", tags=["scopes"])


def moment_batch(session: Session, text: str) -> int:
    """The batch a moment names (see the module docstring); HTTP 400 says what to give instead."""
    head = session.head
    text = text.strip()
    try:
        if text.startswith("mark:"):
            marks = session.replay.marks
            i = int(text[5:])
            if not -len(marks) <= i < len(marks):
                raise HTTPException(400, f"moment {text!r}: there are {len(marks)} marks (GET .../marks lists them)")
            return min(head, int(marks[i]["after"]))
        if text.startswith("at:"):
            return session.history.batch_at_time(float(text[3:]))
        batch = int(text)
    except ValueError:
        raise HTTPException(400, f"moment {text!r}: give a batch (20, -1 for the head), mark:N or at:SECONDS") from None
    if batch < 0:
        return max(0, head + 1 + batch)
    return min(batch, head)


def _moment_of(scope, batch: int, at: float | None) -> Moment:
    return Moment(batch, at, port_rows(scope), {n: op.name for n, op in scope.children.items()})


async def scope_moment(session: Session, path: tuple, batch: int) -> Moment:
    """The scope at ``batch``: read from the present on the loop, restored from the history otherwise."""
    at = session.history.time_of(batch)
    if batch >= session.head:
        return _moment_of(session.scope(path), session.head, at)

    def past() -> Moment | None:
        with session.history.at_batch(batch) as replay:
            try:
                scope = replay.root.find(path)
            except KeyError:
                return None
            return _moment_of(scope, batch, at)

    found = await run_in_threadpool(past)
    if found is None:  # the scope did not exist yet: an empty moment, every operator appears later
        return Moment(batch, at, [], {})
    return found


@router.get("/diff", summary="What changed in a scope between two moments",
            description="Ports whose frontier advanced (and by how much), ports that did not move while holding "
                        "times (stuck), ports whose counts changed, operators that appeared.")
async def diff(
    session: Session = Depends(deps.session),
    path: tuple = Depends(deps.scope_path),
    start: str = Query(..., alias="from", description="the earlier moment: BATCH, mark:N or at:SECONDS"),
    end: str = Query("-1", alias="to", description="the later moment (default: the head)"),
):
    try:
        session.scope(path)
    except KeyError:
        raise HTTPException(404, f"no scope {list(path)}; GET .../scopes lists them") from None
    a, b = moment_batch(session, start), moment_batch(session, end)
    before = await scope_moment(session, path, a)
    after = await scope_moment(session, path, b)
    out = diff_moments(before, after)
    out["scope"] = list(path)
    return deps.JSON(out)
