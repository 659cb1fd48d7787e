"""A Spark event log's conversion run in a child process, its records streamed back: two cores for one log.

Reading, decoding and the Spark model are about half the work of bringing a Spark log to its full state; applying
the records to the tracker is the other half, and it has to happen where the state is wanted. So
:class:`ConversionProcess` runs the conversion in a child (``backend.eventlog.child``) and hands its records over
a pipe in batches, and the child models the next events while this process applies the previous ones. It iterates
like ``SparkLogConversion`` and ends with the same summary; corrupt lines reach ``on_error`` as they arrive.

:func:`replay_event_log` is what ``flowscope frontiers`` and ``explain`` do with a Spark event log, and
:func:`event_log_conversion` its choice of processes, which ``flowscope blame`` shares: for a large log three
(reading and decoding, the model, the replay), for a small one all here.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Iterator

import orjson

from backend.eventlog import AppLog, LineError
from backend.eventlog.child import ChildStream, Put
from backend.spark.model.spark_model import SparkSummary
from backend.spark.recording.convert import READ_IN_CHILD_BYTES, RecordSummary, SparkLogConversion, open_event_log
from backend.stores import PathOrUrl
from tracker.progress_log.replay import Replay

__all__ = ["ConversionProcess", "event_log_conversion", "replay_event_log"]

# Records per message: the pipe costs little, and the replay takes a batch's records while they are still in its
# cache (a larger batch costs it more CPU).
BATCH = 256

_RECORDS, _ERROR, _DONE = b"r", b"e", b"d"


class ConversionProcess:
    """``for rec in ConversionProcess(log): ...``.

    The records of ``SparkLogConversion(log)``, converted in a child process. ``lines`` (while iterating) is the
    event-log line of the latest record; ``summary()`` and ``model_summary()`` answer once the iteration ended. Raises
    like ``SparkLogConversion`` at construction when the log cannot be read; a failure in the child is raised here as
    ``RuntimeError`` with its traceback. ``read_in_child``: the child reads and decodes in a child of its own
    (``SparkLogConversion``'s option), so reading, the model and whatever this process does with the records are three
    processes; ``name_plans``: ``SparkLogConversion``'s."""

    def __init__(self, source: PathOrUrl | AppLog, *,
                 on_error: Callable[[LineError], None] | None = None, batch: int = BATCH,
                 read_in_child: bool = False, name_plans: bool = True) -> None:
        self.log = open_event_log(source)
        SparkLogConversion(self.log)  # the same checks, here: a missing codec is raised to the caller, not the child
        self._on_error = on_error
        self.errors: list[LineError] = []
        self.line: int | None = None
        self._summary: RecordSummary | None = None
        self._model: SparkSummary | None = None
        # once it ended: CPU seconds of the conversion process, and of the process that read for it (0 if none)
        self.cpu_seconds: tuple[float, float] | None = None
        self._stream = ChildStream(_convert, (self.log, batch, read_in_child, name_plans), name="flowscope-conversion")

    def __iter__(self) -> Iterator[dict]:
        loads = orjson.loads
        for message in self._stream:
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
        if self._summary is None:
            raise RuntimeError("the conversion process ended without a summary")

    def _finish(self, done: dict) -> None:
        self.cpu_seconds = tuple(done["cpu"])
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
        return self._stream.running

    def close(self) -> None:
        """Stop the child (if it still runs) and release the pipe."""
        self._stream.close()


def _convert(put: Put, log: AppLog, batch: int, read_in_child: bool, name_plans: bool) -> None:
    """The child: one ``SparkLogConversion``, its records sent in batches with their lines, then the summaries."""
    dumps = orjson.dumps
    conversion = SparkLogConversion(log, on_error=lambda e: put(
        _ERROR + dumps([e.path, e.line, e.kind, e.reason, e.excerpt])), read_in_child=read_in_child,
        name_plans=name_plans)
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
    reader = resource.getrusage(resource.RUSAGE_CHILDREN)
    put(_DONE + dumps({"summary": summary, "model": {
        "jobs": {str(k): v for k, v in m.jobs.items()}, "stages": [[s, a, v] for (s, a), v in m.stages.items()],
        "tasks": m.tasks, "uncertain": m.uncertain},
        "cpu": [time.process_time(), reader.ru_utime + reader.ru_stime]}))


def replay_event_log(source: PathOrUrl | AppLog, *, at: int | None = None, check_contracts: bool = False,
                     on_error: Callable[[LineError], None] | None = None, threshold: int | None = None,
                     ) -> tuple[Replay, ConversionProcess | SparkLogConversion]:
    """A Spark event log replayed to its full state and settled, with the conversion that fed it.

    Up to its first ``at`` progress records when given; the conversion gives its ``summary()`` and ``model_summary()``.
    The records are those ``flowscope record`` writes but the SQL executions' plan-operator marks (nothing that
    applies them here shows them: the model is spared the plans), applied as ``flowscope frontiers`` applies them. A
    large log takes three processes: one reads and decodes (``EventReaderProcess``), one models
    (``ConversionProcess``), this one applies; a small one is converted here. Corrupt lines and rejected records
    both reach ``on_error`` and the replay's ``errors``, in the order found. Raises like ``SparkLogConversion`` when
    the log cannot be read. ``threshold``: see :func:`event_log_conversion`."""
    log = open_event_log(source)
    replay = Replay(str(log.path), check_contracts, on_error=on_error, checked_records=True)

    def reported(err: LineError) -> None:  # the reader's corrupt lines, among the replay's own problems
        replay.errors.append(err)
        if on_error is not None:
            on_error(err)

    conversion = event_log_conversion(log, on_error=reported, threshold=threshold, name_plans=False)
    apply = replay.apply
    try:
        for rec in conversion:
            if at is not None and rec["type"] == "progress" and replay.progress_records >= at:
                replay.stopped_before(rec)
                break
            apply(rec, conversion.line)
    finally:
        conversion.close()
    replay.finish()
    return replay, conversion


def event_log_conversion(source: PathOrUrl | AppLog, *,
                         on_error: Callable[[LineError], None] | None = None, threshold: int | None = None,
                         name_plans: bool = True) -> ConversionProcess | SparkLogConversion:
    """The conversion of a Spark event log that feeds a replay in this process.

    For a log of ``threshold`` bytes (default ``READ_IN_CHILD_BYTES``) or more on disk, ``ConversionProcess`` reading in
    a child of its own (two more processes, so that this one only applies the records), else ``SparkLogConversion`` here
    (a child's start-up costs more than it saves). Iterate over it for the records (its ``line`` is the latest one's
    event-log line) and ``close()`` it after; corrupt lines reach ``on_error`` as found. ``name_plans``: the model
    names each SQL stage's plan operator (``SparkModel``'s option). Raises like ``SparkLogConversion``."""
    log = open_event_log(source)
    if log.size() >= (READ_IN_CHILD_BYTES if threshold is None else threshold):
        return ConversionProcess(log, on_error=on_error, read_in_child=True, name_plans=name_plans)
    return SparkLogConversion(log, on_error=on_error, name_plans=name_plans)

