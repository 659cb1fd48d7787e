"""The Spark model: a Spark application's listener events as scopes, operators, edges and atomic progress batches.

Input is the stream of Spark listener events as JSON dicts (exactly what Spark writes to event logs, and what the
live listener forwards); output is progress-log records (format v1), so the tracker computes, for every stage and
every epoch, what may still arrive and who holds it. ``docs/spark-model.md`` is the mapping, one row per event.

* The root scope is the application (integer epochs). Each Structured Streaming query, job group, SQL execution
  or lone job gets a *region* (a nested scope with the same times) so the view can fold it. A streaming query's
  epoch is the micro-batch id; a batch region's epoch is the job's sequence number in it.
* In a region: node 1 is the *driver source* (it holds a capability at the next epoch while work may still come),
  node 2 the *driver sink* (where results arrive), and one operator per stage *signature* (its name and RDD
  names/scopes, never ids, plus its parents' signatures), so micro-batch 41 and 42 run through the same operators.
  Input 0 of a stage operator is "work from outside the region"; input k >= 1 is its k-th parent stage.
* A driver loop (a batch region's jobs that apply the same code to the previous job's output, ``loops.py``) gets
  a nested *loop* scope in its region: times ``[epoch, iteration]``, one step operator whose output feeds back
  (summary ``[0, 1]``) into its own input 1, its own driver source, one output to the region's driver sink.
* The events' handlers (``event_handlers.py``) say what each event does: job start sends one token to each stage,
  a stage submitted takes one capability per task, a task's success drops one and sends to each child stage; what
  is still held is released when a stage fails, a job or query ends and the application ends.
* A region that can get no more work (a lone job at its end, a SQL execution at its end once its jobs ended, a
  terminated query, every region at application end) is released and *retired* (a ``retire`` record): a long
  application's reader folds it out of its live state, and the model forgets what it kept for its structure.
* What Spark's own job list shows (every job's and stage attempt's status) is kept for the whole application; a
  model made with ``retain_jobs=N`` keeps the full records of only the N jobs that ended last (``retention.py``).

Spark drops events when a listener lags; a gap (a task of a stage that was never submitted, a job that never
started) marks the session *uncertain* from that point instead of inventing progress.

The model is one class built in layers, a module each, each building on the one before: ``model_state`` (what it
keeps per region, job and stage; emitting records; counting tokens), ``retention`` (statuses, folding ended jobs),
``placement`` (signatures, skipped stages, where stages go), ``event_handlers`` (a method per event) and this
module (feeding events to the handlers, and what a reader asks of the model).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from backend.spark.model.event_handlers import HANDLED_EVENTS, HANDLERS, STREAMING_PREFIX, EventHandlers
from backend.spark.model.event_shape import event_problem
from tracker.progress_log import records as log_records

__all__ = ["HANDLED_EVENTS", "SparkModel", "SparkSummary"]


@dataclass
class SparkSummary:
    """What Spark itself would report: jobs, stage attempts and their statuses, task ends."""

    jobs: dict[int, str]
    stages: dict[tuple[int, int], str]
    tasks: int
    uncertain: bool


class SparkModel(EventHandlers):
    """Turns Spark listener events (dicts) into progress-log records, one event at a time."""

    def __init__(self, retain_jobs: int | None = None, name_plans: bool = True) -> None:
        """``retain_jobs``: keep the full records of only that many of the jobs that ended last (``retention``);
        None keeps every job's (a post-mortem reads them: the fleet's stage rows). ``name_plans``: follow the SQL
        plan operator each stage ran (``plan_naming``: a mark at each SQL execution's end); a reader that never
        shows them (``flowscope frontiers``) is spared the plans."""
        super().__init__(retain_jobs, name_plans)
        self.unknown_events: dict[str, int] = {}
        self.events_lost = 0  # counted by note_lost
        self.damaged_events = 0  # events skipped because a field had the wrong type (see event_shape)
        self.on_damaged: Callable[[int | None, str, str], None] | None = None  # (line, event type, what is wrong)

    # --- driving -----------------------------------------------------------------------------------------

    def feed(self, event: dict, line: int | None = None, checked: bool = False) -> list[dict]:
        """The progress-log records this event produces (possibly none). ``checked``: the fields the model reads
        already have the types ``event_shape`` requires (a typed decode, ``event_fields.model_decoder``), so they
        are not checked again."""
        self._out = []
        self._line = line
        kind = event.get("Event")
        # a typed decode checked every type: only a job start has a field types cannot check (event_shape)
        problem = None if checked and kind != "SparkListenerJobStart" else event_problem(event, checked)
        if problem is not None:  # skipped whole: half an event would leave the model inconsistent
            self.damaged_events += 1
            if self.on_damaged is not None:
                self.on_damaged(line, str(kind), problem)
            self._uncertain(f"a damaged {kind} event was skipped" + (f" (line {line})" if line else ""))
            return self._out
        handler = HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None and isinstance(kind, str) and kind.startswith(STREAMING_PREFIX):
            handler = HANDLERS.get(kind[len(STREAMING_PREFIX):])
        if handler is None:
            name = kind if isinstance(kind, str) else f"<{type(kind).__name__}>"  # never the repr of a hostile value
            self.unknown_events[name] = self.unknown_events.get(name, 0) + 1
            return []
        handler(self, event)
        return self._out

    @property
    def at(self) -> float:
        """Wall-clock seconds of the latest event that carried a time: what the model's records are stamped with."""
        return self._at

    def note_gap(self, reason: str) -> list[dict]:
        """A gap found outside the model (lost events, a dropped connection): mark the model uncertain from here
        for ``reason``. Returns the records that say so (a mark, the first time)."""
        self._out = []
        self._uncertain(reason)
        return self._out

    def note_lost(self, count: int, reason: str, until: float | None = None) -> list[dict]:
        """Events known to be lost (a broken connection, a full queue): an "events lost" mark with the ``count``, from
        the latest event's time to ``until`` (wall-clock seconds, when known), and uncertain from here. The marks'
        ``lost``/``lost_until`` fields let the timeline draw the stretch and explain/blame say an answer spans it."""
        self._out = []
        self._uncertain(reason)
        self.events_lost += count
        extra: dict[str, Any] = {"lost": count, "uncertain": True}
        if until is not None and until > self._at:
            extra["lost_until"] = until
        self._mark(f"events lost: {count}: {reason}", **extra)
        return self._out

    def note(self, label: str) -> dict:
        """A timeline mark at the model's current time, for something that happened outside the events."""
        return log_records.mark(label, self._at)

    def summary(self) -> SparkSummary:
        """What Spark itself would report now: its statuses of every job and stage attempt, kept or folded."""
        jobs = dict(self.folded_jobs.items(False))
        jobs.update((j, job.status) for j, job in self.jobs.items())
        stages = dict(self.folded_stages.items(True))
        stages.update(self.stage_status)
        return SparkSummary(jobs, stages, self.task_ends, bool(self.uncertain))
