"""Findings that say what to do: a stage attempt's or the application's metrics against the thresholds table.

Each finding is a timeline mark with a ``finding`` (its kind), as stragglers and skewed stages are
(``backend/spark/diagnosis/tasks.py``): ``label`` says what was found, ``recommendation`` what to change in one
sentence naming the Spark setting, ``metric`` the figures it was found from, ``threshold`` which threshold fired (name,
value, source: ``backend/spark/diagnosis/thresholds.py``), plus ``stage``, ``attempt``, ``node``, ``time``, ``batch``
(the micro-batch id; absent outside a streaming query) so the page opens its moment. docs/findings.md lists every kind
with its rule.

Per stage attempt, when it completes (:meth:`Diagnosis.stage_completed`): ``gc``, ``spill``, ``fetch-wait``, ``too-
few-partitions``, ``tiny-tasks``, ``task-failures``, the Python ones (``python-udf``, ``python-worker-startup``,
``cpu-idle-tasks``: ``python_findings``), and for each straggler ``data-skew`` (it read far more than the median) or
``slow-executor`` (it read about as much, and its executor's other tasks were slow too). Per application, at its end
(:meth:`Diagnosis.application_ended`): ``idle-cores`` (core-seconds the executors offered that no task used) and
``driver-bound`` (wall time with no task running). A log without its application's end gets no application findings.

Memory: a running stage attempt keeps its finished tasks' splits (as the task ledger keeps their durations);
the application keeps counters only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backend.spark.diagnosis.python_findings import PYTHON_RULES
from backend.spark.diagnosis.task_metrics import AT, format_bytes, summarize
from backend.spark.diagnosis.thresholds import Thresholds

__all__ = ["Diagnosis", "StageRun", "STAGE_RULES"]

_DURATION, _HEAP = AT["duration_ms"], AT["peak_jvm_heap"]
KEEP_PYTHON_STAGES = 1_000  # stages known to run Python functions through the RDD API (the latest)


@dataclass
class StageRun:
    """What a stage attempt's rules read: where it is, its finished tasks' splits and executors, its failures."""

    scope: list
    node: int
    time: Any
    stage: int
    attempt: int
    batch: Any
    submitted: float
    slots: int | None  # cores of the executors alive at its submission
    tasks: int  # Spark's task count for the attempt
    name: str = ""  # its operator's name (its findings' ``stage_name``)
    splits: list[list] = field(default_factory=list)  # the split of each successful task (task_metrics)
    executors: list[Any] = field(default_factory=list)  # beside each split, as the log names it
    failures: list[dict] = field(default_factory=list)  # tasks.task_failure of each failed attempt
    failed_ms: float = 0.0  # the failed and killed attempts' run, launch to finish
    peak_heap: dict[Any, int] = field(default_factory=dict)  # executor -> peak JVM heap seen in this attempt

    def succeeded(self, executor: Any, b: list) -> None:
        """A successful task's split (``task_metrics.split``): what the rules read when the attempt completes."""
        self.splits.append(b)
        self.executors.append(executor)
        heap = b[_HEAP]
        if heap is not None and heap > self.peak_heap.get(executor, 0):
            self.peak_heap[executor] = heap

    def failed(self, b: list, failure: dict) -> None:
        """A failed or killed task attempt: its run counts as used cores; a killed one (a lost speculative race, a
        cancelled stage) is no failure."""
        if b[_DURATION] is not None:
            self.failed_ms += b[_DURATION]
        if failure.get("reason") != "TaskKilled":
            self.failures.append(failure)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"




def _median(values: list[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


class Diagnosis:
    """The findings of one application (see the module docstring); the task ledger feeds it."""

    def __init__(self, thresholds: Thresholds) -> None:
        self.t = thresholds
        self.runs: dict[tuple[int, int], StageRun] = {}
        self.cores: dict[str, tuple[int, float]] = {}  # live executor -> (cores, added at)
        self.offered_core_s = 0.0  # by executors already removed
        self.used_core_s = 0.0  # task attempts' run, launch to finish
        self.running = 0
        self.busy_since: float | None = None
        self.busy_s = 0.0  # wall time with at least one task running
        self.first_at: float | None = None
        # the plan operator declaring a SQL metric: (stage, accumulator id) -> its name (set by the model when it
        # follows SQL plans: plan_naming.PlanNaming.operator_of)
        self.operator_of: Callable[[int, int], str | None] | None = None
        self.python_stages: dict[int, None] = {}  # stages whose RDDs run Python functions (PythonRDD)

    # --- what the ledger says ----------------------------------------------------------------------------------

    def seen(self, at: float) -> None:
        """A timed event: the application's start until its ``SparkListenerApplicationStart`` says otherwise."""
        if self.first_at is None and at > 0:
            self.first_at = at

    def application_started(self, at: float) -> None:
        """The application's start, whatever was logged before it (the driver's executor registers first).

        A listener attached at run time sees the start (synthesised) but not that executor: both must count from
        here to agree."""
        if at > 0:
            self.first_at = at

    def executor_added(self, executor: str, cores: Any, at: float) -> None:
        self.seen(at)
        if type(cores) is int and cores > 0:
            self.cores[executor] = (cores, at)

    def executor_removed(self, executor: str, at: float) -> None:
        gone = self.cores.pop(executor, None)
        if gone is not None:
            self.offered_core_s += gone[0] * max(0.0, at - gone[1])

    def python_rdd(self, stage: int) -> None:
        """Stage ``stage`` runs Python functions through the RDD API (its job's stage info lists a PythonRDD)."""
        self.python_stages[stage] = None
        if len(self.python_stages) > KEEP_PYTHON_STAGES:
            del self.python_stages[next(iter(self.python_stages))]

    def runs_python(self, stage: int) -> bool:
        return stage in self.python_stages

    def slots(self) -> int | None:
        return sum(c for c, _ in self.cores.values()) or None

    def stage_submitted(self, scope: list, node: int, time: Any, stage: int, attempt: int, tasks: int, batch: Any,
                        at: float, name: str = "") -> StageRun:
        """The attempt's record, which its tasks' ends fill (``StageRun.succeeded``, ``failed``)."""
        self.seen(at)
        run = self.runs[(stage, attempt)] = StageRun(scope, node, time, stage, attempt, batch, at, self.slots(),
                                                     tasks, name)
        return run

    def task_started(self, at: float) -> None:
        """A task began running: the application is busy from here while any task runs."""
        if not self.running:
            self.busy_since = at
        self.running += 1

    def task_stopped(self, at: float) -> None:
        """A running task ended (whatever its outcome)."""
        if self.running:
            self.running -= 1
            if not self.running and self.busy_since is not None:
                self.busy_s += max(0.0, at - self.busy_since)
                self.busy_since = None

    def executor_metrics(self, stage: int, attempt: int, executor: Any, metrics: dict) -> None:
        """A ``SparkListenerStageExecutorMetrics``: the executor's peaks over the stage attempt."""
        run = self.runs.get((stage, attempt))
        heap = metrics.get("JVMHeapMemory")
        if run is not None and type(heap) is int and heap > run.peak_heap.get(executor, 0):
            run.peak_heap[executor] = heap

    def stage_summary(self, stage: int, attempt: int) -> dict | None:
        """The attempt's finished tasks' sums and quantiles (``task_metrics.summarize``) and peak JVM heap per
        executor (None when the log has none)."""
        run = self.runs.get((stage, attempt))
        if run is None:
            return None
        out = summarize(run.splits)
        out["peak_jvm_heap"] = {str(ex): heap for ex, heap in run.peak_heap.items()} or None
        return out

    def stage_completed(self, stage: int, attempt: int, at: float, stragglers: list[dict],
                        summary: dict | None) -> list[dict]:
        """The attempt's findings (marks), and it is forgotten."""
        run = self.runs.pop((stage, attempt), None)
        if run is None:
            return []
        if summary is None:
            summary = summarize(run.splits)
        self.used_core_s += (summary["sums"].get("duration_ms", 0) + run.failed_ms) / 1000.0
        out: list[dict] = []
        for rule in STAGE_RULES:
            out += rule(self, run, summary, at)
        out += self._stragglers(run, stragglers, at)
        return out

    def application_ended(self, at: float) -> list[dict]:
        """The application's findings: idle cores and driver-bound time."""
        for ex in list(self.cores):
            self.executor_removed(ex, at)
        if self.busy_since is not None:
            self.busy_s += max(0.0, at - self.busy_since)
            self.busy_since = None
        out: list[dict] = []
        t = self.t
        offered, used = self.offered_core_s, self.used_core_s
        if offered > 0:
            idle = max(0.0, offered - used)
            ratio, idle_h = idle / offered, idle / 3600.0
            if ratio >= t["idle_cores.ratio"] and idle_h >= t["idle_cores.min_core_hours"]:
                out.append(self._mark(
                    "idle-cores", None, at,
                    f"idle cores: {_pct(ratio)} of the {offered / 3600:.3f} core-hours the executors offered ran "
                    f"no task ({idle_h:.3f} core-hours idle)",
                    "Offer fewer cores, or let Spark give idle executors back: enable dynamic allocation "
                    "(spark.dynamicAllocation.enabled) or lower spark.executor.instances / spark.cores.max.",
                    {"offered_core_hours": round(offered / 3600, 6), "used_core_hours": round(used / 3600, 6),
                     "idle_core_hours": round(idle_h, 6), "idle_ratio": round(ratio, 4)},
                    "idle_cores.ratio", "idle_cores.min_core_hours"))
        if self.first_at is not None and at > self.first_at:
            wall = at - self.first_at
            idle_wall = max(0.0, wall - self.busy_s)
            ratio = idle_wall / wall
            cores = sum(c for c, _ in self.cores.values())
            if ratio >= t["driver_bound.ratio"] and idle_wall >= t["driver_bound.min_s"]:
                out.append(self._mark(
                    "driver-bound", None, at,
                    f"driver-bound: no task ran for {idle_wall:.1f} s of the application's {wall:.1f} s "
                    f"({_pct(ratio)}): the driver's own work (planning, collecting, Python between jobs)",
                    "Shorten the driver's part: collect less to the driver, run independent jobs from several "
                    "threads (spark.scheduler.mode=FAIR), and keep executors only while jobs run "
                    "(spark.dynamicAllocation.enabled).",
                    {"wall_s": round(wall, 3), "no_task_s": round(idle_wall, 3), "ratio": round(ratio, 4),
                     "cores_at_end": cores or None},
                    "driver_bound.ratio", "driver_bound.min_s"))
        return out

    # --- marks -------------------------------------------------------------------------------------------------

    def mark(self, kind: str, run: StageRun | None, at: float, text: str, recommendation: str, metric: dict,
             fired: str, *also: str) -> dict:
        """A finding's mark, for the rules of other modules (``python_findings``): :meth:`_mark`."""
        return self._mark(kind, run, at, text, recommendation, metric, fired, *also)

    def _mark(self, kind: str, run: StageRun | None, at: float, text: str, recommendation: str, metric: dict,
              fired: str, *also: str) -> dict:
        threshold = self.t.fired(fired, *also)
        mark = {"type": "mark", "at": at, "label": text, "finding": kind, "recommendation": recommendation,
                "metric": metric, "threshold": threshold, "stage": None, "attempt": None}
        if run is not None:
            mark.update(scope=run.scope, node=run.node, time=run.time, stage=run.stage, attempt=run.attempt,
                        stage_name=run.name)
            if run.batch is not None:  # a micro-batch's (a mark's batch is always an id: blame reads it)
                mark["batch"] = run.batch
        return mark

    def _stragglers(self, run: StageRun, stragglers: list[dict], at: float) -> list[dict]:
        """Data skew or a slow executor, for each straggler the ledger found."""
        out: list[dict] = []
        if not stragglers or not run.splits:
            return out
        factor = self.t["data_skew.read_factor"]
        records = [(b[AT["input_records"]] or 0) + (b[AT["shuffle_records_read"]] or 0) for b in run.splits]
        nbytes = [(b[AT["input_bytes"]] or 0) + (b[AT["shuffle_local_bytes"]] or 0)
                  + (b[AT["shuffle_remote_bytes"]] or 0) for b in run.splits]
        med_records, med_bytes = _median(records), _median(nbytes)
        slow_named: set[str] = set()  # one slow-executor finding per executor and attempt (its slowest straggler)
        for s in stragglers:
            where = f"stage {run.stage}" + (f" attempt {run.attempt}" if run.attempt else "")
            r_ratio = s["records"] / med_records if med_records > 0 else None
            b_ratio = s["bytes"] / med_bytes if med_bytes > 0 else None
            read = max((x for x in (r_ratio, b_ratio) if x is not None), default=None)
            base = {"task": s["task"], "partition": s["partition"], "executor": s["executor"],
                    "duration_s": s["duration"], "median_task_s": s["median_others"], "records": s["records"],
                    "median_records": med_records, "bytes": s["bytes"], "median_bytes": med_bytes,
                    "read_ratio": None if read is None else round(read, 3)}
            if read is not None and read >= factor:
                m = self._mark(
                    "data-skew", run, at,
                    f"data skew in {where}: task {s['task']} (partition {s['partition']}) read {read:.1f}x the "
                    f"median ({s['records']:,} records, {format_bytes(s['bytes'])}) and ran {s['duration']:.2f} s "
                    f"against a median of {s['median_others']:.2f} s",
                    "Spread the hot key: let adaptive execution split skewed partitions "
                    "(spark.sql.adaptive.skewJoin.enabled), salt the key, or raise spark.sql.shuffle.partitions.",
                    base, "data_skew.read_factor")
                out.append({**m, "task": s["task"], "partition": s["partition"], "executor": s["executor"]})
                continue
            ex = str(s["executor"])
            if ex in slow_named:
                continue
            mine = [b[_DURATION] for b, e in zip(run.splits, run.executors, strict=True)
                    if str(e) == ex and b[_DURATION] is not None]
            theirs = [b[_DURATION] for b, e in zip(run.splits, run.executors, strict=True)
                      if str(e) != ex and b[_DURATION] is not None]
            if len(mine) < 2 or not theirs:  # the straggler alone on its executor, or one executor: not telling
                continue
            mine_without = sorted(mine)
            mine_without.remove(max(mine_without))  # its other tasks
            slow = _median(mine_without) / max(_median(theirs), 1e-9)
            if slow >= self.t["slow_executor.factor"]:
                m = self._mark(
                    "slow-executor", run, at,
                    f"slow executor {ex} in {where}: task {s['task']} read about the median and ran "
                    f"{s['duration']:.2f} s; the executor's other tasks took {slow:.1f}x the other executors'",
                    f"Let Spark run a copy elsewhere (spark.speculation=true) and check executor {ex}'s host; "
                    "spark.excludeOnFailure.enabled keeps failing executors out.",
                    {**base, "executor_slowdown": round(slow, 3)}, "slow_executor.factor")
                slow_named.add(ex)
                out.append({**m, "task": s["task"], "partition": s["partition"], "executor": s["executor"]})
        return out


# --- the stage attempt's rules: each returns its marks (add a rule here and its thresholds to the table) ----------

def _gc(d: Diagnosis, run: StageRun, summary: dict, at: float) -> list[dict]:
    sums = summary["sums"]
    gc, rt = sums.get("gc_ms"), sums.get("run_ms")
    if gc is None or not rt:
        return []
    ratio = gc / rt
    if ratio < d.t["gc.ratio"] or gc / 1000 < d.t["gc.min_s"]:
        return []
    return [d._mark("gc", run, at,
                    f"GC pressure in stage {run.stage}: its tasks spent {gc / 1000:.2f} s of {rt / 1000:.2f} s run "
                    f"time ({_pct(ratio)}) in JVM garbage collection",
                    "Give each task more heap: raise spark.executor.memory (spark.driver.memory in local mode) or "
                    "lower spark.executor.cores, and cache less or serialized (spark.memory.storageFraction).",
                    {"gc_s": round(gc / 1000, 3), "run_s": round(rt / 1000, 3), "ratio": round(ratio, 4),
                     "tasks": summary["tasks"]}, "gc.ratio", "gc.min_s")]


def _spill(d: Diagnosis, run: StageRun, summary: dict, at: float) -> list[dict]:
    sums = summary["sums"]
    mem, disk = sums.get("memory_spilled"), sums.get("disk_spilled")
    if mem is None or mem < d.t["spill.min_bytes"]:
        return []
    n, spilled = summary["tasks"], summary["tasks_spilled"] or 0
    return [d._mark("spill", run, at,
                    f"spill in stage {run.stage}: {spilled} of {n} tasks spilled {format_bytes(mem)} from memory"
                    + (f" ({format_bytes(disk)} written to disk)" if disk else ""),
                    "Give each task more execution memory (spark.executor.memory, spark.memory.fraction) or smaller "
                    "partitions (raise spark.sql.shuffle.partitions or the RDD's numPartitions).",
                    {"memory_spilled": mem, "disk_spilled": disk, "tasks_spilled": spilled, "tasks": n,
                     "share_spilled": round(spilled / n, 4) if n else None}, "spill.min_bytes")]


def _fetch_wait(d: Diagnosis, run: StageRun, summary: dict, at: float) -> list[dict]:
    sums = summary["sums"]
    wait, rt = sums.get("fetch_wait_ms"), sums.get("run_ms")
    if wait is None or not rt:
        return []
    ratio = wait / rt
    if ratio < d.t["fetch_wait.ratio"] or wait / 1000 < d.t["fetch_wait.min_s"]:
        return []
    return [d._mark("fetch-wait", run, at,
                    f"shuffle fetch wait in stage {run.stage}: its tasks waited {wait / 1000:.2f} s for shuffle "
                    f"blocks, {_pct(ratio)} of their {rt / 1000:.2f} s run time",
                    "Fetch shuffle blocks sooner: raise spark.reducer.maxSizeInFlight and "
                    "spark.shuffle.io.numConnectionsPerPeer, or shuffle fewer bytes (filter and aggregate first).",
                    {"fetch_wait_s": round(wait / 1000, 3), "run_s": round(rt / 1000, 3), "ratio": round(ratio, 4)},
                    "fetch_wait.ratio", "fetch_wait.min_s")]


def _too_few_partitions(d: Diagnosis, run: StageRun, summary: dict, at: float) -> list[dict]:
    """Fewer tasks than cores on a long stage (cores idle all along), or long tasks on fewer than a few per core (the
    last wave's cores idle for a whole task, where smaller tasks would cost little more scheduling)."""
    slots, n = run.slots, run.tasks
    wall = at - run.submitted
    if slots is None or not n:
        return []
    metric = {"tasks": n, "cores": slots, "stage_s": round(wall, 3)}
    recommendation = (f"Split the work into at least {slots} partitions: raise spark.sql.shuffle.partitions or "
                      "spark.default.parallelism, or repartition() before this stage.")
    if n < slots and wall >= d.t["too_few_partitions.min_stage_s"]:
        return [d._mark("too-few-partitions", run, at,
                        f"too few partitions in stage {run.stage}: {n} tasks for {slots} cores, so {slots - n} cores "
                        f"idled for its {wall:.1f} s", recommendation, metric, "too_few_partitions.min_stage_s")]
    q = summary["quantiles"].get("duration_ms")
    per_core = n / slots
    if q is None or per_core >= d.t["too_few_partitions.tasks_per_core"] or (
            q["median"] / 1000 < d.t["too_few_partitions.min_task_s"]):
        return []
    want = int(slots * d.t["too_few_partitions.tasks_per_core"])
    return [d._mark("too-few-partitions", run, at,
                    f"too few partitions in stage {run.stage}: {n} tasks of {q['median'] / 1000:.0f} s (median) for "
                    f"{slots} cores, {per_core:.1f} a core: the last wave leaves cores idle for a whole task",
                    f"Split the work into about {want} smaller partitions (a few per core): raise "
                    "spark.sql.shuffle.partitions or spark.default.parallelism, or repartition() before this stage.",
                    {**metric, "tasks_per_core": round(per_core, 3), "median_task_s": round(q["median"] / 1000, 3)},
                    "too_few_partitions.tasks_per_core", "too_few_partitions.min_task_s")]


def _tiny_tasks(d: Diagnosis, run: StageRun, summary: dict, at: float) -> list[dict]:
    q = summary["quantiles"].get("duration_ms")
    n = summary["tasks"]
    if q is None or n <= d.t["tiny_tasks.min_tasks"] or q["median"] / 1000 >= d.t["tiny_tasks.max_median_s"]:
        return []
    return [d._mark("tiny-tasks", run, at,
                    f"too many tiny tasks in stage {run.stage}: {n:,} tasks with a median of "
                    f"{q['median'] / 1000:.3f} s each, mostly scheduling overhead",
                    "Use fewer, larger partitions: lower spark.sql.shuffle.partitions (or let "
                    "spark.sql.adaptive.coalescePartitions.enabled merge them), or raise "
                    "spark.sql.files.maxPartitionBytes for file scans.",
                    {"tasks": n, "median_task_s": round(q["median"] / 1000, 4)},
                    "tiny_tasks.min_tasks", "tiny_tasks.max_median_s")]


def _failure_advice(failure: dict) -> tuple[str, str]:
    """(what failed, in a few words; what to raise) for one task failure."""
    reason = failure.get("reason") or "failed"
    text = " ".join(str(failure.get(k) or "") for k in ("message", "executor_removed"))
    if "OutOfMemoryError" in text:
        return "out of memory", ("Raise spark.executor.memory (spark.driver.memory in local mode), or lower "
                                 "spark.executor.cores so fewer tasks share the heap.")
    if "exceeding memory limits" in text or "memoryOverhead" in text or "exit code 137" in text:
        return "killed for exceeding memory", ("Raise spark.executor.memoryOverhead (off-heap and Python memory "
                                               "count against the container).")
    if reason == "ExecutorLostFailure":
        return "executor lost", ("Find why the executor died in its log; if the cluster manager killed it, raise "
                                 "spark.executor.memoryOverhead, and keep spark.task.maxFailures above 1.")
    if reason == "FetchFailed":
        return "shuffle output lost", ("Keep map outputs when executors go: enable the external shuffle service "
                                       "(spark.shuffle.service.enabled) or spark.decommission.enabled, and raise "
                                       "spark.shuffle.io.maxRetries for flaky networks.")
    return reason, ("Fix the exception the tasks threw; raising spark.task.maxFailures only hides a flaky "
                    "failure.")


def _task_failures(d: Diagnosis, run: StageRun, summary: dict, at: float) -> list[dict]:
    failures = run.failures
    if len(failures) < d.t["task_failures.min_failed"] or not failures:
        return []
    kinds: dict[str, list[dict]] = {}
    for f in failures:
        kinds.setdefault(_failure_advice(f)[0], []).append(f)
    what, listed = max(kinds.items(), key=lambda kv: len(kv[1]))
    first = listed[-1]
    advice = _failure_advice(first)[1]
    n = len(failures)
    tasks = run.tasks or 1
    return [d._mark("task-failures", run, at,
                    f"{n} failed task attempt{'s' if n > 1 else ''} in stage {run.stage}"
                    + (f" attempt {run.attempt}" if run.attempt else "")
                    + f": {what} ({first.get('reason')}: {first.get('message') or 'no message'})",
                    advice,
                    {"failed": n, "tasks": run.tasks, "failure_rate": round(n / tasks, 4),
                     "reasons": {k: len(v) for k, v in kinds.items()}, "latest": first},
                    "task_failures.min_failed")]


STAGE_RULES: list[Callable[[Diagnosis, StageRun, dict, float], list[dict]]] = [
    _gc, _spill, _fetch_wait, _too_few_partitions, _tiny_tasks, _task_failures, *PYTHON_RULES]
