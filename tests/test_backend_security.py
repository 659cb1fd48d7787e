"""What the server lets in, against a real uvicorn server on 127.0.0.1: binding (127.0.0.1 by default, another host
only with a token), the token on every request and WebSocket, requests from other web pages refused (foreign Host,
cross-origin WebSocket and POST), paths confined (symlinks, rolling parts), and bad input answered with a 4xx and a
reason without stopping the server (NUL bytes, over-long paths and names, FIFOs, binary WebSocket frames)."""

from __future__ import annotations

import os
import shutil
import threading
import time

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from backend.web.app import Settings, create_app, is_loopback
from backend.web.security import PathNotAllowed, confine
from tests.conftest import LOOP_LOG
from tests.e2e.server import running_server

TOKEN = "s3cret-token"


def test_defaults_bind_loopback_and_other_hosts_need_a_token():
    assert Settings().host == "127.0.0.1" and is_loopback("127.0.0.1") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")
    assert is_loopback("localhost") and is_loopback("127.0.0.2") and is_loopback("[::1]")
    assert not is_loopback(""), "the empty host binds every interface"
    for host in ("0.0.0.0", ""):
        with pytest.raises(ValueError, match="give --token"):
            create_app(Settings(host=host))
        with pytest.raises(ValueError, match="give --token"):  # so the Spark ingest port, which follows it, too
            create_app(Settings(host=host, spark_port=0))
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


# --- other web pages must not drive a local server -------------------------------------------------------------


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("logs")
    shutil.copy2(LOOP_LOG, d / "loop.jsonl")
    return d


@pytest.fixture(scope="module")
def local(logs, tmp_path_factory):
    """The default server: loopback, no token."""
    with running_server(Settings(allowed_dirs=[logs], data_dir=tmp_path_factory.mktemp("data"))) as srv:
        yield srv


@pytest.fixture(scope="module")
def loop_session(local, logs) -> str:
    r = httpx.post(local.url + "/api/sessions", json={"path": str(logs / "loop.jsonl")})
    assert r.status_code == 201, r.text
    local.wait_for(r.json()["id"])
    return r.json()["id"]


@pytest.mark.parametrize("path", ["/", "/api/sessions", "/api/health", "/static/js/app.js"])
def test_a_foreign_host_name_is_refused(local, path):
    """DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 sends its own Host."""
    r = httpx.get(local.url + path, headers={"Host": f"evil.example:{local.port}"})
    assert r.status_code == 403 and "evil.example" in r.json()["detail"]
    for host in (f"127.0.0.1:{local.port}", f"localhost:{local.port}", "127.0.0.1"):
        assert httpx.get(local.url + path, headers={"Host": host}).status_code == 200, host


def test_a_cross_origin_websocket_is_refused(local, loop_session):
    url = f"{local.ws_url}/api/sessions/{loop_session}/stream"
    for origin in ("http://evil.example", f"http://localhost:{local.port}", "null"):
        with pytest.raises(Exception) as refused:
            with connect(url, origin=origin) as ws:
                ws.recv(timeout=5)
        assert "403" in str(refused.value), origin
    with connect(url, origin=f"http://127.0.0.1:{local.port}") as ws:  # the page's own
        assert '"type":"snapshot"' in ws.recv(timeout=10)
    with connect(url) as ws:  # no Origin: not a browser
        assert '"type":"snapshot"' in ws.recv(timeout=10)


def test_a_cross_origin_post_is_refused_and_changes_nothing(local):
    """A foreign page's form or no-cors fetch: a "simple" text/plain POST, which no preflight stops."""
    body = LOOP_LOG.read_bytes()
    before = {s["id"] for s in httpx.get(local.url + "/api/sessions").json()}
    upload = local.url + "/api/sessions/upload?filename=loop.jsonl"
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"},
                    {"Origin": f"http://127.0.0.1:{local.port + 1}"}):
        r = httpx.post(upload, content=body, headers={"Content-Type": "text/plain", **headers})
        assert r.status_code == 403 and "refused" in r.json()["detail"], headers
        r = httpx.post(local.url + "/api/sessions", json={"path": str(LOOP_LOG)}, headers=headers)
        assert r.status_code == 403, headers
    assert httpx.delete(local.url + "/api/sessions/x", headers={"Origin": "http://evil.example"}).status_code == 403
    assert {s["id"] for s in httpx.get(local.url + "/api/sessions").json()} == before
    # the page's own upload (frontend/js/api.js: same origin, application/octet-stream) and a script's still work
    own = {"Origin": f"http://127.0.0.1:{local.port}", "Sec-Fetch-Site": "same-origin",
           "Content-Type": "application/octet-stream"}
    r = httpx.post(upload, content=body, headers=own)
    assert r.status_code == 201, r.text
    assert httpx.post(upload, content=body).status_code == 201
    assert httpx.get(local.url + "/api/sessions", headers={"Origin": "http://evil.example"}).status_code == 200


# --- bad input gets a 4xx with a reason, and the server keeps answering -------------------------------------------


@pytest.mark.parametrize("path,reason", [
    ("/tmp/a\x00b.jsonl", "NUL"),
    ("/" + "a" * 5000, "longer than"),
    ("/tmp/" + "n" * 300 + ".jsonl", "longer than 255"),
])
def test_impossible_paths_are_a_400_with_the_reason(local, path, reason):
    r = httpx.post(local.url + "/api/sessions", json={"path": path})
    assert r.status_code == 400 and reason in r.json()["detail"], r.text


@pytest.mark.parametrize("name,reason", [("n" * 300 + ".jsonl", "longer than 255"), ("a\x00.jsonl", "NUL")])
def test_impossible_upload_names_are_a_400_with_the_reason(local, name, reason):
    r = httpx.post(local.url + "/api/sessions/upload", params={"filename": name}, content=LOOP_LOG.read_bytes())
    assert r.status_code == 400 and reason in r.json()["detail"], r.text


def test_a_fifo_is_refused_and_the_server_keeps_answering(local, logs):
    fifo = logs / "pipe.jsonl"
    os.mkfifo(fifo)
    try:
        result: dict = {}

        def post() -> None:
            result["r"] = httpx.post(local.url + "/api/sessions", json={"path": str(fifo)}, timeout=30)

        t = threading.Thread(target=post)
        t.start()
        t.join(15)
        assert not t.is_alive(), "opening a FIFO blocked the request"
        assert result["r"].status_code == 422 and "not a regular file" in result["r"].json()["detail"]
        assert httpx.get(local.url + "/api/health", timeout=5).status_code == 200  # the server still answers
    finally:
        if fifo.exists():  # a writer unblocks any reader left waiting on the FIFO
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK) if _has_reader(fifo) else None
            if fd is not None:
                os.close(fd)
            fifo.unlink()


def _has_reader(fifo) -> bool:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        return True
    except OSError:
        return False


def test_a_symlinked_part_of_a_rolling_log_is_refused(local, logs, tmp_path):
    """Opened directly, a file outside the allowed directories is refused; through a rolling log's part, too."""
    outside = tmp_path / "secret.jsonl"
    shutil.copy2(LOOP_LOG, outside)
    rolling = logs / "eventlog_v2_local-1"
    rolling.mkdir()
    (rolling / "appstatus_local-1").touch()
    (rolling / "events_1_local-1").symlink_to(outside)
    assert httpx.post(local.url + "/api/sessions", json={"path": str(outside)}).status_code == 403
    r = httpx.post(local.url + "/api/sessions", json={"path": str(rolling)})
    assert r.status_code == 403 and "outside the directories" in r.json()["detail"], r.text


def test_a_binary_websocket_frame_gets_a_close_frame(local, loop_session):
    with connect(f"{local.ws_url}/api/sessions/{loop_session}/stream") as ws:
        assert '"type":"snapshot"' in ws.recv(timeout=10)
        ws.send(b"\x00\x01binary")
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003, closed.value
    assert httpx.get(local.url + "/api/health").status_code == 200


def test_in_a_browser_the_pages_own_upload_works_and_another_origins_does_not(local):
    """Headless chromium: the page's own upload (frontend/js/api.js) is accepted; a page from another origin (the
    same server named localhost) posting text/plain with no-cors, and opening the WebSocket, gets nothing done."""
    from tests.e2e.browser import chromium

    text = LOOP_LOG.read_text()
    before = {s["id"] for s in httpx.get(local.url + "/api/sessions").json()}
    with chromium() as browser:
        page = browser.new_page()
        page.goto(local.url + "/")
        info = page.evaluate("""async (text) => {
            const api = await import("/static/js/api.js");
            return api.upload(new File([text], "loop.jsonl"));
        }""", text)
        assert info["id"] not in before and info["name"] == "loop.jsonl"
        sid = info["id"]

        page.goto(f"http://localhost:{local.port}/")
        outcome = page.evaluate("""async ([base, ws]) => {
            await fetch(base + "/api/sessions/upload?filename=evil.jsonl", {method: "POST", mode: "no-cors",
                        headers: {"content-type": "text/plain"}, body: "{}"});
            return await new Promise((done) => {
                const socket = new WebSocket(ws);
                socket.onmessage = () => done("message");
                socket.onclose = () => done("closed");
            });
        }""", [local.url, f"{local.ws_url}/api/sessions/{sid}/stream"])
        assert outcome == "closed", "a cross-origin page read the stream"
    after = {s["id"] for s in httpx.get(local.url + "/api/sessions").json()}
    assert after == before | {sid}, "the cross-origin upload created a session"


def test_a_followed_directory_skips_fifos_and_links_leading_outside(tmp_path):
    followed, outside = tmp_path / "followed", tmp_path / "outside"
    followed.mkdir()
    outside.mkdir()
    shutil.copy2(LOOP_LOG, outside / "secret.jsonl")
    (followed / "elsewhere.jsonl").symlink_to(outside / "secret.jsonl")
    os.mkfifo(followed / "pipe.jsonl")
    shutil.copy2(LOOP_LOG, followed / "real.jsonl")
    settings = Settings(allowed_dirs=[followed], follow_dirs=[followed], data_dir=tmp_path / "data")
    with running_server(settings) as srv:
        deadline = time.monotonic() + 20
        while not httpx.get(srv.url + "/api/sessions", timeout=5).json():
            assert time.monotonic() < deadline, "the followed log never became a session"
            time.sleep(0.1)
        scanned = srv.manager.scans_done[followed]
        while srv.manager.scans_done[followed] < scanned + 2:  # a whole scan more, which sees the FIFO and the link
            assert time.monotonic() < deadline, "the followed directory was not scanned again"
            time.sleep(0.05)
        assert httpx.get(srv.url + "/api/health", timeout=5).status_code == 200
        names = {s["name"] for s in httpx.get(srv.url + "/api/sessions", timeout=5).json()}
        assert names == {"real.jsonl"}, names
