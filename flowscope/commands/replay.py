"""``flowscope replay LOG``: open one log in the browser view, on a server started on a free port."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .server import add_server_options, run_server, server_settings

__all__ = ["register", "cmd_replay"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("replay", help="open a progress log or Spark event log in the browser view",
                              description="Open one log (a flowscope progress log, or a Spark event log: a file or "
                                          "a rolling eventlog_v2_ directory, any codec) in the browser view: start "
                                          "the server (on 127.0.0.1 and a free port unless --host/--port say "
                                          "otherwise), print the URL of the log's session and serve until Ctrl-C.")
    p.add_argument("log", help="a flowscope progress log or a Spark event log")
    p.add_argument("--follow", dest="follow_file", action="store_true", help="keep following the file as it grows")
    add_server_options(p, 0)
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    log = Path(args.log).resolve()
    if not log.exists():
        print(f"flowscope: {args.log}: no such file or directory", file=sys.stderr)
        return 2
    settings = server_settings(args, [log.parent])
    return run_server(args, settings, [str(log)], [], args.follow_file)
