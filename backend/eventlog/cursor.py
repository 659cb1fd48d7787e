"""A read position in one event-log file.

The one JSON-lines cursor (:class:`tracker.progress_log.jsonl.JsonLinesCursor`) with Spark's codecs and the event
log's counts.

Replaying a finished log and tailing a growing one are the same loop with a different notion of "the end", so both
readers drive this one cursor. It remembers the byte offset, the decoder's state (an incomplete compressed block)
and the partial last line, so it can stop at any byte and resume there later. It does not own a file handle between
calls: the caller opens the file (whatever its current name is, `.inprogress` or not) and lends it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from backend.eventlog.codecs import codec_from_name, make_decoder
from backend.eventlog.events import ErrorCallback, LogEvent, PendingLine, ReadStats
from backend.stores import StoreUrl
from tracker.progress_log.jsonl import JsonLinesCursor

__all__ = ["FileCursor"]

PLAIN_CHUNK = 1 << 20
COMPRESSED_CHUNK = 1 << 16  # compressed input per read: JSON logs decompress 10-40x


class FileCursor(JsonLinesCursor):
    """Reads one file of an event log incrementally.

    Parsed events (`LogEvent`s) collect in `ready` for the owner to drain; `stats` (shared by every file of the log)
    counts lines, bytes and broken streams. `decode` parses a line (default: the whole of it;
    `backend.eventlog.decode.EventDecoder` decodes only what a reader needs)."""

    def __init__(self, path: Path | StoreUrl, stats: ReadStats, report: ErrorCallback, *, chunk_size: int | None = None,
                 decode: Callable[[bytes], Any] | None = None) -> None:
        codec = codec_from_name(path.name)
        decoder = make_decoder(codec, path)  # raises MissingCodecError before anything is read
        super().__init__(str(path), decoder, report, counts=stats,
                         chunk_size=chunk_size or (PLAIN_CHUNK if codec is None else COMPRESSED_CHUNK), wrap=LogEvent,
                         decode=decode)
        self.path = path
        self._stats = stats

    def rename(self, path: Path | StoreUrl) -> None:  # type: ignore[override]
        """The file now has another name (`.inprogress` dropped); the content and the offset stay."""
        self.path = path
        super().rename(str(path))

    def pulled(self, n: int) -> None:
        self._stats.bytes_compressed += n

    def decoded_bytes(self, n: int) -> None:
        self._stats.bytes_uncompressed += n

    def stream_broken(self) -> None:
        self._stats.streams_corrupt += 1

    @property
    def pending_line(self) -> PendingLine | None:
        """The unfinished tail, if any (only meaningful while the file may still grow)."""
        size = self.pending
        return PendingLine(self.name, self.line + 1, size) if size else None
