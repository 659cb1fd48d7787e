"""The flowscope progress log, format v1: reading and writing.

One JSON object per line (``type`` first): a header, then ``scope``, ``operator`` and ``edge`` records for the
structure, ``progress`` records (one atomic batch of pointstamp updates for one scope, as one worker reports it)
and ``mark`` records for the timeline. Files may be gzip- or zstd-compressed (``.gz``, ``.zst``/``.zstd``).
``docs/progress-log.md`` is the full specification; :mod:`tracker.progress_log.records` builds and checks the records.

Reading is one streaming pass of :mod:`tracker.progress_log.jsonl`. A line that is not valid JSON (or not a JSON
object) is reported with the file, line number and reason, and skipped: nothing already read is lost and the replay goes
on; damaged compressed bytes cost the rest of the file, and everything before them is read. A file whose first record
is not a flowscope header is not a progress log at all, and that is an error.
"""

from __future__ import annotations

import gzip
import json
import os
import time as _time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from tracker.progress_log import records as log_records
from tracker.progress_log.codecs import CodecError, file_decoder
from tracker.progress_log.jsonl import (
    DEFAULT_LIMITS,
    JsonLinesCursor,
    LineError,
    Opener,
    ReadLimits,
    open_binary,
    read_json_lines,
)
from tracker.progress_log.records import FORMAT, VERSION

try:  # orjson is optional here (tracker/ needs only the standard library) but much faster when present
    import orjson

    def _dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)
except ImportError:  # pragma: no cover - exercised only without orjson

    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()


__all__ = [
    "FORMAT",
    "VERSION",
    "LineError",
    "LogError",
    "ProgressLogError",
    "first_record_problem",
    "read_records",
    "ProgressLogWriter",
]

LogError = LineError  # the name this module used to give the one error type of every reader


class ProgressLogError(ValueError):
    """The file cannot be read as a progress log at all (no header, unknown version, unreadable codec)."""


def _zstd() -> Any:
    try:
        import zstandard
    except ImportError:  # pragma: no cover
        raise ProgressLogError("reading or writing .zst logs needs the 'zstandard' package "
                               "(pip install zstandard)") from None
    return zstandard


def read_records(
    path: str | os.PathLike,
    errors: list[LineError] | None = None,
    on_error: Callable[[LineError], None] | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
    opener: Opener | None = None,
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)`` for every record, the header first (``opener`` as ``read_json_lines``'s).

    Corrupt lines and damaged compressed bytes are reported (appended to ``errors`` and passed to ``on_error``)
    and skipped. Raises :class:`ProgressLogError` if the file does not start with a flowscope progress-log header
    of a known version.
    """
    p = os.fspath(path)
    header_seen = False
    before_header: list[LineError] = []

    def report(err: LineError) -> None:
        if not header_seen:
            before_header.append(err)
            return
        if errors is not None:
            errors.append(err)
        if on_error is not None:
            on_error(err)

    try:
        decoder = file_decoder(p)
    except CodecError as e:
        raise ProgressLogError(f"{p}: {e}") from None
    check = log_records.RecordCheck()
    lines = read_json_lines(p, report, decoder=decoder, limits=limits, check=check, opener=opener)
    first = next(lines, None)
    if first is None:
        if before_header:
            raise ProgressLogError(_before_header(p, before_header[0]))
        raise ProgressLogError(f"{p}: empty file, not a flowscope progress log")
    lineno, record = first
    # the reader parses ahead: problems reported so far may lie before the header or after it
    if before_header and before_header[0].line < lineno:
        raise ProgressLogError(_before_header(p, before_header[0]))
    problem = log_records.header_problem(record)
    if problem is not None:
        raise ProgressLogError(f"{p}:{lineno}: {_not_a_log(record, problem)}")
    header_seen = True
    for err in before_header:
        report(err)
    before_header.clear()
    yield first
    yield from lines  # the rest as the reader hands them out


def _before_header(path: str, err: LineError) -> str:
    if err.kind in ("corrupt-stream", "truncated-stream", "stream-too-large"):
        return f"{path}: cannot read it: {err.reason}"
    return f"{path}:{err.line}: not a flowscope progress log (the first line is not a JSON object: {err.reason})"


def first_record_problem(path: str | os.PathLike, opener: Opener | None = None) -> str | None:
    """None if ``path`` starts with a flowscope progress-log header (after decompression), else why not.

    Reads only as far as the first line (or the first damage); ``opener`` as ``read_json_lines``'s."""
    p = os.fspath(path)
    problems: list[LineError] = []
    try:
        cursor = JsonLinesCursor(p, file_decoder(p), problems.append, chunk_size=1 << 16)
    except CodecError as e:
        return str(e)
    with (opener or open_binary)(p) as fh:
        while not cursor.ready and not problems and cursor.pull(fh):
            pass
        if not cursor.ready and not problems:
            cursor.finish(True)
    if cursor.ready:
        return log_records.header_problem(cursor.ready[0][1])
    if problems:
        err = problems[0]
        if err.kind in ("invalid-json", "truncated-line"):
            return "the first line is not JSON"
        return err.reason
    return "the file is empty"


def _not_a_log(record: dict, problem: str) -> str:
    """The header problem as said to a user: a header of another version is a progress log all the same."""
    return problem if record.get("format") == FORMAT else f"not a flowscope progress log ({problem})"


class ProgressLogWriter:
    """Writes a progress log (v1). Compression by suffix (.gz, .zst); ``seq`` is numbered per worker if omitted.

    Each method builds its record with :mod:`tracker.progress_log.records` and writes it as one line."""

    def __init__(self, target: str | os.PathLike | IO[bytes], source: str | None = None, created: str | None = None):
        self._file: IO[bytes] | Any
        if isinstance(target, (str, os.PathLike)):
            self._owns = True
            p = os.fspath(target)
            self.path = p
            if p.endswith(".gz"):
                self._file = gzip.open(p, "wb", compresslevel=6)
            elif p.endswith((".zst", ".zstd")):
                raw = open(p, "wb")
                self._file = _zstd().ZstdCompressor(level=6).stream_writer(raw, closefd=True)
            else:
                self._file = open(p, "wb", buffering=1 << 20)
        else:
            self._owns = False
            self.path = getattr(target, "name", "<stream>")
            self._file = target
        self._seq: dict[Any, int] = {}
        self.write(log_records.header(source, created or _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime())))

    def write(self, record: dict) -> None:
        self._file.write(_dumps(record) + b"\n")

    def scope(self, path: Iterable[int], name: str = "", inputs: int = 0, outputs: int = 0, depth: int = 1,
              **extra: Any) -> None:
        self.write(log_records.scope(path, name, inputs, outputs, depth, **extra))

    def operator(
        self,
        scope: Iterable[int],
        node: int,
        name: str = "",
        inputs: int = 1,
        outputs: int = 1,
        summary: list | None = None,
        capabilities: list | None = None,
        attrs: dict | None = None,
    ) -> None:
        self.write(log_records.operator(scope, node, name, inputs, outputs, summary, capabilities, attrs))

    def edge(self, scope: Iterable[int], source: Any, target: Any) -> None:
        self.write(log_records.edge(scope, source, target))

    def progress(
        self,
        scope: Iterable[int],
        updates: Iterable[tuple[Any, Any, int]],
        worker: int = 0,
        seq: int | None = None,
        at: float | None = None,
        cause: dict | None = None,
    ) -> int:
        """Write one atomic batch (updates are ``(port, time, delta)``, ports as Locations or JSON); its ``seq``."""
        if seq is None:
            seq = self._seq.get(worker, 0)
        self._seq[worker] = seq + 1
        port_json = log_records.port_json
        batch = [[port_json(loc), t, d] for loc, t, d in updates]
        self.write(log_records.progress(scope, worker, seq, _time.time() if at is None else at, batch, cause))
        return seq

    def mark(self, label: str, at: float | None = None, scope: Iterable[int] | None = None, **extra: Any) -> None:
        self.write(log_records.mark(label, _time.time() if at is None else at, scope, **extra))

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if self._owns:
            self._file.close()
        else:
            self._file.flush()

    def __enter__(self) -> ProgressLogWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
