"""The executor timeline's data: every task attempt as a bar (launch, end, executor, stage, partition, outcome).

The bars are the task index's (``backend/spark/diagnosis/task_index.py``: what blame reads too), served columnar so the
browser draws them without per-task objects. A user reads a bar's partition; its index in the stage attempt's task
set is kept for whoever needs Spark's own numbering. Each bar is split into the phases of Spark's event timeline
(``task_metrics.PHASES``), in milliseconds, from the time split that rides on the task's end; a phase the log does
not measure is null, and so is every phase of a task without one (another engine's log).
"""

from __future__ import annotations

from array import array

from backend.spark.diagnosis.task_index import OUTCOMES, TaskIndex
from backend.spark.diagnosis.task_metrics import PHASES

__all__ = ["TaskTimeline"]


class TaskTimeline:
    """Task bars served columnar, read from a :class:`TaskIndex` (its own, fed by :meth:`record`, unless given)."""

    def __init__(self, index: TaskIndex | None = None) -> None:
        self.index = index if index is not None else TaskIndex()

    def __len__(self) -> int:
        return len(self.index.bars)

    def record(self, rec: dict) -> None:
        """Follow one record (for a timeline whose index nobody else feeds)."""
        self.index.record(rec)

    def to_json(self, start: float | None = None, end: float | None = None, limit: int = 200_000) -> dict:
        """Bars overlapping ``[start, end]`` (all by default), at most ``limit`` (the longest first when cut)."""
        bars = self.index.bars
        rows = list(range(len(bars.launched)))
        if start is not None or end is not None:
            lo = float("-inf") if start is None else start
            hi = float("inf") if end is None else end
            ended = bars.ended
            rows = [i for i in rows if bars.launched[i] <= hi and (ended[i] != ended[i] or ended[i] >= lo)]
        truncated = len(rows) > limit
        if truncated:
            def length(i: int) -> float:
                e = bars.ended[i]
                return (e if e == e else float("inf")) - bars.launched[i]
            rows = sorted(sorted(rows, key=length, reverse=True)[:limit])

        every = len(rows) == len(bars.launched)  # the whole timeline: columns copied whole (C speed), not by row

        def col(a: array) -> list:
            return a.tolist() if every else [a[i] for i in rows]

        if every:
            reasons = {str(i): r for i, r in sorted(bars.reasons.items())}
        else:
            reasons = {str(k): bars.reasons[i] for k, i in enumerate(rows) if i in bars.reasons}
        return {
            "executors": bars.executors,
            "cores": bars.cores,
            "launched": col(bars.launched),
            "ended": [None if e != e else e for e in col(bars.ended)],
            "executor": col(bars.executor),
            "stage": col(bars.stage),
            "index": col(bars.index),
            "partition": col(bars.partition),
            "task": col(bars.task),
            "outcome": [OUTCOMES[o] for o in col(bars.outcome)],
            "reasons": reasons,
            "speculative": [o == 1 for o in col(bars.speculative)],
            "phases": self._phases_json(rows),
            "total": len(bars.launched),
            "truncated": truncated,
        }

    def _phases_json(self, rows: list[int]) -> dict:
        """Each phase's milliseconds per bar (null: not measured), by phase name (``task_metrics.PHASES``)."""
        k = len(PHASES)
        flat = self.index.bars.phases
        return {name.removesuffix("_ms"): [None if (v := flat[i * k + j]) != v else v for i in rows]
                for j, name in enumerate(PHASES)}
