"""Tailing the event log of an application that Spark is still writing.

`poll()` returns the events that became complete since the previous call and keeps everything unfinished (a
partial line, an incomplete compressed block or frame) for later; it never returns an event twice or out of order.
It knows the log is finalized when Spark says so: the single file lost its `.inprogress` suffix, or the rolling
directory's `appstatus_` marker did. There are no threads and no sleeping inside; the caller decides how often to
poll (a debugger polling every 0.5-1 s sees what Spark has flushed).

Ordering matters against a concurrent writer: the "is it finalized?" question is asked *before* reading, so when
the answer is yes, everything read afterwards is the complete content. A rolling part is complete once a later part
exists (Spark closes a part before creating the next), so reading moves on only then.

A log in a store (`backend.stores`) is followed the same way, by listing and reading it at each poll; an object
whose bytes were not all read when a poll reached its limit stays open for the next poll, which reads on without
listing again (each open and listing is a request to the store).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from backend.eventlog import events as records
from backend.eventlog.cursor import FileCursor
from backend.eventlog.eventlog_layout import INPROGRESS, ROLLING_PREFIX, part_index, rolling_parts, rolling_state
from backend.eventlog.events import ErrorCallback, LineError, LogEvent, PendingLine, ReadStats
from backend.feeds.followed_file import DELETED, FileWatch, change_message
from backend.stores import PathOrUrl, StoreUrl, exists, is_dir, locate, open_read

__all__ = ["EventLogFollower"]


def _watch(path: Path | StoreUrl) -> FileWatch | None:
    """A local file's watch; a store's objects are written whole, and a part is read once it appears."""
    return FileWatch(path) if isinstance(path, Path) else None


class EventLogFollower:
    """Follow one application's log.

    A file (given with or without `.inprogress`; it may not exist yet) or a rolling `eventlog_v2_` directory.
    `poll(limit)` returns up to `limit` new events (all if None); `finalized` turns True once the log is complete and
    every event in it has been returned.

    `stats`, `errors`, `on_error` and `decode` work as for `EventLogReader`; `pending` is the unfinished tail after
    the last poll. Raises `MissingCodecError` from `poll` when it meets a file it cannot decode."""

    def __init__(
        self,
        path: PathOrUrl,
        *,
        on_error: ErrorCallback | None = None,
        chunk_size: int | None = None,
        decode: Callable[[bytes], Any] | None = None,
    ) -> None:
        p = locate(path)
        self.rolling = p.name.startswith(ROLLING_PREFIX) or is_dir(p)
        if self.rolling:
            self.path = p
        else:
            base = p.name.removesuffix(INPROGRESS)
            self.path = p.with_name(base)  # the final name; `.inprogress` is tried beside it
        self.stats = ReadStats()
        self.errors: list[LineError] = []
        self.finalized = False
        self.ended: str | None = None  # a single file vanished, was replaced or truncated: nothing more comes
        self._on_error = on_error
        self._chunk = chunk_size
        self._decode = decode  # as EventLogReader's
        self._cursor: FileCursor | None = None
        self._watch = _watch(p)  # the cursor's file: noticed when truncated or replaced
        self._part = 0  # rolling: index N of the part the cursor reads
        self._complete = False  # the log is complete and its last file finished: finalized once drained
        self._kept: tuple[StoreUrl, BinaryIO] | None = None  # a store's object left open with bytes still unread

    @property
    def pending(self) -> PendingLine | None:
        return None if self._cursor is None or self.finalized else self._cursor.pending_line

    def poll(self, limit: int | None = None) -> list[LogEvent]:
        """The new complete events, in log order. Call again for more; with `limit`, at most that many."""
        out: list[LogEvent] = []
        if self._cursor is not None and self._drain(out, limit):
            return out
        if self.finalized:
            return out
        if self._kept is not None and self._read(out, limit):
            return out  # a store's object still open, its bytes not all read: read on without listing again
        if self.rolling:
            self._poll_rolling(out, limit)
        else:
            self._poll_file(out, limit)
        return out

    # -- single file -------------------------------------------------------------------------------------------

    def _poll_file(self, out: list[LogEvent], limit: int | None) -> None:
        final = self.path
        inprogress = final.with_name(final.name + INPROGRESS)
        for _ in range(2):  # a second time if Spark renamed the file between our look and our open
            complete = exists(final)  # asked before reading: if so, what we read next is all there is
            current = final if complete else inprogress
            if self._cursor is None:
                if not exists(current):
                    return  # not created yet
                self._cursor = self._new_cursor(current)
            elif self._cursor.path != current:
                self._cursor.rename(current)
            reached = self._read(out, limit)
            if reached is None:
                continue
            if not reached and complete:
                self._finish(out, limit)
            return
        self._vanished()
        self.ended = records.FILE_VANISHED

    # -- rolling directory -------------------------------------------------------------------------------------

    def _poll_rolling(self, out: list[LogEvent], limit: int | None) -> None:
        while True:
            complete = rolling_state(self.path) == "complete"  # asked before listing and reading, as above
            parts = rolling_parts(self.path)
            if self._cursor is None:
                if not parts:
                    if complete:  # the application ended without an events file
                        self.finalized = True
                    return
                self._start_part(parts[0])
            assert self._cursor is not None
            later = [p for p in parts if part_index(p) > self._part and not p.name.endswith(".compact")]
            reached = self._read(out, limit)
            if reached:
                return
            if reached is None:
                self._vanished()
            if later:
                # This part was closed before the next one was created: it is complete.
                self._cursor.finish(True)
                if self._drain(out, limit):
                    return  # the rest of this part's events first; the next poll moves on
                self._start_part(later[0])
                continue
            if complete:
                self._finish(out, limit)
            return

    def _start_part(self, path: Path | StoreUrl) -> None:
        self._release()
        self._cursor = self._new_cursor(path)
        self._part = part_index(path)

    # -- shared ------------------------------------------------------------------------------------------------

    def _new_cursor(self, path: Path | StoreUrl) -> FileCursor:
        self.stats.files += 1
        self._watch = _watch(path)
        return FileCursor(path, self.stats, self._report, chunk_size=self._chunk, decode=self._decode)

    def _read(self, out: list[LogEvent], limit: int | None) -> bool | None:
        """Read the cursor's file from its offset to its current end.

        True if `limit` was reached first, None if the file could not be opened."""
        cursor = self._cursor
        assert cursor is not None
        if cursor.finished or cursor.broken:
            return self._drain(out, limit)
        watch = self._watch
        change = None
        if watch is not None:
            watch.rename(str(cursor.path))
            change = watch.check(cursor.offset)
        if change is not None and change != DELETED and not self.rolling:  # a vanished file: the open says so
            cursor.broken = True
            self.ended = change
            self._report(LineError(cursor.name, cursor.line + 1, change, change_message(change, cursor.line, True)))
            return self._drain(out, limit)
        fh = self._release(cursor.path)
        if fh is None:
            try:
                fh = open_read(cursor.path)
            except FileNotFoundError:
                return None
        if watch is not None and watch.identity is None:
            watch.attach(fh.fileno())
        try:
            while True:
                if self._drain(out, limit):
                    if isinstance(cursor.path, StoreUrl):  # kept for the next poll: a new open costs requests
                        self._kept, fh = (cursor.path, fh), None
                    return True
                if not cursor.pull(fh):
                    break
        finally:
            if fh is not None:
                fh.close()
        return self._drain(out, limit)

    def _release(self, path: Path | StoreUrl | None = None) -> BinaryIO | None:
        """The object kept open, if it is `path`'s (closed otherwise)."""
        kept, self._kept = self._kept, None
        if kept is None:
            return None
        if kept[0] == path:
            return kept[1]
        kept[1].close()
        return None

    def _vanished(self) -> None:
        cursor = self._cursor
        assert cursor is not None
        if not cursor.broken:
            cursor.broken = True
            self._report(
                LineError(cursor.name, cursor.line + 1, records.FILE_VANISHED, "the file disappeared while followed")
            )

    def _finish(self, out: list[LogEvent], limit: int | None) -> None:
        assert self._cursor is not None
        self._release()
        self._cursor.finish(True)
        self._complete = True
        self._drain(out, limit)

    def _drain(self, out: list[LogEvent], limit: int | None) -> bool:
        """Move ready events to `out`; True if `limit` is reached. Finalizes once the complete log is drained."""
        cursor = self._cursor
        assert cursor is not None
        ready = cursor.ready
        if limit is None:
            out.extend(ready)
            ready.clear()
        else:
            while ready and len(out) < limit:
                out.append(ready.popleft())
        if self._complete and not ready:
            self.finalized = True
        return limit is not None and len(out) >= limit

    def _report(self, error: LineError) -> None:
        self.errors.append(error)
        self.stats.errors_by_kind[error.kind] += 1
        if self._on_error is not None:
            self._on_error(error)
