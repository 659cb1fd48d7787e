"""/api/sessions: list, create (from a path or an upload), show, delete."""

from __future__ import annotations

import gzip

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from backend.feeds.progress_feeds import FeedError
from backend.history.applications import application_json
from backend.sessions.manager import SessionManager, UploadTooLarge
from backend.sessions.session import Session
from backend.stores import StoreError
from backend.views.projections import session_info
from backend.web.api import deps
from backend.web.api.models import SessionCreate, SessionInfo, problems
from backend.web.security import BadPath, PathNotAllowed, check_path_text

router = APIRouter(prefix="/api/sessions", tags=["sessions"])

_ERRORS = problems(400, 403, 404, 413, 422)
_GZIP_ABOVE = 1 << 16  # bytes of the list's JSON above which it is sent compressed to a client that takes gzip


@router.get("", response_model=list[SessionInfo], summary="All sessions, and every application of the followed "
            "directories, opened or not",
            description="An application of a followed directory (`serve --follow DIR`) that nobody opened yet is "
                        "listed with status `listed` and its `application` (id, attempt, name, user, start, end, "
                        "duration, Spark version, status: in_progress, finished, failed or incomplete, size, the "
                        "answer summary once replayed, and `rest`: where Spark's REST documents of it are); "
                        "`GET /api/sessions/{id}` or any route under it opens (replays) it. Answers 304 to "
                        "`If-None-Match` when nothing changed.")
async def list_sessions(request: Request, manager: SessionManager = Depends(deps.manager)):
    applications = request.app.state.applications
    infos = [session_info(s) for s in manager.sessions.values()]
    if applications is None:
        return deps.JSON(infos)
    etag = f'W/"{applications.version}-{hash(tuple((i["id"], i["status"], i["batches"]) for i in infos))}"'
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers={"ETag": etag})
    for info in infos:
        listing = applications.get(info["id"])
        if listing is not None:
            info["application"] = application_json(listing)
    opened = {i["id"] for i in infos}
    body = deps.encode(infos + [row for row in applications.rows() if row["id"] not in opened])
    headers = {"ETag": etag, "Cache-Control": "no-cache", "Vary": "Accept-Encoding"}
    if len(body) > _GZIP_ABOVE and "gzip" in request.headers.get("accept-encoding", ""):
        # a team's list is megabytes of JSON (10,000 applications: ~6 MB), a tenth of that compressed
        body = await run_in_threadpool(gzip.compress, body, 1)
        headers["Content-Encoding"] = "gzip"
    return Response(body, media_type="application/json", headers=headers)


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
    except StoreError as e:  # a store that cannot be reached, or refuses: one line naming the URL
        raise HTTPException(502, str(e)) from None
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


@router.get("/{sid}", response_model=SessionInfo, responses=_ERRORS,
            summary="One session (an application of a followed directory is opened: replayed, or followed)")
async def get_session(request: Request, session: Session = Depends(deps.session)):
    info = session_info(session)
    applications = request.app.state.applications
    listing = applications.get(session.id) if applications is not None else None
    if listing is not None:
        info["application"] = application_json(listing)
    return info


@router.delete("/{sid}", status_code=204, responses=_ERRORS, summary="Stop a session and remove its uploads")
async def delete_session(sid: str, manager: SessionManager = Depends(deps.manager)):
    if not await manager.delete(sid):
        raise HTTPException(404, f"no session {sid!r}")
    return Response(status_code=204)
