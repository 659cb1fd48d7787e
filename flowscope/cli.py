"""The ``flowscope`` command line: the parser, over one module per subcommand in flowscope/commands/.

Only the module of the command given is imported (all of them for ``--help`` or a mistyped command), so
``flowscope frontiers`` starts without loading the Spark readers or the web server.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Sequence

from .commands import COMMANDS
from .commands.arguments import apply_thresholds

__all__ = ["build_parser", "main", "tune_collector"]


def build_parser(argv_command: str | None = None) -> argparse.ArgumentParser:
    """The parser with ``argv_command``'s subcommand, or with every subcommand when that is not one of them."""
    parser = argparse.ArgumentParser(prog="flowscope", description="A visual debugger for dataflow progress.")
    sub = parser.add_subparsers(dest="command", required=True)
    wanted = [COMMANDS[argv_command]] if argv_command in COMMANDS else list(COMMANDS.values())
    for module in wanted:
        importlib.import_module(module).register(sub)
    return parser


def tune_collector() -> None:
    """Collect the oldest generation a hundred times less often than CPython does by default.

    A flowscope process keeps hundreds of thousands of small long-lived objects (the tracker's counts, the Spark
    model's state, the session's history) and allocates records as fast as it can: with the default thresholds the
    collector walks the old objects again and again while a many-job Spark log is brought to its full state.
    Young objects are still collected as often as before, so cyclic garbage goes as it did."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 1000)


def main(argv: Sequence[str] | None = None) -> int:
    tune_collector()
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command).parse_args(argv)
    problem = apply_thresholds(args)  # the Spark findings' thresholds, for every process the command starts
    if problem is not None:
        print(f"flowscope: {problem}", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. `flowscope frontiers LOG | head`
        return 0
    except OSError as e:  # a store that failed mid-read, wherever it was read: one line, never a traceback
        from backend.stores import StoreError

        if not isinstance(e, StoreError):
            raise
        print(f"flowscope: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
