"""Binding and the token: 127.0.0.1 by default, another host only with a token, checked on every request and
WebSocket."""

from __future__ import annotations

import httpx
import pytest
from websockets.sync.client import connect

from backend.app import Settings, create_app, is_loopback
from backend.security import PathNotAllowed, confine
from tests.conftest import LOOP_LOG
from tests.e2e.server import running_server

TOKEN = "s3cret-token"


def test_defaults_bind_loopback_and_other_hosts_need_a_token():
    assert Settings().host == "127.0.0.1" and is_loopback("127.0.0.1") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    with pytest.raises(ValueError, match="give --token"):
        create_app(Settings(host="0.0.0.0"))
    create_app(Settings(host="0.0.0.0", token=TOKEN))  # fine with a token


def test_confine_follows_symlinks(tmp_path):
    inside = tmp_path / "logs"
    inside.mkdir()
    (inside / "a.jsonl").write_text("{}")
    assert confine(inside / "a.jsonl", [inside]) == (inside / "a.jsonl").resolve()
    (inside / "link").symlink_to("/etc")
    with pytest.raises(PathNotAllowed):
        confine(inside / "link" / "passwd", [inside])
    with pytest.raises(PathNotAllowed):
        confine(inside / ".." / "x", [inside])


@pytest.fixture(scope="module")
def server():
    with running_server(Settings(token=TOKEN, allowed_dirs=[LOOP_LOG.parent])) as srv:
        yield srv


@pytest.mark.parametrize("path", ["/", "/api/sessions", "/api/health", "/static/js/app.js", "/openapi.json",
                                  "/vendor/plotly.min.js"])
def test_every_request_needs_the_token(server, path):
    r = httpx.get(server.url + path)
    assert r.status_code == 401 and "token" in r.json()["detail"]
    assert httpx.get(server.url + path, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(server.url + path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_the_printed_url_sets_a_cookie_the_page_then_uses(server):
    with httpx.Client(base_url=server.url) as c:
        r = c.get("/", params={"token": TOKEN})
        assert r.status_code == 200 and "flowscope_token" in r.headers["set-cookie"]
        assert "HttpOnly" in r.headers["set-cookie"]
        assert c.get("/api/sessions").status_code == 200  # the cookie is sent from now on
        r = c.post("/api/sessions", json={"path": str(LOOP_LOG)})
        assert r.status_code == 201
        sid = r.json()["id"]
    with connect(f"{server.ws_url}/api/sessions/{sid}/stream?token={TOKEN}") as ws:
        assert '"type":"snapshot"' in ws.recv(timeout=10)
    with connect(f"{server.ws_url}/api/sessions/{sid}/stream",
                 additional_headers={"Cookie": f"flowscope_token={TOKEN}"}) as ws:
        assert '"type":"snapshot"' in ws.recv(timeout=10)


def test_websocket_without_the_token_is_refused(server):
    for url in (f"{server.ws_url}/api/sessions/x/stream", f"{server.ws_url}/api/sessions/x/stream?token=nope"):
        with pytest.raises(Exception) as refused:
            with connect(url) as ws:
                ws.recv(timeout=5)
        assert "403" in str(refused.value)
