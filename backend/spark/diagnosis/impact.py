"""What each finding cost: the seconds by which its job, micro-batch or application would have ended earlier had
the cause been absent (``impact_s``), or null with ``impact_note`` saying why no honest estimate exists.

Each kind states its estimate in one place, :data:`ESTIMATES` (a new kind adds its function there; a kind without
one gets a null impact that says so). The estimates read two things flowscope already computes:

* blame's critical path (``backend/spark/diagnosis/blame.py``): a straggler on its time's path carries blame's
  what-if (``ends_earlier_s``: the time walked again with the task at its stage's median);
* the cores what-if's scheduler (:class:`~backend.spark.diagnosis.cores_whatif.Rescheduler`): the recorded tasks
  rescheduled at the recorded cores with the stage attempt's tasks changed as the finding's cause absent would
  change them (GC time taken out, the recommended partition count, ...), and the time's end compared.

docs/findings.md says per kind what the estimate assumes and what it cannot see.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from backend.spark.diagnosis.cores_whatif import Rescheduler
from backend.spark.diagnosis.recorded_schedule import RecordedSchedule
from backend.spark.diagnosis.task_index import OUTCOMES
from backend.spark.diagnosis.task_metrics import PHASES
from backend.spark.diagnosis.task_timeline import TaskTimeline
from backend.spark.diagnosis.tasks import median

__all__ = ["Impact", "ImpactContext", "ESTIMATES", "estimate"]

_OVERHEAD = ("scheduler_delay_ms", "deserialize_ms", "result_serialization_ms", "getting_result_ms")
_FAILED = {OUTCOMES.index("failed"), OUTCOMES.index("killed")}


@dataclass(frozen=True)
class Impact:
    """A finding's impact: ``seconds`` (None: no honest estimate), ``note`` (how it was estimated, or why not),
    ``core_hours`` (core-hours wasted, for idle cores)."""

    seconds: float | None
    note: str
    core_hours: float | None = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {"impact_s": None if self.seconds is None else round(self.seconds, 6),
                               "impact_note": self.note}
        if self.core_hours is not None:
            out["core_hours"] = round(self.core_hours, 6)
        return out


class StageTasks:
    """A stage attempt's recorded tasks as the rescheduler runs them: durations (s), and per task its phases,
    executor, task id and outcome from the task bars."""

    def __init__(self, rescheduler: Rescheduler, stage: int, attempt: int, rows: list[int]) -> None:
        self.rows = rows
        self.durations = rescheduler.durations(stage, attempt)
        self.bars = rescheduler.bars

    def phase_s(self, name: str) -> list[float]:
        """A phase's seconds per task (0 where the log does not measure it)."""
        k, j, flat = len(PHASES), PHASES.index(name), self.bars.phases
        return [0.0 if (v := flat[r * k + j]) != v else v / 1000.0 for r in self.rows]

    def executors(self) -> list[str]:
        names = self.bars.executors
        return [names[self.bars.executor[r]] for r in self.rows]

    def tasks(self) -> list[int]:
        return [self.bars.task[r] for r in self.rows]

    def failed(self) -> list[bool]:
        return [self.bars.outcome[r] in _FAILED for r in self.rows]


class ImpactContext:
    """What the estimates read: the blamed times (which time a job belongs to, blame's task segments) and the
    rescheduler (made when first asked for)."""

    def __init__(self, schedule: RecordedSchedule, timeline: TaskTimeline, times: Iterable[Any]) -> None:
        self.schedule, self.timeline = schedule, timeline
        self._rescheduler: Rescheduler | None = None
        self.time_of_job: dict[int, Any] = {}
        self.on_path: dict[Any, dict] = {}  # task id -> its task segment on its time's critical path
        self.blamed_jobs: set[int] = set()
        for t in times:
            for j in t.job_ids:
                self.time_of_job[j] = t
                self.blamed_jobs.add(j)
            for seg in t.blame:
                holder = seg.get("holder") or {}
                if seg.get("kind") in ("task", "recompute") and holder.get("task") is not None:
                    self.on_path[holder["task"]] = seg

    @property
    def rescheduler(self) -> Rescheduler:
        if self._rescheduler is None:
            self._rescheduler = Rescheduler(self.schedule, self.timeline)
        return self._rescheduler

    def job_of(self, mark: dict) -> int | None:
        st = self.schedule.stages.get((mark.get("stage"), mark.get("attempt") or 0))  # type: ignore[arg-type]
        return st.job if st is not None else None

    def time_jobs(self, job: int) -> list[int]:
        t = self.time_of_job.get(job)
        return list(t.job_ids) if t is not None and t.job_ids else [job]

    def where(self, job: int) -> str:
        t = self.time_of_job.get(job)
        if t is not None and t.batch_id is not None:
            return f"micro-batch {t.batch_id}"
        return f"job {job}" if t is None or len(t.job_ids) <= 1 else f"jobs {', '.join(map(str, t.job_ids[:3]))}"

    def stage_tasks(self, mark: dict) -> StageTasks | None:
        stage, attempt = mark.get("stage"), mark.get("attempt") or 0
        if type(stage) is not int:
            return None
        rows = self.rescheduler.task_rows(stage, attempt)
        return None if not rows else StageTasks(self.rescheduler, stage, attempt, rows)

    def rescheduled(self, mark: dict, change: Callable[[StageTasks], list[float] | None], how: str) -> Impact:
        """The stage attempt's tasks changed by ``change`` (None: no change applies), rescheduled: how much
        earlier its time ends. ``how`` says what was changed, for the note."""
        tasks = self.stage_tasks(mark)
        job = self.job_of(mark)
        if tasks is None or job is None:
            return Impact(None, "its stage's tasks are not in the recorded schedule (a job the log or the session "
                                "no longer keeps), so nothing can be rescheduled")
        durations = change(tasks)
        if durations is None:
            return Impact(None, f"no estimate: {how}")
        gain = self.rescheduler.gain(self.time_jobs(job), mark["stage"], mark.get("attempt") or 0, durations)
        if gain is None:
            return Impact(None, "its stage is not in the recorded schedule")
        return Impact(gain, f"{self.where(job)} rescheduled at the recorded cores with {how}")


# --- the estimate of each kind ----------------------------------------------------------------------------------


def _straggler(mark: dict, ctx: ImpactContext) -> Impact:
    """Blame's what-if when the task is on its time's critical path (the path walked again with the task at its
    stage's median: another task may take over); 0 when its time was blamed and the task is not on the path;
    else the task at the median of the others, rescheduled."""
    task = mark.get("task")
    seg = ctx.on_path.get(task)
    what_if = (seg.get("holder") or {}).get("what_if") if seg is not None else None
    if what_if and isinstance(what_if.get("ends_earlier_s"), (int, float)):
        return Impact(what_if["ends_earlier_s"], f"blame's what-if: task {task} at its stage's median "
                                                 f"({what_if.get('task_at_median_s')} s) on the critical path")
    job = ctx.job_of(mark)
    if seg is None and job is not None and job in ctx.blamed_jobs:
        return Impact(0.0, f"task {task} is not on its time's critical path: other work held the time as long")
    others_s = mark.get("median_task_s")
    if others_s is None:
        others_s = (mark.get("metric") or {}).get("median_task_s")

    def at_median(t: StageTasks) -> list[float] | None:
        if others_s is None:
            return None
        return [min(d, others_s) if tid == task else d for d, tid in zip(t.durations, t.tasks(), strict=True)]

    return ctx.rescheduled(mark, at_median, f"task {task} at the median of the others")


def _skew(mark: dict, ctx: ImpactContext) -> Impact:
    """Every task of the stage at most its stage's median (an even spread of the same work), rescheduled."""
    def evened(t: StageTasks) -> list[float]:
        med = median(t.durations)
        return [min(d, med) for d in t.durations]

    return ctx.rescheduled(mark, evened, "every task at most the stage's median")


def _slow_executor(mark: dict, ctx: ImpactContext) -> Impact:
    """The slow executor's tasks of the stage at most the median of the other executors' tasks, rescheduled."""
    slow = str(mark.get("executor"))

    def elsewhere(t: StageTasks) -> list[float] | None:
        executors = t.executors()
        others = [d for d, ex in zip(t.durations, executors, strict=True) if ex != slow]
        if not others:
            return None
        med = median(others)
        return [min(d, med) if ex == slow else d for d, ex in zip(t.durations, executors, strict=True)]

    return ctx.rescheduled(mark, elsewhere, f"executor {slow}'s tasks at the other executors' median")


def _less(phase: str, what: str) -> Callable[[dict, ImpactContext], Impact]:
    def estimate_(mark: dict, ctx: ImpactContext) -> Impact:
        def without(t: StageTasks) -> list[float]:
            return [max(0.0, d - p) for d, p in zip(t.durations, t.phase_s(phase), strict=True)]

        return ctx.rescheduled(mark, without, f"each task's {what} taken out")

    estimate_.__doc__ = f"Each task of the stage without its {what}, rescheduled (an upper bound: the cause shrinks " \
                        "rather than vanishes)."
    return estimate_


def _spill(mark: dict, ctx: ImpactContext) -> Impact:
    """None: Spark records the bytes a task spilled, not the seconds spilling took."""
    return Impact(None, "Spark records the bytes spilled, not the time spilling took (it is inside the tasks' run "
                        "time, with the sort or aggregation that spilled)")


def _too_few_partitions(mark: dict, ctx: ImpactContext) -> Impact:
    """The stage's task time split evenly into the partition count the finding recommends, rescheduled."""
    metric, threshold = mark.get("metric") or {}, mark.get("threshold") or {}
    cores = metric.get("cores")
    if type(cores) is not int or cores < 1:
        return Impact(None, "the cores at the stage's submission are unknown")
    per_core = threshold.get("value") if threshold.get("name") == "too_few_partitions.tasks_per_core" else None
    want = max(1, int(cores * per_core) if isinstance(per_core, (int, float)) else cores)

    def split(t: StageTasks) -> list[float]:
        total = sum(t.durations)
        return [total / want] * want

    return ctx.rescheduled(mark, split, f"its task time split evenly into {want} partitions")


def _tiny_tasks(mark: dict, ctx: ImpactContext) -> Impact:
    """Tasks merged until the median reaches ``tiny_tasks.max_median_s``: each merged task pays one task's
    overhead (scheduler delay, deserialization, result serialization and fetch: the median's) instead of many."""
    limit = next((t.get("value") for t in [mark.get("threshold") or {}, *(mark.get("threshold") or {}).get("and", [])]
                  if t.get("name") == "tiny_tasks.max_median_s"), None)

    def merged(t: StageTasks) -> list[float] | None:
        n = len(t.durations)
        med = median(t.durations)
        if not n or not limit or med <= 0:
            return None
        k = max(1, math.ceil(limit / med))
        overhead = [sum(x) for x in zip(*(t.phase_s(p) for p in _OVERHEAD), strict=True)]
        work = sum(max(0.0, d - o) for d, o in zip(t.durations, overhead, strict=True))
        merged_n = max(1, math.ceil(n / k))
        return [work / merged_n + median(overhead)] * merged_n

    return ctx.rescheduled(mark, merged, f"tasks merged until the median task takes {limit} s")


def _task_failures(mark: dict, ctx: ImpactContext) -> Impact:
    """The stage attempt's failed and killed task attempts never run (their retries still do), rescheduled."""
    def succeeded(t: StageTasks) -> list[float]:
        return [d for d, bad in zip(t.durations, t.failed(), strict=True) if not bad]

    return ctx.rescheduled(mark, succeeded, "its failed task attempts not run")


def _idle_cores(mark: dict, ctx: ImpactContext) -> Impact:
    """0 s: the application would not have ended earlier with fewer cores; the waste is in core-hours."""
    hours = (mark.get("metric") or {}).get("idle_core_hours")
    return Impact(0.0, "giving idle cores back ends nothing earlier: they cost core-hours, not time",
                  hours if isinstance(hours, (int, float)) else None)


def _driver_bound(mark: dict, ctx: ImpactContext) -> Impact:
    """The application's wall time with no task running: the driver alone held it then."""
    s = (mark.get("metric") or {}).get("no_task_s")
    if not isinstance(s, (int, float)):
        return Impact(None, "the time with no task running is unknown")
    return Impact(s, "the application's wall time with no task running: only the driver's work held it")


def _plan(why: str) -> Callable[[dict, ImpactContext], Impact]:
    def estimate_(mark: dict, ctx: ImpactContext) -> Impact:
        return Impact(None, why)

    estimate_.__doc__ = f"None: {why}."
    return estimate_


_NO_PLAN_TIME = "the plan's metrics do not say how long the other plan would take"
def _longest_task(what: str) -> Callable[[dict, ImpactContext], Impact]:
    def estimate_(mark: dict, ctx: ImpactContext) -> Impact:
        seconds = mark.get("impact_s")  # the finding's own figure (python_findings): its longest task's share
        if not isinstance(seconds, (int, float)):
            return Impact(None, mark.get("impact_note") or f"the stage's longest task has no {what} in the log")
        return Impact(float(seconds), f"the stage's longest task's {what}: the stage ends that much sooner at most, "
                                      "its time too if the stage is on its critical path")

    estimate_.__doc__ = f"The {what} of the stage's longest task (the finding's own figure), not rescheduled."
    return estimate_


ESTIMATES: dict[str, Callable[[dict, ImpactContext], Impact]] = {
    "straggler": _straggler,
    "data-skew": _straggler,
    "skew": _skew,
    "slow-executor": _slow_executor,
    "gc": _less("gc_ms", "JVM GC time"),
    "fetch-wait": _less("fetch_wait_ms", "shuffle fetch wait"),
    "spill": _spill,
    "too-few-partitions": _too_few_partitions,
    "tiny-tasks": _tiny_tasks,
    "task-failures": _task_failures,
    "idle-cores": _idle_cores,
    "driver-bound": _driver_bound,
    "python-udf": _less("python_ms", "Python worker time"),
    "python-worker-startup": _longest_task("time starting Python workers"),
    "cpu-idle-tasks": _longest_task("run time neither its JVM CPU nor a measured wait explains"),
    "small_files": _plan(f"{_NO_PLAN_TIME} (opening many small files is inside the scan's time)"),
    "broadcastable_sort_merge_join": _plan(f"{_NO_PLAN_TIME} (a broadcast join instead of the shuffle and sort)"),
    "large_broadcast": _plan(f"{_NO_PLAN_TIME} (a shuffled join instead of the broadcast)"),
    "large_cross_join": _plan(f"{_NO_PLAN_TIME} (an equi-join instead of comparing every pair)"),
    "partitioned_scan_without_filter": _plan(f"{_NO_PLAN_TIME} (the pruned scan reads partitions not recorded)"),
    "long_filter": _plan(f"{_NO_PLAN_TIME} (a shorter condition)"),
}


def estimate(mark: dict, ctx: ImpactContext) -> Impact:
    """A finding mark's impact, by its kind's estimate (a kind without one: null, saying so)."""
    kind = mark.get("finding")
    fn = ESTIMATES.get(kind) if isinstance(kind, str) else None
    if fn is None:
        return Impact(None, f"no impact estimate for {kind} findings yet")
    return fn(mark, ctx)
