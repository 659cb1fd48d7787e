"""/api/sessions/{sid}/stream: the WebSocket (see backend/sessions/fanout.py for the protocol)."""

from __future__ import annotations

import asyncio

import orjson
from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from backend.sessions.fanout import Subscriber, pump
from backend.views.projections import parse_scope

router = APIRouter(tags=["stream"])


@router.websocket("/api/sessions/{sid}/stream")
async def stream(ws: WebSocket, sid: str, scope: str = "", since: int | None = None,
                 interval: float = 0.03):
    session = ws.app.state.manager.get(sid)
    applications = ws.app.state.applications
    if session is None and applications is not None and applications.get(sid) is not None:
        session = applications.open(sid)  # a followed directory's application, opened by its page's stream
    await ws.accept()
    if session is None:
        await ws.send_text(orjson.dumps({"type": "error", "detail": f"no session {sid!r}"}).decode())
        await ws.close(code=4404, reason="no such session")
        return
    try:
        path = parse_scope(scope)
    except ValueError as e:
        await ws.send_text(orjson.dumps({"type": "error", "detail": str(e)}).decode())
        await ws.close(code=4400, reason="bad scope")
        return
    sub = Subscriber(session, path, since, min_interval=max(0.0, min(interval, 5.0)))
    session.subscribers.add(sub)

    async def send(msg: bytes) -> None:
        await ws.send_text(msg.decode())

    sender = asyncio.create_task(pump(sub, send))
    receiver = asyncio.create_task(_receive(ws, sub))
    try:
        done, _ = await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            exc = task.exception()
            if exc is not None and not isinstance(exc, (WebSocketDisconnect, RuntimeError, OSError)):
                raise exc
        if sender in done and sub.closed:
            try:
                await ws.close(code=1001, reason=sub.closed)
            except (RuntimeError, WebSocketDisconnect):
                pass
    finally:
        session.subscribers.discard(sub)
        for task in (sender, receiver):
            task.cancel()
        await asyncio.gather(sender, receiver, return_exceptions=True)


async def _receive(ws: WebSocket, sub: Subscriber) -> None:
    while True:
        message = await ws.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        text = message.get("text")
        if text is None:  # a binary frame: the protocol is JSON text, and the close says so
            await ws.close(code=1003, reason="flowscope's stream takes JSON text frames")
            return
        try:
            msg = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(msg, dict):
            continue
        if msg.get("type") == "watch":
            try:
                path = tuple(int(k) for k in msg.get("scope") or [])
            except (TypeError, ValueError):
                continue
            since = msg.get("since")
            sub.watch(path, since if isinstance(since, int) else None)
