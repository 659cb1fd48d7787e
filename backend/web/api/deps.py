"""Dependencies the routers receive (nothing is reached for through module globals)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import HTTPException, Request
from fastapi.responses import Response

from backend.history.applications import UnknownApplication
from backend.sessions.manager import SessionManager
from backend.sessions.session import Session
from backend.views.projections import parse_scope

__all__ = ["manager", "session", "scope_path", "JSON", "encode", "problem"]


def encode(content: Any) -> bytes:
    """The bytes every JSON answer is sent as (``flowscope bundle`` stores answers made outside a request so)."""
    return orjson.dumps(content, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)


class JSON(Response):
    """orjson-encoded response: times are tuples inside the tracker and become arrays here."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return encode(content)


async def manager(request: Request) -> SessionManager:
    return request.app.state.manager


async def session(sid: str, request: Request) -> Session:
    """The session ``sid``; an application of a followed directory is opened (replayed) by its first request."""
    applications = request.app.state.applications
    if applications is not None:
        try:
            return applications.open(sid)
        except UnknownApplication:
            pass
    s = request.app.state.manager.get(sid)
    if s is None:
        raise HTTPException(404, f"no session {sid!r}; GET /api/sessions lists them")
    return s


async def scope_path(scope: str = "") -> tuple:
    try:
        return parse_scope(scope)
    except ValueError as e:
        raise HTTPException(400, str(e)) from None


def problem(status: int, detail: str) -> HTTPException:
    return HTTPException(status, detail)
