"""The executor timeline's data: every task attempt as a bar (launch, end, executor, stage, partition, outcome).

A bar's ``partition`` is the partition the task computes (the detail's ``partition``: Spark's ``Partition ID``);
``index`` is its position in its stage attempt's task set, which differs from the partition in a resubmitted
attempt (it recomputes only the lost partitions, indexed 0, 1, ...). A user reads the partition; the index is kept
for whoever needs Spark's own numbering.

Fed the same records as the session's replay: a ``detail`` entry of kind ``task`` opens a bar, its clear (a
``detail`` with value null, or a progress batch's ``clears``) closes it; a clear that names an ``end`` reason other
than success (the Spark model writes the task end's reason for failed and killed attempts) marks the bar: killed
(``TaskKilled``: a speculative copy that lost, a task of a cancelled stage) or failed, the reason kept beside it.
Executors come from the ``executor_event`` marks. Bars are kept in typed arrays (about 40 bytes a task: a
100,000-task application costs ~4 MB) and served columnar, so the browser draws them without per-task objects.

A bar is split into the phases of Spark's event timeline (``task_metrics.PHASES``: scheduler delay,
deserialization, shuffle fetch wait, computing, GC, shuffle write, result serialization, getting the result), in
milliseconds, from the task's time split that rides on its end (``metrics`` on the batch's cause or on the clear);
a phase the log does not measure is null, and so is every phase of a task without one (another engine's log).
Computing is the run time less fetch wait, shuffle write and GC (never below 0).
"""

from __future__ import annotations

from array import array
from typing import Any

from backend.spark.task_metrics import AT, PHASES

__all__ = ["TaskTimeline"]

_OK, _FAILED, _RUNNING, _KILLED = 0, 1, 2, 3
_OUTCOMES = ("ok", "failed", "running", "killed")
_NAN = float("nan")
_NO_PHASES = (_NAN,) * len(PHASES)


_RUN, _WRITE_NS = AT["run_ms"], AT["shuffle_write_ns"]
_FETCH, _GC = AT["fetch_wait_ms"], AT["gc_ms"]
_PHASE_AT = [AT.get(name, -1) for name in PHASES]  # -1: computing, or shuffle write (in ns in the split)
_COMPUTE = PHASES.index("compute_ms")


def _phases(m: Any) -> tuple:
    """A task's time split (``task_metrics.split``: the array its end carries) as its bar's phases, ``PHASES`` in
    order (NaN: absent)."""
    if type(m) is not list and type(m) is not tuple or len(m) <= _RUN:
        return _NO_PHASES
    write_ns = m[_WRITE_NS]
    write = write_ns * 1e-6 if isinstance(write_ns, (int, float)) else None
    out = []
    for k, i in enumerate(_PHASE_AT):
        if i >= 0:
            v = m[i]
        elif k == _COMPUTE:
            run = m[_RUN]
            v = None if run is None else max(0.0, run - (m[_FETCH] or 0) - (m[_GC] or 0) - (write or 0))
        else:
            v = write
        out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else _NAN)
    return tuple(out)


def _int(v: Any) -> int:
    return v if type(v) is int else -1


class TaskTimeline:
    """Task bars (see the module docstring)."""

    def __init__(self) -> None:
        self.launched = array("d")
        self.ended = array("d")
        self.executor = array("i")
        self.stage = array("i")
        self.index = array("i")
        self.partition = array("i")
        self.task = array("q")
        self.outcome = array("b")
        self.speculative = array("b")
        self.phases = array("d")  # len(PHASES) per bar, in ms (NaN: not measured)
        self.executors: list[str] = []
        self.cores: dict[str, int] = {}
        self._executor_ids: dict[str, int] = {}
        self._open: dict[str, int] = {}  # detail key -> row, while running
        self.reasons: dict[int, str] = {}  # row -> why a failed or killed attempt ended

    def __len__(self) -> int:
        return len(self.launched)

    def record(self, rec: dict) -> None:
        kind = rec.get("type")
        if kind == "detail":
            key = rec.get("key")
            value = rec.get("value")
            if type(value) is dict and value.get("kind") == "task" and type(key) is str:
                self._start(key, value)
            elif value is None and key in self._open:
                self._end(key, rec.get("at"), rec.get("end"), rec.get("metrics"))
        elif kind == "progress":
            clears = rec.get("clears")
            if clears:
                cause = rec.get("cause")
                metrics = cause.get("metrics") if type(cause) is dict else None
                for key in clears:
                    if key in self._open:
                        self._end(key, rec.get("at"), None, metrics)
        elif kind == "mark" and rec.get("executor_event") == "added":
            ex = str(rec.get("executor"))
            self._executor(ex)
            if isinstance(rec.get("cores"), int):
                self.cores[ex] = rec["cores"]

    def _executor(self, ex: str) -> int:
        i = self._executor_ids.get(ex)
        if i is None:
            i = self._executor_ids[ex] = len(self.executors)
            self.executors.append(ex)
        return i

    def _start(self, key: str, v: dict) -> None:
        launched = v.get("launched")
        if not isinstance(launched, (int, float)):
            return
        self._open[key] = len(self.launched)
        self.launched.append(float(launched))
        self.ended.append(float("nan"))
        self.executor.append(self._executor(str(v.get("executor"))))
        self.stage.append(_int(v.get("stage")))
        self.index.append(_int(v.get("index")))
        self.partition.append(_int(v.get("partition", v.get("index"))))
        self.task.append(_int(v.get("task")))
        self.outcome.append(_RUNNING)
        self.speculative.append(1 if v.get("speculative") else 0)
        self.phases.extend(_NO_PHASES)

    def _end(self, key: str, at: Any, reason: Any, metrics: Any = None) -> None:
        row = self._open.pop(key)
        if metrics is not None:
            k = len(PHASES)
            self.phases[row * k:(row + 1) * k] = array("d", _phases(metrics))
        if isinstance(at, (int, float)):
            self.ended[row] = float(at)
        if reason in (None, "Success"):
            self.outcome[row] = _OK
        else:
            self.outcome[row] = _KILLED if reason == "TaskKilled" else _FAILED
            self.reasons[row] = str(reason)

    def to_json(self, start: float | None = None, end: float | None = None, limit: int = 200_000) -> dict:
        """Bars overlapping ``[start, end]`` (all by default), at most ``limit`` (the longest first when cut)."""
        rows = list(range(len(self.launched)))
        if start is not None or end is not None:
            lo = float("-inf") if start is None else start
            hi = float("inf") if end is None else end
            ended = self.ended
            rows = [i for i in rows if self.launched[i] <= hi and (ended[i] != ended[i] or ended[i] >= lo)]
        truncated = len(rows) > limit
        if truncated:
            def length(i: int) -> float:
                e = self.ended[i]
                return (e if e == e else float("inf")) - self.launched[i]
            rows = sorted(sorted(rows, key=length, reverse=True)[:limit])

        every = len(rows) == len(self.launched)  # the whole timeline: columns copied whole (C speed), not by row

        def col(a: array) -> list:
            return a.tolist() if every else [a[i] for i in rows]

        if every:
            reasons = {str(i): r for i, r in sorted(self.reasons.items())}
        else:
            reasons = {str(k): self.reasons[i] for k, i in enumerate(rows) if i in self.reasons}
        return {
            "executors": self.executors,
            "cores": self.cores,
            "launched": col(self.launched),
            "ended": [None if e != e else e for e in col(self.ended)],
            "executor": col(self.executor),
            "stage": col(self.stage),
            "index": col(self.index),
            "partition": col(self.partition),
            "task": col(self.task),
            "outcome": [_OUTCOMES[o] for o in col(self.outcome)],
            "reasons": reasons,
            "speculative": [o == 1 for o in col(self.speculative)],
            "phases": self._phases_json(rows),
            "total": len(self.launched),
            "truncated": truncated,
        }

    def _phases_json(self, rows: list[int]) -> dict:
        """Each phase's milliseconds per bar (null: not measured), by phase name."""
        k = len(PHASES)
        flat = self.phases
        return {name.removesuffix("_ms"): [None if (v := flat[i * k + j]) != v else v for i in rows]
                for j, name in enumerate(PHASES)}
