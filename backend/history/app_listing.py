"""What the applications list says about one application, read cheaply from its log: its first events and its end.

As Spark's History Server lists a log without replaying it, :func:`read_listing` reads the log's start only until
the application's start event (``SparkListenerLogStart`` gives the Spark version, ``SparkListenerApplicationStart``
the id, attempt, name, user and start) and, for a finished log, its end for ``SparkListenerApplicationEnd`` (the end
and the exit code). A plain file's end is its last bytes (a seek); a compressed one's is decoded from the last
independent units of its container (:mod:`backend.history.entry_points`), and a gzip file, which has none, is decoded
whole, as the History Server does, only the end event's line being parsed. An in-progress log's end is not read (it
has none yet): its duration grows with its last modification. Only the lines of those events are parsed as JSON.
"""

from __future__ import annotations

import io
from dataclasses import asdict, dataclass
from typing import Any

import orjson

from backend.eventlog.codecs import CodecError, MissingCodecError, codec_from_name, make_decoder, strip_codec
from backend.eventlog.eventlog_layout import (
    INPROGRESS,
    ROLLING_PREFIX,
    head_looks_like_event_log,
    parts_in_read_order,
    starts_like_events,
    state_of_markers,
)
from backend.history import storage
from backend.history.entry_points import unit_starts
from backend.history.storage import Entry

__all__ = ["AppListing", "STATUSES", "read_listing"]

STATUSES = ("in_progress", "finished", "failed", "incomplete")
HEAD_LIMIT = 64 << 20  # decoded bytes read looking for the start event (an environment update can be large)
TAIL_TEXT = 1 << 20  # decoded bytes of a finished log's end searched for its end event (Spark's reparse chunk)
_CHUNK = 1 << 16
WALK_IN_MEMORY = 4 << 20  # a compressed file up to this size is read whole before its units are walked

_LOG_START = b'"Event":"SparkListenerLogStart"'
_APP_START = b'"Event":"SparkListenerApplicationStart"'
_APP_END = b'"Event":"SparkListenerApplicationEnd"'


@dataclass(slots=True)
class AppListing:
    """One application (attempt) as listed: where its log is, what its first events and its end say.

    ``stamp`` is what the directory listing said of the log when it was read, ``signature`` what its parts' listing
    said: a later scan that sees the same reads nothing. ``status`` is one of :data:`STATUSES` (``incomplete``: the
    log was finalized without an application end, the driver died). Times are epoch seconds. ``summary`` is the
    answer kept once the application was replayed (:mod:`backend.history.answer_summary`)."""

    location: str
    root: str
    stamp: str
    signature: str
    app_id: str
    attempt: str | None
    name: str
    user: str | None
    spark_version: str | None
    start: float | None
    end: float | None
    status: str
    size: int
    updated: float
    exit_code: int | None = None
    error: str | None = None
    summary: dict | None = None

    @property
    def key(self) -> str:
        """The application's id in flowscope's URLs (``#/s/<key>``): its app id, and its attempt where it has one."""
        return f"{self.app_id}_{self.attempt}" if self.attempt else self.app_id

    @property
    def in_progress(self) -> bool:
        return self.status == "in_progress"

    @property
    def duration(self) -> float | None:
        if self.start is None:
            return None
        end = self.end if self.end is not None else (self.updated if self.in_progress else None)
        return None if end is None else max(0.0, end - self.start)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["key"] = self.key
        out["duration_s"] = self.duration
        return out


@dataclass(slots=True)
class _Parts:
    """The files of one log as listed: the first (its start), the last (its end), and what the listing says."""

    first: Entry | None
    last: Entry | None
    file_id: str
    state: str
    size: int
    updated_ns: int
    signature: str


def _parts(entry: Entry) -> _Parts | None:
    if not entry.is_dir:
        state = "in_progress" if entry.name.endswith(INPROGRESS) else "complete"
        return _Parts(entry, entry, strip_codec(entry.name), state, entry.size, entry.mtime_ns, entry.stamp)
    if not entry.name.startswith(ROLLING_PREFIX):
        return None
    children = storage.list_entries(entry.location)
    names = parts_in_read_order(c.name for c in children)
    by_name = {c.name: c for c in children}
    parts = [by_name[n] for n in names]
    signature = ";".join(sorted(f"{c.name}:{c.stamp}" for c in children))
    updated = max((c.mtime_ns for c in children), default=entry.mtime_ns)
    state = state_of_markers(by_name)
    return _Parts(parts[0] if parts else None, parts[-1] if parts else None,
                  entry.name.removeprefix(ROLLING_PREFIX), "in_progress" if state == "in_progress" else "complete",
                  sum(p.size for p in parts), updated, signature)


def read_listing(entry: Entry, root: str, previous: AppListing | None = None) -> AppListing | None:
    """The listing of the log at ``entry`` (a file or an ``eventlog_v2_`` directory), None if it is not a log.

    With ``previous`` (this log's listing from an earlier scan) an in-progress log that only grew keeps what its
    start said and is not read again. OSError if the log vanished while it was read."""
    parts = _parts(entry)
    if parts is None:
        return None
    updated = parts.updated_ns / 1e9
    if previous is not None and previous.signature == parts.signature:
        previous.stamp = entry.stamp
        return previous
    if (previous is not None and previous.in_progress and parts.state == "in_progress"
            and previous.start is not None and previous.error is None):
        previous.stamp, previous.signature, previous.size, previous.updated = (entry.stamp, parts.signature,
                                                                               parts.size, updated)
        return previous
    listing = AppListing(entry.location, root, entry.stamp, parts.signature, parts.file_id, None, "", None, None,
                         None, None, "in_progress" if parts.state == "in_progress" else "incomplete", parts.size,
                         updated)
    if parts.first is None:
        return listing  # a rolling directory before its first part
    try:
        head, whole = _read_head(parts.first)
    except (CodecError, MissingCodecError) as e:
        if not entry.is_dir and isinstance(e, CodecError):
            return None  # a file named like a compressed log that is none
        listing.error = f"{parts.first.location}: {e}"
        return listing
    if head is None:
        return None if not entry.is_dir else listing
    _apply_start(listing, head, parts.first.location)
    if parts.state == "in_progress":
        return listing
    tail = head if whole and parts.last is parts.first else None
    try:
        if tail is None and parts.last is not None:
            tail = _read_tail(parts.last)
    except (CodecError, MissingCodecError) as e:
        listing.error = f"{parts.last.location if parts.last else entry.location}: {e}"
        return listing
    end = _event(tail or b"", _APP_END, last=True)
    if end is not None:
        listing.end = _seconds(end.get("Timestamp"))
        code = end.get("ExitCode")
        listing.exit_code = code if isinstance(code, int) else None
        listing.status = "failed" if listing.exit_code not in (None, 0) else "finished"
    return listing


def _apply_start(listing: AppListing, head: bytes, location: str) -> None:
    log_start = _event(head, _LOG_START)
    if log_start is not None and isinstance(log_start.get("Spark Version"), str):
        listing.spark_version = log_start["Spark Version"]
    start = _event(head, _APP_START)
    if start is None:
        listing.error = f"{location}: no readable SparkListenerApplicationStart event in its first {len(head)} bytes"
        return
    app_id = start.get("App ID")
    if isinstance(app_id, str) and app_id:
        listing.app_id = app_id
    attempt = start.get("App Attempt ID")
    listing.attempt = str(attempt) if isinstance(attempt, (str, int)) and str(attempt) else None
    listing.name = str(start.get("App Name") or "")
    listing.user = start.get("User") if isinstance(start.get("User"), str) else None
    listing.start = _seconds(start.get("Timestamp"))


def _seconds(ms: Any) -> float | None:
    return ms / 1000.0 if isinstance(ms, (int, float)) and not isinstance(ms, bool) else None


def _event(text: bytes, marker: bytes, last: bool = False) -> dict | None:
    """The event on the (first or last) line holding ``marker``, parsed; None if none parses."""
    i = text.rfind(marker) if last else text.find(marker)
    if i < 0:
        return None
    a = text.rfind(b"\n", 0, i) + 1
    b = text.find(b"\n", i)
    try:
        event = orjson.loads(text[a : b if b >= 0 else len(text)])
    except orjson.JSONDecodeError:
        return None
    return event if isinstance(event, dict) else None


def _read_head(part: Entry) -> tuple[bytes | None, bool]:
    """The log's text from its start to the end of the application's start event (or :data:`HEAD_LIMIT`); None if
    the file does not start like an event log. With it, whether that is the whole file (the start event never came).
    Decoding stops there: the rest of the file is not decompressed."""
    codec = codec_from_name(part.name)
    head: list[bytes] = []
    size = 0
    with storage.open_binary(part.location) as fh:
        raw = fh.read(_CHUNK)
        if codec is None and not head_looks_like_event_log(part.name, raw[:64]):
            return None, False
        decoder = make_decoder(codec, part.location)
        while raw:
            for piece in decoder.chunks(raw):
                if not head and not starts_like_events(piece):
                    return None, False  # a compressed file of something else
                head.append(piece)
                size += len(piece)
                if _has_line(head, _APP_START) or size > HEAD_LIMIT:
                    return b"".join(head), False
            raw = fh.read(_CHUNK)
    return b"".join(head), True


def _has_line(pieces: list[bytes], marker: bytes) -> bool:
    """Whether the text so far holds ``marker``'s whole line (looked for in the last two pieces only)."""
    text = b"".join(pieces[-2:])
    i = text.find(marker)
    return i >= 0 and text.find(b"\n", i) >= 0


def _read_tail(part: Entry) -> bytes:
    """At least the last :data:`TAIL_TEXT` decoded bytes of a finished log's last file (less if it is shorter),
    stopping early once the end event is among them."""
    codec = codec_from_name(part.name)
    if codec is None:
        return storage.read_tail(part.location, part.size, TAIL_TEXT)
    with storage.open_binary(part.location) as file:
        # a small file is read at once: the walk then costs no read per unit
        fh = io.BytesIO(file.read()) if part.size <= WALK_IN_MEMORY else file
        starts = unit_starts(codec, fh, part.size)
        if starts is None:
            starts = [0]
        ends = starts[1:] + [part.size]
        pieces: list[bytes] = []
        decoded = 0
        for start, end in zip(reversed(starts), reversed(ends), strict=True):
            fh.seek(start)
            text = _decode(codec, part.location, io.BytesIO(fh.read(end - start)) if end - start < (64 << 20)
                           else fh, end - start)
            pieces.append(text)
            decoded += len(text)
            if decoded >= TAIL_TEXT or _APP_END in text:
                break
    return b"".join(reversed(pieces))


def _decode(codec: str, location: str, fh: Any, length: int) -> bytes:
    """The last text ``length`` bytes of ``fh`` decode to (about 2 x :data:`TAIL_TEXT` at most: a gzip log is
    decoded whole, and only its end is kept)."""
    decoder = make_decoder(codec, location)
    out = bytearray()
    left = length
    while left > 0:
        raw = fh.read(min(left, 1 << 20))
        if not raw:
            break
        left -= len(raw)
        for piece in decoder.chunks(raw):
            out += piece
        if len(out) > 2 * TAIL_TEXT:
            cut = out.find(b"\n", len(out) - TAIL_TEXT)
            del out[: cut + 1 if cut >= 0 else len(out) - TAIL_TEXT]
    return bytes(out)
