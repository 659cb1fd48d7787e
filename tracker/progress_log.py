"""The flowscope progress log, format v1: reading and writing.

One JSON object per line (``type`` first): a header, then ``scope``, ``operator`` and ``edge`` records for the
structure, ``progress`` records (one atomic batch of pointstamp updates for one scope, as one worker reports it)
and ``mark`` records for the timeline. Files may be gzip- or zstd-compressed (``.gz``, ``.zst``/``.zstd``).
``docs/progress-log.md`` is the full specification.

Reading is one streaming pass. A line that is not valid JSON (or not a JSON object) is reported with the file,
line number and reason, and skipped: nothing already read is lost and the replay goes on. A file whose first
record is not a flowscope header is not a progress log at all, and that is an error.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import time as _time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from . import log_records
from .log_records import FORMAT, VERSION

try:  # orjson is optional here (tracker/ needs only the standard library) but much faster when present
    import orjson as _orjson

    _loads: Callable[[bytes], Any] = _orjson.loads
    _JSONError: type[Exception] = _orjson.JSONDecodeError

    def _dumps(obj: Any) -> bytes:
        return _orjson.dumps(obj)
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson = None
    _loads = json.loads
    _JSONError = json.JSONDecodeError

    def _dumps(obj: Any) -> bytes:
        return json.dumps(obj, separators=(",", ":")).encode()


__all__ = [
    "FORMAT",
    "VERSION",
    "LogError",
    "ProgressLogError",
    "open_binary",
    "read_records",
    "ProgressLogWriter",
]


@dataclass(frozen=True)
class LogError:
    """A problem with one line of a log: reported, and the line skipped."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


class ProgressLogError(ValueError):
    """The file cannot be read as a progress log at all (no header, unknown version, unreadable codec)."""


def _zstd():
    try:
        import zstandard
    except ImportError:  # pragma: no cover
        raise ProgressLogError("reading or writing .zst logs needs the 'zstandard' package (pip install zstandard)") from None
    return zstandard


def open_binary(path: str | os.PathLike) -> IO[bytes]:
    """Open a log for reading as a decompressed byte stream, by suffix (.gz, .zst/.zstd, else plain)."""
    p = os.fspath(path)
    if p.endswith(".gz"):
        return gzip.open(p, "rb")
    if p.endswith((".zst", ".zstd")):
        raw = open(p, "rb")
        reader = _zstd().ZstdDecompressor().stream_reader(raw, read_across_frames=True, closefd=True)
        return io.BufferedReader(reader, buffer_size=1 << 20)
    return open(p, "rb", buffering=1 << 20)


def read_records(
    path: str | os.PathLike,
    errors: list[LogError] | None = None,
    on_error: Callable[[LogError], None] | None = None,
) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)`` for every record after the header.

    Corrupt lines are reported (appended to ``errors`` and passed to ``on_error``) and skipped. Raises
    :class:`ProgressLogError` if the file does not start with a flowscope progress-log header of a known version.
    """
    p = os.fspath(path)

    def report(line: int, reason: str) -> None:
        err = LogError(p, line, reason)
        if errors is not None:
            errors.append(err)
        if on_error is not None:
            on_error(err)

    with open_binary(p) as f:
        lineno = 0
        header_seen = False
        for raw in f:
            lineno += 1
            if not raw.strip():
                continue
            try:
                record = _loads(raw)
            except _JSONError as e:
                if not header_seen:
                    raise ProgressLogError(f"{p}:{lineno}: not a flowscope progress log (first line is not JSON: {e})") from None
                truncated = not raw.endswith(b"\n")
                report(lineno, f"{'truncated line' if truncated else 'invalid JSON'}: {e}")
                continue
            if type(record) is not dict:
                report(lineno, f"expected a JSON object, found {type(record).__name__}")
                continue
            if not header_seen:
                problem = log_records.header_problem(record)
                if problem is not None:
                    raise ProgressLogError(f"{p}:{lineno}: {_not_a_log(record, problem)}")
                header_seen = True
                yield lineno, record
                continue
            yield lineno, record
        if not header_seen:
            raise ProgressLogError(f"{p}: empty file, not a flowscope progress log")


def _not_a_log(record: dict, problem: str) -> str:
    """The header problem as said to a user: a header of another version is a progress log all the same."""
    return problem if record.get("format") == FORMAT else f"not a flowscope progress log ({problem})"


class ProgressLogWriter:
    """Writes a progress log (v1). Compression by suffix (.gz, .zst); ``seq`` is numbered per worker if omitted.

    Each method builds its record with :mod:`tracker.log_records` and writes it as one line."""

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
