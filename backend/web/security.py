"""What the server lets in.

Requests for this server from its own page, a token on every request and WebSocket, and paths only inside allowed
directories.

The server binds 127.0.0.1 unless told otherwise, and refuses another host without a token (see
``backend.web.app.Settings``). :class:`SameOriginMiddleware` keeps other web pages from driving it through the user's
browser: on a loopback server the ``Host`` must be a loopback name or the configured host (a page on a rebinding
domain names its own), a WebSocket handshake carrying an ``Origin`` must come from the server's own origin, and so
must a state-changing request (anything but GET, HEAD, OPTIONS) that a browser marks with ``Origin`` or
``Sec-Fetch-Site``. Clients that are not browsers send neither and are let through (the token, when set, still
applies). With a token, every HTTP request and every WebSocket handshake must carry it: as
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
from urllib.parse import parse_qs, urlsplit

import orjson

from backend.stores import StoreUrl, locate

__all__ = ["TokenMiddleware", "SameOriginMiddleware", "confine", "confine_url", "check_path_text", "PathNotAllowed",
           "BadPath", "COOKIE", "is_loopback"]

COOKIE = "flowscope_token"


class PathNotAllowed(PermissionError):
    pass


class BadPath(ValueError):
    """A path no file can have (a NUL byte, longer than the system allows)."""


MAX_PATH = 4096  # Linux's PATH_MAX; a component may have 255 bytes (NAME_MAX)


def check_path_text(path: str | os.PathLike) -> str:
    """``path`` as text, or :class:`BadPath` saying why no file can be called that."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if "\0" in text:
        raise BadPath("the path contains a NUL byte")
    if len(text.encode("utf-8", "surrogateescape")) > MAX_PATH:
        raise BadPath(f"the path is longer than {MAX_PATH} bytes")
    if any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in text.split("/")):
        raise BadPath("a name in the path is longer than 255 bytes")
    return text


def confine(path: str | os.PathLike, allowed: Iterable[Path]) -> Path:
    """``path`` resolved (symlinks followed), if it lies inside one of the ``allowed`` directories.

    :class:`BadPath` for a path no file can have."""
    p = Path(check_path_text(path)).expanduser()
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


def confine_url(url: str, allowed: Iterable[StoreUrl]) -> StoreUrl:
    """``url`` as a :class:`StoreUrl`, if it is one of the ``allowed`` store URLs (those named when the server was
    started) or lies under one: the API never makes the server reach elsewhere with its credentials."""
    where = locate(check_path_text(url))
    if isinstance(where, StoreUrl) and ".." not in where.key.split("/"):
        for root in allowed:
            same_store = (where.scheme, where.netloc) == (root.scheme, root.netloc)
            if same_store and (where.key == root.key or not root.key or where.key.startswith(root.key + "/")):
                return where
    raise PathNotAllowed(
        f"{url} is not under a store URL this server was started with ({', '.join(map(str, allowed)) or 'none'})")


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

    def _has_token(self, scope: dict) -> bool:
        given = _scope_token(scope)
        return given is not None and hmac.compare_digest(given.encode(), self.token)

    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if not self._has_token(scope):
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
    """Does binding this host keep a server on this machine?

    (Anything else needs a token.) The empty host binds every interface, so it is not loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, int | None]:
    """``host[:port]`` (IPv6 in brackets) as (lower-case host, port or None); ("", None) when unreadable."""
    try:
        parts = urlsplit("//" + value)
        return (parts.hostname or "").lower(), parts.port
    except ValueError:
        return "", None


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class SameOriginMiddleware:
    """Refuse requests a foreign web page makes through the user's browser, before any route runs.

    A pure ASGI middleware, against DNS rebinding, cross-site WebSocket hijacking and cross-site POSTs. ``host`` is
    the host the server binds: when it is a loopback one, the
    ``Host`` header must name this machine."""

    def __init__(self, app, host: str):
        self.app = app
        self.check_host = is_loopback(host)
        self.own_host = host.strip("[]").lower()

    def _host_ok(self, host: str) -> bool:
        return host == self.own_host or is_loopback(host)

    @staticmethod
    def _same_origin(origin: str, host: str, port: int | None) -> bool:
        try:
            parts = urlsplit(origin)
            origin_port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False  # includes the opaque origin "null" of sandboxed frames and data: URLs
        return parts.hostname.lower() == host and origin_port == (port or _DEFAULT_PORTS[parts.scheme])

    def _refusal(self, scope: dict) -> str | None:
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host, port = _split_host(headers.get("host", ""))
        if self.check_host and "host" in headers and not self._host_ok(host):
            return (f"Host {headers['host']!r} is not this server: a loopback server answers only to its own "
                    "name (127.0.0.1, localhost)")
        origin = headers.get("origin")
        unsafe = scope["type"] == "websocket" or scope.get("method", "GET") not in _SAFE_METHODS
        if unsafe and origin is not None and not self._same_origin(origin, host, port):
            return f"cross-origin request from {origin!r} refused: use flowscope's own page"
        if unsafe and headers.get("sec-fetch-site") in ("cross-site", "same-site"):
            return "cross-site request refused: use flowscope's own page"
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        reason = self._refusal(scope)
        if reason is None:
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
            return
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": orjson.dumps({"detail": reason})})
