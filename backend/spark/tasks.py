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

* skew score: mean absolute deviation over the mean (as Flink's FLIP-418), of task durations and of input records;
* straggler: a successful task at least ``STRAGGLER_FACTOR`` times the median of the stage attempt's other tasks
  and at least ``STRAGGLER_MIN_S`` seconds above it (so sub-second noise in tiny stages is not a finding).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TaskLedger", "StageAggregate", "skew_score", "stragglers", "STRAGGLER_FACTOR", "STRAGGLER_MIN_S",
           "SKEW_FINDING"]

STRAGGLER_FACTOR = 3.0
STRAGGLER_MIN_S = 0.5
SKEW_FINDING = 0.5  # a stage whose duration skew score reaches this (with at least 4 tasks) is a finding
MAX_STRAGGLERS = 5


def skew_score(values: list[float]) -> float:
    """Mean absolute deviation over the mean (0 for an even spread; FLIP-418's data-skew score)."""
    if not values:
        return 0.0
    mean = sum(values) / len(values)
    if mean <= 0:
        return 0.0
    return sum(abs(v - mean) for v in values) / len(values) / mean


def median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    if not n:
        return 0.0
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def median_of_others(durations: list[float], i: int) -> float:
    """The median of every duration but the ``i``-th: what a task is compared with (in a two-task stage the
    plain median would be half the straggler itself)."""
    rest = durations[:i] + durations[i + 1:]
    return median(rest) if rest else durations[i]


def stragglers(tasks: list[dict]) -> list[dict]:
    """The tasks far above the median of their siblings (see the module docstring), longest first, each with
    ``median_others``."""
    durations = [t["duration"] for t in tasks]
    order = sorted(range(len(tasks)), key=lambda i: -durations[i])
    far = []
    for i in order[:MAX_STRAGGLERS]:
        med = median_of_others(durations, i)
        if durations[i] >= STRAGGLER_FACTOR * med and durations[i] - med >= STRAGGLER_MIN_S:
            far.append({**tasks[i], "median_others": med})
    return far


def _quantiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    s = sorted(values)
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
    skew: float
    records_skew: float
    stragglers: list[dict]

    def to_json(self) -> dict:
        return {"stage": self.stage, "attempt": self.attempt, "scope": self.scope, "node": self.node,
                "time": self.time, "tasks": self.tasks, "failed_tasks": self.failed_tasks,
                "duration_s": self.duration_s, "input_records": self.input_records, "skew": round(self.skew, 4),
                "records_skew": round(self.records_skew, 4), "stragglers": self.stragglers}


@dataclass
class _Attempt:
    scope: list
    node: int
    time: Any
    stage: int
    attempt: int
    job: Any
    running: set = field(default_factory=set)  # task ids
    finished: list[tuple] = field(default_factory=list)  # successful: id, index, executor, s, launched, records, bytes
    port: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.port = _port(self.node)
    failed: int = 0


def _port(node: int) -> list:
    return ["out", node, 0]


def _input_records(metrics: dict | None) -> tuple[int, int]:
    m = metrics or {}
    inp = m.get("Input Metrics") or {}
    sh = m.get("Shuffle Read Metrics") or {}
    records = (inp.get("Records Read") or 0) + (sh.get("Total Records Read") or 0)
    size = (inp.get("Bytes Read") or 0) + (sh.get("Remote Bytes Read") or 0) + (sh.get("Local Bytes Read") or 0)
    return records, size


class TaskLedger:
    """Running tasks and stage attempts of one application, as ``detail`` records (see the module docstring)."""

    def __init__(self) -> None:
        self.attempts: dict[tuple[int, int], _Attempt] = {}
        self.completed: dict[tuple[int, int], StageAggregate] = {}
        self.executors: dict[str, dict] = {}

    # --- records -----------------------------------------------------------------------------------------

    @staticmethod
    def _detail(a: _Attempt, key: str, value: dict | None, at: float) -> dict:
        return {"type": "detail", "scope": a.scope, "port": a.port, "time": a.time, "key": key, "at": at,
                "value": value}

    # --- events ------------------------------------------------------------------------------------------

    def executor_added(self, e: dict, at: float) -> list[dict]:
        info = e.get("Executor Info") or {}
        ex = str(e.get("Executor ID"))
        cores = info.get("Total Cores")
        self.executors[ex] = {"executor": ex, "host": info.get("Host"), "cores": cores}
        return [{"type": "mark", "at": at, "label": f"executor {ex} added ({cores} cores)", "executor": ex,
                 "host": info.get("Host"), "cores": cores, "executor_event": "added"}]

    def executor_removed(self, e: dict, at: float) -> list[dict]:
        ex = str(e.get("Executor ID"))
        self.executors.pop(ex, None)
        reason = e.get("Removed Reason") or ""
        return [{"type": "mark", "at": at, "label": f"executor {ex} removed" + (f": {reason}" if reason else ""),
                 "executor": ex, "executor_event": "removed", "reason": reason}]

    def stage_submitted(self, scope: list, node: int, time: Any, stage: int, attempt: int, tasks: int, job: Any,
                        at: float, iteration: int | None = None) -> list[dict]:
        """``iteration``: the loop iteration the stage runs (its time is ``[epoch, iteration]``), None outside one."""
        a = _Attempt(scope, node, time, stage, attempt, job)
        self.attempts[(stage, attempt)] = a
        value = {"kind": "stage", "stage": stage, "attempt": attempt, "job": job, "tasks": tasks, "submitted": at}
        if iteration is not None:
            value["iteration"] = iteration
        return [self._detail(a, f"stage {stage}.{attempt}", value, at)]

    def task_started(self, e: dict, at: float) -> list[dict]:
        key = (e.get("Stage ID"), e.get("Stage Attempt ID", 0))
        a = self.attempts.get(key)  # type: ignore[arg-type]
        if a is None:
            return []
        info = e.get("Task Info") or {}
        tid = info.get("Task ID")
        launched = info.get("Launch Time")
        task = {"kind": "task", "task": tid, "index": info.get("Index"), "attempt": info.get("Attempt"),
                "executor": info.get("Executor ID"), "host": info.get("Host"),
                "launched": launched / 1000.0 if isinstance(launched, (int, float)) else at,
                "speculative": bool(info.get("Speculative", False)), "stage": a.stage, "stage_attempt": a.attempt}
        a.running.add(tid)
        return [{"type": "detail", "scope": a.scope, "port": a.port, "time": a.time, "key": f"task {tid}", "at": at,
                 "value": task}]

    def task_ended(self, e: dict, at: float) -> list[dict]:
        info = e.get("Task Info") or {}
        tid = info.get("Task ID")
        a = self.attempts.get((e.get("Stage ID"), e.get("Stage Attempt ID", 0)))  # type: ignore[arg-type]
        if a is None:
            return []
        running = tid in a.running
        a.running.discard(tid)
        launched = info.get("Launch Time")
        finished = info.get("Finish Time")
        reason = e.get("Task End Reason")
        if (reason is None or reason.get("Reason", "Success") == "Success") and not info.get("Killed") \
                and not info.get("Failed"):
            if type(launched) is int and type(finished) is int and finished >= launched:
                # kept raw while the attempt runs; reduced to an aggregate when it completes
                records, size = _input_records(e.get("Task Metrics"))
                a.finished.append((tid, info.get("Index"), info.get("Executor ID"), (finished - launched) / 1000.0,
                                   launched / 1000.0, records, size))
            end = None
        else:
            a.failed += 1
            end = "TaskKilled" if info.get("Killed") else (reason or {}).get("Reason", "failed")
        if not running:
            return []
        clear = {"type": "detail", "scope": a.scope, "port": a.port, "time": a.time, "key": f"task {tid}", "at": at,
                 "value": None}
        if end is not None:
            clear["end"] = end  # why the attempt ended, when not a success (the executor timeline marks it)
        return [clear]

    @staticmethod
    def fold_into_batch(out: list[dict], after: list[dict]) -> list[dict]:
        """Clears of details that the progress batch just emitted (``out[-1]``) ends ride on it as ``clears``
        instead of records of their own: a task's end is one record, not two. Returns the records left over."""
        batch = out[-1] if out else None
        if batch is None or batch.get("type") != "progress":
            return after
        rest = []
        for rec in after:
            folded = False
            if rec["type"] == "detail" and rec["value"] is None and rec["scope"] == batch["scope"]:
                for u in batch["updates"]:
                    if u[2] < 0 and u[1] == rec["time"] and u[0] == rec["port"]:
                        batch.setdefault("clears", []).append(rec["key"])
                        folded = True
                        break
            if not folded:
                rest.append(rec)
        return rest

    def stage_completed(self, stage: int, attempt: int, at: float) -> list[dict]:
        """The attempt is over: clear its details, keep its aggregate, report stragglers and skew."""
        a = self.attempts.pop((stage, attempt), None)
        if a is None:
            return []
        out = self._clear(a, at)
        agg = self._aggregate(a)
        self.completed[(stage, attempt)] = agg
        med = (agg.duration_s or {}).get("median", 0.0)
        for s in agg.stragglers:
            ratio = s["duration"] / s["median_others"] if s["median_others"] > 0 else float("inf")
            times = f"{ratio:.0f}x" if ratio != float("inf") else "far above"
            out.append({"type": "mark", "at": at, "scope": a.scope, "finding": "straggler",
                        "label": f"straggler in stage {stage}: task {s['task']} (partition {s['index']}) ran "
                                 f"{s['duration']:.2f} s on executor {s['executor']}, {times} the median "
                                 f"{s['median_others']:.2f} s of the others",
                        "node": a.node, "time": a.time, "stage": stage, "attempt": attempt,
                        "task": s["task"], "index": s["index"], "executor": s["executor"],
                        "duration_s": s["duration"], "median_task_s": s["median_others"]})
        if agg.tasks >= 4 and agg.skew >= SKEW_FINDING:
            out.append({"type": "mark", "at": at, "scope": a.scope, "finding": "skew",
                        "label": f"skewed stage {stage}: task duration skew {agg.skew:.2f} over {agg.tasks} tasks "
                                 f"(median {med:.2f} s, max {(agg.duration_s or {}).get('max', 0.0):.2f} s)",
                        "node": a.node, "time": a.time, "stage": stage, "attempt": attempt,
                        "summary": agg.to_json()})
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
    def _aggregate(a: _Attempt) -> StageAggregate:
        finished = []
        for tid, index, executor, duration, launched, records, size in a.finished:
            finished.append({"task": tid, "index": index, "executor": executor, "duration": duration,
                             "launched": launched, "records": records, "bytes": size})
        durations = [t["duration"] for t in finished]
        records_in = [float(t["records"]) for t in finished]
        slow = [{k: t[k] for k in ("task", "index", "executor", "duration", "launched", "records", "median_others")}
                for t in stragglers(finished)]
        return StageAggregate(a.stage, a.attempt, a.scope, a.node, a.time, len(finished), a.failed,
                              _quantiles(durations), _quantiles(records_in) if any(records_in) else None,
                              skew_score(durations), skew_score(records_in), slow)
