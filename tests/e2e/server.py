"""A real uvicorn server on 127.0.0.1 and a free port, in a background thread, for API and browser tests."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn

from backend.web.app import Settings, create_app


class RunningServer:
    def __init__(self, app, server: uvicorn.Server, port: int, loop_holder: dict):
        self.app = app
        self.server = server
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.ws_url = f"ws://127.0.0.1:{port}"
        self._loop_holder = loop_holder
        self.logs: Path | None = None  # the folder of logs a test serves from, when it keeps one with the server

    @property
    def manager(self):
        return self.app.state.manager

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop_holder["loop"]

    def call(self, fn, *args, timeout: float = 10.0):
        """Run ``fn(*args)`` on the server's event loop (e.g. to add a session for a live feed); its result."""
        async def run():
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def wait_for(self, sid: str, status=("done",), timeout: float = 30.0, client: httpx.Client | None = None) -> dict:
        c = client or httpx.Client(base_url=self.url, headers=getattr(self, "headers", {}))
        deadline = time.monotonic() + timeout
        while True:
            info = c.get(f"/api/sessions/{sid}").json()
            if info["status"] in status:
                return info
            if time.monotonic() > deadline:
                raise TimeoutError(f"session {sid} still {info['status']} after {timeout}s")
            time.sleep(0.02)


def free_socket(host: str = "127.0.0.1", sndbuf: int | None = None) -> socket.socket:
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP (else every response
    # that is written in two parts waits ~40 ms for a delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if sndbuf:  # inherited by accepted connections: a slow reader then blocks the server's sends quickly
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    sock.bind((host, 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock


@contextmanager
def running_server(settings: Settings | None = None, sndbuf: int | None = None) -> Iterator[RunningServer]:
    settings = settings or Settings()
    app = create_app(settings)
    sock = free_socket(settings.host if settings.host != "0.0.0.0" else "127.0.0.1", sndbuf)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws_ping_interval=None)
    server = uvicorn.Server(config)
    holder: dict = {}

    def run() -> None:
        loop = asyncio.new_event_loop()
        holder["loop"] = loop
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.serve(sockets=[sock]))
        loop.close()

    thread = threading.Thread(target=run, daemon=True, name="uvicorn")
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield RunningServer(app, server, port, holder)
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
