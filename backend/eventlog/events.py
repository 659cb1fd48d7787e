"""What the event-log readers hand out: events with their provenance, problems, the pending tail, and the counts.

Every event keeps the file and line it came from, so whatever the Spark model derives from it (a progress batch, a
contract violation) can point back at the exact line of the log. Problems are values, not exceptions: a corrupt line
costs one line, never the replay.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tracker.progress_log import jsonl
from tracker.progress_log.jsonl import LineCounts, LineError

__all__ = ["ErrorCallback", "LineError", "LogEvent", "PendingLine", "ReadStats"]


class LogEvent(NamedTuple):
    """One parsed JSON object from a log: `event["Event"]` names its type (not checked here)."""

    path: str
    line: int  # 1-based line number within `path`
    event: dict[str, Any]


# LineError.kind values: the one reader's (tracker.progress_log.jsonl) kinds
INVALID_JSON = jsonl.INVALID_JSON  # the line is not JSON
NOT_AN_OBJECT = jsonl.NOT_AN_OBJECT  # valid JSON, but not an object (Spark writes one object per line)
TRUNCATED_LINE = jsonl.TRUNCATED_LINE  # a finished file ends in an unterminated line that does not parse
CORRUPT_STREAM = jsonl.CORRUPT_STREAM  # the compressed bytes cannot be decoded: the rest of the file is skipped
TRUNCATED_STREAM = jsonl.TRUNCATED_STREAM  # a finished compressed file ends inside a block or frame
FILE_VANISHED = jsonl.FILE_VANISHED  # a file of the log disappeared before it was read to its end


ErrorCallback = Callable[[LineError], None]


@dataclass(frozen=True, slots=True)
class PendingLine:
    """The unfinished tail of a log that is still being written.

    Line `line` of `path` has `size` bytes so far (decoded bytes of the partial line plus compressed bytes of an
    incomplete block). Not an error."""

    path: str
    line: int
    size: int


@dataclass
class ReadStats(LineCounts):
    """Counts for one reader (over all files of a log).

    Every complete line read is an event, a corrupt line or a blank line: `lines_read == events + lines_corrupt +
    lines_blank` (see `accounted`)."""

    files: int = 0
    streams_corrupt: int = 0  # files whose compressed stream broke or was cut short
    bytes_compressed: int = 0  # bytes read from disk
    bytes_uncompressed: int = 0  # bytes after decompression (equal to the above for plain files)
    errors_by_kind: Counter[str] = field(default_factory=Counter)
