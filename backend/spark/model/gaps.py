"""Gaps: Spark events that cannot follow from the ones before unless some were lost.

Spark drops events when a listener lags (its listener-bus queues are bounded), a socket can break, a log can be cut
short; the event stream itself says so, in logs written by anyone. The model notices events about things it never
heard of; this module adds what needs a memory of the stream: a task of a stage attempt whose submission was never
seen, a first attempt that succeeds with fewer successful task ends than tasks, a successful job end with a stage
attempt that never completed, and a stream that ends with a job that never ended although the application did.

Each is reported once as a reason; what to do with it is the caller's (the model's ``note_gap``). Memory: a set of
task indices per running stage attempt, released at its end, and a byte per stage listed and per attempt finished
(``dense_keys.KeySet``).
"""

from __future__ import annotations

from backend.spark.model.dense_keys import KeySet
from backend.spark.model.event_shape import event_problem

__all__ = ["GapDetector"]


class GapDetector:
    """Feed it every event, in order (``check``); at the end of the stream call ``finish``."""

    def __init__(self) -> None:
        self.listed = KeySet()  # stage ids some job listed
        self.jobs: dict[int, list[int]] = {}  # running job -> its stage ids
        self.running: dict[tuple[int, int], tuple[int, set]] = {}  # (stage, attempt) -> (tasks, successful indices)
        self.finished = KeySet()  # (stage, attempt) of the attempts that completed or whose end was reported lost
        self.app_ended = False
        self.reasons: list[str] = []

    def check(self, event: dict) -> str | None:
        """The reason this event shows a gap, or None. A damaged event is the model's to report (it skips it)."""
        if event_problem(event) is not None:
            return None
        kind = event.get("Event")
        if kind == "SparkListenerTaskEnd":
            return self._task_end(event)
        if kind == "SparkListenerStageSubmitted":
            info = event.get("Stage Info") or {}
            key = (info["Stage ID"], info.get("Stage Attempt ID", 0))
            self.running[key] = (info.get("Number of Tasks") or 0, set())
            self.finished.discard(key)
        elif kind == "SparkListenerStageCompleted":
            return self._stage_completed(event.get("Stage Info") or {})
        elif kind == "SparkListenerJobStart":
            ids = [i.get("Stage ID") for i in event.get("Stage Infos") or []]
            if not ids:
                ids = list(event.get("Stage IDs") or [])
            self.jobs[event["Job ID"]] = ids
            self.listed.update(ids)
        elif kind == "SparkListenerJobEnd":
            return self._job_end(event)
        elif kind == "SparkListenerApplicationEnd":
            self.app_ended = True
        return None

    def finish(self) -> list[str]:
        """Reasons visible only at the end of the stream."""
        if not self.app_ended:
            return []
        return [self._note(f"job {j} never ended (its end event was lost)") for j in sorted(self.jobs, key=str)]

    def _note(self, reason: str) -> str:
        self.reasons.append(reason)
        return reason

    def _task_end(self, e: dict) -> str | None:
        sid, attempt = e["Stage ID"], e.get("Stage Attempt ID", 0)
        key = (sid, attempt)
        entry = self.running.get(key)
        if entry is None:
            if key in self.finished or sid not in self.listed:
                return None  # a late duplicate; or a stage no job listed, which the model reports itself
            self.finished.add(key)  # once per attempt
            return self._note(f"a task of stage {sid} attempt {attempt} ended, but the stage's submission was lost")
        info = e.get("Task Info") or {}
        reason = (e.get("Task End Reason") or {}).get("Reason", "Success")
        if reason == "Success" and not info.get("Killed") and not info.get("Failed"):
            entry[1].add(info.get("Index"))
        return None

    def _stage_completed(self, info: dict) -> str | None:
        key = (info["Stage ID"], info.get("Stage Attempt ID", 0))
        entry = self.running.pop(key, None)
        self.finished.add(key)
        if entry is None or info.get("Failure Reason") or key[1] != 0:
            return None
        tasks, done = entry
        if len(done) < tasks:
            return self._note(f"stage {key[0]} completed with {tasks - len(done)} of its {tasks} task ends lost")
        return None

    def _job_end(self, e: dict) -> str | None:
        stages = self.jobs.pop(e["Job ID"], None)
        if stages is None:
            return None  # never started: the model reports it
        if (e.get("Job Result") or {}).get("Result", "JobSucceeded") != "JobSucceeded":
            return None
        open_ = sorted(k for k in self.running if k[0] in set(stages))
        if open_:
            for k in open_:
                self.running.pop(k, None)
                self.finished.add(k)
            sid, attempt = open_[0]
            return self._note(f"job {e.get('Job ID')} succeeded but the completion of stage {sid} "
                              f"attempt {attempt} was lost")
        return None
