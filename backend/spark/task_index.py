"""Which tasks held executor slots when: the task spans and executor cores blame names a pending task by.

Fed from the Spark model's records: a task's ``detail`` starts its span, its clear (or a progress batch's
``clears``) ends it, a stage's ``detail`` says its job, ``executor_event`` marks add and remove cores.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

__all__ = ["TaskSpan", "TaskSpans", "ExecutorSlots", "KEEP_STAGES"]

KEEP_STAGES = 10_000  # stages whose job the index remembers, for the task spans that name them (the latest)


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
    running ones and those that ended at or after ``at``, not at every span kept for the open times.
    """

    __slots__ = ("by_key", "open", "ended", "ends", "order", "running", "max_running", "stage_job")

    def __init__(self) -> None:
        self.by_key: dict[str, TaskSpan] = {}
        self.open: dict[str, TaskSpan] = {}  # the spans not ended (their end None)
        self.ended: list[TaskSpan] = []  # the spans ended at a number of seconds, by end
        self.ends: list[float] = []
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
        found += [s for s in self.ended[bisect_left(self.ends, at):] if s is not mine]
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
        """The cores of the executors alive at ``moment`` (0 before any: a lost executor's were gone by then, one
        added later had none yet)."""
        i = bisect_right(self.changes, moment, key=lambda change: change[0]) - 1
        return self.changes[i][1] if i >= 0 else 0

    def prune(self, cut: float) -> None:
        """Drop the changes before ``cut`` but the last one (the only one a moment after ``cut`` can read)."""
        i = bisect_right(self.changes, cut, key=lambda change: change[0]) - 1
        if i > 0:
            del self.changes[:i]
