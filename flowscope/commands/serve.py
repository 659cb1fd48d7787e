"""``flowscope serve``: the debugger's server (browser view, REST API, WebSocket), for as many sessions as asked."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .server import add_server_options, run_server, server_settings

__all__ = ["register", "cmd_serve"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("serve", help="start the debugger's server (browser view, REST API, WebSocket)",
                              description="Start the flowscope server. Open logs from the page or the API; "
                                          "--follow DIR opens every log that appears in DIR, live.")
    p.add_argument("logs", nargs="*", metavar="LOG", help="logs to open at startup")
    p.add_argument("--spark-port", type=int, metavar="PORT",
                   help="accept live Spark applications here: flowscope.attach(spark, URL), or by configuration "
                        "spark.extraListeners=flowscope.FlowscopeListener with spark.flowscope.port=PORT")
    p.add_argument("--follow", action="append", default=[], metavar="DIR",
                   help="follow a directory: each log in it (now or later) becomes a live session")
    add_server_options(p, 8765)
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    follow = [Path(d).resolve() for d in args.follow]
    for d in follow:
        if not d.is_dir():
            print(f"flowscope: --follow {d}: not a directory", file=sys.stderr)
            return 2
    extra = follow + [Path(log).resolve().parent for log in args.logs]
    settings = server_settings(args, extra)
    settings.spark_port = args.spark_port
    return run_server(args, settings, [str(Path(log).resolve()) for log in args.logs], follow, False)
