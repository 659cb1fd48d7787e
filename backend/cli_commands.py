"""The server's commands for the ``flowscope`` CLI: ``serve`` and ``replay``.

``register(subparsers)`` adds them to the CLI's parser (``flowscope/cli.py`` calls it); ``main(argv)`` runs them
standalone (``python -m backend.cli_commands replay LOG``). They only parse arguments, start uvicorn with the app
from :func:`backend.app.create_app`, print the URL, and show a progress bar (rich) while a log loads.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import webbrowser
from collections.abc import Sequence
from pathlib import Path

__all__ = ["register", "main"]


def _common(p: argparse.ArgumentParser, default_port: int) -> None:
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1; any other needs --token)")
    p.add_argument("--port", type=int, default=default_port, help=f"port (default {default_port or 'a free one'})")
    p.add_argument("--token", help="require this token on every request and WebSocket")
    p.add_argument("--allow", action="append", default=[], metavar="DIR",
                   help="a directory the API may open logs from (repeatable; default: the current directory)")
    p.add_argument("--data-dir", metavar="DIR", help="where uploads are kept (default: a temporary directory)")
    p.add_argument("--upload-limit", type=int, default=512, metavar="MB", help="largest upload accepted (default 512)")
    p.add_argument("--no-check", action="store_true", help="do not check batches against the progress contract")
    p.add_argument("--checkpoint-every", type=int, default=4096, metavar="N", help=argparse.SUPPRESS)
    p.add_argument("--open", action="store_true", help="open the URL in a browser")


def register(subparsers) -> None:
    """Add ``serve`` and ``replay`` to the ``flowscope`` CLI's subparsers."""
    p = subparsers.add_parser("serve", help="start the debugger's server (browser view, REST API, WebSocket)",
                              description="Start the flowscope server. Open logs from the page or the API; "
                                          "--follow DIR opens every log that appears in DIR, live.")
    p.add_argument("logs", nargs="*", metavar="LOG", help="logs to open at startup")
    p.add_argument("--spark-port", type=int, metavar="PORT",
                   help="accept live Spark applications here: flowscope.attach(spark, URL), or by configuration "
                        "spark.extraListeners=flowscope.FlowscopeListener with spark.flowscope.port=PORT")
    p.add_argument("--follow", action="append", default=[], metavar="DIR",
                   help="follow a directory: each log in it (now or later) becomes a live session")
    _common(p, 8765)
    p.set_defaults(func=cmd_serve)

    p = subparsers.add_parser("replay", help="open a progress log or Spark event log in the browser view",
                              description="Replay a log (any kind the server knows: progress logs; Spark event "
                                          "logs once the Spark model registers them), start the server on a free "
                                          "port and print the URL.")
    p.add_argument("log", help="the log to replay")
    p.add_argument("--follow", dest="follow_file", action="store_true", help="keep following the file as it grows")
    _common(p, 0)
    p.set_defaults(func=cmd_replay)


def _settings(args: argparse.Namespace, extra_allowed: list[Path]):
    from .app import Settings

    allowed = [Path(d).resolve() for d in args.allow] or [Path.cwd()]
    allowed += [d for d in extra_allowed if d not in allowed]
    return Settings(
        host=args.host,
        port=args.port,
        token=args.token,
        allowed_dirs=allowed,
        data_dir=Path(args.data_dir) if args.data_dir else None,
        upload_limit=args.upload_limit * 1024 * 1024,
        check_contracts=not args.no_check,
        checkpoint_every=args.checkpoint_every,
    )


def _bind(host: str, port: int):
    import socket

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


async def _run(args: argparse.Namespace, settings, open_logs: list[str], follow_dirs: list[Path],
               follow_file: bool) -> int:
    import uvicorn
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from .app import create_app
    from .feeds import FeedError
    from .security import PathNotAllowed

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
            console.print(f"[yellow]{s.name}: {len(s.errors())} corrupt lines or rejected batches (see the Errors tab)[/yellow]")
    try:
        await serving
    except asyncio.CancelledError:
        pass
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    follow = [Path(d).resolve() for d in args.follow]
    for d in follow:
        if not d.is_dir():
            print(f"flowscope: --follow {d}: not a directory", file=sys.stderr)
            return 2
    extra = follow + [Path(log).resolve().parent for log in args.logs]
    settings = _settings(args, extra)
    settings.spark_port = args.spark_port
    try:
        return asyncio.run(_run(args, settings, [str(Path(log).resolve()) for log in args.logs], follow, False))
    except KeyboardInterrupt:
        return 0


def cmd_replay(args: argparse.Namespace) -> int:
    log = Path(args.log).resolve()
    if not log.exists():
        print(f"flowscope: {args.log}: no such file or directory", file=sys.stderr)
        return 2
    settings = _settings(args, [log.parent])
    try:
        return asyncio.run(_run(args, settings, [str(log)], [], args.follow_file))
    except KeyboardInterrupt:
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="flowscope", description="flowscope's server commands")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
