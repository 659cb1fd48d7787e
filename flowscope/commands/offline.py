"""What ``frontiers`` and ``explain`` share.

They replay a log and print text or JSON (``blame`` says a missing scope as they do).

A progress log is replayed in this process; a Spark event log is converted (in a child process when it is large:
``backend.spark.recording.convert_process.replay_event_log``) and its records applied here, the same records ``flowscope
record`` would write."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from tracker.progress_log.replay import Replay
    from tracker.subgraph import Subgraph

__all__ = ["dump_json", "fmt_time", "fmt_counts", "report_errors", "replay_log", "listed", "no_scope"]


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


def listed(what: str, names: list[str], most: int = 12) -> str:
    """``ports: a, b, c`` with at most ``most`` names and how many more; ``no ports`` for none."""
    if not names:
        return f"no {what}"
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return f"{what}: {', '.join(names[:most])}{more}"


def no_scope(log: str, path: list, root: Subgraph) -> str:
    """The message for a ``--scope`` the log does not have, naming the scopes it has."""
    scopes = listed("scopes", [str(list(s.path)) for s in root.scopes()])
    return f"flowscope: {log}: no scope {list(path)} ({scopes}; `flowscope frontiers LOG` shows their ports)"


def report_errors(replay: Replay, stream: TextIO = sys.stderr) -> None:
    """The replay's rejected batches and corrupt lines, one line each."""
    for err in replay.errors:
        print(f"flowscope: {err}", file=stream)


def replay_log(args: argparse.Namespace, check: bool) -> Any:
    """Replay ``args.log``, a progress log or a Spark event log, up to ``args.at`` progress records.

    None, after saying why, if it cannot be read."""
    from backend.stores import StoreError, open_read, stat
    from tracker.progress_log.log_file import ProgressLogError
    from tracker.progress_log.replay import replay_file

    # a rolling event log is a directory (a progress log is one file); a Spark log's first bytes say so. A file that
    # starts with a progress-log header is none: it is replayed without loading the Spark readers.
    try:
        if stat(args.log).is_dir or (not _starts_with_header(args.log) and _looks_like_event_log(args.log)):
            return _replay_spark_log(args, check)
        return replay_file(args.log, at=args.at, check_contracts=check, opener=open_read)
    except StoreError as e:  # one line naming the path or URL and the cause (no such bucket, unreachable, ...)
        print(f"flowscope: {e}", file=sys.stderr)
    except FileNotFoundError:
        print(f"flowscope: {args.log}: no such file", file=sys.stderr)
    except ProgressLogError as e:
        print(f"flowscope: {e}", file=sys.stderr)
    return None


def _starts_with_header(log: str) -> bool:
    from backend.stores import open_read
    from tracker.progress_log.log_file import first_record_problem

    try:
        return first_record_problem(log, opener=open_read) is None
    except (OSError, ValueError):  # unreadable, or a codec it cannot decode: the replay says why
        return False


def _looks_like_event_log(log: str) -> bool:
    from backend.eventlog.eventlog_layout import looks_like_event_log

    return looks_like_event_log(log)


def _replay_spark_log(args: argparse.Namespace, check: bool) -> Any:
    from backend.eventlog import MissingCodecError
    from backend.spark.recording.convert import EventLogError
    from backend.spark.recording.convert_process import replay_event_log

    try:
        replay, _ = replay_event_log(args.log, at=args.at, check_contracts=check)
    except (FileNotFoundError, EventLogError, MissingCodecError) as e:
        print(f"flowscope: {e}", file=sys.stderr)
        return None
    return replay
