"""Blame: where the seconds of a completed time went (the answer and its kinds: ``docs/blame.md``).

For each time ``t`` that completes at a scope's sink (an operator with ``attrs.role == "sink"``, or with no outputs)
the interval from its start to the batch after which the sink's input frontier passed ``t`` is split along the
critical path of holders, walked backwards. The walk follows the pointstamps the batches put in the scope (their
positive intervals, kept per scope while some time that may need them is open):

* at the end, the holder ``h`` that the completing batch released (the one held longest, if several);
* ``h`` is blamed from the latest release, after ``h`` began, of a pointstamp that could result in ``h`` (it was
  waiting on that one until then) and the walk goes on from that pointstamp; a *driver* holder (an operator with
  ``attrs.role == "source"``: the ability to start new work) also waits on what it could result in, so it is
  blamed only for the time nothing downstream of it held ``t``;
* with no such release, ``h`` is blamed from its start, and the walk goes on from what the batch that created it
  released (the one held longest), or else from the capability that backed it, or else, for a resubmitted stage
  attempt (its capabilities come from nothing), from the holder released last before it began (the failed attempt).

The segments tile ``[start, end]``: where the walk runs out before the start, the rest is the driver's.

The Spark model's conventions turn holders into what a Spark user reads: a stage operator's capability released
by a task's end is that task (from its launch; before it, the task was pending: *waiting-for-slots* when every
executor core ran other tasks, naming their stages and jobs, else *scheduler*), a retried stage attempt, and one
that failed, is *recompute*, tokens waiting at a stage's input are *scheduler*, the driver's operators are *driver*
with what Spark's progress says it was doing. Other logs get ``capability`` / ``message`` segments. Starts: a
micro-batch's trigger (the ``batch N done`` mark's ``trigger_start``), else its first job's submission (``job J
started`` marks), else the first batch that put the time in the scope.

What-if (a task segment): had the task run for the median of its stage attempt's other tasks, the stage would
have released the time when the later of that and its other tasks' ends came (another straggler takes over), so
the time ends ``ends_earlier_s`` earlier, if the rest of the path shifts with it.

:class:`BlameTracker` is fed every record after the replay applied it (``record``); ``times()`` lists the blamed
times. It works live (a session keeps one) and on a whole log (``blame_log``).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from heapq import heapify, heappop, heappush
from typing import Any

from backend.spark.task_metrics import as_dict
from tracker.jsonl import IGNORED_FIELD
from tracker.log_records import short_repr
from tracker.reachability import IN, OUT, Location
from tracker.replay import Replay
from tracker.subgraph import Subgraph
from tracker.timestamp import time_from_json

__all__ = ["BlameTracker", "TimeBlame", "blame_log", "blame_replay", "select", "KEEP_TIMES"]

KEEP_TIMES = 10_000  # blamed times kept per tracker (the oldest are dropped first)
KEEP_DONE = 10_000  # completed times a scope remembers by value (see _Scope.done)
KEEP_STAGES = 10_000  # stages whose job blame remembers, for the task spans that name them (the latest)
_INF = math.inf
LAZY_PENDING = 256  # completed times a lazy tracker lets wait before walking them
_PRUNE_EVERY = 32  # completions between prunes of intervals no open time can need
_MAX_SPANS = 2_000  # ended task spans kept before a prune at the next completion
KEEP_SHAPES = 4_096  # (structure, port) reaches shared across scopes before the table starts over


@dataclass(eq=False, slots=True)
class Interval:
    """A pointstamp's positive stretch: from the batch that made its count positive to the one that zeroed it."""

    loc: Location
    time: Any
    start_seq: int
    start_at: float
    end_seq: int | None = None
    end_at: float | None = None
    end_cause: dict | None = None
    end_worker: Any = None
    task_ends: list[tuple[float, Any, Any]] = field(default_factory=list)  # (at, task, launched) while it held


@dataclass
class TimeBlame:
    scope: list
    name: str
    time: Any
    job_ids: list
    batch_id: Any
    start: float
    end: float
    blame: list[dict]
    failure: str | None = None  # what Spark says failed the time's job (None: it succeeded)

    @property
    def iteration(self) -> Any:
        """In a loop (a time ``[epoch, iteration]``), the iteration; None elsewhere."""
        return self.time[1] if type(self.time) is tuple and len(self.time) == 2 else None

    @property
    def latency_s(self) -> float:
        return round(self.end - self.start, 6)

    def to_json(self) -> dict:
        """The contract's object; a time whose job failed adds ``"status": "failed"`` and ``"failure"`` (a
        succeeded one has neither)."""
        out = {"scope": self.scope, "name": self.name, "time": self.time, "job_ids": self.job_ids,
               "batch_id": self.batch_id, "iteration": self.iteration, "start": self.start, "end": self.end,
               "latency_s": self.latency_s, "blame": self.blame}
        if self.failure is not None:
            out["status"] = "failed"
            out["failure"] = self.failure
        return out


@dataclass
class _Scope:
    path: tuple
    counts: dict[tuple[Location, Any], int] = field(default_factory=dict)
    open_iv: dict[tuple[Location, Any], Interval] = field(default_factory=dict)
    closed: list[Interval] = field(default_factory=list)
    first_seen: dict[Any, tuple[int, float]] = field(default_factory=dict)  # open time -> (seq, at) first held
    active: dict[Any, float] = field(default_factory=dict)  # open time -> when something but a driver first held it
    # completed times, oldest first: the latest KEEP_DONE, so a long-lived scope's bookkeeping stays bounded; in a
    # total order, every time at or before the latest one forgotten (``done_floor``: (le, time)) counts as completed
    done: dict[Any, None] = field(default_factory=dict)
    done_floor: tuple | None = None
    jobs: dict[Any, list] = field(default_factory=dict)
    job_start: dict[Any, float] = field(default_factory=dict)
    job_end: dict[Any, float] = field(default_factory=dict)
    job_failure: dict[Any, str] = field(default_factory=dict)  # a time whose job failed -> what failed it
    batch_marks: dict[Any, dict] = field(default_factory=dict)
    reach: _SinkReach | None = None  # what the live pointstamps could result in at the sinks (None: not kept now)

    def is_done(self, t: Any) -> bool:
        """Did ``t`` complete already (so a pointstamp at it opens nothing)?"""
        if t in self.done:
            return True
        floor = self.done_floor
        return floor is not None and floor[0](t, floor[1])


class _SinkReach:
    """For a scope without inputs: the times its live pointstamps could result in at its sinks, kept as the
    pointstamps come and go, so that whether a time is still held costs what changed, not what is live.

    ``counts`` holds, per sink time, how many (live pointstamp, path summary to a sink) pairs result in it. A time
    ``t`` is held while some counted time is at or before it. With a total order that is the least counted time
    (a min-heap whose entries for times no longer counted are dropped when they reach the top), and the open times
    are a min-heap too, so a completion check pops exactly the times that completed. With a partial order the
    least counted times (an antichain) are kept, recomputed only when one of them stops being counted.
    """

    __slots__ = ("to_sink", "counts", "total", "heap", "in_heap", "least", "le", "results_in", "open", "order")

    def __init__(self, to_sink: dict[Location, tuple], domain: Any, sb: _Scope) -> None:
        self.to_sink = to_sink  # port -> the minimal summaries from it to any sink of the scope
        self.counts: dict[Any, int] = {}
        self.total: bool = domain.total
        self.le, self.results_in = domain.le, domain.results_in
        self.heap: list = []  # total order: counted times (and some no longer counted), least first
        self.in_heap: set = set()
        self.least: list | None = []  # partial order: the least counted times (None: to recompute)
        self.open: list[tuple[Any, int]] = []  # total order: (open time, order first held), least first
        self.order = 0
        for (loc, t), c in sb.counts.items():
            if c > 0:
                self.add(loc, t)
        if self.total:
            for t in sb.first_seen:
                self.opened(t)

    def add(self, loc: Location, t: Any) -> None:
        """The pointstamp ``(loc, t)`` became positive."""
        counts = self.counts
        for s in self.to_sink.get(loc, ()):
            r = self.results_in(s, t)
            n = counts.get(r, 0)
            counts[r] = n + 1
            if n:
                continue
            if self.total:
                if r not in self.in_heap:
                    self.in_heap.add(r)
                    heappush(self.heap, r)
            elif self.least is not None:
                le = self.le
                if not any(le(f, r) for f in self.least):
                    self.least = [f for f in self.least if not le(r, f)]
                    self.least.append(r)

    def remove(self, loc: Location, t: Any) -> None:
        """The pointstamp ``(loc, t)`` stopped being positive."""
        counts = self.counts
        for s in self.to_sink.get(loc, ()):
            r = self.results_in(s, t)
            n = counts[r] - 1
            if n:
                counts[r] = n
                continue
            del counts[r]
            if not self.total and self.least is not None and r in self.least:
                self.least = None

    def opened(self, t: Any) -> None:
        """``t`` became an open time of the scope (total order only: the partial order scans them)."""
        heappush(self.open, (t, self.order))
        self.order += 1

    def completed(self, first_seen: dict) -> list:
        """The open times no counted time is at or before, in the order they were first held."""
        if self.total:
            heap, counts = self.heap, self.counts
            while heap and heap[0] not in counts:
                self.in_heap.discard(heappop(heap))
            if len(heap) > 2 * len(counts) + 64:  # stale entries under a long-held least time: start over
                self.heap = heap = list(counts)
                heapify(heap)
                self.in_heap = set(heap)
            least = heap[0] if heap else None
            opened = self.open
            done = []
            while opened and (least is None or opened[0][0] < least):
                t, n = heappop(opened)
                if t in first_seen:
                    done.append((n, t))
            done.sort()
            return [t for _, t in done]
        least = self.least
        le = self.le
        if least is None:
            least = []
            for c in self.counts:
                if not any(le(f, c) for f in least):
                    least = [f for f in least if not le(c, f)]
                    least.append(c)
            self.least = least
        return [t for t in first_seen if not any(le(f, t) for f in least)]


class _TaskSpans:
    """What held executor slots from when to when: a span per task attempt, ``[launched, ended or None, stage, job,
    host, order, key]`` (``order``: when its key was first seen, the order the spans are listed in). The ended ones
    are also kept sorted by their end, so that "which tasks were running at ``L``" looks at the running ones and
    those that ended at or after ``L``, not at every span kept for the open times."""

    __slots__ = ("by_key", "open", "ended", "ends", "order", "running", "max_running")

    def __init__(self) -> None:
        self.by_key: dict[str, list] = {}
        self.open: dict[str, list] = {}  # the spans not ended (their end None)
        self.ended: list[list] = []  # the spans ended at a number of seconds, by end
        self.ends: list[float] = []
        self.order = 0
        self.running = 0
        self.max_running = 0  # the most tasks seen running at once (the slots, when no executor says)

    def __len__(self) -> int:
        return len(self.by_key)

    def get(self, key: str) -> list | None:
        return self.by_key.get(key)

    def start(self, key: str, launched: Any, stage: Any, job: Any, host: Any) -> None:
        old = self.by_key.get(key)
        if old is None:  # a key never seen (every Spark task id): its place is next
            self.running = running = self.running + 1
            if running > self.max_running:
                self.max_running = running
            self.by_key[key] = self.open[key] = [launched, None, stage, job, host, self.order, key]
            self.order += 1
            return
        if old[1] is not None:
            self.running += 1
            if self.running > self.max_running:
                self.max_running = self.running
        order = old[5]  # the same key again: it keeps its place
        if old[1] is not None:
            self._unindex(old)
        span = [launched, None, stage, job, host, order, key]
        self.by_key[key] = self.open[key] = span

    def end(self, key: str, at: Any) -> None:
        span = self.by_key.get(key)
        if span is None or span[1] is not None:
            return
        span[1] = at
        self.running -= 1
        if at is None:
            return  # ended at no time: it stays among the running, as it always was
        del self.open[key]
        if isinstance(at, (int, float)):
            ends = self.ends
            if not ends or at >= ends[-1]:
                ends.append(at)
                self.ended.append(span)
            else:
                i = bisect_right(ends, at)
                ends.insert(i, at)
                self.ended.insert(i, span)

    def _unindex(self, span: list) -> None:
        for i, s in enumerate(self.ended):
            if s is span:
                del self.ended[i], self.ends[i]
                return

    def running_at(self, at: float, key: str) -> list[list]:
        """The spans (but ``key``'s) launched before ``at`` and not ended before it, in order."""
        me = self.by_key.get(key)
        found = [s for s in self.open.values() if s is not me]
        found += [s for s in self.ended[bisect_left(self.ends, at):] if s is not me]
        found = [s for s in found if isinstance(s[0], (int, float)) and s[0] < at]
        found.sort(key=lambda s: s[5])
        return found

    def prune(self, cut: float | None) -> None:
        """Drop the spans that ended before ``cut`` (every ended one when None)."""
        i = len(self.ended) if cut is None else bisect_left(self.ends, cut)
        if not i:
            return
        by_key = self.by_key
        for s in self.ended[:i]:
            del by_key[s[6]]
        del self.ended[:i], self.ends[:i]


def _median(values: list[float]) -> float | None:
    s = sorted(values)
    n = len(s)
    if not n:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


# --- what blame reads from records, checked ------------------------------------------------------------------
# The replay checks a record's shape (a cause is an object, a mark's `at` a number); the fields blame reads inside
# them are conventions (the Spark model's), free metadata to the replay. Each is checked once, where blame takes
# the record in: a field of the wrong type is reported (with the record's line, beside the replay's problems) and
# left out, so a hostile log gets a blame without it, never a failed session or a failed GET .../blame.


def _seconds(v: Any) -> bool:
    """Epoch seconds: a finite number (not a bool)."""
    return type(v) in (int, float) and math.isfinite(v)


def _id(v: Any) -> bool:
    """An id blame keys and sorts by (a stage, a job): an integer or a string."""
    return type(v) in (int, str)


def _id_or_none(v: Any) -> bool:
    return v is None or type(v) is int or type(v) is str


def _without(rec: dict, where: str, bad: dict[str, str], report: Any) -> dict:
    """``rec`` without the fields ``bad`` names (field -> why), reported."""
    if not bad:
        return rec
    report("; ".join(f"{where}.{k} {short_repr(rec[k])}: {why}" for k, why in bad.items()))
    return {k: v for k, v in rec.items() if k not in bad}


def _is_failure(v: Any) -> bool:
    """A cause's ``failure`` (the Spark model's ``tasks.task_failure``): an object of short scalar fields."""
    return type(v) is dict and all(type(k) is str and (x is None or type(x) in (str, int, float)) for k, x in v.items())


def _checked_cause(cause: dict, at: float, report: Any) -> dict:
    """A progress batch's cause: ``launched`` (a task's launch, epoch seconds, not after the batch that ended it)
    and ``attempt`` (a stage attempt, a count) as blame reads them, else left out."""
    bad = {}
    launched = cause.get("launched")
    if launched is not None and not (_seconds(launched) and launched <= at):
        bad["launched"] = "is not a launch time in seconds at or before the batch's at"
    attempt = cause.get("attempt")
    if attempt is not None and not (type(attempt) is int and attempt >= 0):
        bad["attempt"] = "is not a stage attempt number (an integer >= 0)"
    return _without(cause, "cause", bad, report)


def _checked_detail(rec: dict, report: Any) -> dict:
    """A detail's value: a stage's ``stage`` and ``job``, a task's ``stage``, ``launched`` and ``host``."""
    value = rec.get("value")
    if type(value) is not dict or value.get("kind") not in ("task", "stage"):
        return rec
    bad = {k: "is not an id (an integer or a string)" for k in ("stage", "job") if k in value and
           value[k] is not None and not _id(value[k])}
    if value.get("launched") is not None and not _seconds(value["launched"]):
        bad["launched"] = "is not a time in seconds"
    if value.get("host") is not None and type(value["host"]) is not str:
        bad["host"] = "is not a string"
    return {**rec, "value": _without(value, "detail value", bad, report)} if bad else rec


def _checked_mark(rec: dict, report: Any) -> dict:
    """A mark's job (``job``, ``epoch``, a loop's ``loop`` and ``iteration``, ``status``, ``failure``) or
    micro-batch (``batch``, ``trigger_start``, ``phases_ms``) fields."""
    bad = {}
    if "job" in rec and type(rec["job"]) is not int:
        bad["job"] = "is not a job id (an integer)"
    if "epoch" in rec and type(rec["epoch"]) is not int:
        bad["epoch"] = "is not an epoch (an integer)"
    loop = rec.get("loop")
    if loop is not None and not (type(loop) is list and all(type(k) is int for k in loop)):
        bad["loop"] = "is not a scope path"
    if rec.get("iteration") is not None and type(rec["iteration"]) is not int:
        bad["iteration"] = "is not an integer"
    if rec.get("status") is not None and type(rec["status"]) is not str:
        bad["status"] = "is not a job status (a string)"
    if rec.get("failure") is not None and type(rec["failure"]) is not str:
        bad["failure"] = "is not a failure message (a string)"
    if "batch" in rec and type(rec["batch"]) is not int:
        bad["batch"] = "is not a batch id (an integer)"
    if rec.get("trigger_start") is not None and not _seconds(rec["trigger_start"]):
        bad["trigger_start"] = "is not a time in seconds"
    phases = rec.get("phases_ms")
    if phases is not None and not (type(phases) is dict and all(_seconds(v) for v in phases.values())):
        bad["phases_ms"] = "is not an object of durations in milliseconds"
    return _without(rec, "mark", bad, report)


class BlameTracker:
    """Blames every time that completes at a sink (see the module docstring); fed records after ``replay``."""

    def __init__(self, replay: Replay, lazy: bool = False) -> None:
        self.replay = replay
        # the replay's records were made in this process from checked values (the Spark model's): the fields blame
        # reads in a detail are not checked again (the relation of a cause's launch to its batch's at still is)
        self._trusted = replay.checked_records
        # lazy: walk completed times only when asked (times()) or when LAZY_PENDING are waiting, so a session's
        # ingest pays for the bookkeeping only
        self.lazy = lazy
        self.scopes: dict[tuple, _Scope] = {}
        # the scopes a prune may change or that hold an open time; the others are idle (no open time, no ended
        # interval, no job kept): a prune would leave them as they are, so it visits only these
        self._unpruned: dict[tuple, _Scope] = {}
        self.results: deque[TimeBlame] = deque(maxlen=KEEP_TIMES)
        self.seq = 0
        self._pending: list[tuple[_Scope, Any, int, float]] = []
        self._ports: dict[tuple, Location] = {}
        self._reach: dict[tuple, dict[Location, dict]] = {}  # scope path -> port -> the summaries to it
        # scope path -> its structure as a key (None: not shared, see _shape); (key, port) -> the summaries to it,
        # shared by every scope of that structure (an application of many small jobs repeats a few shapes)
        self._shapes: dict[tuple, tuple | None] = {}
        self._shared_reach: dict[tuple, dict] = {}
        self._sinks: dict[tuple, list[Location]] = {}
        self._drivers: dict[tuple, set[int]] = {}
        self._to_sink: dict[tuple, dict[Location, tuple]] = {}  # scope path -> port -> its summaries to any sink
        # the paths with something above (or a _SinkReach) derived from their structure: what a structure record
        # makes stale (most such records find nothing to forget)
        self._derived: set[tuple] = set()
        self._executors: dict[str, int] = {}
        self._slots: list[tuple[float, int]] = []  # (at, cores of the executors then), at each executor event
        self._spans = _TaskSpans()  # per detail key ("task ID"): what held a slot from when to when
        self._completions = 0
        self._prune_due = False  # _PRUNE_EVERY more times completed: prune at the next flush
        self._last_at = 0.0
        self._stage_job: dict[Any, Any] = {}  # stage id -> job id (from stage details)
        # (stage, attempt) of a resubmitted stage attempt -> the failure it re-runs after (its StageSubmitted cause)
        self._resubmitted: dict[tuple, dict] = {}
        replay.on_retire.append(self._folding)

    def _folding(self, scope: Subgraph) -> None:
        """``scope`` is about to leave the live replay (it finished): blame what completed in it while it is still
        there, then forget its bookkeeping, so a long session's blame state follows what is running."""
        self.flush()
        path, n = scope.path, len(scope.path)
        for key in [k for k in self.scopes if k[:n] == path]:
            del self.scopes[key]
            self._unpruned.pop(key, None)
        for table in (self._sinks, self._drivers, self._reach, self._shapes, self._to_sink):
            for key in [k for k in table if k[:n] == path]:
                del table[key]
        self._derived.difference_update([k for k in self._derived if k[:n] == path])

    # --- feeding -------------------------------------------------------------------------------------------

    def record(self, rec: dict, line: int | None = None) -> None:
        """Follow one record the replay applied (``line``: where it is, for reporting a field blame cannot use)."""
        kind = rec.get("type")
        if kind == "progress":
            pending = self._pending
            if (self._prune_due and not pending) or pending and (not self.lazy or len(pending) >= LAZY_PENDING):
                self.flush()
            self._progress(rec, True, line)
        elif kind == "detail":
            self._detail(rec, line)
        elif kind == "mark":
            self._mark(_checked_mark(rec, self._reporter(line)))
        elif kind in ("scope", "operator", "edge"):
            self._structure_changed(rec.get("path") if kind == "scope" else rec.get("scope", []))
            if kind == "operator" and rec.get("capabilities"):
                self._initial(rec)

    def _structure_changed(self, path: Any) -> None:
        """The scope at ``path`` changed (for a scope record, the new scope: its parent gained a child). What blame
        counted along the paths to the sinks of that scope and of each scope around it is stale (a nested scope's
        summary is part of its parent's paths); every other scope's is not, so a growing application's structure
        records cost their depth, not the number of scopes so far."""
        try:
            key = tuple(path)
            chain = [key[:n] for n in range(len(key), -1, -1)]
        except TypeError:  # not a path (the replay rejects such a record first): forget every scope's
            chain = list(self.scopes) + [()]
        derived = self._derived
        for p in chain:
            if p not in derived:
                continue
            derived.discard(p)
            for table in (self._reach, self._shapes, self._sinks, self._drivers, self._to_sink):
                table.pop(p, None)
            sb = self.scopes.get(p)
            if sb is not None:
                sb.reach = None  # counted along the old paths: counted afresh at the next completion check

    def _initial(self, rec: dict) -> None:
        """An operator's initial capabilities: positive from now (the last batch's time) on."""
        node = rec.get("node")
        updates = [[["out", node, o], t, 1] for o, times in enumerate(rec["capabilities"]) for t in times]
        self._progress({"scope": rec.get("scope", []), "at": self._last_at, "updates": updates}, advance=False)

    def _reporter(self, line: int | None) -> Any:
        """A function reporting a field blame leaves out, at ``line``, with the replay's own problems."""
        return lambda reason: self.replay.report(line, f"blame ignores {reason}", IGNORED_FIELD)

    def times(self) -> list[TimeBlame]:
        """Every blamed time still kept, in completion order (pending completions are blamed first)."""
        self.flush()
        return list(self.results)

    def _scope(self, path: Any) -> _Scope:
        key = tuple(path)
        sb = self.scopes.get(key)
        if sb is None:
            sb = self.scopes[key] = _Scope(key)
        return sb

    def _progress(self, rec: dict, advance: bool = True, line: int | None = None) -> None:
        at = rec.get("at")
        if type(at) is not float and not isinstance(at, (int, float)):
            return
        path = rec.get("scope", [])
        if type(path) is not list:
            return
        self._last_at = at
        self.seq = seq = self.seq + 1
        sb = self.scopes.get(tuple(path))
        if sb is None:
            sb = self._scope(path)
        cause = rec.get("cause")
        ended = None
        if cause:
            launched = cause.get("launched")
            attempt = cause.get("attempt")
            if not (launched is None or (type(launched) is float and -_INF < launched < _INF and launched <= at)
                    or (type(launched) is int and launched <= at)) or \
                    (attempt is not None and not (type(attempt) is int and attempt >= 0)):
                cause = _checked_cause(cause, at, self._reporter(line))  # a field blame cannot use: left out
                launched = cause.get("launched")
            event = cause.get("event")
            if event == "TaskEnd":
                task = cause.get("task")
                if task is not None:
                    ended = (at, task, launched)  # a task's end, for its holder
            elif "failure" in cause:  # a failed stage attempt, or a resubmitted one: why its work is redone
                if not _is_failure(cause["failure"]):
                    cause = _without(cause, "cause", {"failure": "is not a failure (an object of strings, numbers)"},
                                     self._reporter(line))
                elif event == "StageSubmitted" and cause.get("attempt"):
                    resubmitted = self._resubmitted
                    resubmitted[(cause.get("stage"), cause["attempt"])] = cause["failure"]
                    if len(resubmitted) > KEEP_STAGES:
                        del resubmitted[next(iter(resubmitted))]
        else:
            cause = {}
        counts = sb.counts
        open_iv = sb.open_iv
        reach = sb.reach
        released = False
        applied = self.replay.applied_batch
        updates = applied[1] if applied is not None and applied[0] is rec else self._parse(rec.get("updates") or ())
        for loc, t, delta in updates:
            if loc.node == 0:
                continue  # the scope's boundary: messages entering or leaving, the parent's pointstamps
            key = (loc, t)
            before = counts.get(key, 0)
            after = before + delta
            if before > 0 and after > 0:  # still held: most updates (a task's end, a token to a stage)
                counts[key] = after
                if delta < 0 and ended is not None:
                    iv = open_iv.get(key)
                    if iv is not None:
                        iv.task_ends.append(ended)
                continue
            if after:
                counts[key] = after
            else:
                del counts[key]
            if before <= 0 < after:
                open_iv[key] = Interval(loc, t, seq, at)
                if reach is not None:
                    reach.add(loc, t)
                if t in sb.first_seen or not sb.is_done(t):  # an open time, or one never completed
                    if t not in sb.first_seen:
                        sb.first_seen[t] = (seq, at)
                        if reach is not None and reach.total:
                            reach.opened(t)
                    if t not in sb.active and not self._is_driver(sb.path, loc.node):
                        sb.active[t] = at
                        self._unpruned[sb.path] = sb
            elif after <= 0 < before:
                iv = open_iv.pop(key, None)
                released = True
                if reach is not None:
                    reach.remove(loc, t)
                if iv is not None:
                    iv.end_seq, iv.end_at, iv.end_cause, iv.end_worker = seq, at, cause, rec.get("worker")
                    if ended is not None and delta < 0:
                        iv.task_ends.append(ended)
                    sb.closed.append(iv)
                    self._unpruned[sb.path] = sb
        clears = rec.get("clears")
        if clears:
            end = self._spans.end
            for cleared in clears:  # only "task ..." keys have spans
                end(cleared, at)
        if released and sb.first_seen and advance:  # a sink's frontier moves only when a pointstamp is released
            self._completed(sb, seq, at)

    def _parse(self, updates: Any) -> list[tuple[Location, Any, int]]:
        """A batch's updates as the replay parses them (for a batch the replay did not apply: initial
        capabilities)."""
        ports = self._ports
        out = []
        for port, t, delta in updates:
            loc = ports.get(tuple(port))
            if loc is None:
                loc = ports[tuple(port)] = Location.from_json(port)
            out.append((loc, t if type(t) is int else time_from_json(t), delta))
        return out

    def _completed(self, sb: _Scope, seq: int, at: float) -> list:
        """Move the open times of ``sb`` that its sinks' frontiers passed to the pending completions (those that
        something other than a driver held: see below); returns every time that completed, in order."""
        reach = sb.reach
        if reach is not None:
            done = reach.completed(sb.first_seen)
        else:
            try:
                scope = self.replay.root.find(sb.path)
            except KeyError:
                return []
            sinks = self._sink_ports(scope)
            if not sinks:
                return []
            if not scope.inputs:
                # no input: the sinks' frontiers are exactly what the scope's own pointstamps could result in
                # there, which this tracker counts itself from now on (no propagation after every batch)
                reach = sb.reach = _SinkReach(self._to_sinks(scope), scope.domain, sb)
                self._derived.add(sb.path)
                done = reach.completed(sb.first_seen)
            else:
                # the parent's frontier, pushed in, may hold the time too: ask the tracker (settled now)
                self.replay.settle()
                frontiers = [scope.tracker.frontier(loc) for loc in sinks] if scope.tracker is not None else []
                le = scope.domain.le
                done = [t for t in sb.first_seen if not any(any(le(f, t) for f in fr) for fr in frontiers)]
        for t in done:
            self._remember_done(sb, t)
            del sb.first_seen[t]
            self._completions += 1
            if self._completions % _PRUNE_EVERY == 0:
                self._prune_due = True
            if sb.active.pop(t, None) is not None:
                self._pending.append((sb, t, seq, at))
            # else nothing but a driver's promise held it (``active``: a pointstamp at t that is not a driver's
            # opened): no work ran at this time, so it has no blame, and walking its holders would only say so
        return done

    def _remember_done(self, sb: _Scope, t: Any) -> None:
        """``t`` completed in ``sb``: remembered among the latest KEEP_DONE (an older one, forgotten, still counts
        as completed in a total order, where it is at or before the floor)."""
        sb.done[t] = None
        if len(sb.done) <= KEEP_DONE:
            return
        old = next(iter(sb.done))
        del sb.done[old]
        try:
            domain = self.replay.root.find(sb.path).domain
        except KeyError:
            return
        if domain.total and (sb.done_floor is None or domain.le(sb.done_floor[1], old)):
            sb.done_floor = (domain.le, old)

    def _is_driver(self, path: tuple, node: int) -> bool:
        roles = self._drivers.get(path)
        if roles is None:
            try:
                scope = self.replay.root.find(path)
            except KeyError:
                return False
            roles = self._drivers[path] = {n for n, op in scope.children.items() if op.attrs.get("role") == "source"}
            self._derived.add(path)
        return node in roles

    def _sink_ports(self, scope: Subgraph) -> list[Location]:
        sinks = self._sinks.get(scope.path)
        if sinks is None:
            sinks = []
            for node, op in scope.children.items():
                if op.scope is None and (op.attrs.get("role") == "sink" or op.outputs == 0):
                    sinks += [Location(node, IN, p) for p in range(op.inputs)]
            if not sinks and scope.path:  # a nested scope whose results leave it (a loop): its outputs
                sinks = [Location(0, IN, j) for j in range(scope.outputs)]
            self._sinks[scope.path] = sinks
            self._derived.add(scope.path)
        return sinks

    def _to_sinks(self, scope: Subgraph) -> dict[Location, tuple]:
        """Per port, the minimal summaries from it to some sink of ``scope`` (a pointstamp there holds a time ``t``
        at a sink when one of them brings it to ``t`` or before)."""
        got = self._to_sink.get(scope.path)
        if got is None:
            sinks = self._sink_ports(scope)
            shape = self._shape_of(scope)
            key = None if shape is None else (shape, "to sinks", tuple(sinks))
            got = self._shared_reach.get(key) if key is not None else None
            if got is None:
                merged: dict[Location, set] = {}
                for s in sinks:
                    for loc, summaries in self._reach_to(scope, s).items():
                        merged.setdefault(loc, set()).update(summaries)
                got = {loc: tuple(ss) for loc, ss in merged.items()}
                if key is not None:
                    self._share(key, got)
            self._to_sink[scope.path] = got
            self._derived.add(scope.path)
        return got

    def _mark(self, rec: dict) -> None:
        ex = rec.get("executor_event")
        if ex == "added" and isinstance(rec.get("cores"), int):
            self._executors[str(rec.get("executor"))] = rec["cores"]
        elif ex == "removed":
            self._executors.pop(str(rec.get("executor")), None)
        if ex is not None and isinstance(rec.get("at"), (int, float)):
            self._slots.append((rec["at"], sum(self._executors.values())))
        path = rec.get("scope")
        if not isinstance(path, list):
            return
        sb = self._scope(path)
        at = rec.get("at")
        label = str(rec.get("label", ""))
        if "job" in rec and "epoch" in rec and isinstance(at, (int, float)):
            times = [(sb, rec["epoch"])]
            if isinstance(rec.get("loop"), list) and type(rec.get("iteration")) is int:
                # a loop's iteration: the job's time in the loop's scope too, [epoch, iteration]
                times.append((self._scope(rec["loop"]), (rec["epoch"], rec["iteration"])))
            for sc, t in times:
                if label.endswith(")") and " started " in label:
                    sc.jobs.setdefault(t, []).append(rec["job"])
                    self._unpruned[sc.path] = sc
                    sc.job_start[t] = min(at, sc.job_start.get(t, at))
                else:
                    sc.job_end[t] = max(at, sc.job_end.get(t, at))
                    if rec.get("status") == "FAILED":
                        sc.job_failure[t] = str(rec.get("failure") or f"job {rec['job']} failed")
        elif "batch" in rec and "trigger_start" in rec:
            sb.batch_marks[rec["batch"]] = rec

    def _detail(self, rec: dict, line: int | None) -> None:
        """A task's detail starts its span (what held a slot from when to when), its clear ends it."""
        value = rec.get("value")
        key = rec.get("key", "")
        if type(key) is not str:
            key = str(key)
        if value is None:
            self._spans.end(key, rec.get("at"))  # only "task ..." keys have spans
            return
        if type(value) is not dict:
            return
        kind = value.get("kind")
        if kind == "task":
            stage, launched, host = value.get("stage"), value.get("launched"), value.get("host")
            # the fields blame reads, as _checked_detail checks them (inline: a well-formed value costs no call;
            # records the replay was told are checked where they were made, the Spark model's, are not checked)
            if not self._trusted and not (
                    (stage is None or type(stage) is int or type(stage) is str)
                    and (launched is None or (type(launched) is float and -_INF < launched < _INF)
                         or type(launched) is int)
                    and (host is None or type(host) is str) and _id_or_none(value.get("job"))):
                value = _checked_detail(rec, self._reporter(line))["value"]
                stage, launched, host = value.get("stage"), value.get("launched"), value.get("host")
            if key.startswith("task "):
                self._spans.start(key, launched, stage, self._stage_job.get(stage), host)
        elif kind == "stage":
            if not self._trusted:
                value = _checked_detail(rec, self._reporter(line))["value"]
            stage_job = self._stage_job
            stage_job[value.get("stage")] = value.get("job")
            if len(stage_job) > KEEP_STAGES:  # the latest stages' jobs: a long application's stay bounded
                del stage_job[next(iter(stage_job))]

    # --- blaming ---------------------------------------------------------------------------------------------

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        for sb, t, seq, at in pending:
            result = self._blame(sb, t, seq, at)
            if result is not None:
                self.results.append(result)
        if self._prune_due:  # only once every pending time is blamed: they may need what a prune drops
            self._prune_due = False
            self._prune()
        elif pending and len(self._spans) > _MAX_SPANS + 2 * self._spans.running:
            self._prune_spans()

    def _prune(self) -> None:
        """Drop what no open time can need: intervals and task spans that ended before every open time began."""
        cut = None
        for sb in list(self._unpruned.values()):
            opened = min(sb.active.values(), default=None)
            if opened is not None:
                cut = opened if cut is None else min(cut, opened)
            if opened is None:
                sb.closed = [iv for iv in sb.closed if iv.end_seq is None]
            else:
                sb.closed = [iv for iv in sb.closed if (iv.end_at or 0) >= opened]
            for t in [t for t in sb.jobs if t not in sb.first_seen and sb.is_done(t)]:
                sb.jobs.pop(t, None)
                sb.job_start.pop(t, None)
                sb.job_end.pop(t, None)
                sb.job_failure.pop(t, None)
                sb.batch_marks.pop(t, None)
            if not sb.active and not sb.closed and not sb.jobs:
                del self._unpruned[sb.path]
        self._prune_spans(cut)

    def _prune_spans(self, cut: float | None = None) -> None:
        """Drop the spans of tasks that ended before every open time began (all ended ones if none is open)."""
        if cut is None:
            cut = min((at for sb in self._unpruned.values() for at in sb.active.values()), default=None)
        self._spans.prune(cut)
        if cut is not None:  # the cores at an executor event before the cut: only the last one can still be asked
            i = bisect_right(self._slots, cut, key=lambda s: s[0]) - 1
            if i > 0:
                del self._slots[:i]

    def _reach_to(self, scope: Subgraph, loc: Location) -> dict:
        by_port = self._reach.get(scope.path)
        if by_port is None:
            by_port = self._reach[scope.path] = {}
            self._derived.add(scope.path)
        got = by_port.get(loc)
        if got is None:
            shape = self._shape_of(scope)
            if shape is None:
                got = scope.path_summaries_to(loc)
            else:
                got = self._shared_reach.get((shape, loc))
                if got is None:
                    got = scope.path_summaries_to(loc)
                    self._share((shape, loc), got)
            by_port[loc] = got
        return got

    def _share(self, key: tuple, value: dict) -> None:
        """Keep ``value`` for every scope of the structure ``key`` names (bounded: the table starts over)."""
        shared = self._shared_reach
        if len(shared) >= KEEP_SHAPES:
            shared.clear()
        shared[key] = value

    def _shape_of(self, scope: Subgraph) -> tuple | None:
        shapes = self._shapes
        if scope.path in shapes:
            return shapes[scope.path]
        shape = shapes[scope.path] = self._shape(scope)
        self._derived.add(scope.path)
        return shape

    @staticmethod
    def _shape(scope: Subgraph) -> tuple | None:
        """``scope``'s structure as a key: its depth, boundary, operators' ports and edges, which are all that the
        summaries between its ports depend on. None when an operator has a summary of its own or is a nested
        scope (what the key would have to hold is not worth sharing)."""
        nodes = []
        for node, op in scope.children.items():
            if op.scope is not None or op.summary is not None:
                return None
            nodes.append((node, op.inputs, op.outputs))
        return scope.domain.depth, scope.inputs, scope.outputs, tuple(nodes), tuple(scope.edges)

    def _blame(self, sb: _Scope, t: Any, end_seq: int, end_at: float) -> TimeBlame | None:
        try:
            scope = self.replay.root.find(sb.path)
        except KeyError:
            return None
        d = scope.domain
        le, results_in = d.le, d.results_in
        to_sink = self._to_sinks(scope)
        # what held t at a sink: a pointstamp at or before t with a path bringing it to t or before
        ivs = [iv for iv in sb.closed if le(iv.time, t) and any(le(results_in(s, iv.time), t)
                                                               for s in to_sink.get(iv.loc, ()))]
        role = {node: op.attrs.get("role") for node, op in scope.children.items()}
        if all(role.get(iv.loc.node) == "source" for iv in ivs if iv.time == t):
            return None  # nothing but the driver's promise ever held it: no work ran at this time
        mark = sb.batch_marks.get(t)
        start = None
        if mark is not None and isinstance(mark.get("trigger_start"), (int, float)):
            start = mark["trigger_start"]
        if start is None:
            start = sb.job_start.get(t)
        if start is None:
            start = min((iv.start_at for iv in ivs if iv.time == t), default=end_at)
        start = min(start, end_at)
        # what ended before the start cannot change the walk (segments stop there); index the rest by release
        ivs = [iv for iv in ivs if (iv.end_at or 0) >= start]
        ivs.sort(key=lambda iv: iv.end_seq or 0)
        ends = [iv.end_seq or 0 for iv in ivs]
        by_end: dict[int, list[Interval]] = {}
        for iv in ivs:
            by_end.setdefault(iv.end_seq or 0, []).append(iv)

        def latest(lo: int, hi: int, ok: Any) -> Interval | None:
            """The interval released last strictly inside (lo, hi) that ``ok`` accepts (held longest on a tie)."""
            i = bisect_left(ends, hi) - 1
            best = None
            while i >= 0 and ends[i] > lo:
                if best is not None and ends[i] < (best.end_seq or 0):
                    break
                iv = ivs[i]
                if ok(iv) and (best is None or iv.start_seq < best.start_seq):
                    best = iv
                i -= 1
            return best

        reach_to: dict[Location, dict] = {}  # this walk's ports -> the summaries to them

        def upstream(p: Interval, h: Interval) -> bool:
            """Could ``p`` result in ``h`` (a path from ``p``'s port brings its time to ``h``'s or before)?"""
            to_h = reach_to.get(h.loc)
            if to_h is None:
                to_h = reach_to[h.loc] = self._reach_to(scope, h.loc)
            summaries = to_h.get(p.loc)
            if summaries:
                pt, ht = p.time, h.time
                for s in summaries:
                    if le(results_in(s, pt), ht):
                        return True
            return False

        final = by_end.get(end_seq, [])
        segments: list[dict] = []
        cut = end_at
        if final:
            h = min(final, key=lambda iv: iv.start_seq)
            s_seq = end_seq

            def rival_of(n: Interval, seq: int) -> Interval | None:
                """What-if's re-walk: had ``n`` been released earlier, what would have held on instead. The batch
                ``seq`` released what waited on ``n``; another holder it released would hold on at once, else the
                latest release, not of ``n``'s making, upstream of what it released (another stage feeding the
                same results, another parent of the same stage)."""
                group = by_end.get(seq, [])
                if any(g is n for g in group):
                    same = [g for g in group if g is not n]
                    if same:
                        return same[0]
                return latest(-1, seq, lambda iv: iv is not n and not upstream(n, iv)
                              and any(upstream(iv, g) for g in group))

            # asked only by a task segment's what-if (most steps have none): a walk does not pay for it
            rival: Callable[[], Interval | None] = partial(rival_of, h, end_seq)
            for _ in range(100_000):
                if cut <= start:
                    break
                is_driver = role.get(h.loc.node) == "source"
                nxt = latest(h.start_seq, s_seq, lambda iv, h=h, d=is_driver: iv is not h and (
                    upstream(iv, h) or (d and upstream(h, iv))))
                if nxt is not None:
                    frm = max(start, min(nxt.end_at or start, cut))
                    segments += self._segments(scope, sb, t, h, frm, cut, rival)
                    rival = partial(rival_of, nxt, s_seq)
                    cut, h, s_seq = frm, nxt, nxt.end_seq or 0
                    continue
                frm = max(start, min(h.start_at, cut))
                segments += self._segments(scope, sb, t, h, frm, cut, rival)
                cut = frm
                if cut <= start:
                    break
                made = [iv for iv in by_end.get(h.start_seq, []) if iv is not h]
                made = [iv for iv in made if upstream(iv, h)] or made
                if not made:
                    made = [iv for iv in ivs if iv is not h and iv.start_seq < h.start_seq < (iv.end_seq or 0)
                            and upstream(iv, h)]
                if not made and (h.end_cause or {}).get("attempt"):
                    # a resubmitted stage attempt took its capabilities from nothing: it waited on the holder
                    # released last before it began (the attempt that failed to fetch, or the parent's re-run)
                    made = [max((iv for iv in ivs if iv is not h and (iv.end_seq or 0) <= h.start_seq
                                 and (iv.end_at or 0) >= start), key=lambda iv: iv.end_seq or 0, default=h)]
                    made = [iv for iv in made if iv is not h]
                if not made:
                    break
                s_seq = h.start_seq

                def unblocked(c: Interval, before: int = s_seq) -> tuple[int, int]:
                    # the last of what it waited on: the latest release upstream of it before it was consumed
                    last = latest(c.start_seq, before, lambda x, c=c: x is not c and upstream(x, c))
                    return max(last.end_seq or 0 if last is not None else 0, c.start_seq), -c.start_seq

                h = max(made, key=unblocked)
                rival = partial(rival_of, h, s_seq)
        if cut > start:
            segments.append({"kind": "driver", "seconds": round(cut - start, 6), "from": start, "to": cut,
                             "holder": {"operator": "driver", "doing": "nothing in the scope held this time"}})
        segments.reverse()
        segments = [s for s in segments if s["seconds"] > 0]
        self._driver_doing(sb, t, segments)
        return TimeBlame(list(sb.path), scope.name, t, sorted(sb.jobs.get(t, [])),
                         mark.get("batch") if mark is not None else None, start, end_at, segments,
                         sb.job_failure.get(t))

    # --- what a segment names ----------------------------------------------------------------------------------

    def _segments(self, scope: Subgraph, sb: _Scope, t: Any, h: Interval, frm: float, to: float,
                  rival: Callable[[], Interval | None] | None = None) -> list[dict]:
        """The segment(s) for holder ``h`` over ``[frm, to)``, latest first (a task splits into task and pending).
        ``rival`` gives the holder released last, other than ``h``, that what ``h`` held up also waited for (the
        walk's second choice): had ``h`` been released earlier, it would hold the time from its own release on."""
        op = scope.children.get(h.loc.node)
        attrs = op.attrs if op is not None else {}
        holder: dict = {"operator": op.name if op is not None else "scope boundary", "node": h.loc.node,
                        "port": h.loc.to_json(), "time": h.time}

        def seg(kind: str, a: float, b: float, hold: dict) -> dict:
            return {"kind": kind, "seconds": round(b - a, 6), "from": a, "to": b, "holder": hold}

        role = attrs.get("role")
        if role == "source":
            return [seg("driver", frm, to, holder)]
        if role == "sink":
            return [seg("driver", frm, to, {**holder, "doing": "receiving results"})]
        if "stage_ids" not in attrs:
            return [seg("capability" if h.loc.kind == OUT else "message", frm, to, holder)]
        if h.loc.kind != OUT:
            return [seg("scheduler", frm, to, {**holder, "doing": "waiting to be submitted"})]
        cause = h.end_cause or {}
        attempt = cause.get("attempt", 0)
        if cause.get("event") != "TaskEnd" or h.end_at is None or to < h.end_at - 1e-9:
            kind = "recompute" if attempt or cause.get("failed") else "capability"
            info = {**holder, "stage": cause.get("stage"), "attempt": attempt}
            if cause.get("failed"):  # the attempt failed (a fetch failure, a lost executor): its work is redone
                info["failed_attempt"] = attempt
            failure = cause.get("failure") if cause.get("failed") else self._resubmitted.get((info["stage"], attempt))
            if failure is not None:
                info["failure"] = failure
            return [seg(kind, frm, to, info)]
        task, launched = cause.get("task"), cause.get("launched")
        span = self._spans.get(f"task {task}")
        others = [at - la for at, tk, la in h.task_ends if tk != task and isinstance(la, (int, float))]
        med = _median(others)
        info = {**holder, "stage": cause.get("stage"), "attempt": attempt, "task": task, "index": cause.get("index"),
                "partition": cause.get("partition", cause.get("index")), "executor": h.end_worker,
                "host": span[4] if span else None, "launched": launched,
                "duration_s": round(h.end_at - launched, 6) if isinstance(launched, (int, float)) else None,
                "median_task_s": round(med, 6) if med is not None else None}
        metrics = cause.get("metrics")  # the task's time split as Spark measured it (an array: task_metrics)
        if type(metrics) is list or type(metrics) is tuple:
            info["breakdown"] = as_dict(metrics)
        if med is not None and isinstance(launched, (int, float)):
            info["what_if"] = self._what_if(scope, h, task, launched, med, frm, to, rival)
        kind = "recompute" if attempt else "task"
        failure = self._resubmitted.get((info["stage"], attempt)) if attempt else None
        if failure is not None:  # a resubmitted attempt's task: why its work is redone
            info["failure"] = failure
        if not isinstance(launched, (int, float)) or launched <= frm:
            return [seg(kind, frm, to, info)]
        out = [seg(kind, launched, to, info)]
        out.append(self._pending_segment(frm, launched, holder, cause, task))
        return out

    @staticmethod
    def _what_if(scope: Subgraph, h: Interval, task: Any, launched: float, med: float, frm: float, to: float,
                 rival: Callable[[], Interval | None] | None) -> dict:
        """Had ``task`` run its stage's median, the critical path walked again: the stage releases the time when
        that shortened run or its sibling that ended last is done, and the time is then held by whichever comes
        later of that and the rival (another straggler, another stage the next step also waited for), so it ends
        earlier by what is left of the gap, at most the segment's length. ``then_held_by`` names the holder that
        takes over when it is not the shortened task itself."""
        end = h.end_at if h.end_at is not None else to
        siblings = [(at, tk) for at, tk, _ in h.task_ends if tk != task]
        second = max(siblings, default=(launched, None))
        released, then = launched + med, None
        if second[0] > released:
            released, then = second[0], {"task": second[1], "stage": (h.end_cause or {}).get("stage"),
                                         "why": "its stage's next-slowest task"}
        other = rival() if rival is not None else None
        if other is not None and other.end_at is not None and other.end_at > released:
            op = scope.children.get(other.loc.node)
            cause = other.end_cause or {}
            released, then = other.end_at, {"operator": op.name if op is not None else "scope boundary",
                                            "port": other.loc.to_json(), "time": other.time,
                                            "why": "the next step waited for it too"}
            if cause.get("event") == "TaskEnd":
                then.update(task=cause.get("task"), stage=cause.get("stage"))
        out: dict = {"task_at_median_s": round(med, 6),
                     "ends_earlier_s": round(max(0.0, min(end - released, to - frm + 1e-12)), 6)}
        if then is not None and out["ends_earlier_s"] < round(end - (launched + med), 6):
            out["then_held_by"] = then
        return out

    def _pending_segment(self, frm: float, launched: float, holder: dict, cause: dict, task: Any) -> dict:
        """Before its launch the task was pending: were the slots all taken (by whom), or was it the scheduler?"""
        # the cores of the executors alive at the launch (a lost executor's slots were gone by then; one added
        # later had none yet)
        i = bisect_right(self._slots, launched, key=lambda s: s[0]) - 1
        slots = (self._slots[i][1] if i >= 0 else 0) or self._spans.max_running or 1
        busy: dict[tuple, int] = {}
        for span in self._spans.running_at(launched, f"task {task}"):
            sj = (span[2], span[3])
            busy[sj] = busy.get(sj, 0) + 1
        hold = {**holder, "stage": cause.get("stage"), "attempt": cause.get("attempt", 0), "task": task,
                "slots": slots}
        if sum(busy.values()) >= slots:
            hold["held_by"] = [{"stage": s, "job": j, "tasks": n}
                               for (s, j), n in sorted(busy.items(), key=lambda kv: -kv[1])]
            kind = "waiting-for-slots"
        else:
            kind = "scheduler"
        return {"kind": kind, "seconds": round(launched - frm, 6), "from": frm, "to": launched, "holder": hold}

    @staticmethod
    def _driver_doing(sb: _Scope, t: Any, segments: list[dict]) -> None:
        """Name what the driver did where Spark says: a micro-batch's phases before its first job and after its
        last (``phases_ms`` of its progress), its own code between jobs."""
        mark = sb.batch_marks.get(t)
        phases = (mark or {}).get("phases_ms") or {}
        first, last = sb.job_start.get(t), sb.job_end.get(t)
        for s in segments:
            if s["kind"] != "driver" or "doing" in s["holder"]:
                continue
            if first is not None and s["to"] <= first + 1e-6:
                names = [p for p in ("latestOffset", "walCommit", "getBatch", "queryPlanning") if p in phases]
                doing = [f"{p} {phases[p]} ms" for p in names]
                # what those phases leave unexplained ran in addBatch before its first job: the sink's own
                # driver-side code (a foreachBatch function), or Spark's start of the batch's execution
                rest_ms = round(s["seconds"] * 1000 - sum(phases[p] for p in names if isinstance(phases[p], int)))
                if "addBatch" in phases and rest_ms > 0:
                    doing.append(f"addBatch's driver-side code before its first job {rest_ms} ms")
                    s["holder"]["driver_before_first_job_ms"] = rest_ms
                s["holder"]["doing"] = "before the first job: " + ", ".join(doing) if doing else "before the first job"
            elif last is not None and s["from"] >= last - 1e-6:
                s["holder"]["doing"] = "after the last job" + (
                    f": commitOffsets {phases['commitOffsets']} ms" if "commitOffsets" in phases else "")
            else:
                s["holder"]["doing"] = "between jobs (addBatch, driver-side)" if mark is not None else "driver"


def blame_log(records: Any, on_error: Any = None, source: str = "<blame>",
              checked_records: bool = False) -> list[TimeBlame]:
    """Replay ``records`` (an iterable of records or ``(line, record)`` pairs) and blame every completed time;
    ``on_error`` is told of each problem (a rejected record, a field blame leaves out) as a ``LineError`` naming
    ``source`` and the line. ``checked_records``: the records come from the Spark model (``Replay``'s option)."""
    return blame_replay(records, on_error, source, checked_records)[1]


def blame_replay(records: Any, on_error: Any = None, source: str = "<blame>",
                 checked_records: bool = False) -> tuple[Replay, list[TimeBlame]]:
    """:func:`blame_log` with the replay it ran (every scope kept), for a caller that checks what a query names."""
    replay = Replay(source, on_error=on_error, checked_records=checked_records)
    tracker = BlameTracker(replay)
    for item in records:
        line, rec = item if isinstance(item, tuple) else (None, item)
        if replay.apply(rec, line):
            tracker.record(rec, line)
    replay.finish()
    return replay, tracker.times()


def select(times: list[TimeBlame], scope: list | None = None, time: Any = None, top: int | None = None,
           nested: bool = False) -> list:
    """The times a query asks for: one scope (``nested``: with the scopes inside it, such as a region's loop, whose
    times name their iteration), one time, the ``top`` slowest (slowest first), else all in order."""
    n = len(scope) if scope is not None and nested else None  # nested: compare the scope's first n steps
    out = [b for b in times if (scope is None or (b.scope if n is None else b.scope[:n]) == scope)
           and (time is None or b.time == time)]
    if top is not None:
        out = sorted(out, key=lambda b: -b.latency_s)[:max(0, top)]
    return out
