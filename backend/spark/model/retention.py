"""Job and stage retention: Spark's statuses of every job and stage attempt, for the application's whole life.

What Spark's own job list shows is kept for the whole application. A model made with ``retain_jobs=N`` (a server
session's: it lives as long as its application) keeps the full records (``jobs``, ``stages``: region, stages, node,
epoch) of the N jobs that ended last and folds older ones into :class:`StatusTable` s, a byte per job and per
stage attempt; a stage whose record was folded is still known to have completed (a later job listing it skips it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from backend.spark.model.dense_keys import DENSE_SLACK, dense_index
from backend.spark.model.state import ModelState

__all__ = ["SESSION_RETAINED_JOBS", "JobRetention", "StatusTable"]

SESSION_RETAINED_JOBS = 1000  # a session's model keeps this many ended jobs' full records (as spark.ui.retainedJobs)

_STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "PENDING", "ACTIVE", "COMPLETE", "SKIPPED")
_STATUS_CODE = {status: k + 1 for k, status in enumerate(_STATUSES)}  # 0: no entry


class StatusTable:
    """Statuses of finished jobs or stage attempts, a byte each.

    Keyed by job id or by ``(stage id, attempt)``, as ``dense_keys`` stores them: attempt 0 of id ``i`` is byte ``i`` of
    an array; anything else goes to a small dict."""

    def __init__(self) -> None:
        self._codes = bytearray()
        self._others: dict = {}
        self._count = 0

    def __setitem__(self, key: Any, status: str) -> None:
        k, code = dense_index(key), _STATUS_CODE.get(status)
        codes = self._codes
        if k is not None and code is not None and k < len(codes) + DENSE_SLACK:
            if k >= len(codes):
                codes.extend(bytes(k + 1 - len(codes)))
            self._count += codes[k] == 0
            codes[k] = code
            if self._others and self._others.pop(key, None) is not None:
                self._count -= 1  # kept beside the array until it grew past this id: one entry, not two
            return
        if k is not None and k < len(codes) and codes[k]:
            codes[k] = 0  # a status with no code now: it lives beside the array only
            self._count -= 1
        self._count += key not in self._others
        self._others[key] = status

    def get(self, key: Any) -> str | None:
        k = dense_index(key)
        if k is not None and k < len(self._codes) and self._codes[k]:
            return _STATUSES[self._codes[k] - 1]
        return self._others.get(key)

    def __len__(self) -> int:
        return self._count

    def items(self, stage_keys: bool) -> Iterator[tuple[Any, str]]:
        """Every entry; ``stage_keys``: the dense ones as ``(stage id, 0)``."""
        for k, code in enumerate(self._codes):
            if code:
                yield ((k, 0) if stage_keys else k), _STATUSES[code - 1]
        yield from self._others.items()


class JobRetention(ModelState):
    """The model's statuses of jobs and stage attempts, and the folding of ended jobs' records (``retain_jobs``)."""

    def __init__(self, retain_jobs: int | None = None) -> None:
        super().__init__(retain_jobs)
        # (stage id, attempt) -> PENDING/ACTIVE/COMPLETE/FAILED/SKIPPED, as Spark's own status listener keeps it
        self.stage_status: dict[tuple[int, int], str] = {}
        self._more_attempts: dict[int, list[int]] = {}  # stage id -> its attempts but 0 in stage_status (rare)
        self._ended_jobs: deque[int] = deque()  # with retain_jobs: the jobs whose records are kept, oldest first
        self.folded_jobs = StatusTable()  # with retain_jobs: the statuses of the jobs ended before those
        self.folded_stages = StatusTable()  # and of their stage attempts

    def _completed(self, sid: int) -> bool:
        """Whether stage ``sid`` completed (an attempt of it did), its full record kept or folded."""
        st = self.stages.get(sid)
        if st is not None:
            return st.completed_ok
        folded = self.folded_stages
        if not folded:  # nothing folded (a model keeping every job, or early on)
            return False
        return any(folded.get((sid, a)) == "COMPLETE" for a in (0, *self._more_attempts.get(sid, ())))

    def _set_stage_status(self, sid: int, attempt: int, status: str, *, if_absent: bool = False) -> None:
        key = (sid, attempt)
        if if_absent and key not in self.stage_status and self.folded_stages.get(key) is not None:
            return  # a folded job's stage, listed again (its status stays Spark's: what it had)
        if key not in self.stage_status:
            if attempt != 0:
                self._more_attempts.setdefault(sid, []).append(attempt)
        elif if_absent:
            return
        self.stage_status[key] = status

    def _retain_ended(self, job_id: int) -> None:
        """With ``retain_jobs``: keep job ``job_id``'s full record among the latest ended, folding the oldest."""
        if self.retain_jobs is not None:
            self._ended_jobs.append(job_id)
            while len(self._ended_jobs) > self.retain_jobs:
                self._fold_job(self._ended_jobs.popleft())

    def _fold_job(self, job_id: int) -> None:
        """Keep only the statuses of an ended job and of its stages' attempts (``retain_jobs``).

        A long application's model then grows by a few bytes a job."""
        job = self.jobs.pop(job_id, None)
        if job is None:
            return
        self.folded_jobs[job_id] = job.status
        for sid in job.stages:
            st = self.stages.get(sid)
            if st is None or st.job_id != job_id:
                continue  # listed again by a later job (its output reused): that job's record now
            del self.stages[sid]
            for a in (0, *self._more_attempts.get(sid, ())):
                status = self.stage_status.pop((sid, a), None)
                if status is not None:
                    self.folded_stages[(sid, a)] = status
