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

FORMAT = "flowscope-progress"
VERSION = 1


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
                if record.get("type") != "header" or record.get("format") != FORMAT:
                    raise ProgressLogError(
                        f"{p}:{lineno}: not a flowscope progress log (the first record must be "
                        f'{{"type":"header","format":"{FORMAT}","version":1}})'
                    )
                if record.get("version") != VERSION:
                    raise ProgressLogError(f"{p}:{lineno}: progress-log version {record.get('version')!r} is not supported (this reader knows {VERSION})")
                header_seen = True
                yield lineno, record
                continue
            yield lineno, record
        if not header_seen:
            raise ProgressLogError(f"{p}: empty file, not a flowscope progress log")


def _port(loc: Any) -> Any:
    return loc.to_json() if hasattr(loc, "to_json") else list(loc)


class ProgressLogWriter:
    """Writes a progress log (v1). Compression by suffix (.gz, .zst); ``seq`` is numbered per worker if omitted."""

    def __init__(self, target: str | os.PathLike | IO[bytes], source: str | None = None, created: str | None = None):
        self._owns = not hasattr(target, "write")
        if self._owns:
            p = os.fspath(target)
            self.path = p
            if p.endswith(".gz"):
                self._file: IO[bytes] = gzip.open(p, "wb", compresslevel=6)
            elif p.endswith((".zst", ".zstd")):
                raw = open(p, "wb")
                self._file = _zstd().ZstdCompressor(level=6).stream_writer(raw, closefd=True)
            else:
                self._file = open(p, "wb", buffering=1 << 20)
        else:
            self.path = getattr(target, "name", "<stream>")
            self._file = target  # type: ignore[assignment]
        self._seq: dict[int, int] = {}
        header: dict[str, Any] = {"type": "header", "format": FORMAT, "version": VERSION}
        if source is not None:
            header["source"] = source
        header["created"] = created or _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime())
        self.write(header)

    def write(self, record: dict) -> None:
        self._file.write(_dumps(record) + b"\n")

    def scope(self, path: Iterable[int], name: str = "", inputs: int = 0, outputs: int = 0, depth: int = 1, **extra: Any) -> None:
        self.write({"type": "scope", "path": list(path), "name": name, "inputs": inputs, "outputs": outputs, "depth": depth, **extra})

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
        rec: dict[str, Any] = {"type": "operator", "scope": list(scope), "node": node, "name": name, "inputs": inputs, "outputs": outputs}
        if summary is not None:
            rec["summary"] = summary
        if capabilities is not None:
            rec["capabilities"] = capabilities
        if attrs:
            rec["attrs"] = attrs
        self.write(rec)

    def edge(self, scope: Iterable[int], source: Any, target: Any) -> None:
        self.write({"type": "edge", "scope": list(scope), "from": _port(source), "to": _port(target)})

    def progress(
        self,
        scope: Iterable[int],
        updates: Iterable[tuple[Any, Any, int]],
        worker: int = 0,
        seq: int | None = None,
        at: float | None = None,
        cause: dict | None = None,
    ) -> int:
        """Write one atomic batch; returns its ``seq``."""
        if seq is None:
            seq = self._seq.get(worker, 0)
        self._seq[worker] = seq + 1
        rec: dict[str, Any] = {
            "type": "progress",
            "scope": list(scope),
            "worker": worker,
            "seq": seq,
            "at": _time.time() if at is None else at,
            "updates": [[_port(loc), t, d] for loc, t, d in updates],
        }
        if cause is not None:
            rec["cause"] = cause
        self.write(rec)
        return seq

    def mark(self, label: str, at: float | None = None, scope: Iterable[int] | None = None, **extra: Any) -> None:
        rec: dict[str, Any] = {"type": "mark", "at": _time.time() if at is None else at, "label": label}
        if scope is not None:
            rec["scope"] = list(scope)
        rec.update(extra)
        self.write(rec)

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
