"""``flowscope record EVENTLOG -o OUT``: a Spark event log converted into a flowscope progress log.

The conversion, its options and its summary belong to the Spark model's converter (backend/spark/recording/convert.py);
this module is where the CLI finds the command.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    from backend.spark.recording.convert import register as register_record

    register_record(subparsers)
