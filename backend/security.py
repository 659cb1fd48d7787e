"""What the server lets in: a token on every request and WebSocket, and paths only inside allowed directories.

The server binds 127.0.0.1 unless told otherwise, and refuses another host without a token (see
``backend.app.Settings``). With a token, every HTTP request and every WebSocket handshake must carry it: as
``Authorization: Bearer T``, as ``?token=T`` (the URL the CLI prints; the response then sets an HttpOnly cookie so
the page's own requests and its WebSocket carry it), or as that cookie. Anything else gets 401 (HTTP) or a
handshake refused with 403 (WebSocket), before any route runs. Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Iterable
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qs

import orjson

__all__ = ["TokenMiddleware", "confine", "PathNotAllowed", "COOKIE"]

COOKIE = "flowscope_token"


class PathNotAllowed(PermissionError):
    pass


def confine(path: str | os.PathLike, allowed: Iterable[Path]) -> Path:
    """``path`` resolved (symlinks followed), if it lies inside one of the ``allowed`` directories."""
    p = Path(path).expanduser()
    try:
        resolved = p.resolve(strict=False)
    except (OSError, RuntimeError) as e:
        raise PathNotAllowed(f"{path}: cannot resolve ({e})") from None
    roots = [Path(a).resolve() for a in allowed]
    for root in roots:
        if resolved == root or resolved.is_relative_to(root):
            return resolved
    raise PathNotAllowed(
        f"{path} is outside the directories this server may read ({', '.join(str(r) for r in roots) or 'none'}); "
        "start the server with --allow DIR to add one"
    )


def _scope_token(scope: dict) -> str | None:
    headers = dict(scope.get("headers") or [])
    auth = headers.get(b"authorization", b"").decode("latin-1")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    qs = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if "token" in qs:
        return qs["token"][0]
    cookie = headers.get(b"cookie")
    if cookie:
        jar = SimpleCookie()
        try:
            jar.load(cookie.decode("latin-1"))
        except Exception:
            return None
        if COOKIE in jar:
            return jar[COOKIE].value
    return None


class TokenMiddleware:
    """Pure ASGI middleware: HTTP and WebSocket alike."""

    def __init__(self, app, token: str):
        self.app = app
        self.token = token.encode()

    def _ok(self, scope: dict) -> bool:
        given = _scope_token(scope)
        return given is not None and hmac.compare_digest(given.encode(), self.token)

    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if not self._ok(scope):
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": "a valid token is required"})
                return
            body = orjson.dumps({"detail": "a valid token is required: pass ?token=T, Authorization: Bearer T, "
                                           "or open the URL the server printed"})
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
            await send({"type": "http.response.body", "body": body})
            return
        qs = scope.get("query_string", b"")
        if kind == "http" and b"token=" in qs:
            async def send_with_cookie(message):
                if message["type"] == "http.response.start":
                    headers = list(message.get("headers") or [])
                    value = f"{COOKIE}={self.token.decode()}; HttpOnly; SameSite=Strict; Path=/"
                    headers.append((b"set-cookie", value.encode()))
                    message = dict(message, headers=headers)
                await send(message)
            return await self.app(scope, receive, send_with_cookie)
        return await self.app(scope, receive, send)


def is_loopback(host: str) -> bool:
    """Does binding this host keep a server on this machine? (Anything else needs a token.)"""
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
