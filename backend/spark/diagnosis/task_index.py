"""Which tasks ran where and when: the one index of task attempts and executor cores.

Fed from the Spark model's records (:meth:`TaskIndex.record`): a task's ``detail`` starts an attempt, its clear (a
``detail`` with value null, or a progress batch's ``clears``) ends it, a stage's ``detail`` says its job,
``executor_event`` marks add and remove cores. Two readers ask different questions of it: the executor timeline
wants every attempt as a bar (:class:`TaskBars`, typed arrays, kept whole), blame wants which tasks held slots at a
moment and how many slots there were (:class:`TaskSpans` and :class:`ExecutorSlots`, pruned to what open times
can ask).

A clear that names an ``end`` reason other than success (the Spark model writes the task end's reason for failed
and killed attempts) marks the bar: killed (``TaskKilled``: a speculative copy that lost, a task of a cancelled
stage) or failed, the reason kept beside it. The fields blame reads in a detail (``stage``, ``job``, ``launched``,
``host``) are checked unless the records were built from checked values: one of the wrong type is reported and
left out.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from typing import Any

from backend.spark.diagnosis.blame_fields import Report, checked_detail_value, is_id_or_none
from backend.spark.diagnosis.task_metrics import AT, PHASES, python_of

__all__ = ["TaskIndex", "TaskBars", "TaskSpan", "TaskSpans", "ExecutorSlots", "KEEP_STAGES"]

KEEP_STAGES = 10_000  # stages whose job the index remembers, for the task spans that name them (the latest)
_INF = float("inf")
OK, FAILED, RUNNING, KILLED = 0, 1, 2, 3  # a bar's outcome
OUTCOMES = ("ok", "failed", "running", "killed")


_NAN = float("nan")
_NO_PHASES = (_NAN,) * len(PHASES)
_RUN, _WRITE_NS = AT["run_ms"], AT["shuffle_write_ns"]
_FETCH, _GC = AT["fetch_wait_ms"], AT["gc_ms"]
_PHASE_AT = [AT.get(name, -1) for name in PHASES]  # -1: computing, Python, or shuffle write (in ns in the split)
_COMPUTE, _PYTHON = PHASES.index("compute_ms"), PHASES.index("python_ms")


def _int(v: Any) -> int:
    return v if type(v) is int else -1


def bar_phases(m: Any) -> tuple:
    """A task's time split (``task_metrics.split``: the array its end carries) as its bar's phases, ``PHASES`` in
    order (NaN: absent). Python is the workers' time within the run (``task_metrics.python_of``: 0 for a task
    without it); computing is the run time less fetch wait, shuffle write, GC and Python (never below 0)."""
    if type(m) is not list and type(m) is not tuple or len(m) <= _RUN:
        return _NO_PHASES
    write_ns = m[_WRITE_NS]
    write = write_ns * 1e-6 if isinstance(write_ns, (int, float)) else None
    py = python_of(m)
    python = py[0] if py is not None else 0
    out = []
    for k, i in enumerate(_PHASE_AT):
        if i >= 0:
            v = m[i]
        elif k == _COMPUTE:
            run = m[_RUN]
            v = None if run is None else max(0.0, run - (m[_FETCH] or 0) - (m[_GC] or 0) - (write or 0) - python)
        elif k == _PYTHON:
            v = None if m[_RUN] is None else python
        else:
            v = write
        out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else _NAN)
    return tuple(out)


class TaskIndex:
    """Task attempts and executors, read once from the records (see the module docstring).

    ``trusted``: the records were built in this process from checked values (the Spark model's), so the fields
    blame reads in a detail are not checked again; ``report`` is told of a field left out, with the record's line;
    ``bars``: keep every attempt's bar (an executor timeline reads them; blame alone does not).
    """

    def __init__(self, trusted: bool = False, report: Callable[[int | None, str], None] | None = None,
                 bars: bool = True) -> None:
        self.trusted = trusted
        self._report = report  # told of a bad field: (the record's line, what is wrong)
        self.bars = TaskBars(keep=bars)
        self.spans = TaskSpans()
        self.slots = ExecutorSlots()

    def record(self, rec: dict, line: int | None = None) -> None:
        """Follow one record the replay applied (``line``: where it is, for reporting a bad field)."""
        kind = rec.get("type")
        if kind == "detail":
            self._detail(rec, line)
        elif kind == "progress":
            clears = rec.get("clears")
            if clears:
                cause = rec.get("cause")
                self.cleared(clears, rec.get("at"), cause.get("metrics") if type(cause) is dict else None)
        elif kind == "mark" and rec.get("executor_event") is not None:
            self.slots.record(rec)
            if rec.get("executor_event") == "added":
                self.bars.executor_added(rec)

    def cleared(self, keys: list, at: Any, metrics: Any = None) -> None:
        """A progress batch cleared these detail keys (only ``task ...`` keys are attempts); ``metrics``: the time
        split of the task whose end the batch is (``cause.metrics``)."""
        bars, end = self.bars, self.spans.end
        for key in keys:
            bars.end(key, at, None, metrics)
            end(key, at)

    def _reporter(self, line: int | None) -> Report:
        report = self._report
        if report is None:
            return _ignore
        return lambda reason: report(line, reason)

    def _detail(self, rec: dict, line: int | None) -> None:
        value = rec.get("value")
        key = rec.get("key", "")
        if value is None:
            self.bars.end(key, rec.get("at"), rec.get("end"), rec.get("metrics"))
            self.spans.end(key if type(key) is str else str(key), rec.get("at"))
            return
        if type(value) is not dict:
            return
        kind = value.get("kind")
        if kind == "task":
            if type(key) is str:
                self.bars.start(key, value)
            else:
                key = str(key)
            stage, launched, host = value.get("stage"), value.get("launched"), value.get("host")
            # the fields blame reads, as checked_detail_value checks them (inline: a well-formed value costs no
            # call; records built from checked values, the Spark model's, are not checked)
            if not self.trusted and not (
                    (stage is None or type(stage) is int or type(stage) is str)
                    and (launched is None or (type(launched) is float and -_INF < launched < _INF)
                         or type(launched) is int)
                    and (host is None or type(host) is str) and is_id_or_none(value.get("job"))):
                value = checked_detail_value(value, self._reporter(line))
                stage, launched, host = value.get("stage"), value.get("launched"), value.get("host")
            if key.startswith("task "):
                self.spans.start(key, launched, stage, host)
        elif kind == "stage":
            if not self.trusted:
                value = checked_detail_value(value, self._reporter(line))
            self.spans.stage_in_job(value.get("stage"), value.get("job"))


def _ignore(reason: str) -> None:
    """Where a bad field goes when nobody asked to hear of it."""


class TaskBars:
    """Every task attempt as a bar (launch, end, executor, stage, partition, outcome), in typed arrays.

    About 40 bytes a task: a 100,000-task application costs ~4 MB. A bar's ``partition`` is the partition the task
    computes (Spark's ``Partition ID``); ``index`` is its position in its stage attempt's task set, which differs
    from the partition in a resubmitted attempt (it recomputes only the lost partitions, indexed 0, 1, ...).
    """

    def __init__(self, keep: bool = True) -> None:
        self.keep = keep  # False: every attempt passes through, none is kept (nobody draws them)
        self.launched = array("d")
        self.ended = array("d")
        self.executor = array("i")
        self.stage = array("i")
        self.stage_attempt = array("i")
        self.index = array("i")
        self.partition = array("i")
        self.task = array("q")
        self.outcome = array("b")
        self.speculative = array("b")
        self.phases = array("d")  # len(PHASES) per bar, in ms (NaN: not measured)
        self.executors: list[str] = []
        self.cores: dict[str, int] = {}  # every executor ever added -> its cores
        self._executor_ids: dict[str, int] = {}
        self._open: dict[str, int] = {}  # detail key -> row, while running
        self.reasons: dict[int, str] = {}  # row -> why a failed or killed attempt ended

    def __len__(self) -> int:
        return len(self.launched)

    def executor_added(self, rec: dict) -> None:
        if not self.keep:
            return
        executor = str(rec.get("executor"))
        self._executor(executor)
        if isinstance(rec.get("cores"), int):
            self.cores[executor] = rec["cores"]

    def _executor(self, executor: str) -> int:
        i = self._executor_ids.get(executor)
        if i is None:
            i = self._executor_ids[executor] = len(self.executors)
            self.executors.append(executor)
        return i

    def start(self, key: str, value: dict) -> None:
        launched = value.get("launched")
        if not self.keep or not isinstance(launched, (int, float)):
            return
        self._open[key] = len(self.launched)
        self.launched.append(float(launched))
        self.ended.append(float("nan"))
        self.executor.append(self._executor(str(value.get("executor"))))
        self.stage.append(_int(value.get("stage")))
        self.stage_attempt.append(_int(value.get("stage_attempt")))
        self.index.append(_int(value.get("index")))
        self.partition.append(_int(value.get("partition", value.get("index"))))
        self.task.append(_int(value.get("task")))
        self.outcome.append(RUNNING)
        self.speculative.append(1 if value.get("speculative") else 0)
        self.phases.extend(_NO_PHASES)

    def end(self, key: Any, at: Any, reason: Any, metrics: Any = None) -> None:
        row = self._open.pop(key, None)
        if row is None:
            return
        if metrics is not None:
            k = len(PHASES)
            self.phases[row * k:(row + 1) * k] = array("d", bar_phases(metrics))
        if isinstance(at, (int, float)):
            self.ended[row] = float(at)
        if reason in (None, "Success"):
            self.outcome[row] = OK
        else:
            self.outcome[row] = KILLED if reason == "TaskKilled" else FAILED
            self.reasons[row] = str(reason)


class TaskSpan:
    """One task attempt's hold on a slot: from ``launched`` to ``ended`` (None while it runs)."""

    __slots__ = ("launched", "ended", "stage", "job", "host", "order", "key")

    def __init__(self, launched: Any, stage: Any, job: Any, host: Any, order: int, key: str) -> None:
        self.launched = launched
        self.ended: Any = None
        self.stage = stage
        self.job = job
        self.host = host
        self.order = order  # when its key was first seen: the order spans are listed in
        self.key = key


class TaskSpans:
    """A span per task attempt, by detail key (``"task ID"``).

    The ended ones are also kept sorted by their end, so that "which tasks were running at ``at``" looks at the
    running ones and those that ended from ``at`` to ``at`` plus the longest any ran, not at every span kept for
    the open times (a lazy walk asks about moments long past).
    """

    __slots__ = ("by_key", "open", "ended", "ends", "longest", "order", "running", "max_running", "stage_job")

    def __init__(self) -> None:
        self.by_key: dict[str, TaskSpan] = {}
        self.open: dict[str, TaskSpan] = {}  # the spans not ended (their end None)
        self.ended: list[TaskSpan] = []  # the spans ended at a number of seconds, by end
        self.ends: list[float] = []
        self.longest = 0.0  # the longest an ended span ran (one ending later than that after a moment began after it)
        self.order = 0
        self.running = 0
        self.max_running = 0  # the most tasks seen running at once (the slots, when no executor says)
        self.stage_job: dict[Any, Any] = {}  # stage id -> job id (from stage details; the latest KEEP_STAGES)

    def __len__(self) -> int:
        return len(self.by_key)

    def get(self, key: str) -> TaskSpan | None:
        return self.by_key.get(key)

    def stage_in_job(self, stage: Any, job: Any) -> None:
        """A stage's detail: ``stage`` runs for ``job``."""
        stage_job = self.stage_job
        stage_job[stage] = job
        if len(stage_job) > KEEP_STAGES:  # the latest stages' jobs: a long application's stay bounded
            del stage_job[next(iter(stage_job))]

    def start(self, key: str, launched: Any, stage: Any, host: Any) -> None:
        """A task's detail: the attempt under ``key`` launched (its job is its stage's)."""
        job = self.stage_job.get(stage)
        old = self.by_key.get(key)
        if old is None:  # a key never seen (every Spark task id): its place is next
            self.running = running = self.running + 1
            if running > self.max_running:
                self.max_running = running
            self.by_key[key] = self.open[key] = TaskSpan(launched, stage, job, host, self.order, key)
            self.order += 1
            return
        if old.ended is not None:
            self.running += 1
            if self.running > self.max_running:
                self.max_running = self.running
            self._unindex(old)
        span = TaskSpan(launched, stage, job, host, old.order, key)  # the same key again: it keeps its place
        self.by_key[key] = self.open[key] = span

    def end(self, key: str, at: Any) -> None:
        """The detail under ``key`` was cleared at ``at``: its attempt ended."""
        span = self.by_key.get(key)
        if span is None or span.ended is not None:
            return
        span.ended = at
        self.running -= 1
        if at is None:
            return  # ended at no time: it stays among the running, as it always was
        del self.open[key]
        if isinstance(at, (int, float)):
            if isinstance(span.launched, (int, float)) and at - span.launched > self.longest:
                self.longest = at - span.launched
            ends = self.ends
            if not ends or at >= ends[-1]:
                ends.append(at)
                self.ended.append(span)
            else:
                i = bisect_right(ends, at)
                ends.insert(i, at)
                self.ended.insert(i, span)

    def _unindex(self, span: TaskSpan) -> None:
        for i, other in enumerate(self.ended):
            if other is span:
                del self.ended[i], self.ends[i]
                return

    def running_at(self, at: float, key: str) -> list[TaskSpan]:
        """The spans (but ``key``'s) launched before ``at`` and not ended before it, in order."""
        mine = self.by_key.get(key)
        found = [s for s in self.open.values() if s is not mine]
        ends = self.ends
        found += [s for s in self.ended[bisect_left(ends, at):bisect_right(ends, at + self.longest)] if s is not mine]
        found = [s for s in found if isinstance(s.launched, (int, float)) and s.launched < at]
        found.sort(key=lambda s: s.order)
        return found

    def prune(self, cut: float | None) -> None:
        """Drop the spans that ended before ``cut`` (every ended one when None)."""
        i = len(self.ended) if cut is None else bisect_left(self.ends, cut)
        if not i:
            return
        by_key = self.by_key
        for span in self.ended[:i]:
            del by_key[span.key]
        del self.ended[:i], self.ends[:i]


class ExecutorSlots:
    """The executors' cores over time: how many slots were there at a moment."""

    def __init__(self) -> None:
        self.cores: dict[str, int] = {}  # executor id -> its cores, while it is alive
        self.changes: list[tuple[float, int]] = []  # (at, cores of the executors then), at each executor event

    def record(self, rec: dict) -> None:
        """An ``executor_event`` mark (``added`` with its ``cores``, or ``removed``)."""
        event = rec.get("executor_event")
        if event == "added" and isinstance(rec.get("cores"), int):
            self.cores[str(rec.get("executor"))] = rec["cores"]
        elif event == "removed":
            self.cores.pop(str(rec.get("executor")), None)
        if event is not None and isinstance(rec.get("at"), (int, float)):
            self.changes.append((rec["at"], sum(self.cores.values())))

    def at(self, moment: float) -> int:
        """The cores of the executors alive at ``moment``.

        0 before any; a lost executor's were gone by then, one added later had none yet.
        """
        i = bisect_right(self.changes, moment, key=lambda change: change[0]) - 1
        return self.changes[i][1] if i >= 0 else 0

    def prune(self, cut: float) -> None:
        """Drop the changes before ``cut`` but the last one (the only one a moment after ``cut`` can read)."""
        i = bisect_right(self.changes, cut, key=lambda change: change[0]) - 1
        if i > 0:
            del self.changes[:i]
