"""A Spark event log's conversion run in a child process, its records streamed back: two cores for one log.

Reading, decoding and the Spark model (``SparkLogConversion``) are about half of the work of bringing a Spark log
to its full state; applying the records to the tracker (``tracker.replay.Replay``) is the other half, and it has to
happen where the state is wanted. :class:`ConversionProcess` runs the one conversion in a forked child and hands
its records over a pipe in batches (JSON, about a thousand records per message; a thread of the child writes them,
so the conversion never waits for this process), so the child reads and models the next events while this
process applies the previous ones. It iterates like ``SparkLogConversion`` and ends
with the same summary; corrupt lines reach ``on_error`` as they arrive. The pipe costs this process a
``orjson.loads`` per batch, a few microseconds per record, against the tens of microseconds the child's share of
the work costs per event.

Where ``fork`` is not available (or in a process whose threads a fork could leave in a bad state, such as a
running server) use ``SparkLogConversion`` itself: the records are the same.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import traceback
from collections.abc import Callable, Iterator
from queue import SimpleQueue
from typing import Any

import orjson

from backend.sources import AppLog, LineError

from .convert import RecordSummary, SparkLogConversion, open_event_log
from .model import SparkSummary

__all__ = ["ConversionProcess"]

BATCH = 1024  # records per message: large enough that the pipe costs little, small enough to overlap the work

_RECORDS, _ERROR, _DONE, _FAILED = b"r", b"e", b"d", b"x"


class ConversionProcess:
    """``for rec in ConversionProcess(log): ...``: the records of ``SparkLogConversion(log)``, converted in a child
    process. ``lines`` (while iterating) is the event-log line of the latest record; ``summary()`` and
    ``model_summary()`` answer once the iteration ended. Raises like ``SparkLogConversion`` at construction when the
    log cannot be read; a failure in the child is raised here as ``RuntimeError`` with its traceback."""

    def __init__(self, source: str | os.PathLike[str] | AppLog, *,
                 on_error: Callable[[LineError], None] | None = None, batch: int = BATCH) -> None:
        self.log = open_event_log(source)
        SparkLogConversion(self.log)  # the same checks, here: a missing codec is raised to the caller, not the child
        self._on_error = on_error
        self.errors: list[LineError] = []
        self.line: int | None = None
        self._summary: RecordSummary | None = None
        self._model: SparkSummary | None = None
        ctx = multiprocessing.get_context("fork")
        self._receive, send = ctx.Pipe(duplex=False)
        _widen(send.fileno())
        self._child = ctx.Process(target=_convert, args=(self.log, send, batch), daemon=True,
                                  name="flowscope-conversion")
        self._child.start()
        send.close()

    def __iter__(self) -> Iterator[dict]:
        receive, loads = self._receive.recv_bytes, orjson.loads
        try:
            while True:
                try:
                    message = receive()
                except EOFError:
                    raise RuntimeError("the conversion process ended without a summary") from None
                kind, payload = message[:1], message[1:]
                if kind == _RECORDS:
                    for line, rec in loads(payload):
                        self.line = line
                        yield rec
                elif kind == _ERROR:
                    err = LineError(*loads(payload))
                    self.errors.append(err)
                    if self._on_error is not None:
                        self._on_error(err)
                elif kind == _DONE:
                    self._finish(loads(payload))
                    return
                else:
                    raise RuntimeError(f"the conversion process failed:\n{payload.decode('utf-8', 'replace')}")
        finally:
            self.close()

    def _finish(self, done: dict) -> None:
        summary = done["summary"]
        summary["errors"] = list(self.errors)
        self._summary = RecordSummary(**summary)
        m = done["model"]
        self._model = SparkSummary({int(k): v for k, v in m["jobs"].items()},
                                   {(s, a): v for s, a, v in m["stages"]}, m["tasks"], m["uncertain"])

    def summary(self) -> RecordSummary:
        """What the conversion did (``SparkLogConversion.summary``), once every record was read."""
        if self._summary is None:
            raise RuntimeError("the conversion has not finished: iterate over its records first")
        return self._summary

    def model_summary(self) -> SparkSummary:
        """The model's ``SparkSummary`` (jobs, stage attempts, task ends), once every record was read."""
        if self._model is None:
            raise RuntimeError("the conversion has not finished: iterate over its records first")
        return self._model

    @property
    def running(self) -> bool:
        """The child process still runs."""
        return self._child.is_alive()

    def close(self) -> None:
        """Stop the child (if it still runs) and release the pipe."""
        self._receive.close()
        if self._child.is_alive():
            self._child.terminate()
        self._child.join()


def _widen(fd: int) -> None:
    """Let the pipe hold as much as the system allows (Linux: 1 MB by default, not 64 KB), so the child blocks
    less often on a parent that is busy, and each side needs the other to be scheduled less often."""
    try:
        import fcntl

        with open("/proc/sys/fs/pipe-max-size") as fh:
            size = int(fh.read())
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (OSError, ValueError, ImportError):
        pass


def _convert(log: AppLog, send: Any, batch: int) -> None:
    """The child: one ``SparkLogConversion``, its records sent in batches with their lines, then the summaries.

    A thread writes to the pipe, so the conversion never waits for the parent: when the parent is busy (or not
    scheduled, on a loaded machine) the batches queue up here and the conversion goes on."""
    dumps = orjson.dumps
    queue: SimpleQueue[bytes | None] = SimpleQueue()
    sender = threading.Thread(target=_send_all, args=(queue, send), name="flowscope-conversion-sender")
    sender.start()
    put = queue.put
    try:
        conversion = SparkLogConversion(log, on_error=lambda e: put(
            _ERROR + dumps([e.path, e.line, e.kind, e.reason, e.excerpt])))
        out: list[tuple[int | None, dict]] = []
        for rec in conversion:
            out.append((conversion.line, rec))
            if len(out) >= batch:
                put(_RECORDS + dumps(out))
                out = []
        if out:
            put(_RECORDS + dumps(out))
        summary = conversion.summary().to_json()
        del summary["errors"]  # sent one by one as they were found
        m = conversion.model.summary()
        put(_DONE + dumps({"summary": summary, "model": {
            "jobs": {str(k): v for k, v in m.jobs.items()}, "stages": [[s, a, v] for (s, a), v in m.stages.items()],
            "tasks": m.tasks, "uncertain": m.uncertain}}))
    except BaseException:  # noqa: BLE001 - whatever it was, the parent says so
        put(_FAILED + traceback.format_exc().encode())
    finally:
        put(None)
        sender.join()


def _send_all(queue: SimpleQueue[bytes | None], send: Any) -> None:
    """Write the queued messages to the pipe until the end (None); a parent that went away ends it too."""
    try:
        while (message := queue.get()) is not None:
            send.send_bytes(message)
    except OSError:  # the parent closed its end: nobody reads any more
        pass
    finally:
        send.close()
