"""/api/sessions: list, create (from a path or an upload), show, delete."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from backend.feeds.progress_feeds import FeedError
from backend.sessions.manager import SessionManager, UploadTooLarge
from backend.sessions.session import Session
from backend.views.projections import session_info
from backend.web.api import deps
from backend.web.api.models import SessionCreate, SessionInfo, problems
from backend.web.security import BadPath, PathNotAllowed, check_path_text

router = APIRouter(prefix="/api/sessions", tags=["sessions"])

_ERRORS = problems(400, 403, 404, 413, 422)


@router.get("", response_model=list[SessionInfo], summary="All sessions")
async def list_sessions(manager: SessionManager = Depends(deps.manager)):
    return [session_info(s) for s in manager.sessions.values()]


@router.post("", response_model=SessionInfo, status_code=201, responses=_ERRORS,
             summary="Open a log (progress log, or any kind the feed registry knows) from a path")
async def create_session(body: SessionCreate, manager: SessionManager = Depends(deps.manager)):
    try:  # identifying a log reads (and may decompress) its start: off the event loop
        feed = await run_in_threadpool(manager.open_feed, body.path, body.follow)
    except BadPath as e:
        raise HTTPException(400, f"bad path: {e}") from None
    except PathNotAllowed as e:
        raise HTTPException(403, str(e)) from None
    except FileNotFoundError as e:
        raise HTTPException(404, str(e)) from None
    except FeedError as e:
        raise HTTPException(422, str(e)) from None
    return session_info(manager.add(feed, body.name, body.check))


@router.post("/upload", response_model=SessionInfo, status_code=201, responses=_ERRORS,
             summary="Upload a log (the request body is the file's bytes) and open it",
             description="Send the file as the raw request body (`curl --data-binary @log.jsonl.gz`); `filename` "
                         "keeps its suffix, which selects the decompression (.gz, .zst). The upload goes to the "
                         "session's own directory and is removed with the session.")
async def upload_session(
    request: Request,
    filename: str = Query("upload.jsonl", description="the file's name (its suffix selects the codec)"),
    check: bool = Query(True),
    manager: SessionManager = Depends(deps.manager),
):
    try:
        check_path_text(filename)
    except BadPath as e:
        raise HTTPException(400, f"bad filename: {e}") from None
    declared = request.headers.get("content-length")
    try:
        declared_n = int(declared) if declared is not None else None
    except ValueError:
        raise HTTPException(400, "bad Content-Length header") from None
    try:
        session = await manager.upload(filename, request.stream(), declared_n, check)
    except UploadTooLarge as e:
        raise HTTPException(413, str(e)) from None
    except FeedError as e:
        raise HTTPException(422, str(e)) from None
    return session_info(session)


@router.get("/{sid}", response_model=SessionInfo, responses=_ERRORS, summary="One session")
async def get_session(session: Session = Depends(deps.session)):
    return session_info(session)


@router.delete("/{sid}", status_code=204, responses=_ERRORS, summary="Stop a session and remove its uploads")
async def delete_session(sid: str, manager: SessionManager = Depends(deps.manager)):
    if not await manager.delete(sid):
        raise HTTPException(404, f"no session {sid!r}")
    return Response(status_code=204)
