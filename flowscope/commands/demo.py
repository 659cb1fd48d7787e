"""``flowscope demo``: a local PySpark streaming pipeline attached live, in the browser view (flowscope/demo.py)."""

from __future__ import annotations

import argparse
from typing import Any

from .arguments import non_negative_seconds, positive_int

__all__ = ["register", "cmd_demo"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("demo", help="run a local PySpark streaming pipeline attached live, in the browser view")
    p.add_argument("--batches", type=positive_int, default=12, metavar="N", help="micro-batches to run (default 12)")
    p.add_argument("--stall", type=non_negative_seconds, default=5.0, help="seconds the slow batch sleeps (default 5)")
    p.add_argument("--rows-per-second", type=positive_int, default=8, metavar="N",
                   help="rows the rate source makes per second (default 8)")
    p.add_argument("--url", default=None, help="a running flowscope server to stream to (default: start one here)")
    p.add_argument("--open", action="store_true", help="open the page in a browser")
    p.add_argument("--exit", action="store_true", help="stop once the batches have run instead of serving on")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from flowscope.demo import run

    return run(args)
