"""A read position in one event-log file: new bytes -> decoder -> complete lines -> parsed events.

Replaying a finished log and tailing a growing one are the same loop with a different notion of "the end", so both
readers drive this one cursor. It remembers the byte offset, the decoder's state (an incomplete compressed block)
and the partial last line, so it can stop at any byte and resume there later; memory is bounded by one chunk's
worth of decoded lines plus the longest line. It does not own a file handle between calls: the caller opens the
file (whatever its current name is, `.inprogress` or not) and lends it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import orjson

from . import events as records
from .codecs import CodecError, codec_from_name, make_decoder
from .events import LineError, LogEvent, PendingLine, ReadStats

__all__ = ["FileCursor"]

PLAIN_CHUNK = 1 << 20
COMPRESSED_CHUNK = 1 << 16  # compressed input per read: JSON logs decompress 10-40x
_EXCERPT = 120


class FileCursor:
    """Reads one file of an event log incrementally. Parsed events collect in `ready` for the owner to drain."""

    def __init__(
        self,
        path: Path,
        stats: ReadStats,
        report: Callable[[LineError], None],
        *,
        chunk_size: int | None = None,
    ) -> None:
        self.path = path
        self.name = str(path)
        self.codec = codec_from_name(path.name)
        self._decoder = make_decoder(self.codec, path)  # raises MissingCodecError before anything is read
        self._stats = stats
        self._report = report
        self._chunk = chunk_size or (PLAIN_CHUNK if self.codec is None else COMPRESSED_CHUNK)
        self.offset = 0  # bytes of the file consumed
        self.line = 0  # complete lines seen
        self._partial: list[bytes] = []  # the unterminated last line, in pieces
        self.ready: deque[LogEvent] = deque()
        self.broken = False  # the compressed stream is corrupt: nothing more can be read
        self.finished = False

    def rename(self, path: Path) -> None:
        """The file now has another name (`.inprogress` dropped); the content and the offset stay."""
        self.path = path
        self.name = str(path)
        self.ready = deque(LogEvent(self.name, e.line, e.event) for e in self.ready)

    def pull(self, fh: BinaryIO) -> bool:
        """Read and process the next chunk at `self.offset` from `fh`. False when there is nothing more to read."""
        if self.broken or self.finished:
            return False
        fh.seek(self.offset)
        data = fh.read(self._chunk)
        if not data:
            return False
        self.offset += len(data)
        self._stats.bytes_compressed += len(data)
        try:
            text = self._decoder.decode(data)
        except CodecError as exc:
            self._stats.bytes_uncompressed += len(exc.partial)
            self._feed(exc.partial)  # the blocks before the damage
            self._break(records.CORRUPT_STREAM, f"{exc}; the rest of the file is skipped")
            return False
        self._stats.bytes_uncompressed += len(text)
        self._feed(text)
        return True

    def finish(self, final: bool) -> None:
        """The end of the available data. `final`: the file is complete, so an unterminated last line is parsed
        (Spark always ends a line with a newline, but hand-made logs may not) and reported if it does not parse,
        and an incomplete compressed block is a truncation. Not final: both are "more to come"."""
        if not final or self.finished or self.broken:
            return
        self.finished = True
        if self._partial:
            raw = b"".join(self._partial)
            self._partial.clear()
            self._line(raw, truncated=True)
        if self._decoder.pending:
            self._break(
                records.TRUNCATED_STREAM,
                f"the file ends inside a {self.codec} block or frame ({self._decoder.pending} bytes undecodable)",
            )

    @property
    def pending(self) -> PendingLine | None:
        """The unfinished tail, if any (only meaningful while the file may still grow)."""
        if self.finished or self.broken:
            return None
        size = sum(map(len, self._partial)) + self._decoder.pending
        return PendingLine(self.name, self.line + 1, size) if size else None

    def _feed(self, text: bytes) -> None:
        if not text:
            return
        pieces = text.split(b"\n")
        if len(pieces) == 1:
            self._partial.append(text)
            return
        first = pieces[0]
        if self._partial:
            self._partial.append(first)
            first = b"".join(self._partial)
            self._partial.clear()
        self._line(first)
        for raw in pieces[1:-1]:
            self._line(raw)
        if pieces[-1]:
            self._partial.append(pieces[-1])

    def _line(self, raw: bytes, truncated: bool = False) -> None:
        self.line += 1
        stats = self._stats
        stats.lines_read += 1
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if not raw.strip():
                stats.lines_blank += 1
                return
            kind = records.TRUNCATED_LINE if truncated else records.INVALID_JSON
            reason = f"{'last line has no newline and ' if truncated else ''}is not valid JSON: {exc}"
            self._corrupt(kind, reason, raw)
            return
        if type(obj) is dict:
            stats.events += 1
            self.ready.append(LogEvent(self.name, self.line, obj))
        else:
            self._corrupt(records.NOT_AN_OBJECT, f"a JSON {type(obj).__name__}, not an object", raw)

    def _corrupt(self, kind: str, reason: str, raw: bytes) -> None:
        self._stats.lines_corrupt += 1
        excerpt = raw[:_EXCERPT].decode("utf-8", "replace")
        self._report(LineError(self.name, self.line, kind, reason, excerpt))

    def _break(self, kind: str, reason: str) -> None:
        self.broken = True
        self._partial.clear()
        self._stats.streams_corrupt += 1
        self._report(LineError(self.name, self.line + 1, kind, reason))
