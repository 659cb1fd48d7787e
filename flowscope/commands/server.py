"""What ``flowscope serve`` and ``flowscope replay`` share: their options, and running the server.

Both only parse arguments, start uvicorn with the app from :func:`backend.app.create_app`, print the URL, and show
a progress bar (rich) while a log loads. The web server's imports happen in :func:`run_server`, not at import.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import time
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

from .arguments import positive_int

if TYPE_CHECKING:
    from backend.app import Settings

__all__ = ["add_server_options", "server_settings", "run_server"]


def add_server_options(p: argparse.ArgumentParser, default_port: int) -> None:
    """The options both commands take: where to listen, who may connect, what the API may open."""
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1; any other needs --token)")
    p.add_argument("--port", type=int, default=default_port, help=f"port (default {default_port or 'a free one'})")
    p.add_argument("--token", help="require this token on every request and WebSocket")
    p.add_argument("--allow", action="append", default=[], metavar="DIR",
                   help="a directory the API may open logs from (repeatable; default: the current directory)")
    p.add_argument("--data-dir", metavar="DIR", help="where uploads are kept (default: a temporary directory)")
    p.add_argument("--upload-limit", type=positive_int, default=512, metavar="MB",
                   help="largest upload accepted (default 512)")
    p.add_argument("--upload-decompressed-limit", type=positive_int, metavar="MB",
                   help="largest size an upload may decompress to (default: the upload limit)")
    p.add_argument("--no-check", action="store_true", help="do not check batches against the progress contract")
    p.add_argument("--checkpoint-every", type=int, default=4096, metavar="N", help=argparse.SUPPRESS)
    p.add_argument("--open", action="store_true", help="open the URL in a browser")


def server_settings(args: argparse.Namespace, extra_allowed: list[Path]) -> Settings:
    """The app's settings from the options (``extra_allowed``: directories of the logs named on the command line)."""
    from backend.app import Settings

    allowed = [Path(d).resolve() for d in args.allow] or [Path.cwd()]
    allowed += [d for d in extra_allowed if d not in allowed]
    return Settings(
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


def _url(args: argparse.Namespace, port: int, sid: str | None) -> str:
    host = args.host if args.host not in ("0.0.0.0", "::", "") else "127.0.0.1"  # every interface: this one
    if ":" in host:
        host = f"[{host}]"
    query = f"?token={args.token}" if args.token else ""
    return f"http://{host}:{port}/{query}" + (f"#/s/{sid}" if sid else "")


def run_server(args: argparse.Namespace, settings: Settings, open_logs: list[str], follow_dirs: list[Path],
               follow_file: bool) -> int:
    """Serve until Ctrl-C, with ``open_logs`` opened (followed if ``follow_file``) and ``follow_dirs`` watched."""
    try:
        return asyncio.run(_serve(args, settings, open_logs, follow_dirs, follow_file))
    except KeyboardInterrupt:
        return 0


async def _serve(args: argparse.Namespace, settings: Settings, open_logs: list[str], follow_dirs: list[Path],
                 follow_file: bool) -> int:
    import uvicorn
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from backend.app import create_app
    from backend.feeds import FeedError
    from backend.security import PathNotAllowed

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
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
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
        except (PathNotAllowed, FileNotFoundError, FeedError) as e:
            console.print(f"[red]flowscope: {e}[/red]")
            server.should_exit = True
            await serving
            return 2
    for d in follow_dirs:
        manager.follow_directory(d)
    url = _url(args, port, sessions[0].id if len(sessions) == 1 else None)
    print(f"flowscope: serving {url}", flush=True)
    if args.open:
        webbrowser.open(url)
    if sessions and console.is_terminal:
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
                progress.update(tasks[s.id], batches=s.head, total=1, completed=1,
                                description=f"{s.name}: {s.status}")
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
