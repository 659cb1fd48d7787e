"""The application factory: settings in, a FastAPI app out, everything wired explicitly.

``create_app(settings)`` builds the session manager (with its feed registry), the routers (sessions, scopes,
timeline, stream), the same-origin guard, the token middleware when a token is set, and the frontend (found by
:func:`locate_frontend`): ``/`` serves its ``index.html`` with the modules and CSS inlined (``backend/web/page.py``),
``/static/`` every file of it (``/static/index.html``: the page with its modules as files),
``/vendor/plotly.min.js`` the file shipped inside the installed ``plotly`` package (no CDN, no build step). Nothing
lives in module globals: two apps in one process (tests do this) share nothing.
"""

from __future__ import annotations

import gzip
import importlib.resources
import importlib.util
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from backend.feeds.progress_feeds import FeedRegistry, default_registry
from backend.history.applications import Applications
from backend.history.index_db import INDEX_FILE, IndexDB
from backend.sessions.manager import SessionManager
from backend.sessions.scratch_dir import ScratchDir
from backend.spark_api.catalog import SessionApplications
from backend.stores import StoreUrl
from backend.web.api import (
    blame,
    diff,
    live_stream,
    overview,
    plan,
    scopes,
    sessions,
    spark_v1,
    structured_streaming,
    tasks,
    timeline,
    whatif,
)
from backend.web.page import InlinePage
from backend.web.security import SameOriginMiddleware, TokenMiddleware, is_loopback

__all__ = ["Settings", "create_app", "plotly_js", "locate_frontend", "is_loopback"]


def locate_frontend() -> Path:
    """The browser view's files (index.html, css/, js/).

    A wheel carries them inside this package, as ``backend/frontend`` (pyproject.toml maps the checkout's top-level
    ``frontend/`` there); a source checkout or an editable install has them in ``frontend/`` beside the package."""
    package = Path(str(importlib.resources.files("backend")))
    candidates = (package / "frontend", package.parent / "frontend")
    for candidate in candidates:
        if (candidate / "index.html").is_file():
            return candidate
    raise FileNotFoundError(f"the browser view's files are missing (looked in {', '.join(map(str, candidates))})")


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 0
    token: str | None = None
    allowed_dirs: list[Path] = field(default_factory=lambda: [Path.cwd()])
    data_dir: Path | None = None  # uploads go to data_dir/sessions/<id>/; default: a temporary directory
    upload_limit: int = 512 * 1024 * 1024  # bytes received
    upload_decompressed_limit: int | None = None  # bytes an upload may decompress to (None: upload_limit)
    allowed_urls: list[StoreUrl] = field(default_factory=list)  # store URLs (and what lies under them) it may read
    follow_dirs: list[Path | StoreUrl] = field(default_factory=list)
    open_paths: list[str] = field(default_factory=list)  # logs to open as sessions at startup
    check_contracts: bool = True
    checkpoint_every: int = 4096
    keep_finished: int | None = 64  # finished scopes a session keeps live; older ones fold (None: never fold)
    frontend_dir: Path = field(default_factory=locate_frontend)
    registry: FeedRegistry | None = None
    spark_port: int | None = None  # accept live Spark listeners here (0: a free port); None: no ingest
    index_dir: Path | None = None  # where the applications index of followed directories lives (None: data_dir)
    retain: int = 50  # applications of followed directories kept replayed in memory (least recently used closed)
    poll: float = 2.0  # seconds between two scans of a followed directory's applications

    def validate(self) -> None:
        if not is_loopback(self.host) and not self.token:
            raise ValueError(f"binding {self.host} exposes the server beyond this machine: give --token T too "
                             "(every request and WebSocket must then carry it)")
        if self.upload_limit < 1:
            raise ValueError("upload_limit must be positive")
        if self.upload_decompressed_limit is not None and self.upload_decompressed_limit < 1:
            raise ValueError("upload_decompressed_limit must be positive")
        if self.retain < 1:
            raise ValueError("--retain must be at least 1")


def plotly_js() -> Path:
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the plotly package is not installed (pip install plotly)")
    return Path(list(spec.submodule_search_locations)[0]) / "package_data" / "plotly.min.js"


def _start_spark_ingest(settings: Settings, manager: SessionManager, keep: bool):
    """Accept Spark listeners (flowscope.attach(spark, url), or spark.extraListeners by configuration).

    Each application that connects becomes a live session. Listeners must send the server's token if it has one.
    With ``keep`` (a --data-dir) live sessions are journaled there and come back, still live, at the next start
    (backend/spark/live/journal.py)."""
    import asyncio

    from backend.spark.live.journal import new_journal, restore_journals
    from backend.spark.live.socket_feed import SparkIngestServer, SparkLiveFeed, ingest_label

    loop = asyncio.get_running_loop()
    data_dir = Path(settings.data_dir or ".")  # set by create_app before the server starts

    def on_feed(feed) -> None:  # on the connection's thread: hop to the server's loop
        directory = feed.journal.directory if feed.journal is not None else None
        loop.call_soon_threadsafe(lambda: manager.add(feed, feed.label, directory=directory, sid=feed.session_id))

    def journaled_feed(hello: dict) -> SparkLiveFeed:
        feed = SparkLiveFeed(ingest_label(hello), ingest.capacity)
        feed.session_id, feed.journal = new_journal(data_dir, feed.label)
        return feed

    ingest = SparkIngestServer(on_feed, settings.host, settings.spark_port or 0, token=settings.token,
                               feed_factory=journaled_feed if keep else None)
    if keep:
        def restored(feed, label, directory, sid, created) -> None:
            manager.add(feed, label, directory=directory, sid=sid).created = created

        restore_journals(data_dir, ingest, restored)
    return ingest


def _applications(settings: Settings, manager: SessionManager) -> Applications | None:
    """The applications index of the followed directories (backend/history/), None when none is followed.

    Their Spark event logs are listed there, not opened as sessions by the manager's watcher."""
    if not settings.follow_dirs:
        return None
    from backend.spark.live.follow_feed import SPARK_EVENT_LOG

    for d in settings.follow_dirs:  # what lies in a followed directory may be opened, on disk or in a store
        if isinstance(d, StoreUrl):
            settings.allowed_urls += [d] if d not in settings.allowed_urls else []
        elif d not in settings.allowed_dirs:
            settings.allowed_dirs.append(d)
    index = IndexDB(Path(settings.index_dir or settings.data_dir or ".") / INDEX_FILE)
    applications = Applications(manager, index, [str(d) for d in settings.follow_dirs], settings.retain,
                                settings.poll)
    manager.listed_elsewhere.add(SPARK_EVENT_LOG.name)
    manager.known_elsewhere = applications.lists
    return applications


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    settings.validate()
    owned_tmp = None
    if settings.data_dir is None:
        owned_tmp = ScratchDir()  # removed at exit; what a kill -9 leaves is removed at the next start
        settings.data_dir = owned_tmp.path
    registry = settings.registry or default_registry()
    manager = SessionManager(settings, registry)
    applications = _applications(settings, manager)

    ingest_holder: dict = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if owned_tmp is None:
            manager.restore()  # the uploads an earlier run kept in --data-dir, under their ids
        if applications is not None:
            applications.load()  # every application the index knows, listed before the first request
            applications.start()
        for path in settings.open_paths:
            manager.open_path(path)
        for d in settings.follow_dirs:
            manager.follow_directory(d)
        if settings.spark_port is not None:
            ingest_holder["server"] = _start_spark_ingest(settings, manager, keep=owned_tmp is None)
        try:
            yield
        finally:
            if "server" in ingest_holder:
                ingest_holder.pop("server").close()
            await manager.close()
            if applications is not None:
                await applications.close()
            if owned_tmp is not None:
                owned_tmp.cleanup()

    app = FastAPI(
        title="flowscope",
        summary="A visual debugger for dataflow progress",
        description="Sessions replay or follow a dataflow's progress (progress logs, Spark event logs, live feeds); "
                    "the API serves each scope's graph, its state at any batch, explanations of stuck frontiers, "
                    "and a WebSocket stream of changes.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.manager = manager
    app.state.applications = applications
    # /api/v1's applications (backend/spark_api): the sessions' Spark logs and the followed directories' index
    app.state.spark_applications = SessionApplications(manager, applications)
    for router in (sessions.router, scopes.router, timeline.router, live_stream.router, blame.router, diff.router,
                   whatif.router, tasks.router, structured_streaming.router, overview.router,
                   plan.router, spark_v1.router):
        app.include_router(router)

    @app.get("/api/health", tags=["server"], summary="Liveness, and where live Spark listeners connect")
    async def health() -> dict:
        out: dict = {"ok": True, "sessions": len(manager.sessions)}
        ingest = ingest_holder.get("server")
        if ingest is not None:
            out["spark_ingest"] = {"host": ingest.address[0], "port": ingest.address[1]}
        if applications is not None:  # the followed directories' applications: listed, read, scans finished
            out["applications"] = {"listed": len(applications.by_location), "read": applications.logs_read,
                                   "opened": len(applications.opened), "retain": applications.retain,
                                   "scans": min(applications.scans.values(), default=0)}
        return out

    frontend = Path(settings.frontend_dir)
    no_cache = {"Cache-Control": "no-cache"}

    page = InlinePage(frontend)

    @app.get("/", include_in_schema=False)
    async def index(request: Request):
        """The page with its modules and stylesheets inlined (backend/web/page.py): one response instead of 33."""
        raw, gz, etag = page.get()
        headers = {**no_cache, "ETag": etag, "Vary": "Accept-Encoding"}
        if etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        if "gzip" in request.headers.get("accept-encoding", ""):
            headers["Content-Encoding"] = "gzip"
            return Response(gz, media_type="text/html; charset=utf-8", headers=headers)
        return Response(raw, media_type="text/html; charset=utf-8", headers=headers)

    plotly_path = plotly_js()
    plotly_cache: dict[str, bytes] = {}

    def plotly_bytes() -> tuple[bytes, bytes]:
        """The file and its gzip, read and compressed once: one write each, whatever the server is doing."""
        if "raw" not in plotly_cache:
            raw = plotly_path.read_bytes()
            plotly_cache["gz"] = gzip.compress(raw, 6)
            plotly_cache["raw"] = raw
        return plotly_cache["raw"], plotly_cache["gz"]

    @app.get("/vendor/plotly.min.js", include_in_schema=False)
    async def plotly(request: Request):
        if not plotly_path.exists():
            raise HTTPException(404, "plotly.min.js not found in the installed plotly package")
        raw, gz = await run_in_threadpool(plotly_bytes)
        headers = {"Cache-Control": "public, max-age=86400", "Vary": "Accept-Encoding"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            headers["Content-Encoding"] = "gzip"
            return Response(gz, media_type="text/javascript", headers=headers)
        return Response(raw, media_type="text/javascript", headers=headers)

    app.mount("/static", StaticFiles(directory=frontend), name="static")
    if settings.token:
        app.add_middleware(TokenMiddleware, token=settings.token)
    app.add_middleware(SameOriginMiddleware, host=settings.host)  # added last: runs first
    return app
