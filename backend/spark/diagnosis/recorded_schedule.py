"""What the cores what-if replays: the application's jobs and stage attempts as they were scheduled.

Fed the same records as the session's replay (the Spark model's ``job J started`` / ``job J succeeded`` marks, its
``detail`` records of kind ``stage`` and their clears), it keeps per job its scope, submission and end, and per stage
attempt its job, the stages it read (``parents``), its submission and completion. The task attempts themselves are
the task index's bars (``backend/spark/diagnosis/task_index.py``, which the executor timeline draws), read when a
what-if is asked, not kept twice. Executor cores come from the ``executor_event`` marks (the most alive at once, which
the task index's ``ExecutorSlots``, pruned as blame's open times move on, does not keep), else from the
configuration's ``configured_cores`` mark (a listener attached after the executors were added); the application's
wall time from the earliest and latest record times.

A few numbers per job and per stage attempt: an application of 10,000 jobs costs a few MB. A long-running one
keeps its latest ``KEEP_JOBS`` jobs (and their stage attempts); the older ones count as recorded, unsimulated
(``dropped_jobs``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RecordedSchedule", "JobRecord", "StageRecord", "KEEP_JOBS"]

KEEP_JOBS = 100_000  # jobs kept (the latest), with their stage attempts


@dataclass(slots=True)
class JobRecord:
    job: int
    scope: list
    epoch: Any
    submitted: float
    ended: float | None = None
    stages: list[tuple[int, int]] = field(default_factory=list)  # its stage attempts, in submission order


@dataclass(slots=True)
class StageRecord:
    stage: int
    attempt: int
    job: int
    submitted: float
    parents: tuple[int, ...]
    completed: float | None = None
    order: int = 0  # submission order in the application


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


class RecordedSchedule:
    """Jobs and stage attempts of one application, as recorded (see the module docstring)."""

    def __init__(self) -> None:
        self.jobs: dict[int, JobRecord] = {}
        self.stages: dict[tuple[int, int], StageRecord] = {}
        self.cores: dict[str, int] = {}  # executor -> cores, while it is alive
        self.executor_cores = 0  # the most cores alive at once, as executor events say
        self.configured_cores = 0  # the task slots the configuration says (a ``configured_cores`` mark)
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.dropped_jobs = 0  # the oldest jobs forgotten past KEEP_JOBS
        self._submitted = 0  # stage attempts submitted so far (their order)

    def record(self, rec: dict) -> None:
        at = _number(rec.get("at"))
        if at is not None and at > 0:
            if self.first_at is None or at < self.first_at:
                self.first_at = at
            if self.last_at is None or at > self.last_at:
                self.last_at = at
        kind = rec.get("type")
        if kind == "detail":
            value = rec.get("value")
            if type(value) is dict:
                if value.get("kind") == "stage":
                    self._stage(value, at)
            elif value is None:
                key = rec.get("key")
                if type(key) is str and key.startswith("stage "):
                    self._stage_done(key, at)
        elif kind == "mark":
            if "job" in rec and "epoch" in rec:
                self._job(rec, at)
            elif rec.get("executor_event") is not None:
                self._executor(rec)
            elif type(rec.get("configured_cores")) is int and rec["configured_cores"] > 0:
                self.configured_cores = rec["configured_cores"]

    def _job(self, rec: dict, at: float | None) -> None:
        job = rec.get("job")
        if type(job) is not int or at is None:
            return
        if "status" in rec:  # its end
            j = self.jobs.get(job)
            if j is not None:
                j.ended = at
            return
        scope = rec.get("scope")
        self.jobs[job] = JobRecord(job, list(scope) if isinstance(scope, list) else [], rec.get("epoch"), at)
        if len(self.jobs) > KEEP_JOBS:
            old = self.jobs.pop(next(iter(self.jobs)))
            for key in old.stages:
                self.stages.pop(key, None)
            self.dropped_jobs += 1

    def _stage(self, v: dict, at: float | None) -> None:
        stage, attempt, job = v.get("stage"), v.get("attempt", 0), v.get("job")
        submitted = _number(v.get("submitted"))
        if submitted is None:
            submitted = at
        if type(stage) is not int or type(attempt) is not int or type(job) is not int or submitted is None:
            return
        parents = tuple(p for p in v.get("parents") or () if type(p) is int)
        self._submitted += 1
        self.stages[(stage, attempt)] = StageRecord(stage, attempt, job, submitted, parents, order=self._submitted)
        j = self.jobs.get(job)
        if j is not None:
            j.stages.append((stage, attempt))

    def _stage_done(self, key: str, at: float | None) -> None:
        try:
            stage, attempt = (int(x) for x in key[len("stage "):].split("."))
        except ValueError:
            return
        st = self.stages.get((stage, attempt))
        if st is not None and st.completed is None:
            st.completed = at

    def _executor(self, rec: dict) -> None:
        ex = str(rec.get("executor"))
        if rec.get("executor_event") == "added" and type(rec.get("cores")) is int:
            self.cores[ex] = rec["cores"]
            self.executor_cores = max(self.executor_cores, sum(self.cores.values()))
        elif rec.get("executor_event") == "removed":
            self.cores.pop(ex, None)

    @property
    def peak_cores(self) -> int:
        """The most cores alive at once: the executors', else the configuration's (0: unknown)."""
        return self.executor_cores or self.configured_cores

    @property
    def wall_s(self) -> float:
        """From the first record's time to the last's (0 before two)."""
        if self.first_at is None or self.last_at is None:
            return 0.0
        return self.last_at - self.first_at
