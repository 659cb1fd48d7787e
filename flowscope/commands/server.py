"""What ``flowscope serve`` and ``flowscope replay`` share: their options, and running the server.

Both only parse arguments, start uvicorn with the app from :func:`backend.web.app.create_app`, print the URL, and show
a progress bar (rich) while a log loads. The web server's imports happen in :func:`run_server`, not at import.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import time
import webbrowser
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .arguments import add_thresholds_option, positive_int

if TYPE_CHECKING:
    from backend.sessions.session import Session
    from backend.stores import StoreUrl
    from backend.web.app import Settings

__all__ = ["Landing", "add_server_options", "server_settings", "run_server"]


@dataclass(frozen=True)
class Landing:
    """Where the printed URL opens the one log given.

    A scope, and a moment, either a batch number (the state after that many batches, as the page counts) or a wall-clock
    time in epoch seconds (the state after every batch stamped at or before it). The page's deep link takes a batch, so
    a wall-clock time is resolved to one."""

    scope: tuple[int, ...] = ()
    batch: int | None = None
    at: float | None = None


def add_server_options(p: argparse.ArgumentParser, default_port: int) -> None:
    """The options both commands take: where to listen, who may connect, what the API may open."""
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1; any other needs --token)")
    p.add_argument("--port", type=int, default=default_port, help=f"port (default {default_port or 'a free one'})")
    p.add_argument("--token", help="require this token on every request and WebSocket")
    p.add_argument("--allow", action="append", default=[], metavar="DIR",
                   help="a directory (or a store's URL, s3://bucket/prefix) the API may open logs from (repeatable; "
                        "default: the current directory, and the URLs of the logs and --follow given)")
    p.add_argument("--data-dir", metavar="DIR", help="where uploads (and, for serve --follow, the applications index) "
                   "are kept (default: a temporary directory; the index: the user's cache directory)")
    p.add_argument("--upload-limit", type=positive_int, default=512, metavar="MB",
                   help="largest upload accepted (default 512)")
    p.add_argument("--upload-decompressed-limit", type=positive_int, metavar="MB",
                   help="largest size an upload may decompress to (default: the upload limit)")
    p.add_argument("--no-check", action="store_true", help="do not check batches against the progress contract")
    add_thresholds_option(p)
    p.add_argument("--checkpoint-every", type=int, default=4096, metavar="N", help=argparse.SUPPRESS)
    p.add_argument("--open", action="store_true", help="open the URL in a browser")


def server_settings(args: argparse.Namespace, extra_allowed: list[Path | StoreUrl]) -> Settings:
    """The app's settings from the options (``extra_allowed``: directories of the logs named on the command line, and
    the store URLs named there, under which the API may open logs too)."""
    from backend.stores import StoreUrl, locate
    from backend.web.app import Settings

    given = [locate(d) for d in args.allow]
    allowed = [d.resolve() for d in given if isinstance(d, Path)] or [Path.cwd()]
    allowed += [d for d in extra_allowed if isinstance(d, Path) and d not in allowed]
    return Settings(
        allowed_urls=[u for u in given + extra_allowed if isinstance(u, StoreUrl)],
        host=args.host,
        port=args.port,
        token=args.token,
        allowed_dirs=allowed,
        data_dir=Path(args.data_dir) if args.data_dir else None,
        upload_limit=args.upload_limit * 1024 * 1024,
        upload_decompressed_limit=(args.upload_decompressed_limit * 1024 * 1024
                                   if args.upload_decompressed_limit else None),
        check_contracts=not args.no_check,
        checkpoint_every=args.checkpoint_every,
    )


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP (without it, responses
    # written in two parts wait ~40 ms for a delayed ACK)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _page_url(args: argparse.Namespace, port: int, sid: str | None, scope: tuple[int, ...] = (),
         batch: int | None = None) -> str:
    """The page's URL; with a session, its deep link.

    As frontend/js/navigation/routing.js reads it: `#/s/ID?scope=3,1&batch=20`."""
    host = args.host if args.host not in ("0.0.0.0", "::", "") else "127.0.0.1"  # every interface: this one
    if ":" in host:
        host = f"[{host}]"
    query = f"?token={args.token}" if args.token else ""
    link = f"#/s/{sid}" if sid else ""
    params = [f"scope={','.join(map(str, scope))}"] if scope else []
    if batch is not None:
        params.append(f"batch={batch}")
    if link and params:
        link += "?" + "&".join(params)
    return f"http://{host}:{port}/{query}{link}"


async def _landing_batch(session: Session, landing: Landing) -> int | None:
    """The batch `landing` names in `session`, once the session has read that far (or read all it has).

    A wall-clock time is the number of batches stamped at or before it, known when a later batch arrives."""
    def reached() -> bool:
        if landing.batch is not None:
            return session.head >= landing.batch
        if landing.at is not None:
            last = session.history.time_of(session.head)
            return last is not None and last > landing.at
        return True

    while session.status == "loading" and not reached():
        await asyncio.sleep(0.05)
    if landing.at is not None:
        return int(session.history.batch_at_time(landing.at))
    return landing.batch


def run_server(args: argparse.Namespace, settings: Settings, open_logs: list[str], follow_dirs: list[Path | StoreUrl],
               follow_file: bool, landing: Landing | None = None) -> int:
    """Serve until Ctrl-C, with ``open_logs`` opened and ``follow_dirs`` watched.

    Logs are followed if ``follow_file``. With ``landing``, the printed URL opens the one log there (printed once the
    log has been read that far)."""
    try:
        return asyncio.run(_serve(args, settings, open_logs, follow_dirs, follow_file, landing))
    except KeyboardInterrupt:
        return 0


async def _serve(args: argparse.Namespace, settings: Settings, open_logs: list[str], follow_dirs: list[Path | StoreUrl],
                 follow_file: bool, landing: Landing | None) -> int:
    import uvicorn
    from rich.console import Console

    from backend.feeds.progress_feeds import FeedError
    from backend.stores import StoreError
    from backend.web.app import create_app
    from backend.web.security import PathNotAllowed

    console = Console(stderr=True)
    try:
        app = create_app(settings)
    except ValueError as e:
        console.print(f"[red]flowscope: {e}[/red]")
        return 2
    try:
        sock = _bind(args.host, args.port)
    except OSError as e:
        console.print(f"[red]flowscope: cannot listen on {args.host}:{args.port}: {e}[/red]")
        return 2
    port = sock.getsockname()[1]
    # Ctrl-C ends the server within a few seconds even while a page keeps a connection open or a request runs
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=3))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if serving.done():
            return 1
        await asyncio.sleep(0.02)
    manager = app.state.manager
    sessions = []
    for log in open_logs:
        try:
            sessions.append(manager.open_path(log, follow=follow_file))
        except (PathNotAllowed, FileNotFoundError, FeedError, StoreError) as e:
            console.print(f"[red]flowscope: {e}[/red]")
            server.should_exit = True
            await serving
            return 2
    for d in follow_dirs:
        manager.follow_directory(d)
    showing = None
    if sessions and console.is_terminal:
        showing = asyncio.create_task(_show_progress(console, sessions, serving))
    one = sessions[0] if len(sessions) == 1 else None
    if one is not None and landing is not None:
        batch = await _landing_batch(one, landing)
        if batch is not None and one.head < batch:
            console.print(f"[yellow]flowscope: {one.name} has {one.head} batches: --at {batch} shows the "
                          "last[/yellow]")
            batch = one.head
        url = _page_url(args, port, one.id, landing.scope, batch)
    else:
        url = _page_url(args, port, one.id if one is not None else None)
    print(f"flowscope: serving {url}", flush=True)
    if args.open:
        webbrowser.open(url)
    if showing is not None:
        await showing
    for s in sessions:
        if s.status == "failed":
            console.print(f"[red]flowscope: {s.name}: {s.error}[/red]")
        elif s.errors():
            console.print(f"[yellow]{s.name}: {len(s.errors())} corrupt lines or rejected batches "
                          "(see the Errors tab)[/yellow]")
    try:
        await serving
    except asyncio.CancelledError:
        pass
    return 0


async def _show_progress(console: Any, sessions: list, serving: asyncio.Task) -> None:
    """A progress bar per session (rich, on a terminal) until every session has been read."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=None),
                  TextColumn("{task.fields[batches]:,} batches · {task.fields[rate]:,.0f}/s"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        tasks = {s.id: progress.add_task(f"replaying {s.name}", total=None, batches=0, rate=0.0) for s in sessions}
        start = time.monotonic()
        while any(s.status == "loading" for s in sessions) and not serving.done():
            for s in sessions:
                progress.update(tasks[s.id], batches=s.head, rate=s.head / max(1e-3, time.monotonic() - start))
            await asyncio.sleep(0.2)
        for s in sessions:
            progress.update(tasks[s.id], batches=s.head, total=1, completed=1, description=f"{s.name}: {s.status}")
