"""Task-level detail for the Spark model: which tasks make up a stage's capabilities, and how a stage attempt went.

The Spark model counts one capability per task at a stage operator's output; this module says *which* tasks those
are, in the progress-log format (it never talks to the tracker): a ``detail`` record per running task attempt
(task id, partition index, attempt, executor, host, launch time, speculative) and one per submitted stage attempt
(its task count and submission time), set when the task or stage starts and cleared when it ends (a task's clear
rides on its end's progress batch as ``clears``). Whoever shows a holder (explain, blame) joins these to the
pointstamp they name.

Memory stays bounded: a stage attempt keeps its finished tasks' durations and input sizes only while it runs; when
it completes they are reduced to an aggregate (count, quantiles, mean, the skew score) plus the stragglers, and
the per-task list is dropped. Stragglers and skewed stages are also reported as marks (``finding``), so the
timeline and the findings list show them.

* skew score: mean absolute deviation over the mean (as Flink's FLIP-418), of task durations, of input records and
  of input bytes (read from storage plus shuffle bytes fetched, local and remote);
* straggler: a successful task at least ``straggler.factor`` (3) times the median of the stage attempt's other
  tasks and at least ``straggler.min_s`` (0.5) seconds above it (so sub-second noise in tiny stages is not a
  finding); a skewed stage scores ``skew.score`` (0.5) over at least ``skew.min_tasks`` (4) tasks: the thresholds
  table's (``thresholds.py``), overridable as every finding's.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import sub
from typing import Any

from backend.spark.diagnosis.findings import Diagnosis, StageRun
from backend.spark.diagnosis.task_metrics import AT, RunningSums, format_bytes, split
from backend.spark.diagnosis.thresholds import Thresholds, configured, default
from tracker.progress_log.records import detail

__all__ = ["TaskLedger", "StageAggregate", "partition_of", "skew_score", "stragglers", "straggler_median",
           "failure_text", "task_failure", "STRAGGLER_FACTOR", "STRAGGLER_MIN_S", "SKEW_FINDING"]

# the defaults of the thresholds table (thresholds.py; a model uses the values in force, the fleet these)
STRAGGLER_FACTOR = default("straggler.factor")
STRAGGLER_MIN_S = default("straggler.min_s")
SKEW_FINDING = default("skew.score")  # a stage whose duration skew score reaches this (with 4 tasks) is a finding
MAX_STRAGGLERS = 5
KEEP_COMPLETED = 1000  # completed stage attempts whose aggregates the ledger keeps (the latest ones)
KEEP_REMOVED = 1000  # removed executors whose reasons the ledger keeps (the latest ones)
EVERY_FINISHED = 16  # a stage's detail says what each of its first 16 finished tasks spent, then now and then
FAILURE_CHARS = 300  # the longest failure message kept (a stack trace's first line is what a person reads)
_PY_TRACEBACK = "Traceback (most recent call last)"
_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.$]*(:|$)")  # a traceback's last line: "RuntimeError: boom"


def skew_score(values: list[float]) -> float:
    """Mean absolute deviation over the mean (0 for an even spread; FLIP-418's data-skew score)."""
    if not values:
        return 0.0
    mean = sum(values) / len(values)
    if mean <= 0:
        return 0.0
    return sum(map(abs, map(sub, values, repeat(mean)))) / len(values) / mean  # |v - mean|, summed in order


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    if not n:
        return 0.0
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def median_of_others(ordered: list[float], value: float) -> float:
    """The median of the sorted durations ``ordered`` with one ``value`` taken out: what a task is compared with
    (in a two-task stage the plain median would be half the straggler itself). No copy: index arithmetic."""
    m = len(ordered) - 1
    if not m:
        return value
    j = bisect_left(ordered, value)  # the one taken out; those after it move down by one

    def at(k: int) -> float:
        return ordered[k] if k < j else ordered[k + 1]

    return at(m // 2) if m % 2 else (at(m // 2 - 1) + at(m // 2)) / 2


def straggler_median(duration: float, ordered: list[float], factor: float = STRAGGLER_FACTOR,
                     min_s: float = STRAGGLER_MIN_S) -> float | None:
    """The median of the others (``ordered``: every duration, sorted) if ``duration`` is a straggler's, else None:
    the one straggler rule, which the fleet's stage rows use too (with the defaults; a model passes the
    ``straggler.factor`` and ``straggler.min_s`` in force)."""
    med = median_of_others(ordered, duration)
    return med if duration >= factor * med and duration - med >= min_s else None


def _straggler_indexes(durations: list[float], ordered: list[float]) -> list[tuple[int, float]]:
    """``(index, median of the others)`` of the stragglers among ``durations`` (``ordered`` is them sorted),
    longest first (ties in their order)."""
    far = []
    for i in heapq.nlargest(MAX_STRAGGLERS, range(len(durations)), key=durations.__getitem__):
        med = straggler_median(durations[i], ordered)
        if med is not None:
            far.append((i, med))
    return far


def stragglers(tasks: list[dict]) -> list[dict]:
    """The tasks far above the median of their siblings (see the module docstring), longest first, each with
    ``median_others``."""
    durations = [t["duration"] for t in tasks]
    return [{**tasks[i], "median_others": med} for i, med in _straggler_indexes(durations, sorted(durations))]


def _quantiles(ordered: list[float]) -> dict[str, float] | None:
    """Quantiles of values already sorted."""
    if not ordered:
        return None
    s = ordered
    n = len(s)
    return {"min": s[0], "p25": s[n // 4], "median": median(s), "p75": s[(3 * n) // 4], "max": s[-1],
            "mean": sum(s) / n}


@dataclass
class StageAggregate:
    """A completed stage attempt, reduced: what stays in memory once its tasks are done."""

    stage: int
    attempt: int
    scope: list
    node: int
    time: Any
    tasks: int
    failed_tasks: int
    duration_s: dict[str, float] | None
    input_records: dict[str, float] | None
    input_bytes: dict[str, float] | None
    skew: float
    records_skew: float
    bytes_skew: float
    stragglers: list[dict]
    metrics: dict | None = None  # task_metrics.summarize's sums and quantiles, with peak JVM heap per executor

    def to_json(self) -> dict:
        return {"stage": self.stage, "attempt": self.attempt, "scope": self.scope, "node": self.node,
                "time": self.time, "tasks": self.tasks, "failed_tasks": self.failed_tasks,
                "duration_s": self.duration_s, "input_records": self.input_records, "input_bytes": self.input_bytes,
                "skew": round(self.skew, 4), "records_skew": round(self.records_skew, 4),
                "bytes_skew": round(self.bytes_skew, 4), "stragglers": self.stragglers, "metrics": self.metrics}


class _Attempt:
    """A running stage attempt: its running tasks, and what its successful tasks leave for the aggregate (their
    durations and input sizes, in the order they ended, and the ``MAX_STRAGGLERS`` longest with their details:
    only those can be stragglers), so a task's end costs two appends, not a record kept per task."""

    __slots__ = ("scope", "node", "time", "stage", "attempt", "job", "name", "running", "durations", "records", "bytes",
                 "longest", "port", "failed", "failure", "value", "finished", "updated_at", "sums", "run")

    def __init__(self, scope: list, node: int, time: Any, stage: int, attempt: int, job: Any) -> None:
        self.scope, self.node, self.time, self.stage, self.attempt, self.job = scope, node, time, stage, attempt, job
        self.name = ""  # its operator's name
        self.running: set = set()  # task ids
        self.durations: list[float] = []  # seconds, of each successful task
        self.records: list[int] = []  # input records, of each successful task
        self.bytes: list[int] = []  # input bytes, of each successful task
        # min-heap of the longest successful tasks:
        # (duration, -order, (id, index, executor, launched, records, bytes, partition))
        self.longest: list[tuple] = []
        self.port = _port(node)
        self.failed = 0
        self.failure: dict | None = None  # the latest of its tasks' failures (task_failure)
        self.value: dict = {}  # its stage detail's value (set again with what its finished tasks spent)
        self.finished = 0  # successful tasks so far
        self.updated_at = 0.0  # when its detail last said so
        self.sums = RunningSums()
        self.run: StageRun | None = None  # what the findings read (findings.py), once the attempt is submitted

    def succeeded(self, tid: Any, info: dict, launched: int, finished: int, size: tuple[int, int]) -> None:
        """A successful task: its duration and input size (records, bytes); its details too while it is among the
        longest so far (on a tie the earlier stays, as a stable sort keeps it)."""
        duration = (finished - launched) / 1000.0
        n = len(self.durations)
        records, nbytes = size
        self.durations.append(duration)
        self.records.append(records)
        self.bytes.append(nbytes)
        longest = self.longest
        if len(longest) < MAX_STRAGGLERS or duration > longest[0][0]:
            entry = (duration, -n, (tid, info.get("Index"), info.get("Executor ID"), launched / 1000.0, records,
                                    nbytes, partition_of(info)))
            if len(longest) < MAX_STRAGGLERS:
                heapq.heappush(longest, entry)
            else:
                heapq.heapreplace(longest, entry)


def failure_text(text: Any) -> str | None:
    """A Spark failure message (an exception's description, a stage's or job's failure reason) as one line a person
    reads: its first line, where a Python worker's traceback begins with the exception it ends with, else with the
    first ``Caused by:`` of a Java stack trace; None for no text."""
    if type(text) is not str or not text.strip():
        return None
    lines = text.strip().splitlines()
    first = lines[0].strip()
    if _PY_TRACEBACK in first:
        exc = next((x.strip() for x in reversed(lines[1:]) if x and not x[0].isspace() and _EXCEPTION_LINE.match(x)),
                   None)
        if exc is not None:
            head = first.split(_PY_TRACEBACK)[0].rstrip(": ")
            first = f"{head}: {exc}" if head else exc
    else:
        cause = next((x for x in lines[1:] if x.startswith("Caused by: ")), None)
        if cause is not None:
            first += f" (caused by {cause.removeprefix('Caused by: ').strip()})"
    return first if len(first) <= FAILURE_CHARS else first[:FAILURE_CHARS - 1] + "\u2026"


def task_failure(e: dict, removed: dict[str, str] | None = None) -> dict | None:
    """Why a task attempt did not succeed, from its TaskEnd: Spark's reason (``FetchFailed``,
    ``ExecutorLostFailure``, ``ExceptionFailure``, ``TaskKilled``, ...), the executor it names (the lost block
    manager's for a fetch failure, the lost executor, else the task's own), its host, a one-line message, and the
    executor's ``Removed Reason`` when ``removed`` (executor id -> reason) has it; None for a success."""
    info = e.get("Task Info") or {}
    reason = e.get("Task End Reason") or {}
    why = reason.get("Reason", "Success")
    if why == "Success" and not info.get("Killed") and not info.get("Failed"):
        return None
    if why == "Success":
        why = "TaskKilled" if info.get("Killed") else "failed"
    executor, host, message = info.get("Executor ID"), info.get("Host"), None
    if why == "FetchFailed":
        where = reason.get("Block Manager Address") or {}
        executor, host = where.get("Executor ID", executor), where.get("Host", host)
        message = failure_text(reason.get("Message"))
    elif why == "ExecutorLostFailure":
        lost = reason.get("Executor ID")
        if lost is not None and lost != executor:
            executor, host = lost, None
        message = reason.get("Loss Reason")
    elif why == "ExceptionFailure":
        cls, text = reason.get("Class Name"), failure_text(reason.get("Description"))
        message = f"{cls}: {text}" if cls and text else (cls or text)
    else:
        message = failure_text(reason.get("Message") or reason.get("Description"))
    out = {"reason": why, "executor": None if executor is None else str(executor), "host": host,
           "message": message, "task": info.get("Task ID")}
    gone = (removed or {}).get(out["executor"] or "")
    if gone and gone != message:
        out["executor_removed"] = gone
    return out


def partition_of(info: dict) -> Any:
    """The partition a task computes: its ``Partition ID`` (Spark 3.3 on), else its index in the task set, which is
    the partition only in a stage's first attempt (a resubmitted attempt's task set holds just the missing ones)."""
    partition = info.get("Partition ID")
    return partition if type(partition) is int and partition >= 0 else info.get("Index")


def _read_against_median(straggler: dict, agg: StageAggregate) -> str:
    """What a straggler read against its stage's median, so a reader tells data skew (it read far more) from a slow
    executor (it read as much as the others): empty when the stage read nothing measured."""
    parts = []
    if agg.input_records:
        parts.append(f"{straggler['records']:,} records (median {agg.input_records['median']:,.0f})")
    if agg.input_bytes:
        parts.append(f"{format_bytes(straggler['bytes'])} (median {format_bytes(agg.input_bytes['median'])})")
    return "; it read " + ", ".join(parts) if parts else ""



def _port(node: int) -> list:
    return ["out", node, 0]


_IN_RECORDS, _IN_BYTES = AT["input_records"], AT["input_bytes"]
_SH_RECORDS, _SH_LOCAL, _SH_REMOTE = AT["shuffle_records_read"], AT["shuffle_local_bytes"], AT["shuffle_remote_bytes"]


def _input_size(b: list) -> tuple[int, int]:
    """Records and bytes a task read (``b``: its split): from its input (storage) and from shuffles (fetched
    locally or remotely)."""
    return ((b[_IN_RECORDS] or 0) + (b[_SH_RECORDS] or 0),
            (b[_IN_BYTES] or 0) + (b[_SH_LOCAL] or 0) + (b[_SH_REMOTE] or 0))


class TaskLedger:
    """Running tasks and stage attempts of one application, as ``detail`` records (see the module docstring)."""

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        """``thresholds``: the findings' (default: ``thresholds.configured()``, what ``--thresholds`` named)."""
        self.diagnosis = Diagnosis(thresholds or configured())  # findings that say what to do (findings.py)
        self.attempts: dict[tuple[int, int], _Attempt] = {}
        self.completed: dict[tuple[int, int], StageAggregate] = {}  # the latest KEEP_COMPLETED, oldest first
        self.executors: dict[str, dict] = {}
        self.removed: dict[str, str] = {}  # executor id -> Spark's reason for removing it (the latest KEEP_REMOVED)

    # --- records -----------------------------------------------------------------------------------------

    @staticmethod
    def _detail(a: _Attempt, key: str, value: dict | None, at: float) -> dict:
        return detail(a.scope, a.port, a.time, key, at, value)

    # --- events ------------------------------------------------------------------------------------------

    def executor_added(self, e: dict, at: float) -> list[dict]:
        info = e.get("Executor Info") or {}
        ex = str(e.get("Executor ID"))
        cores = info.get("Total Cores")
        self.executors[ex] = {"executor": ex, "host": info.get("Host"), "cores": cores}
        self.diagnosis.executor_added(ex, cores, at)
        return [{"type": "mark", "at": at, "label": f"executor {ex} added ({cores} cores)", "executor": ex,
                 "host": info.get("Host"), "cores": cores, "executor_event": "added"}]

    def executor_removed(self, e: dict, at: float) -> list[dict]:
        ex = str(e.get("Executor ID"))
        self.executors.pop(ex, None)
        self.diagnosis.executor_removed(ex, at)
        reason = e.get("Removed Reason") or ""
        if reason:
            self.removed.pop(ex, None)
            self.removed[ex] = reason
            if len(self.removed) > KEEP_REMOVED:
                del self.removed[next(iter(self.removed))]
        return [{"type": "mark", "at": at, "label": f"executor {ex} removed" + (f": {reason}" if reason else ""),
                 "executor": ex, "executor_event": "removed", "reason": reason}]

    def stage_submitted(self, scope: list, node: int, time: Any, stage: int, attempt: int, tasks: int, job: Any,
                        at: float, iteration: int | None = None, parents: Sequence[int] = (),
                        batch: Any = None, name: str = "") -> list[dict]:
        """``iteration``: the loop iteration the stage runs (its time is ``[epoch, iteration]``), None outside one;
        ``parents``: the stages whose shuffle output it reads (what the cores what-if waits for); ``batch``: the
        micro-batch it runs for, None outside a streaming query; ``name``: its operator's name, which its findings
        carry as ``stage_name`` (what groups them across jobs)."""
        a = _Attempt(scope, node, time, stage, attempt, job)
        a.name = name
        self.attempts[(stage, attempt)] = a
        value = {"kind": "stage", "stage": stage, "attempt": attempt, "job": job, "tasks": tasks, "submitted": at,
                 "parents": list(parents)}
        if iteration is not None:
            value["iteration"] = iteration
        a.value = value
        a.run = self.diagnosis.stage_submitted(scope, node, time, stage, attempt, tasks, batch, at, name)
        return [self._detail(a, f"stage {stage}.{attempt}", value, at)]

    def task_started(self, e: dict, info: dict, at: float, out: list[dict]) -> None:
        """A task attempt began (``info``: its ``Task Info``): the ``detail`` record naming it is appended to ``out``
        (nothing for a stage attempt the ledger does not know)."""
        a = self.attempts.get((e.get("Stage ID"), e.get("Stage Attempt ID", 0)))  # type: ignore[arg-type]
        if a is None:
            return
        get = info.get
        tid = get("Task ID")
        launched = get("Launch Time")
        a.running.add(tid)
        self.diagnosis.task_started(at)  # the application is busy while a task runs
        out.append(detail(a.scope, a.port, a.time, f"task {tid}", at, {
            "kind": "task", "task": tid, "index": get("Index"), "partition": partition_of(info),
            "attempt": get("Attempt"), "executor": get("Executor ID"), "host": get("Host"),
            "launched": launched / 1000.0 if isinstance(launched, (int, float)) else at,
            "speculative": bool(get("Speculative", False)), "stage": a.stage, "stage_attempt": a.attempt}))

    def task_ended(self, e: dict, info: dict, stage: int, attempt: int, ok: bool, at: float,
                   batch: dict | None = None, out: list[dict] | None = None) -> dict | None:
        """The record clearing the task's detail, if it was running (``info``: its ``Task Info``; ``ok``: it
        succeeded): it follows the event's progress batch, since the task held until that batch was applied. Given
        the ``batch`` that released the task's capability, the clear rides on it instead (``clears``: a task's end
        is one record, not two) and None is returned. The task's time split (``task_metrics.split``) rides on
        that batch's cause as ``metrics`` (else on the clear); given ``out``, a detail record saying what the
        attempt's finished tasks spent their time on is appended to it (after each of the first
        ``EVERY_FINISHED`` tasks, then at 32, 64, 128, ... tasks and whenever a second has passed since the last
        one), so explain on a running stage says it."""
        a = self.attempts.get((stage, attempt))
        if a is None:
            return None
        get = info.get
        tid = get("Task ID")
        running = tid in a.running
        if running:
            a.running.remove(tid)
        b = split(info, e.get("Task Metrics"), e.get("Task Executor Metrics"))
        if running:
            self.diagnosis.task_stopped(at)
        run = a.run
        if ok:
            if batch is not None:
                batch["cause"]["metrics"] = b
            if run is not None:
                run.succeeded(get("Executor ID"), b)
                a.finished = n = a.finished + 1
                if out is not None and (n <= EVERY_FINISHED or not n & (n - 1) or at - a.updated_at >= 1.0):
                    a.updated_at = at
                    out.append(self._detail(a, f"stage {stage}.{attempt}",
                                            {**a.value, "finished": a.sums.add(run.splits)}, at))
            launched = get("Launch Time")
            finished = get("Finish Time")
            if type(launched) is int and type(finished) is int and finished >= launched:
                # kept raw while the attempt runs; reduced to an aggregate when it completes
                a.succeeded(tid, info, launched, finished, _input_size(b))
            if not running:
                return None
            if batch is not None:
                batch["clears"] = [f"task {tid}"]
                return None
            clear = detail(a.scope, a.port, a.time, f"task {tid}", at, None)
            clear["metrics"] = b
            return clear
        a.failed += 1
        a.failure = failure = task_failure(e, self.removed)
        if run is not None and failure is not None:
            run.failed(b, failure)
        if not running:
            return None
        clear = detail(a.scope, a.port, a.time, f"task {tid}", at, None)
        clear["metrics"] = b
        # why the attempt ended, when not a success (the executor timeline marks it)
        reason = e.get("Task End Reason")
        clear["end"] = "TaskKilled" if get("Killed") else (reason or {}).get("Reason", "failed")
        return clear

    def failure(self, stage: int, attempt: int) -> dict | None:
        """The latest task failure of a running stage attempt (what made a failed attempt fail), if any."""
        a = self.attempts.get((stage, attempt))
        return a.failure if a is not None else None

    def executor_metrics(self, e: dict) -> None:
        """A ``SparkListenerStageExecutorMetrics``: an executor's peak memory over a stage attempt."""
        self.diagnosis.executor_metrics(e.get("Stage ID", -1), e.get("Stage Attempt ID", 0), e.get("Executor ID"),
                                        e.get("Executor Metrics") or {})

    def application_started(self, at: float) -> None:
        """The application's start: the wall time its findings measure begins here."""
        self.diagnosis.application_started(at)

    def application_ended(self, at: float) -> list[dict]:
        """The application's findings (idle cores, driver-bound time), as marks."""
        return self.diagnosis.application_ended(at)

    def stage_completed(self, stage: int, attempt: int, at: float) -> list[dict]:
        """The attempt is over: clear its details, keep its aggregate, report stragglers, skew and the findings.
        The clear of its stage detail carries the attempt's ``metrics`` (the sums and quantiles of its tasks' time
        split, peak JVM heap per executor)."""
        a = self.attempts.pop((stage, attempt), None)
        if a is None:
            return []
        summary = self.diagnosis.stage_summary(stage, attempt)
        out = self._clear(a, at)
        if summary is not None:
            out[-1]["metrics"] = summary  # the stage detail's clear (_clear's last record)
        t = self.diagnosis.t
        agg = self._aggregate(a, t["straggler.factor"], t["straggler.min_s"])
        agg.metrics = summary
        self.completed[(stage, attempt)] = agg
        if len(self.completed) > KEEP_COMPLETED:  # a long application's ledger stays bounded
            del self.completed[next(iter(self.completed))]
        med = (agg.duration_s or {}).get("median", 0.0)
        for s in agg.stragglers:
            ratio = s["duration"] / s["median_others"] if s["median_others"] > 0 else float("inf")
            times = f"{ratio:.0f}x" if ratio != float("inf") else "far above"
            out.append({"type": "mark", "at": at, "scope": a.scope, "finding": "straggler",
                        "label": f"straggler in stage {stage}: task {s['task']} (partition {s['partition']}) ran "
                                 f"{s['duration']:.2f} s on executor {s['executor']}, {times} the median "
                                 f"{s['median_others']:.2f} s of the others{_read_against_median(s, agg)}",
                        "node": a.node, "time": a.time, "stage": stage, "attempt": attempt, "stage_name": a.name,
                        "task": s["task"], "index": s["index"], "partition": s["partition"], "executor": s["executor"],
                        "duration_s": s["duration"], "median_task_s": s["median_others"],
                        "records": s["records"], "bytes": s["bytes"],
                        # when it ended: the page shows the stage just before, the straggler still running
                        "ended_at": round(s["launched"] + s["duration"], 6),
                        "threshold": {**t.fired("straggler.factor"), "and": [t.fired("straggler.min_s")]}})
        if agg.tasks >= t["skew.min_tasks"] and agg.skew >= t["skew.score"]:
            out.append({"type": "mark", "at": at, "scope": a.scope, "finding": "skew",
                        "label": f"skewed stage {stage}: task duration skew {agg.skew:.2f} over {agg.tasks} tasks "
                                 f"(median {med:.2f} s, max {(agg.duration_s or {}).get('max', 0.0):.2f} s)",
                        "node": a.node, "time": a.time, "stage": stage, "attempt": attempt, "stage_name": a.name,
                        "summary": agg.to_json(),
                        "threshold": {**t.fired("skew.score"), "and": [t.fired("skew.min_tasks")]}})
        out += self.diagnosis.stage_completed(stage, attempt, at, agg.stragglers, summary)
        return out

    def release_stage(self, stage: int, at: float) -> list[dict]:
        """A job or the application ended with attempts of this stage still open: clear what they named."""
        out: list[dict] = []
        for key in [k for k in self.attempts if k[0] == stage]:
            out += self.stage_completed(key[0], key[1], at)
        return out

    def _clear(self, a: _Attempt, at: float) -> list[dict]:
        out = [self._detail(a, f"task {tid}", None, at) for tid in sorted(a.running, key=repr)]
        a.running.clear()
        out.append(self._detail(a, f"stage {a.stage}.{a.attempt}", None, at))
        return out

    @staticmethod
    def _aggregate(a: _Attempt, factor: float, min_s: float) -> StageAggregate:
        """The attempt reduced (``factor``, ``min_s``: the straggler rule's thresholds in force)."""
        durations = a.durations
        records_in = list(map(float, a.records))
        bytes_in = list(map(float, a.bytes))
        ordered = sorted(durations)
        slow = []
        for duration, _, (tid, index, executor, launched, records, nbytes, partition) in sorted(a.longest,
                                                                                                 reverse=True):
            med = straggler_median(duration, ordered, factor, min_s)
            if med is not None:
                slow.append({"task": tid, "index": index, "partition": partition, "executor": executor,
                             "duration": duration, "launched": launched, "records": records, "bytes": nbytes,
                             "median_others": med})
        return StageAggregate(a.stage, a.attempt, a.scope, a.node, a.time, len(durations), a.failed,
                              _quantiles(ordered), _quantiles(sorted(records_in)) if any(records_in) else None,
                              _quantiles(sorted(bytes_in)) if any(bytes_in) else None,
                              skew_score(durations), skew_score(records_in), skew_score(bytes_in), slow)
