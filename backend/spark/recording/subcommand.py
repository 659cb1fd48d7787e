"""One `flowscope` subcommand run without the flowscope CLI.

As in `python -m backend.spark.recording.convert LOG -o OUT` or `spark-submit backend/fleet/submit.py DIR -o OUT`.

A module that owns a subcommand's arguments registers them on the CLI's subparsers (`register(subparsers)`);
run alone, it builds a parser holding only that subcommand and runs it. The subcommand's own name may be given
or left out (`record LOG` and `LOG` both work). Lives in backend/ because backend never imports the CLI package.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["run_subcommand"]


def run_subcommand(name: str, register: Callable[[Any], None], argv: Sequence[str] | None = None,
                   prog: str = "flowscope") -> int:
    """Parse `argv` (default: `sys.argv[1:]`) as the subcommand `name` that `register` adds, and run it."""
    parser = argparse.ArgumentParser(prog=prog)
    register(parser.add_subparsers(dest="command", required=True))
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or args_list[0] != name:
        args_list.insert(0, name)
    args = parser.parse_args(args_list)
    return args.func(args)
