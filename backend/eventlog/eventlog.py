"""One pass over an application's Spark event log, as a stream of events with their provenance.

This is the replay path (`flowscope record`, `flowscope replay`): it reads a finished or in-progress log once, file
by file in Spark's order, decompressing as it goes, and never holds more than a chunk of it. Corrupt lines are
reported and skipped so a damaged log still replays; the unfinished tail of an in-progress log is reported as
pending, not as an error. Which event types exist and what they mean is the Spark model's business: every JSON
object is yielded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from backend.eventlog import events as records
from backend.eventlog.codecs import codec_from_name, make_decoder
from backend.eventlog.cursor import FileCursor
from backend.eventlog.eventlog_layout import AppLog, describe_log
from backend.eventlog.events import ErrorCallback, LineError, LogEvent, PendingLine, ReadStats
from backend.stores import PathOrUrl, open_read

__all__ = ["EventLogReader", "read_events"]


class EventLogReader:
    """Iterate once over one application's log: `for ev in EventLogReader(path): ev.path, ev.line, ev.event`.

    `source` is an `AppLog` (from `find_logs`) or a path or store URL of a log file or rolling directory.
    Afterwards `stats` holds the counts, `errors` the corrupt lines (each also passed to `on_error` as it is found)
    and `pending` the unfinished last line of an in-progress log, if any. `decode` parses each line (default: whole;
    a reader that needs only some events or fields passes a `backend.eventlog.decode.EventDecoder`). Raises
    `MissingCodecError` at construction if a file needs a codec library that is not installed."""

    def __init__(
        self,
        source: AppLog | PathOrUrl,
        *,
        on_error: ErrorCallback | None = None,
        chunk_size: int | None = None,
        decode: Callable[[bytes], Any] | None = None,
    ) -> None:
        self.log = source if isinstance(source, AppLog) else describe_log(source)
        for path in self.log.files:
            make_decoder(codec_from_name(path.name), path)  # fail now, not after half the replay
        self.stats = ReadStats()
        self.errors: list[LineError] = []
        self.pending: PendingLine | None = None
        self._on_error = on_error
        self._chunk = chunk_size
        self._decode = decode
        self._started = False

    def __iter__(self) -> Iterator[LogEvent]:
        if self._started:
            raise RuntimeError("an EventLogReader reads its log once; create a new one to read it again")
        self._started = True
        files = self.log.files
        for i, path in enumerate(files):
            # Only the last file of an in-progress log can still grow; earlier rolling parts were closed.
            final = not (self.log.in_progress and i == len(files) - 1)
            cursor = FileCursor(path, self.stats, self._report, chunk_size=self._chunk, decode=self._decode)
            try:
                fh = open_read(path)
            except FileNotFoundError:
                self._report(LineError(str(path), 0, records.FILE_VANISHED, "the file disappeared before it was read"))
                continue
            self.stats.files += 1
            with fh:
                while cursor.pull(fh):
                    ready = cursor.ready
                    while ready:
                        yield ready.popleft()
            cursor.finish(final)
            ready = cursor.ready
            while ready:
                yield ready.popleft()
            if not final:
                self.pending = cursor.pending_line

    def _report(self, error: LineError) -> None:
        self.errors.append(error)
        self.stats.errors_by_kind[error.kind] += 1
        if self._on_error is not None:
            self._on_error(error)


def read_events(
    source: AppLog | PathOrUrl, *, on_error: ErrorCallback | None = None
) -> Iterator[LogEvent]:
    """The events of one application's log, for callers that need neither the counts nor the error list."""
    return iter(EventLogReader(source, on_error=on_error))
