"""/api/sessions/{sid}/...: the scope tree, a scope's graph, its state at a batch or wall time, explain, search.

Reads of the present run on the event loop, between ingest slices (a consistent state, no locks). Reads of the
past restore a replay from the history in a worker thread, so a seek never stalls the stream or other requests.
"""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Depends, HTTPException, Query
from starlette.concurrency import run_in_threadpool

from backend.sessions.session import Session
from backend.views.graph_layout import scope_graph
from backend.views.graph_layout import strata as stratify
from backend.views.lost_events import lost_before
from backend.views.port_paths import holder_path, port_graph
from backend.views.projections import parse_port, port_rows, scope_tree
from backend.views.projections import search as search_operators
from backend.web.api import deps
from backend.web.api.models import Explanation, Graph, ScopeState, ScopeTree, SearchHit, Strata, problems
from tracker.analysis.details import late_json
from tracker.analysis.explain import Holder, holder_role
from tracker.analysis.explain import explain as tracker_explain
from tracker.progress_log.replay import Replay
from tracker.reachability import Location

router = APIRouter(prefix="/api/sessions/{sid}", tags=["scopes"])

_ERRORS = problems(400, 404)


def _find(root, path: tuple, batch: int | None = None):
    try:
        return root.find(path)
    except KeyError:
        when = f" at batch {batch}" if batch is not None else ""
        raise HTTPException(404, f"no scope {list(path)}{when}; GET .../scopes lists them") from None


@router.get("/scopes", response_model=ScopeTree, responses=_ERRORS, summary="The scope hierarchy")
async def scopes(session: Session = Depends(deps.session)):
    return deps.JSON(scope_tree(session.replay.root))


@router.get("/graph", response_model=Graph, responses=_ERRORS,
            summary="A scope's operators and channels, laid out (nested scopes folded)")
async def graph(session: Session = Depends(deps.session), path: tuple = Depends(deps.scope_path),
                compact: bool = Query(False, description="column by column (a third of the size; what the "
                                                         "browser asks for): see "
                                                         "backend.views.graph_layout.layout_columns")):
    _find(session.replay.root, path)
    return deps.JSON(orjson.Fragment(await session.graph_json(path, compact)))


@router.get("/strata", response_model=Strata, responses=_ERRORS,
            summary="A scope's strata: operators by topological layer, feedback edges set aside")
async def strata(session: Session = Depends(deps.session), path: tuple = Depends(deps.scope_path)):
    g = scope_graph(_find(session.replay.root, path))
    out = await run_in_threadpool(stratify, g)
    out["scope"] = list(path)
    return deps.JSON(out)


def _time(scope, value: str | None):
    if value is None or value == "":
        return None
    try:
        return scope.domain.parse(orjson.loads(value))
    except (orjson.JSONDecodeError, ValueError, TypeError) as e:
        raise HTTPException(400, f"time {value!r}: {e} (give a JSON time like 5 or [5,0])") from None


def _port(text: str) -> Location:
    try:
        return parse_port(text)
    except ValueError as e:
        raise HTTPException(400, str(e)) from None


def _batch(session: Session, batch: int | None, at: float | None) -> int:
    head = session.head
    if at is not None:
        return session.history.batch_at_time(at)
    if batch is None or batch > head:
        return head
    if batch < 0:
        return max(0, head + 1 + batch)  # -1 is the head
    return batch


@router.get("/state", response_model=ScopeState, responses=_ERRORS,
            summary="Every port of a scope after a batch (default: the head) or at a wall time",
            description="Port rows are `[kind, node, port, frontier, pointstamps, implications]`.")
async def state(
    session: Session = Depends(deps.session),
    path: tuple = Depends(deps.scope_path),
    batch: int | None = Query(None, description="state after this many batches (negative: from the head)"),
    at: float | None = Query(None, description="state at this wall-clock time (seconds)"),
):
    k = _batch(session, batch, at)
    if k >= session.head:
        return deps.JSON(state_answer(session, session.replay, _find(session.replay.root, path), session.head))

    def past():
        with session.history.at_batch(k) as replay:
            try:
                scope = replay.root.find(path)
            except KeyError:
                return None
            return state_answer(session, replay, scope, k)

    out = await run_in_threadpool(past)
    if out is None:
        raise HTTPException(404, f"no scope {list(path)} at batch {k}")
    return deps.JSON(out)


def state_answer(session: Session, replay: Replay, scope, batch: int) -> dict:
    """GET .../state's answer for ``scope`` of ``replay`` (the live one, or one restored at ``batch``).

    Public so that ``flowscope bundle`` answers every scope at a moment from one restored replay."""
    return {"scope": list(scope.path), "batch": batch, "head": session.head, "at": session.history.time_of(batch),
            "version": session.structure_version, "ports": port_rows(scope)}


def explain_answer(session: Session, replay: Replay, path: tuple, loc: Location, time_text: str | None,
                   batch: int, live: bool, graphs: dict | None = None, lost: list | None = None) -> dict:
    """GET .../explain's answer at ``batch`` from ``replay``.

    ``replay`` is the live one when ``live``, else one restored there. ``graphs``: the caller's cache of port graphs
    for this replay (``flowscope bundle`` explains many ports of a scope at one moment); the live replay's are cached
    in the session. ``lost``: the stretches of lost events before ``batch`` (``lost_before`` of the live replay;
    read on the event loop when this runs in a thread)."""
    if lost is None:
        lost = lost_before(session.replay, batch)
    scope = _find(replay.root, path, batch)
    scope.ensure_built()
    tracker = scope.tracker
    assert tracker is not None  # built just above
    if loc not in tracker.index:
        raise HTTPException(404, f"scope {list(path)} has no port {loc.to_json()}")
    t = _time(scope, time_text)
    frontier = tracker.frontier(loc)
    if t is None:
        if not frontier:
            return {"scope": list(path), "port": loc.to_json(), "time": None, "frontier": [], "batch": batch,
                    "holders": [], "implied": [], "held": False, "events_lost": lost}
        t = min(frontier)
    answer = tracker_explain(scope, loc, t)
    key = ("ports", path, session.structure_version)
    cache = session.cache if live else graphs
    g = cache.get(key) if cache is not None else None
    if g is None:
        g = port_graph(scope)
        if cache is not None:
            cache[key] = g

    def holder(h: Holder) -> dict:
        out = h.to_json()
        out.update(holder_role(scope, h).to_json())
        out["path"] = [p.to_json() for p in holder_path(g, h.location, loc)]
        return out

    # the replay (live, or restored from the history with the details of its time) knows what holders are made of,
    # and until when its state lasts (running tasks have run until then)
    late = late_json(answer, scope, replay.details, replay.state_until)
    return {
        "scope": list(path), "port": loc.to_json(), "time": t, "frontier": frontier, "batch": batch,
        "holders": [holder(h) for h in answer.holders], "implied": [holder(h) for h in answer.implied],
        "held": answer.held, "late": late,
        "events_lost": lost,
    }


@router.get("/explain", response_model=Explanation, responses=_ERRORS,
            summary="Why is this stuck: the minimal pointstamps that could still result in a time at a port")
async def explain(
    session: Session = Depends(deps.session),
    path: tuple = Depends(deps.scope_path),
    port: str = Query(..., description="in,NODE,PORT or out,NODE,PORT"),
    time: str | None = Query(None, description="JSON time (default: the least time in the port's frontier)"),
    batch: int | None = Query(None, description="after this many batches (default: the head)"),
    at: float | None = Query(None, description="at this wall-clock time"),
):
    loc = _port(port)
    k = _batch(session, batch, at)
    if k >= session.head:
        return deps.JSON(explain_answer(session, session.replay, path, loc, time, session.head, True))

    lost = lost_before(session.replay, k)

    def past():
        with session.history.at_batch(k) as replay:
            return explain_answer(session, replay, path, loc, time, k, False, lost=lost)

    return deps.JSON(await run_in_threadpool(past))


@router.get("/search", response_model=list[SearchHit], summary="Operators whose name contains q, in every scope")
async def search(session: Session = Depends(deps.session), q: str = Query(..., min_length=1),
                 limit: int = Query(50, ge=1, le=500)):
    return search_operators(session.replay.root, q, limit)
