"""A directory of many Spark applications: copies of one real event log, each under its own App ID.

What a team's event-log directory looks like to the applications index and to Spark's History Server (the
benchmark puts both on the same copies): Spark 4's layout, a rolling ``eventlog_v2_<app>/`` directory holding
``events_1_<app>.zstd`` and its ``appstatus_<app>`` marker. A copy is the source's text with every occurrence of its
App ID replaced by the copy's (and, if asked, its App Name by another), compressed again as Spark's writer
compresses it: a zstd frame per flush (backend/eventlog/encoders.py), the log flushed after every event but the
task events, as Spark's event logger flushes (the fixture itself was recompressed in one frame by the redaction).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import orjson
import zstandard

from backend.eventlog import EventLogReader

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "fixtures" / "spark" / "batch_shuffle" / "eventlog_v2_local-1795290522070"

__all__ = ["SOURCE", "copy_id", "ensure_copies", "source_text", "write_copies", "write_copy"]


def source_text(source: Path = SOURCE) -> tuple[bytes, str, str]:
    """The source log's text (one JSON event per line), its App ID and its App Name."""
    lines = [orjson.dumps(ev.event) for ev in EventLogReader(source)]
    start = next(orjson.loads(x) for x in lines if b'"SparkListenerApplicationStart"' in x)
    return b"\n".join(lines) + b"\n", start["App ID"], start["App Name"]


def copy_id(source_id: str, i: int) -> str:
    """The App ID of copy ``i``: the source's with its number moved on (``local-1795290522070`` -> ``...522071``)."""
    prefix, _, number = source_id.rpartition("-")
    return f"{prefix}-{int(number) + 1 + i}"


def write_copy(target: Path, text: bytes, source_id: str, app_id: str, name: str | None = None,
               source_name: str | None = None, in_progress: bool = False,
               compressor: zstandard.ZstdCompressor | None = None) -> Path:
    """One copy, as Spark 4 writes it; its directory."""
    body = text.replace(source_id.encode(), app_id.encode())
    if name is not None and source_name is not None:
        body = body.replace(f'"App Name":"{source_name}"'.encode(), orjson.dumps({"App Name": name})[1:-1])
    directory = target / f"eventlog_v2_{app_id}"
    directory.mkdir(parents=True)
    compressor = compressor or zstandard.ZstdCompressor(level=1)
    (directory / f"events_1_{app_id}.zstd").write_bytes(b"".join(compressor.compress(flush)
                                                                  for flush in _flushes(body)))
    (directory / f"appstatus_{app_id}{'.inprogress' if in_progress else ''}").touch()
    return directory


def _flushes(text: bytes) -> list[bytes]:
    """The text as Spark's event logger flushes it: after every event but a task's."""
    out: list[bytes] = []
    pending: list[bytes] = []
    for line in text.splitlines(keepends=True):
        pending.append(line)
        if not line.startswith(b'{"Event":"SparkListenerTask'):
            out.append(b"".join(pending))
            pending.clear()
    if pending:
        out.append(b"".join(pending))
    return out


def write_copies(target: Path, n: int, name: Callable[[int], str] | None = None, source: Path = SOURCE) -> list[str]:
    """``n`` copies of ``source`` in ``target`` (``name(i)``: copy i's App Name); their App IDs, in order."""
    text, source_id, source_name = source_text(source)
    compressor = zstandard.ZstdCompressor(level=1)
    ids = []
    for i in range(n):
        app_id = copy_id(source_id, i)
        write_copy(target, text, source_id, app_id, name(i) if name else None, source_name, compressor=compressor)
        ids.append(app_id)
    return ids


def ensure_copies(target: Path, n: int) -> list[str]:
    """``n`` copies in ``target``, written once (benchmarks reuse the directory: ``target/.complete`` says it is
    whole); their App IDs."""
    marker = target / ".complete"
    if marker.exists() and marker.read_text() == str(n):
        return marker.with_name(".ids").read_text().split()
    if target.exists():
        shutil.rmtree(target)
    ids = write_copies(target, n, name=lambda i: f"nightly-{i % 97}" if i % 3 else f"adhoc-{i}")
    marker.with_name(".ids").write_text("\n".join(ids))
    marker.write_text(str(n))
    return ids
