"""``flowscope serve``: the debugger's server (browser view, REST API, WebSocket), for as many sessions as asked."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from .arguments import positive_int, positive_seconds
from .server import add_server_options, run_server, server_settings

__all__ = ["register", "cmd_serve"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("serve", help="start the debugger's server (browser view, REST API, WebSocket)",
                              description="Start the flowscope server. Open logs from the page or the API; "
                                          "--follow DIR lists every Spark application in DIR (now or later) as "
                                          "Spark's History Server does, and replays one when it is opened.")
    p.add_argument("logs", nargs="*", metavar="LOG", help="logs to open at startup (paths or store URLs, as --follow)")
    p.add_argument("--spark-port", type=int, metavar="PORT",
                   help="accept live Spark applications here: flowscope.attach(spark, URL), or by configuration "
                        "spark.extraListeners=flowscope.FlowscopeListener with spark.flowscope.port=PORT")
    p.add_argument("--follow", action="append", default=[], metavar="DIR",
                   help="follow a directory, local or a store's URL (s3://, s3a://, gs://, abfs://, az://, hdfs://): "
                        "its Spark applications (now or later) are listed from their first and last events and "
                        "replayed when opened; each other log becomes a live session. The list is kept in "
                        "--data-dir (default: ~/.cache/flowscope) and rescanned every --poll seconds")
    p.add_argument("--retain", type=positive_int, default=50, metavar="N",
                   help="applications of followed directories kept replayed in memory; opening one more closes the "
                        "least recently used (default 50)")
    p.add_argument("--poll", type=positive_seconds, default=2.0, metavar="SECONDS",
                   help="seconds between two scans of a followed directory (default 2). A store's objects appear "
                        "whole, so a running application's new events_N part in a bucket is listed, and read by "
                        "its open session, within this interval")
    add_server_options(p, 8765)
    p.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from backend.stores import StoreError, StoreUrl, locate, stat

    follow = [d if isinstance(d, StoreUrl) else d.resolve() for d in map(locate, args.follow)]
    for d in follow:
        try:
            if not stat(d).is_dir:
                print(f"flowscope: --follow {d}: not a directory", file=sys.stderr)
                return 2
        except StoreError as e:  # no such directory (or bucket), a store that cannot be reached
            print(f"flowscope: --follow {e}", file=sys.stderr)
            return 2
    logs = [log if isinstance(log, StoreUrl) else log.resolve() for log in map(locate, args.logs)]
    settings = server_settings(args, follow + [log if isinstance(log, StoreUrl) else log.parent for log in logs])
    settings.spark_port = args.spark_port
    settings.follow_dirs = follow
    settings.retain = args.retain
    settings.poll = args.poll
    settings.index_dir = Path(args.data_dir) if args.data_dir else user_cache_dir()
    return run_server(args, settings, [str(log) for log in logs], [], False)


def user_cache_dir() -> Path:
    """Where a server without --data-dir keeps its applications index: the user's cache directory."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "flowscope"
