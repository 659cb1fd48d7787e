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

__all__ = ["ErrorCallback", "LineError", "LogEvent", "PendingLine", "ReadStats"]


class LogEvent(NamedTuple):
    """One parsed JSON object from a log: `event["Event"]` names its type (not checked here)."""

    path: str
    line: int  # 1-based line number within `path`
    event: dict[str, Any]


# LineError.kind values
INVALID_JSON = "invalid-json"  # the line is not JSON
NOT_AN_OBJECT = "not-an-object"  # valid JSON, but not an object (Spark writes one object per line)
TRUNCATED_LINE = "truncated-line"  # a finished file ends in an unterminated line that does not parse
CORRUPT_STREAM = "corrupt-stream"  # the compressed bytes cannot be decoded: the rest of the file is skipped
TRUNCATED_STREAM = "truncated-stream"  # a finished compressed file ends inside a block or frame
FILE_VANISHED = "file-vanished"  # a file of the log disappeared before it was read to its end


@dataclass(frozen=True, slots=True)
class LineError:
    """A problem at `path`:`line`. For the two stream kinds `line` is the line at which decoding stopped."""

    path: str
    line: int
    kind: str
    reason: str
    excerpt: str = ""  # the start of the offending line, for a message

    def __str__(self) -> str:
        text = f"{self.path}:{self.line}: {self.kind}: {self.reason}"
        return f"{text} [{self.excerpt}]" if self.excerpt else text


ErrorCallback = Callable[[LineError], None]


@dataclass(frozen=True, slots=True)
class PendingLine:
    """The unfinished tail of a log that is still being written: line `line` of `path` has `size` bytes so far
    (decoded bytes of the partial line plus compressed bytes of an incomplete block). Not an error."""

    path: str
    line: int
    size: int


@dataclass
class ReadStats:
    """Counts for one reader. Every complete line read is an event, a corrupt line or a blank line:
    `lines_read == events + lines_corrupt + lines_blank` (see `accounted`)."""

    files: int = 0
    lines_read: int = 0
    events: int = 0
    lines_corrupt: int = 0
    lines_blank: int = 0
    streams_corrupt: int = 0  # files whose compressed stream broke or was cut short
    bytes_compressed: int = 0  # bytes read from disk
    bytes_uncompressed: int = 0  # bytes after decompression (equal to the above for plain files)
    errors_by_kind: Counter[str] = field(default_factory=Counter)

    @property
    def accounted(self) -> bool:
        return self.lines_read == self.events + self.lines_corrupt + self.lines_blank
