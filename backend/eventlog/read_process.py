"""One pass over an event log, read and decoded in a child process: :class:`EventLogReader` on another core.

Reading and decoding a large Spark log (splitting lines, skipping the plan strings and metrics a reader does not
need, decoding the fields it does) costs about as much as the Spark model that consumes the events. Here an
``EventLogReader`` runs in a child process (``child.ChildStream``) and sends what it decoded, in batches of events
already narrowed to the fields asked for (JSON, a tenth of the log's bytes for a task-heavy log), so this process
gets the same ``LogEvent``s, the same ``LineError``s in the same order (each also passed to ``on_error`` as it
arrives), the same ``stats`` and ``pending`` at the end: a drop-in for ``EventLogReader``.

An event its decoder handed out whole (``decode.WholeEvent``: its fields' types not checked) comes out whole
here too. ``decode`` is a factory (a module-level function, so a spawned child can import it) that makes the
decoder in the child.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from backend.eventlog.child import ChildStream, Put
from backend.eventlog.decode import WholeEvent
from backend.eventlog.eventlog import EventLogReader
from backend.eventlog.eventlog_layout import AppLog, describe_log
from backend.eventlog.events import ErrorCallback, LineError, LogEvent, PendingLine, ReadStats

__all__ = ["EventReaderProcess"]

# Events per message: the pipe costs little, and the model takes a batch's events while they are still in its
# cache (a larger batch costs it more CPU).
BATCH = 256

_EVENTS, _EVENTS_PICKLED, _ERROR, _END = b"e", b"p", b"r", b"d"


class EventReaderProcess:
    """``for ev in EventReaderProcess(log, decode=factory): ev.path, ev.line, ev.event``.

    ``EventLogReader``'s events, read in a child process. ``stats`` counts bytes as batches arrive and everything once
    the iteration ended; ``errors`` and ``pending`` as ``EventLogReader``'s. The child starts at construction;
    ``close()`` stops it when the events are not read to the end. Raises ``MissingCodecError`` at construction if a file
    needs a codec library that is not installed (before a child starts)."""

    def __init__(self, source: AppLog | str | os.PathLike[str], *, on_error: ErrorCallback | None = None,
                 decode: Callable[[], Callable[[bytes], Any]] | None = None, batch: int = BATCH) -> None:
        self.log = source if isinstance(source, AppLog) else describe_log(source)
        EventLogReader(self.log)  # the same checks, here: a missing codec is raised to the caller, not the child
        self.stats = ReadStats()
        self.errors: list[LineError] = []
        self.pending: PendingLine | None = None
        self._on_error = on_error
        self._started = False
        # started now, while the caller is likely to run no other thread (a progress bar's comes later): forked
        self._stream = ChildStream(_read, (self.log, decode, batch), name="flowscope-reader")

    def __iter__(self) -> Iterator[LogEvent]:
        if self._started:
            raise RuntimeError("an EventReaderProcess reads its log once; create a new one to read it again")
        self._started = True
        loads, stats, new = orjson.loads, self.stats, tuple.__new__  # LogEvent(...) without its Python __new__
        for message in self._stream:
            kind, payload = message[:1], message[1:]
            if kind == _EVENTS or kind == _EVENTS_PICKLED:
                path, read, events = loads(payload) if kind == _EVENTS else pickle.loads(payload)
                stats.bytes_compressed = read
                for line, whole, event in events:
                    yield new(LogEvent, (path, line, WholeEvent(event) if whole else event))
            elif kind == _ERROR:
                err = LineError(*loads(payload))
                self.errors.append(err)
                if self._on_error is not None:
                    self._on_error(err)
            elif kind == _END:
                stats_end, self.pending = pickle.loads(payload)
                self.stats.__dict__.update(stats_end.__dict__)

    @property
    def method(self) -> str:
        """How the child was started: ``fork`` or ``spawn`` (``child.ChildStream``)."""
        return self._stream.method

    @property
    def running(self) -> bool:
        """The child still runs."""
        return self._stream.running

    def close(self) -> None:
        """Stop the child if it still reads (an iteration abandoned, or never started)."""
        self._stream.close()


def _read(put: Put, log: AppLog, decode: Callable[[], Callable[[bytes], Any]] | None, batch: int) -> None:
    """The child: one ``EventLogReader``; its events sent in batches (one file's each), its errors in between."""
    dumps = orjson.dumps
    out: list[tuple[int, bool, Any]] = []
    path = ""

    def flush() -> None:
        if out:
            items = (path, reader.stats.bytes_compressed, out)
            try:
                put(_EVENTS + dumps(items))
            except TypeError:  # what JSON cannot carry (an integer beyond 64 bits in an event decoded whole)
                put(_EVENTS_PICKLED + pickle.dumps(items, pickle.HIGHEST_PROTOCOL))
            out.clear()  # serialised: the list is free again

    def error(err: LineError) -> None:
        flush()  # the events before it first: the order of events and errors is the reader's
        put(_ERROR + dumps([err.path, err.line, err.kind, err.reason, err.excerpt]))

    reader = EventLogReader(log, on_error=error, decode=None if decode is None else decode())
    append = out.append
    for ev in reader:
        if ev.path != path or len(out) >= batch:
            flush()
            path = ev.path
        append((ev.line, type(ev.event) is WholeEvent, ev.event))
    flush()
    put(_END + pickle.dumps((reader.stats, reader.pending), pickle.HIGHEST_PROTOCOL))
