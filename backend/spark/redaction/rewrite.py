"""Redacting a whole Spark event log: every event rewritten by the rules, in the same layout and codec.

The rules (what goes, what stays) are ``redact_rules``'s; this module reads a log (a file in any codec, or a
rolling ``eventlog_v2_`` directory with its status marker), writes each event redacted to the same part names in
the same codec, skips and reports corrupt lines (a line that does not parse cannot be redacted), and is the
command line: `python -m backend.spark.redaction.rewrite SRC DST`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from backend.eventlog import EventLogReader, LineError, describe_log
from backend.eventlog.codecs import CODECS, codec_from_name, strip_codec
from backend.eventlog.encoders import encode_end, encode_flush
from backend.eventlog.eventlog_layout import INPROGRESS, STATUS_PREFIX, AppLog
from backend.spark.redaction.rules import Redactor
from backend.stores import list_dir

__all__ = ["FLUSH_BYTES", "RedactStats", "main", "redact_log"]


@dataclass
class RedactStats:
    """What `redact_log` did.

    The output path, events written, lines skipped as corrupt (never copied: a line that does not parse cannot be
    redacted), and the bytes in and out."""

    output: Path
    files: int = 0
    events: int = 0
    corrupt: list[LineError] = field(default_factory=list)
    bytes_in: int = 0
    bytes_out: int = 0
    raw_out: int = 0


FLUSH_BYTES = 1 << 20  # one codec frame/flush per MiB of JSON, like a Spark flush but fewer


def redact_log(
    source: str | os.PathLike[str] | AppLog,
    dest: str | os.PathLike[str],
    *,
    redactor: Redactor | None = None,
    on_error: Callable[[LineError], None] | None = None,
) -> RedactStats:
    """Rewrite one application's event log with every event redacted, in the same layout and codec.

    A rolling log directory becomes a rolling directory `dest` (same part names, the `appstatus_` marker kept); a
    single file becomes `dest`, or `dest/<its name>` when `dest` is a directory. The output keeps the source's
    codec: if `dest` names no codec the suffix is added, and a `dest` naming another codec is refused."""
    log = source if isinstance(source, AppLog) else describe_log(source)
    redactor = redactor or Redactor()
    dest = Path(dest)
    if log.rolling:
        out_dir = dest
        if out_dir.exists() and any(out_dir.iterdir()):
            raise FileExistsError(f"{out_dir}: the destination directory is not empty")
        out_dir.mkdir(parents=True, exist_ok=True)
        targets = {str(p): out_dir / p.name for p in log.files}
        marker = _marker_name(log)
        if marker:
            (out_dir / marker).touch()
        output = out_dir
    else:
        src = log.files[0]
        target = dest / src.name if dest.is_dir() else dest
        codec = codec_from_name(src.name)
        named = codec_from_name(target.name)
        if named != codec:
            if named is not None:
                raise ValueError(f"{target}: the source is {codec or 'uncompressed'}, the output must be too")
            target = _with_codec(target, src.name)
        targets = {str(src): target}
        output = target
    stats = RedactStats(output)

    def report(err: LineError) -> None:
        stats.corrupt.append(err)
        if on_error is not None:
            on_error(err)

    reader = EventLogReader(log, on_error=report)
    writer: _CodecWriter | None = None
    current = None
    try:
        for ev in reader:
            if ev.path != current:
                if writer is not None:
                    stats.bytes_out += writer.close()
                current = ev.path
                writer = _CodecWriter(targets[ev.path])
                stats.files += 1
            assert writer is not None  # made for the first event's file above
            writer.write(orjson.dumps(redactor.event(ev.event)) + b"\n")
            stats.events += 1
        if writer is not None:
            stats.bytes_out += writer.close()
            stats.raw_out += writer.raw
            writer = None
    finally:
        if writer is not None:
            writer.close()
    stats.bytes_in = reader.stats.bytes_compressed
    return stats


def _marker_name(log: AppLog) -> str | None:
    try:
        names = [e.name for e in list_dir(log.path)]
    except OSError:
        return None
    markers = sorted(n for n in names if n.startswith(STATUS_PREFIX))
    final = [n for n in markers if not n.endswith(INPROGRESS)]
    chosen = final or markers
    return chosen[0] if chosen else None


def _with_codec(target: Path, source_name: str) -> Path:
    """`target` with the source's codec suffix added before any `.inprogress`."""
    state = source_name[len(strip_codec(source_name).rstrip(".")):]  # e.g. ".zstd" or ".zstd.inprogress"
    name = target.name
    if name.endswith(INPROGRESS):
        name = name[: -len(INPROGRESS)]
    return target.with_name(name + state)


class _CodecWriter:
    """Writes lines to one file in the codec its name announces, one codec frame per `FLUSH_BYTES`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codec = codec_from_name(path.name)
        if self.codec is not None and self.codec not in set(CODECS.values()):  # pragma: no cover
            raise ValueError(f"{path}: cannot write codec {self.codec}")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = open(path, "wb")
        self._buf: list[bytes] = []
        self._size = 0
        self._first = True
        self.written = 0
        self.raw = 0

    def write(self, line: bytes) -> None:
        self._buf.append(line)
        self._size += len(line)
        if self._size >= FLUSH_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._buf and not self._first:
            return
        data = b"".join(self._buf)
        self.raw += len(data)
        chunk = encode_flush(self.codec, data, first=self._first)
        self._fh.write(chunk)
        self.written += len(chunk)
        self._buf.clear()
        self._size = 0
        self._first = False

    def close(self) -> int:
        if self._buf or self._first:
            self._flush()
        end = encode_end(self.codec)
        self._fh.write(end)
        self.written += len(end)
        self._fh.close()
        return self.written


# --- command line ---------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m backend.spark.redaction.rewrite",
        description="Rewrite a Spark event log without machine details (paths, hosts, IPs, users, classpath, "
                    "system properties, log URLs) or secrets, keeping its layout and codec.")
    parser.add_argument("source", help="an event log: a file (any codec, .inprogress too) or an eventlog_v2_ dir")
    parser.add_argument("dest", help="where to write the redacted log (a directory for a rolling log)")
    parser.add_argument("--no-local", action="store_true",
                        help="do not also scrub this machine's own host name, user name and home directory")
    args = parser.parse_args(argv)
    try:
        stats = redact_log(args.source, args.dest, redactor=Redactor(local=not args.no_local),
                           on_error=lambda e: print(f"redact: skipped {e}", file=sys.stderr))
    except (FileNotFoundError, FileExistsError, ValueError) as exc:
        print(f"redact: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # MissingCodecError and friends: say what, not a traceback
        if type(exc).__name__ == "MissingCodecError":
            print(f"redact: {exc}", file=sys.stderr)
            return 2
        raise
    print(f"redact: {stats.events} events -> {stats.output} ({stats.bytes_out} bytes"
          f"{f'; {len(stats.corrupt)} corrupt lines skipped' if stats.corrupt else ''})", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
