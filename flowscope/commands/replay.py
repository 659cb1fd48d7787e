"""``flowscope replay LOG``: open one log in the browser view, on a server started on a free port."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .arguments import scope_path
from .server import Landing, add_server_options, run_server, server_settings

__all__ = ["register", "cmd_replay", "parse_moment"]


def parse_moment(text: str) -> Landing:
    """`--at`: a batch number or a wall-clock time.

    A batch number (`1234`) is the state after that many batches, as the page's timeline counts; a time is ISO 8601
    (`2026-11-28T01:02:03.123Z`; UTC when it names no zone)."""
    value = text.strip()
    if value.isdigit():
        return Landing(batch=int(value))
    from backend.spark.model.iso_time import iso_seconds

    at = iso_seconds(value)
    if at is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a batch number (1234) nor an ISO 8601 wall-clock time "
            "(2026-11-28T01:02:03.123Z)")
    return Landing(at=at)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("replay", help="open a progress log or Spark event log in the browser view",
                              description="Open one log (a flowscope progress log, or a Spark event log: a file or "
                                          "a rolling eventlog_v2_ directory, any codec) in the browser view: start "
                                          "the server (on 127.0.0.1 and a free port unless --host/--port say "
                                          "otherwise), print the URL of the log's session and serve until Ctrl-C.")
    p.add_argument("log", help="a flowscope progress log or a Spark event log (a path, or a store's URL: s3://...)")
    p.add_argument("--follow", dest="follow_file", action="store_true", help="keep following the file as it grows")
    p.add_argument("--at", type=parse_moment, metavar="MOMENT",
                   help="open the page at this moment: a batch number (the state after that many batches) or an "
                        "ISO 8601 wall-clock time (2026-11-28T01:02:03.123Z; the state after every batch stamped "
                        "at or before it); the URL is printed once the log has been read that far")
    p.add_argument("--scope", type=scope_path, default=[], metavar="PATH",
                   help="open this scope (its path: 3, or 3,1 for a scope inside scope 3) instead of the root")
    add_server_options(p, 0)
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    from backend.stores import StoreError, StoreUrl, locate, stat

    where = locate(args.log)
    log = where if isinstance(where, StoreUrl) else where.resolve()
    try:
        stat(log)
    except StoreError as e:  # no such file (or bucket), a store that cannot be reached
        print(f"flowscope: {e}", file=sys.stderr)
        return 2
    settings = server_settings(args, [log if isinstance(log, StoreUrl) else log.parent])
    landing = None
    if args.at is not None or args.scope:
        moment = args.at or Landing()
        landing = Landing(scope=tuple(args.scope), batch=moment.batch, at=moment.at)
    return run_server(args, settings, [str(log)], [], args.follow_file, landing)
