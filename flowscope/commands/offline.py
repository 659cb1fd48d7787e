"""What ``frontiers`` and ``explain`` share: they replay a progress log in this process and print text or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["dump_json", "fmt_time", "fmt_counts", "report_errors", "replay_log"]


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def dump_json(obj: Any) -> str:
    """One line of JSON (times are tuples inside the tracker and arrays here)."""
    try:
        import orjson

        return orjson.dumps(obj).decode()
    except ImportError:  # pragma: no cover
        return json.dumps(obj, default=_json_default, separators=(",", ":"))


def fmt_time(t: Any) -> str:
    """A time as compact JSON: ``5`` or ``[5,0]``."""
    return json.dumps(t, default=_json_default, separators=(",", ""))


def fmt_counts(pairs: list) -> str:
    """``(time, count)`` pairs as ``5:+1 [6,0]:-2``, or ``-`` for none."""
    return " ".join(f"{fmt_time(t)}:{c:+d}" for t, c in pairs) or "-"


def report_errors(replay: Any, stream: Any = sys.stderr) -> None:
    """The replay's rejected batches and corrupt lines, one line each."""
    for err in replay.errors:
        print(f"flowscope: {err}", file=stream)


def replay_log(args: argparse.Namespace, check: bool) -> Any:
    """Replay ``args.log`` (up to ``args.at`` progress records); None, after saying why, if it cannot be read."""
    from tracker.progress_log import ProgressLogError
    from tracker.replay import replay_file

    try:
        return replay_file(args.log, at=args.at, check_contracts=check)
    except FileNotFoundError:
        print(f"flowscope: {args.log}: no such file", file=sys.stderr)
    except ProgressLogError as e:
        print(f"flowscope: {e}", file=sys.stderr)
    return None
