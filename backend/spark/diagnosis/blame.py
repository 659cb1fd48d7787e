"""Blame in Spark's words: the vocabulary the critical path walk (``tracker/analysis/critical_path.py``) names holders
by.

The Spark model's conventions turn holders into what a Spark user reads: a stage operator's capability released
by a task's end is that task (from its launch; before it, the task was pending: *waiting-for-slots* when every
executor core ran other tasks, naming their stages and jobs, else *scheduler*), a retried stage attempt, and one
that failed, is *recompute*, tokens waiting at a stage's input are *scheduler*, the driver's operators are *driver*
with what Spark's progress says it was doing. A time starts at its micro-batch's trigger (the ``batch N done``
mark's ``trigger_start``), else at its first job's submission (``job J started`` marks).

What-if (a task segment): had the task run for the median of its stage attempt's other tasks, the stage would
have released the time when the later of that and its other tasks' ends came (another straggler takes over), so
the time ends ``ends_earlier_s`` earlier, if the rest of the path shifts with it. The answer: ``docs/blame.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from backend.spark.diagnosis.blame_fields import Report, checked_cause, checked_mark, is_failure, without
from backend.spark.diagnosis.task_index import TaskIndex
from backend.spark.diagnosis.task_metrics import as_dict, python_of_dict
from backend.spark.diagnosis.task_timeline import TaskTimeline
from backend.spark.diagnosis.tasks import median
from tracker.analysis.blame import BlameTracker
from tracker.analysis.critical_path import Interval, Rival, TimeBlame, segment
from tracker.progress_log.jsonl import IGNORED_FIELD
from tracker.progress_log.replay import Replay
from tracker.reachability import OUT
from tracker.subgraph import Subgraph

__all__ = ["SparkVocabulary", "spark_blame", "task_index_for", "blame_log", "blame_replay", "select", "MAX_SPANS",
           "plan_operators", "name_segments"]

KEEP_RESUBMITTED = 10_000  # resubmitted stage attempts whose failure blame remembers (the latest)
KEEP_PLAN_STAGES = 100_000  # stages whose SQL plan operator blame remembers (the latest named)
MAX_SPANS = 2_000  # ended task spans kept before a prune at the next completion
_INF = math.inf
_PHASES_BEFORE_FIRST_JOB = ("latestOffset", "walCommit", "getBatch", "queryPlanning")

@dataclass
class _TimeMarks:
    """What one scope's marks say about its times: their jobs, when those started and ended, micro-batches."""

    jobs: dict[Any, list] = field(default_factory=dict)
    job_start: dict[Any, float] = field(default_factory=dict)
    job_end: dict[Any, float] = field(default_factory=dict)
    job_failure: dict[Any, str] = field(default_factory=dict)  # a time whose job failed -> what failed it
    batch_marks: dict[Any, dict] = field(default_factory=dict)  # micro-batch id -> its ``batch N done`` mark


_NO_MARKS = _TimeMarks()


class SparkVocabulary:
    """The Spark model's names for blame's holders (a :class:`tracker.analysis.critical_path.BlameVocabulary`)."""

    def __init__(self, replay: Replay, tasks: TaskIndex | None = None) -> None:
        self.replay = replay
        # which tasks held slots when (a session's index, which its executor timeline reads, else blame's own)
        self.tasks = tasks if tasks is not None else task_index_for(replay)
        self.spans, self.slots = self.tasks.spans, self.tasks.slots
        self.marks: dict[tuple, _TimeMarks] = {}
        self._with_jobs: dict[tuple, _TimeMarks] = {}  # the scopes whose marks name a job (what a prune visits)
        # (stage, attempt) of a resubmitted stage attempt -> the failure it re-runs after (its StageSubmitted cause)
        self._resubmitted: dict[tuple, dict] = {}
        # stage id -> the SQL plan operator it ran (a SQL execution's ``plan_operators`` mark)
        self.plan_operators: dict[int, dict] = {}

    def _reporter(self, line: int | None) -> Report:
        """A function reporting a field blame leaves out, at ``line``, with the replay's own problems."""
        return lambda reason: self.replay.report(line, f"blame ignores {reason}", IGNORED_FIELD)

    # --- reading records ---------------------------------------------------------------------------------------

    def record(self, rec: dict, line: int | None) -> None:
        if rec.get("type") == "detail":
            self.tasks.record(rec, line)
        else:
            rec = checked_mark(rec, self._reporter(line))
            if rec.get("executor_event") is not None:
                self.tasks.record(rec, line)
            named = rec.get("plan_operators")
            if named is not None:
                self._plan_operators(named)
            self._mark(rec)

    def _plan_operators(self, named: dict) -> None:
        kept = self.plan_operators
        for stage, op in named.items():
            kept.pop(int(stage), None)  # the latest naming of a stage is the newest entry
            kept[int(stage)] = op
        while len(kept) > KEEP_PLAN_STAGES:
            del kept[next(iter(kept))]

    def checked_cause(self, cause: dict, at: float, line: int | None) -> tuple[dict, tuple | None]:
        """The cause with what blame cannot use left out, and a task's end ``(at, task, launched)`` if it is one."""
        launched = cause.get("launched")
        attempt = cause.get("attempt")
        if not (launched is None or (type(launched) is float and -_INF < launched < _INF and launched <= at)
                or (type(launched) is int and launched <= at)) or \
                (attempt is not None and not (type(attempt) is int and attempt >= 0)):
            cause = checked_cause(cause, at, self._reporter(line))  # a field blame cannot use: left out
            launched = cause.get("launched")
        event = cause.get("event")
        if event == "TaskEnd":
            task = cause.get("task")
            if task is not None:
                return cause, (at, task, launched)
        elif "failure" in cause:  # a failed stage attempt, or a resubmitted one: why its work is redone
            if not is_failure(cause["failure"]):
                cause = without(cause, "cause", {"failure": "is not a failure (an object of strings, numbers)"},
                                 self._reporter(line))
            elif event == "StageSubmitted" and cause.get("attempt"):
                resubmitted = self._resubmitted
                resubmitted[(cause.get("stage"), cause["attempt"])] = cause["failure"]
                if len(resubmitted) > KEEP_RESUBMITTED:
                    del resubmitted[next(iter(resubmitted))]
        return cause, None

    def cleared(self, keys: list, at: float, cause: Any) -> None:
        self.tasks.cleared(keys, at, cause.get("metrics") if type(cause) is dict else None)

    def _marks_of(self, path: Any) -> _TimeMarks:
        key = tuple(path)
        marks = self.marks.get(key)
        if marks is None:
            marks = self.marks[key] = _TimeMarks()
        return marks

    def _mark(self, rec: dict) -> None:
        path = rec.get("scope")
        if not isinstance(path, list):
            return
        at = rec.get("at")
        label = str(rec.get("label", ""))
        if "job" in rec and "epoch" in rec and isinstance(at, (int, float)):
            times = [(tuple(path), rec["epoch"])]
            if isinstance(rec.get("loop"), list) and type(rec.get("iteration")) is int:
                # a loop's iteration: the job's time in the loop's scope too, [epoch, iteration]
                times.append((tuple(rec["loop"]), (rec["epoch"], rec["iteration"])))
            for scope_path, t in times:
                marks = self._marks_of(scope_path)
                if label.endswith(")") and " started " in label:
                    marks.jobs.setdefault(t, []).append(rec["job"])
                    self._with_jobs[scope_path] = marks
                    marks.job_start[t] = min(at, marks.job_start.get(t, at))
                else:
                    marks.job_end[t] = max(at, marks.job_end.get(t, at))
                    if rec.get("status") == "FAILED":
                        marks.job_failure[t] = str(rec.get("failure") or f"job {rec['job']} failed")
        elif "batch" in rec and "trigger_start" in rec:
            self._marks_of(path).batch_marks[rec["batch"]] = rec

    # --- what the walk asks --------------------------------------------------------------------------------------

    def start_of(self, path: tuple, t: Any) -> float | None:
        marks = self.marks.get(path, _NO_MARKS)
        batch = marks.batch_marks.get(t)
        if batch is not None and isinstance(batch.get("trigger_start"), (int, float)):
            return batch["trigger_start"]
        return marks.job_start.get(t)

    def created_from_nothing(self, holder: Interval) -> bool:
        """Is ``holder`` a resubmitted stage attempt's, whose capabilities came from nothing?

        It waited on the holder released last before it began (the attempt that failed to fetch, or the
        parent's re-run).
        """
        return bool((holder.end_cause or {}).get("attempt"))

    def segments(self, scope: Subgraph, holder: Interval, about: dict, seg_from: float, seg_to: float,
                 rival: Rival | None) -> list[dict] | None:
        """A stage operator's holders: waiting to be submitted, a task (and its pending stretch), a recompute."""
        op = scope.children.get(holder.loc.node)
        if op is None or "stage_ids" not in op.attrs:
            return None
        if holder.loc.kind != OUT:
            return [segment("scheduler", seg_from, seg_to, {**about, "doing": "waiting to be submitted"})]
        cause = holder.end_cause or {}
        attempt = cause.get("attempt", 0)
        if cause.get("event") != "TaskEnd" or holder.end_at is None or seg_to < holder.end_at - 1e-9:
            kind = "recompute" if attempt or cause.get("failed") else "capability"
            info = {**about, "stage": cause.get("stage"), "attempt": attempt}
            if cause.get("failed"):  # the attempt failed (a fetch failure, a lost executor): its work is redone
                info["failed_attempt"] = attempt
            failure = cause.get("failure") if cause.get("failed") else self._resubmitted.get((info["stage"], attempt))
            if failure is not None:
                info["failure"] = failure
            return [segment(kind, seg_from, seg_to, info)]
        task, launched = cause.get("task"), cause.get("launched")
        span = self.spans.get(f"task {task}")
        others = [at - la for at, tk, la in holder.lowered_by if tk != task and isinstance(la, (int, float))]
        others_median = median(others) if others else None
        info = {**about, "stage": cause.get("stage"), "attempt": attempt, "task": task, "index": cause.get("index"),
                "partition": cause.get("partition", cause.get("index")), "executor": holder.end_worker,
                "host": span.host if span else None, "launched": launched,
                "duration_s": round(holder.end_at - launched, 6) if isinstance(launched, (int, float)) else None,
                "median_task_s": round(others_median, 6) if others_median is not None else None}
        metrics = cause.get("metrics")  # the task's time split as Spark measured it (an array: task_metrics)
        if type(metrics) is list or type(metrics) is tuple:
            info["breakdown"] = breakdown = as_dict(metrics)
            python = python_of_dict(breakdown)  # its Python workers' time, within its run (python_time)
            if python is not None:
                breakdown["python"] = python
        if others_median is not None and isinstance(launched, (int, float)):
            info["what_if"] = _what_if(scope, holder, task, launched, others_median, seg_from, seg_to, rival)
        kind = "recompute" if attempt else "task"
        failure = self._resubmitted.get((info["stage"], attempt)) if attempt else None
        if failure is not None:  # a resubmitted attempt's task: why its work is redone
            info["failure"] = failure
        if not isinstance(launched, (int, float)) or launched <= seg_from:
            return [segment(kind, seg_from, seg_to, info)]
        return [segment(kind, launched, seg_to, info), self._pending_segment(seg_from, launched, about, cause, task)]

    def _pending_segment(self, seg_from: float, launched: float, about: dict, cause: dict, task: Any) -> dict:
        """Before its launch the task was pending: were the slots all taken (by whom), or was it the scheduler?"""
        slots = self.slots.at(launched) or self.spans.max_running or 1
        busy: dict[tuple, int] = {}
        for span in self.spans.running_at(launched, f"task {task}"):
            stage_job = (span.stage, span.job)
            busy[stage_job] = busy.get(stage_job, 0) + 1
        hold = {**about, "stage": cause.get("stage"), "attempt": cause.get("attempt", 0), "task": task,
                "slots": slots}
        if sum(busy.values()) >= slots:
            hold["held_by"] = [{"stage": stage, "job": job, "tasks": n}
                               for (stage, job), n in sorted(busy.items(), key=lambda kv: -kv[1])]
            kind = "waiting-for-slots"
        else:
            kind = "scheduler"
        return segment(kind, seg_from, launched, hold)

    def describe(self, path: tuple, t: Any, segments: list[dict]) -> tuple[list, Any, str | None]:
        """Name what the driver did where Spark says, and return the time's jobs, micro-batch and failure."""
        marks = self.marks.get(path, _NO_MARKS)
        batch = marks.batch_marks.get(t)
        _name_driver_segments(segments, batch, marks.job_start.get(t), marks.job_end.get(t))
        return (sorted(marks.jobs.get(t, [])), batch.get("batch") if batch is not None else None,
                marks.job_failure.get(t))

    # --- pruning ------------------------------------------------------------------------------------------------

    def crowded(self) -> bool:
        return len(self.spans) > MAX_SPANS + 2 * self.spans.running

    def prune_spans(self, cut: float | None) -> None:
        """Drop the spans of tasks that ended before ``cut`` (all ended ones if None), and the cores before it."""
        self.spans.prune(cut)
        if cut is not None:
            self.slots.prune(cut)

    def prune_finished(self, finished: Callable[[tuple, Any], bool]) -> None:
        """Drop the marks of the times that finished."""
        for path, marks in list(self._with_jobs.items()):
            for t in [t for t in marks.jobs if finished(path, t)]:
                marks.jobs.pop(t, None)
                marks.job_start.pop(t, None)
                marks.job_end.pop(t, None)
                marks.job_failure.pop(t, None)
                marks.batch_marks.pop(t, None)
            if not marks.jobs:
                del self._with_jobs[path]

    def forget_under(self, path: tuple) -> None:
        n = len(path)
        for table in (self.marks, self._with_jobs):
            for key in [k for k in table if k[:n] == path]:
                del table[key]


def _what_if(scope: Subgraph, holder: Interval, task: Any, launched: float, others_median: float, seg_from: float,
             seg_to: float, rival: Rival | None) -> dict:
    """Had ``task`` run its stage's median, the critical path walked again.

    The stage releases the time when that shortened run or its sibling that ended last is done, and the time is
    then held by whichever comes later of that and the rival (another straggler, another stage the next step also
    waited for), so it ends earlier by what is left of the gap, at most the segment's length. ``then_held_by``
    names the holder that takes over when it is not the shortened task itself.
    """
    end = holder.end_at if holder.end_at is not None else seg_to
    siblings = [(at, other) for at, other, _ in holder.lowered_by if other != task]
    last_sibling = max(siblings, default=(launched, None))
    released, then = launched + others_median, None
    if last_sibling[0] > released:
        released, then = last_sibling[0], {"task": last_sibling[1], "stage": (holder.end_cause or {}).get("stage"),
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
    out: dict = {"task_at_median_s": round(others_median, 6),
                 "ends_earlier_s": round(max(0.0, min(end - released, seg_to - seg_from + 1e-12)), 6)}
    if then is not None and out["ends_earlier_s"] < round(end - (launched + others_median), 6):
        out["then_held_by"] = then
    return out


def _name_driver_segments(segments: list[dict], batch: dict | None, first_job: float | None,
                          last_job: float | None) -> None:
    """Say what the driver did in each driver segment that does not say yet.

    A micro-batch's phases before its first job and after its last (``phases_ms`` of its progress), its own code
    between jobs.
    """
    phases = (batch or {}).get("phases_ms") or {}
    for s in segments:
        if s["kind"] != "driver" or "doing" in s["holder"]:
            continue
        if first_job is not None and s["to"] <= first_job + 1e-6:
            names = [p for p in _PHASES_BEFORE_FIRST_JOB if p in phases]
            doing = [f"{p} {phases[p]} ms" for p in names]
            # what those phases leave unexplained ran in addBatch before its first job: the sink's own
            # driver-side code (a foreachBatch function), or Spark's start of the batch's execution
            rest_ms = round(s["seconds"] * 1000 - sum(phases[p] for p in names if isinstance(phases[p], int)))
            if "addBatch" in phases and rest_ms > 0:
                doing.append(f"addBatch's driver-side code before its first job {rest_ms} ms")
                s["holder"]["driver_before_first_job_ms"] = rest_ms
            s["holder"]["doing"] = "before the first job: " + ", ".join(doing) if doing else "before the first job"
        elif last_job is not None and s["from"] >= last_job - 1e-6:
            s["holder"]["doing"] = "after the last job" + (
                f": commitOffsets {phases['commitOffsets']} ms" if "commitOffsets" in phases else "")
        else:
            s["holder"]["doing"] = "between jobs (addBatch, driver-side)" if batch is not None else "driver"


def task_index_for(replay: Replay, bars: bool = False) -> TaskIndex:
    """A task index for what ``replay`` applies, reporting a field blame leaves out with the replay's problems.

    ``bars``: keep every attempt's bar, for an executor timeline.
    """
    def report(line: int | None, reason: str) -> None:
        replay.report(line, f"blame ignores {reason}", IGNORED_FIELD)

    # the replay's records were made in this process from checked values (the Spark model's): the fields blame
    # reads in a detail are not checked again (the relation of a cause's launch to its batch's at still is)
    return TaskIndex(trusted=replay.checked_records, report=report, bars=bars)


def spark_blame(replay: Replay, lazy: bool = False, tasks: TaskIndex | None = None) -> BlameTracker:
    """A :class:`BlameTracker` that names holders in Spark's words, fed records after ``replay`` applies them.

    ``tasks``: the task index to fill (a session's, which its executor timeline reads); else its own.
    """
    return BlameTracker(replay, SparkVocabulary(replay, tasks), lazy=lazy)


def blame_log(records: Iterable, on_error: Callable | None = None, source: str = "<blame>",
              checked_records: bool = False) -> list[TimeBlame]:
    """Replay ``records`` (records or ``(line, record)`` pairs) and blame every completed time.

    ``on_error`` is told of each problem (a rejected record, a field blame leaves out) as a ``LineError`` naming
    ``source`` and the line. ``checked_records``: the records come from the Spark model (``Replay``'s option).
    """
    return blame_replay(records, on_error, source, checked_records)[1]


def blame_replay(records: Iterable, on_error: Callable | None = None, source: str = "<blame>",
                 checked_records: bool = False, check_contracts: bool = False,
                 name_plans: bool = False, timeline: TaskTimeline | None = None) -> tuple[Replay, list[TimeBlame]]:
    """:func:`blame_log` with the replay it ran (every scope kept), for a caller that checks what a query names
    (``check_contracts``: and that lists the progress contract's findings, ``replay.findings``; ``name_plans``: a
    segment held by a stage of a SQL execution names its plan operator, :func:`name_segments`). ``timeline``: an
    executor timeline to fill, which then reads blame's task index (every attempt's bar kept), as a session's does,
    rather than reading the records again into one of its own."""
    replay = Replay(source, on_error=on_error, checked_records=checked_records, check_contracts=check_contracts)
    tasks = None
    if timeline is not None:
        tasks = timeline.index = task_index_for(replay, bars=True)
    tracker = spark_blame(replay, tasks=tasks)
    for item in records:
        line, rec = item if isinstance(item, tuple) else (None, item)
        if replay.apply(rec, line):
            tracker.record(rec, line)
    replay.finish()
    times = tracker.times()
    if name_plans:
        named = plan_operators(tracker)
        for b in times:
            name_segments(b.blame, named)
    return replay, times


def plan_operators(tracker: BlameTracker) -> dict[int, dict]:
    """``{stage id: {execution, id, name, operators}}``: the SQL plan operator each stage ran, as the records'
    marks said (``plan_operators``; empty for a tracker that does not speak Spark)."""
    vocabulary = tracker.vocabulary
    return vocabulary.plan_operators if isinstance(vocabulary, SparkVocabulary) else {}


def name_segments(segments: list[Any], named: dict[int, dict]) -> None:
    """Blame segments (``{kind, ..., holder}``) held by a stage ``named`` knows get its ``plan_operator``."""
    for seg in segments:
        holder = seg.get("holder") if isinstance(seg, dict) else None
        if isinstance(holder, dict) and holder.get("stage") in named:
            holder["plan_operator"] = named[holder["stage"]]


def select(times: list[TimeBlame], scope: list | None = None, time: Any = None, top: int | None = None,
           nested: bool = False) -> list:
    """The times a query asks for.

    One scope (``nested``: with the scopes inside it, such as a region's loop, whose times name their iteration),
    one time, the ``top`` slowest (slowest first), else all in order.
    """
    prefix = len(scope) if scope is not None and nested else None  # nested: compare the scope's first steps
    out = [b for b in times if (scope is None or (b.scope if prefix is None else b.scope[:prefix]) == scope)
           and (time is None or b.time == time)]
    if top is not None:
        out = sorted(out, key=lambda b: -b.latency_s)[:max(0, top)]
    return out
