"""ISO 8601 wall-clock times as epoch seconds: the one parser for Spark's streaming timestamps and ``--at``.

Spark writes a streaming progress's ``timestamp`` and its watermarks as ``2026-11-21T19:52:15.005Z``; a person
asking for a moment may leave the zone out, which means UTC here (as Spark's times are).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = ["iso_seconds"]


def iso_seconds(text: Any) -> float | None:
    """``text`` (ISO 8601; UTC when it names no zone) as epoch seconds; None if it is not a string or unreadable."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
