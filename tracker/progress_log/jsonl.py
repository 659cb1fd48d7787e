"""JSON Lines, read once or tailed: the one reader behind progress logs, followed logs, Spark event logs and the
live Spark feed.

The layers: a *decoder* turns a file's bytes into text (``codecs``: plain, gzip or zstd; the Spark event-log reader
adds Spark's own codecs with the same shape), :class:`LineSplitter` cuts text into lines, :class:`JsonLines` parses each
line into an object, and :class:`JsonLinesCursor` remembers where it stopped in one file (byte offset, decoder
state, the partial last line) so reading a finished file and tailing a growing one are the same loop. Problems are
values, never the end: a corrupt line costs one line, damaged compressed bytes cost the rest of that file (what
decoded before the damage is kept), and each is reported once as a :class:`LineError` naming the file, the line
and the cause. :class:`ReadLimits` bounds what one line and one decompressed stream may cost.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, Protocol

from tracker.progress_log.codecs import CodecError, Decoder, file_decoder

try:  # orjson is optional here (tracker/ needs only the standard library) but much faster when present
    import orjson

    loads: Callable[[bytes], Any] = orjson.loads
    JSONError: type[Exception] = orjson.JSONDecodeError
except ImportError:  # pragma: no cover - exercised only without orjson
    import json

    loads = json.loads
    JSONError = json.JSONDecodeError

__all__ = [
    "CORRUPT_STREAM",
    "FILE_VANISHED",
    "INVALID_JSON",
    "JsonLines",
    "JsonLinesCursor",
    "LineCounts",
    "LineError",
    "LineSplitter",
    "LINE_TOO_LONG",
    "NOT_AN_OBJECT",
    "Opener",
    "ReadLimits",
    "REJECTED_RECORD",
    "DAMAGED_EVENT",
    "IGNORED_FIELD",
    "STREAM_TOO_LARGE",
    "TRUNCATED_LINE",
    "TRUNCATED_STREAM",
    "open_binary",
    "read_json_lines",
]

# LineError.kind values
INVALID_JSON = "invalid-json"  # the line is not JSON
NOT_AN_OBJECT = "not-an-object"  # valid JSON, but not an object (every format here writes one object per line)
TRUNCATED_LINE = "truncated-line"  # a finished file ends in an unterminated line that does not parse
LINE_TOO_LONG = "line-too-long"  # a line longer than ReadLimits.max_line_bytes: skipped without being kept
CORRUPT_STREAM = "corrupt-stream"  # the compressed bytes cannot be decoded: the rest of the file is skipped
TRUNCATED_STREAM = "truncated-stream"  # a finished compressed file ends inside a block or frame
STREAM_TOO_LARGE = "stream-too-large"  # decompressed past ReadLimits.max_stream_bytes: the rest is skipped
FILE_VANISHED = "file-vanished"  # a file disappeared before it was read to its end
REJECTED_RECORD = "rejected-record"  # a well-formed line whose record was rejected (by the replay)
DAMAGED_EVENT = "damaged-event"  # a Spark event whose fields have the wrong types: skipped by the model
IGNORED_FIELD = "ignored-field"  # an applied record's field a reader uses (blame) has the wrong type: left out

_EXCERPT = 120


@dataclass(frozen=True, slots=True)
class LineError:
    """A problem at ``path``:``line``: reported, and the line (or for the stream kinds, the rest of the file)
    skipped. For the stream kinds ``line`` is the line at which decoding stopped."""

    path: str
    line: int
    kind: str
    reason: str
    excerpt: str = ""  # the start of the offending line, for a message

    def __str__(self) -> str:
        text = f"{self.path}:{self.line}: {self.kind}: {self.reason}"
        return f"{text} [{self.excerpt}]" if self.excerpt else text


ErrorCallback = Callable[[LineError], None]
Opener = Callable[[str], IO[bytes]]  # opens a path for reading, as open(path, "rb")


def open_binary(path: str) -> IO[bytes]:
    """The local file at ``path``, open for reading: the default ``Opener``."""
    return open(path, "rb")


def _env_int(name: str, default: int | None) -> int | None:
    value = os.environ.get(name)
    if not value:
        return default
    n = int(value)
    return n if n > 0 else None


READ_CHUNK = 1 << 14  # bytes read at a time from a plain file (about a hundred progress records)
READ_CHUNK_COMPRESSED = 1 << 12  # from a compressed one (about ten times as much text)


@dataclass(frozen=True)
class ReadLimits:
    """What one line and one decompressed stream may cost (None: unbounded). A line over ``max_line_bytes`` is
    reported (``line-too-long``) and skipped without ever being held whole; a file that decompresses past
    ``max_stream_bytes`` is reported (``stream-too-large``) and the rest of it skipped. Defaults come from the
    environment (``FLOWSCOPE_MAX_LINE_BYTES``, ``FLOWSCOPE_MAX_STREAM_BYTES``; 0 means unbounded)."""

    max_line_bytes: int | None = 64 << 20  # Spark's largest events (SQL plans) are a few MB
    max_stream_bytes: int | None = None

    @classmethod
    def from_env(cls) -> ReadLimits:
        return cls(_env_int("FLOWSCOPE_MAX_LINE_BYTES", 64 << 20), _env_int("FLOWSCOPE_MAX_STREAM_BYTES", None))


DEFAULT_LIMITS = ReadLimits.from_env()


@dataclass
class LineCounts:
    """Every complete line read is an object, a corrupt line or a blank line: ``lines_read == events +
    lines_corrupt + lines_blank`` (see ``accounted``)."""

    lines_read: int = 0
    events: int = 0
    lines_corrupt: int = 0
    lines_blank: int = 0

    @property
    def accounted(self) -> bool:
        return self.lines_read == self.events + self.lines_corrupt + self.lines_blank


class LineSplitter:
    """Cuts a stream of bytes into lines. Keeps the unterminated last piece for the next ``feed``; a line longer
    than ``max_line`` is not kept: it comes out as ``None`` (once), its bytes dropped as they arrive."""

    def __init__(self, max_line: int | None = DEFAULT_LIMITS.max_line_bytes) -> None:
        self.max_line = max_line
        self._partial: list[bytes] = []
        self._size = 0
        self._skipping = False  # inside an over-long line: drop until its newline

    @property
    def pending(self) -> int:
        """Bytes of the unterminated last line held so far."""
        return self._size

    def feed(self, data: bytes) -> list[bytes | None]:
        if not data:
            return []
        pieces = data.split(b"\n")
        if not self._skipping and (self.max_line is None or self._size + len(data) <= self.max_line):
            # no line here can be over the limit (the common case): only the ends need joining
            last = pieces.pop()
            if pieces and self._partial:
                self._partial.append(pieces[0])
                pieces[0] = b"".join(self._partial)
                self._partial.clear()
                self._size = 0
            if last:
                self._partial.append(last)
                self._size += len(last)
            return pieces  # type: ignore[return-value]  # (a list of bytes is a list of bytes | None)
        out: list[bytes | None] = []
        last = pieces.pop()
        for piece in pieces:
            if self._skipping:
                self._skipping = False
                continue
            if self._partial:
                self._partial.append(piece)
                piece = b"".join(self._partial)
                self._partial.clear()
                self._size = 0
            if self.max_line is not None and len(piece) > self.max_line:
                out.append(None)
                continue
            out.append(piece)
        if last and not self._skipping:
            self._partial.append(last)
            self._size += len(last)
            if self.max_line is not None and self._size > self.max_line:
                self._partial.clear()
                self._size = 0
                self._skipping = True
                out.append(None)
        return out

    def rest(self) -> bytes | None:
        """The unterminated last line (at the end of a finished file); None if there is none."""
        if self._skipping:
            self._skipping = False
            return None
        if not self._partial:
            return None
        raw = b"".join(self._partial)
        self._partial.clear()
        self._size = 0
        return raw


class LineCheck(Protocol):
    """A format's validator (``tracker.progress_log.records.RecordCheck``): ``lines`` sees each batch of complete lines
    before any of them is parsed (so byte scans can run once per batch), then ``one(raw, obj)`` gives the reason
    to reject one parsed object of that batch, or None."""

    def lines(self, lines: list[bytes]) -> None: ...

    def one(self, raw: bytes, obj: dict) -> str | None: ...


class JsonLines:
    """Parses the lines of one file (or connection) into objects, counting and reporting what is not one.

    ``feed(bytes)`` splits and parses; ``parse(raw)`` takes one line already split (and, with a ``check``, already
    shown to its ``lines``, as ``feed`` and ``finish`` do). Parsed objects go to
    ``on_object(line, obj)``, or, those of one ``feed``, to ``on_objects([(line, obj), ...])`` in one call when it is
    given; problems to ``report``. ``decode`` replaces ``loads`` for a reader that needs only part of each object
    (it must raise ``JSONError`` for a line that is not JSON).
    """

    def __init__(
        self,
        path: str,
        report: ErrorCallback,
        on_object: Callable[[int, dict], None],
        counts: LineCounts | None = None,
        limits: ReadLimits = DEFAULT_LIMITS,
        check: LineCheck | None = None,
        decode: Callable[[bytes], Any] | None = None,
        on_objects: Callable[[list[tuple[int, dict]]], None] | None = None,
    ) -> None:
        self.path = path
        self._loads = decode or loads  # a decoder may decode less than the whole line; it raises JSONError too
        self.line = 0  # lines seen
        self.check = check  # a format's validator: the reason to reject an object, or None
        self.counts = counts if counts is not None else LineCounts()
        self.limits = limits
        self._report = report
        self._on_object = on_object
        self._on_objects = on_objects
        self.splitter = LineSplitter(limits.max_line_bytes)

    def feed(self, text: bytes) -> None:
        # The common line (a JSON object the check accepts) is handled inline, with the counts kept in locals: the
        # per-line cost is most of a reader's. Anything else goes through _parse() or too_long(), which report it.
        loads, check, counts = self._loads, self.check, self.counts
        lines = self.splitter.feed(text)
        one = None
        if check is not None:
            check.lines(lines if None not in lines else [raw for raw in lines if raw is not None])  # type: ignore[arg-type]
            one = check.one
        out: list[tuple[int, dict]] = []
        append = out.append
        line = self.line
        good = 0
        for raw in lines:
            if raw is not None:
                try:
                    obj = loads(raw)
                except (JSONError, RecursionError):
                    obj = None
                if isinstance(obj, dict) and (one is None or one(raw, obj) is None):
                    line += 1
                    good += 1
                    append((line, obj))
                    continue
            counts.lines_read += good
            counts.events += good
            good = 0
            self.line = line
            if raw is None:
                self.too_long()
            else:
                obj = self._parse(raw)
                if obj is not None:
                    append((self.line, obj))
            line = self.line
        self.line = line
        counts.lines_read += good
        counts.events += good
        if not out:
            return
        if self._on_objects is not None:
            self._on_objects(out)
        else:
            emit = self._on_object
            for n, obj in out:
                emit(n, obj)

    def finish(self) -> None:
        """The end of a finished file: an unterminated last line is parsed, and reported if it does not."""
        raw = self.splitter.rest()
        if raw is not None:
            if self.check is not None:
                self.check.lines([raw])
            self.parse(raw, truncated=True)

    def too_long(self) -> None:
        """One line was longer than the limit and skipped."""
        self.line += 1
        self.counts.lines_read += 1
        self.corrupt(LINE_TOO_LONG, f"longer than {self.limits.max_line_bytes} bytes (FLOWSCOPE_MAX_LINE_BYTES); "
                                    "skipped", b"")

    def parse(self, raw: bytes, truncated: bool = False) -> dict | None:
        """Count and parse one line; the object (handed on), or None (a blank or corrupt line, reported)."""
        obj = self._parse(raw, truncated)
        if obj is not None:
            self._on_object(self.line, obj)
        return obj

    def _parse(self, raw: bytes, truncated: bool = False) -> dict | None:
        """:meth:`parse`, the object returned but not handed on."""
        self.line += 1
        counts = self.counts
        counts.lines_read += 1
        try:
            obj = self._loads(raw)
        except JSONError as exc:
            if not raw.strip():
                counts.lines_blank += 1
                return None
            if truncated:
                self.corrupt(TRUNCATED_LINE, f"truncated line: the last line has no newline and is not valid JSON "
                                             f"({exc})", raw)
            else:
                self.corrupt(INVALID_JSON, f"invalid JSON: the line is not valid JSON ({exc})", raw)
            return None
        except RecursionError:
            self.corrupt(INVALID_JSON, "invalid JSON: nested too deeply to parse", raw)
            return None
        if not isinstance(obj, dict):  # a decoder may hand out a dict subclass
            self.corrupt(NOT_AN_OBJECT, f"expected a JSON object, found a JSON {_json_type(obj)}", raw)
            return None
        if self.check is not None:
            problem = self.check.one(raw, obj)
            if problem is not None:
                self.corrupt(REJECTED_RECORD, f"{obj.get('type') if type(obj.get('type')) is str else 'untyped'} "
                                              f"record rejected: {problem}", raw)
                return None
        counts.events += 1
        return obj

    def corrupt(self, kind: str, reason: str, raw: bytes) -> None:
        self.counts.lines_corrupt += 1
        self._report(LineError(self.path, self.line, kind, reason, raw[:_EXCERPT].decode("utf-8", "replace")))


def _json_type(obj: Any) -> str:
    return {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(obj), "null")


# --- one file, read once or tailed -------------------------------------------------------------------------------


class JsonLinesCursor:
    """A read position in one file: new bytes -> decoder -> complete lines -> parsed objects in ``ready``.

    It remembers the byte offset, the decoder's state (an incomplete compressed block) and the partial last line,
    so it can stop at any byte and resume there later; memory is bounded by one chunk's worth of decoded lines
    plus the longest allowed line. It does not own a file handle between calls: the caller opens the file
    (whatever its current name is) and lends it to :meth:`pull`. ``wrap(path, line, obj)`` makes the items of
    ``ready`` (default ``(line, obj)``); ``decode`` is :class:`JsonLines`'.
    """

    def __init__(
        self,
        path: str,
        decoder: Decoder,
        report: ErrorCallback,
        *,
        counts: LineCounts | None = None,
        chunk_size: int = 1 << 20,
        limits: ReadLimits = DEFAULT_LIMITS,
        wrap: Callable[[str, int, dict], Any] | None = None,
        check: LineCheck | None = None,
        decode: Callable[[bytes], Any] | None = None,
    ) -> None:
        self.name = path
        self.codec = decoder.codec
        self.limits = limits
        self._decoder = decoder
        self._report = report
        self._chunk = chunk_size
        self._wrap = wrap
        self.offset = 0  # bytes of the file consumed
        self.decoded = 0  # bytes after decoding
        self.ready: deque[Any] = deque()
        self.parser = JsonLines(path, report, self._ready, counts, limits, check=check, decode=decode,
                                on_objects=self._ready_all)
        self.broken = False  # the stream is corrupt (or over its limit): nothing more is read
        self.finished = False

    def _ready(self, line: int, obj: dict) -> None:
        self.ready.append((line, obj) if self._wrap is None else self._wrap(self.name, line, obj))

    def _ready_all(self, parsed: list[tuple[int, dict]]) -> None:
        wrap = self._wrap
        if wrap is None:
            self.ready.extend(parsed)
        else:
            name = self.name
            self.ready.extend([wrap(name, line, obj) for line, obj in parsed])

    @property
    def line(self) -> int:
        """Complete lines seen."""
        return self.parser.line

    def rename(self, path: str) -> None:
        """The file now has another name; the content and the offset stay."""
        self.name = self.parser.path = path
        if self._wrap is not None:
            self.ready = deque(self._wrap(path, *self._unwrap(item)) for item in self.ready)

    @staticmethod
    def _unwrap(item: Any) -> tuple[int, dict]:
        return item[-2], item[-1]

    def pull(self, fh: IO[bytes]) -> bool:
        """Read and process the next chunk at ``offset`` from ``fh``. False when there is nothing more to read."""
        if self.broken or self.finished:
            return False
        fh.seek(self.offset)
        data = fh.read(self._chunk)
        if not data:
            return False
        start = self.offset
        self.offset += len(data)
        self.pulled(len(data))
        limit = self.limits.max_stream_bytes
        try:
            for text in self._decoder.chunks(data):
                self.decoded += len(text)
                self.decoded_bytes(len(text))
                self.parser.feed(text)
                if limit is not None and self.decoded > limit:
                    self.break_off(STREAM_TOO_LARGE, f"decompressed to more than {limit} bytes "
                                                     "(FLOWSCOPE_MAX_STREAM_BYTES); the rest of the file is skipped")
                    return False
        except CodecError as exc:
            self.break_off(CORRUPT_STREAM, f"{exc} (in the compressed bytes {start}-{self.offset}); "
                                           "the rest of the file is skipped")
            return False
        return True

    def pulled(self, n: int) -> None:
        """Hook: ``n`` more bytes were read from the file."""

    def decoded_bytes(self, n: int) -> None:
        """Hook: ``n`` more bytes were decoded."""

    def finish(self, final: bool) -> None:
        """The end of the available data. ``final``: the file is complete, so an unterminated last line is parsed
        (and reported if it does not parse) and an incomplete compressed block is a truncation. Not final: both
        are "more to come"."""
        if not final or self.finished or self.broken:
            return
        self.finished = True
        self.parser.finish()
        if self._decoder.pending:
            self.break_off(TRUNCATED_STREAM, f"the file ends inside a {self.codec} block or frame "
                                             f"({self._decoder.pending} bytes undecodable, from byte "
                                             f"{self.offset - self._decoder.pending})")

    @property
    def pending(self) -> int:
        """Bytes of the unfinished tail: the partial line plus compressed bytes of an incomplete block."""
        if self.finished or self.broken:
            return 0
        return self.parser.splitter.pending + self._decoder.pending

    def break_off(self, kind: str, reason: str) -> None:
        """Nothing more can be read from this file: say why, once."""
        self.broken = True
        self.parser.splitter.rest()
        self.stream_broken()
        self._report(LineError(self.name, self.line + 1, kind, reason))

    def stream_broken(self) -> None:
        """Hook: the stream broke (corrupt, truncated or over its limit)."""


def read_json_lines(
    path: str | os.PathLike,
    report: ErrorCallback,
    *,
    decoder: Decoder | None = None,
    counts: LineCounts | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
    check: LineCheck | None = None,
    opener: Opener | None = None,
) -> Iterator[tuple[int, dict]]:
    """``(line, object)`` for every JSON object in a finished file (decoder by suffix unless given); corrupt
    lines, objects ``check`` rejects and damaged compressed bytes are reported and skipped, everything else that
    decodes is yielded. ``opener`` opens ``path`` for reading (default: the local file; a caller passes its own
    for a file elsewhere, as ``backend.stores.open_read`` for a store's URL)."""
    p = os.fspath(path)
    # Small reads: the objects of one read stay alive until the caller takes them, and a few hundred at a time
    # keep the allocator and the garbage collector cheap (1 MB reads made reading 2.2x slower than 16 KB ones).
    plain = decoder is None and not p.endswith((".gz", ".zst", ".zstd"))
    cursor = JsonLinesCursor(p, decoder or file_decoder(p), report, counts=counts, limits=limits, check=check,
                             chunk_size=READ_CHUNK if plain else READ_CHUNK_COMPRESSED)
    ready = cursor.ready
    with (opener or open_binary)(p) as fh:
        while cursor.pull(fh):
            yield from ready  # (the caller cannot reach the cursor: nothing is added while this iterates)
            ready.clear()
        cursor.finish(True)
    yield from ready
    ready.clear()
