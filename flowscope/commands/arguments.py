"""Option types the subcommands share.

An option means the same in every command, and a bad value is argparse's usage error (the option named, exit code 2),
never a traceback.

``--scope`` and ``--port`` go through the parsers the REST API uses (``backend.views.projections``), imported only
when an
option is parsed, so building the parser still loads nothing but argparse.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["positive_int", "non_negative_int", "non_negative_seconds", "positive_seconds", "scope_path", "port",
           "json_time", "add_thresholds_option", "apply_thresholds"]


def add_thresholds_option(p: argparse.ArgumentParser) -> None:
    """``--thresholds FILE``: the Spark findings' thresholds, overridden from a TOML or JSON file (docs/findings.md)."""
    p.add_argument("--thresholds", metavar="FILE",
                   help="override the Spark findings' thresholds from a TOML or JSON file (docs/findings.md)")


def apply_thresholds(args: argparse.Namespace) -> str | None:
    """Check the file ``--thresholds`` names and name it in the environment, so every process that builds a Spark
    model (the conversion children, the server's sessions) uses it; the problem, naming the file, if it cannot be
    used (the command then stops with exit code 2)."""
    path = getattr(args, "thresholds", None)
    if not path:
        return None
    import os

    from backend.spark.diagnosis.thresholds import ENV, ThresholdsError, load

    try:
        load(path)
    except ThresholdsError as e:
        return f"--thresholds {e}"
    os.environ[ENV] = os.path.abspath(path)
    return None


def _integer_arg(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def positive_int(text: str) -> int:
    """A count that must be at least 1 (``--top N``)."""
    n = _integer_arg(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive integer")
    return n


def non_negative_int(text: str) -> int:
    """A count where 0 means none (``--at 0``: before the first record)."""
    n = _integer_arg(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give 0 or a positive integer")
    return n


def non_negative_seconds(text: str) -> float:
    """A duration in seconds, 0 or more (``demo --stall 0``: no stall)."""
    try:
        s = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not s >= 0 or s == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give 0 or more seconds")
    return s


def positive_seconds(text: str) -> float:
    """A duration in seconds, more than 0 (``serve --poll 0.5``)."""
    s = non_negative_seconds(text)
    if s == 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give more than 0 seconds")
    return s


def scope_path(text: str) -> list[int]:
    """A scope path: ``2``, ``2,1`` or JSON ``[2,1]``; ``[]`` (or ``""``) is the root."""
    from backend.views.projections import parse_scope

    try:
        return list(parse_scope(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def port(text: str) -> Any:
    """A port: ``in,NODE,PORT`` or ``out,NODE,PORT`` (or JSON ``["in",4,0]``), as a tracker ``Location``."""
    from backend.views.projections import parse_port

    try:
        return parse_port(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def json_time(text: str) -> Any:
    """A time as JSON: ``5``, ``[5,0]``."""
    try:
        return json.loads(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not JSON: give a time such as 5 or [5,0]") from None
