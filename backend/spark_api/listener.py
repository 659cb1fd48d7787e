"""Spark's events applied to an :class:`~backend.spark_api.app_state.AppState`, as Spark's own status listener
(``AppStatusListener``, replaying a log) applies them: the same counts, the same moments an entity stops changing,
the same things left out.

:data:`STATUS_EVENTS` names the events read; :func:`status_decoder` decodes only those, whole (every other line of a
log is skipped undecoded). ``StatusListener.feed(event)`` takes one decoded event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import orjson

from backend.eventlog.decode import EventDecoder
from backend.spark.model.event_fields import RAW, fields_decoder
from backend.spark.sql_plan.plans import ADAPTIVE as SQL_ADAPTIVE
from backend.spark.sql_plan.plans import END as SQL_END
from backend.spark.sql_plan.plans import SQL_EVENTS
from backend.spark.sql_plan.plans import START as SQL_START
from backend.spark_api.app_state import AppState, ExecutorState, JobState, RddState, StageState
from backend.spark_api.documents.jobs import job_doc
from backend.spark_api.failures import error_message, killed_reason
from backend.spark_api.metrics import PEAK_METRICS, add_into, peak_update, read_peaks, read_task_metrics
from backend.spark_api.storage_events import block_updated, drop_executor, level_of, unpersist, valid_level
from backend.spark_api.task_table import TaskRow

__all__ = ["STATUS_EVENTS", "StatusListener", "accumulable_infos", "status_decoder"]

_EMPTY: Mapping[str, Any] = {}
_SCHEDULER = "org.apache.spark.scheduler."
_EXCLUSION_KINDS = {  # Spark 2's "blacklist" events and Spark 3's "exclusion" events, both as Spark 4 reads them
    "ExecutorBlacklisted": "executor", "ExecutorExcluded": "executor",
    "ExecutorUnblacklisted": "executor-", "ExecutorUnexcluded": "executor-",
    "NodeBlacklisted": "node", "NodeExcluded": "node", "NodeUnblacklisted": "node-", "NodeUnexcluded": "node-",
    "ExecutorBlacklistedForStage": "executor-stage", "ExecutorExcludedForStage": "executor-stage",
    "NodeBlacklistedForStage": "node-stage", "NodeExcludedForStage": "node-stage",
}
# the events Spark writes under their class's full name (JsonProtocol has no name of its own for them)
_EXCLUSION = {prefix + "SparkListener" + name: kind for name, kind in _EXCLUSION_KINDS.items()
              for prefix in ("", _SCHEDULER)}
_PROCESS_ADDED = "SparkListenerMiscellaneousProcessAdded"


def _value_string(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def accumulable_infos(accums: Any) -> list[dict]:
    """A stage's or task's accumulables as the API lists them: Spark's internal metrics and SQL metrics left out.

    ``accums`` may be the list's JSON bytes (a task's, :data:`RAW`): only decoded when some accumulable in it is not
    internal, which the bytes tell (each marks itself ``"Internal":...`` since Spark 2)."""
    if isinstance(accums, msgspec.Raw):
        raw = bytes(accums)
        if raw == b"[]" or (b'"Internal":' in raw and b'"Internal":false' not in raw):
            return []
        accums = orjson.loads(raw)
    out = []
    for a in accums or ():
        if not isinstance(a, dict) or a.get("Internal") or a.get("Metadata") == "sql":
            continue
        name = a.get("Name")
        if isinstance(name, str) and name.startswith("internal."):
            continue
        info: dict[str, Any] = {"id": a.get("ID"), "name": name}
        update = _value_string(a.get("Update"))
        if update is not None:
            info["update"] = update
        info["value"] = _value_string(a.get("Value"))
        out.append(info)
    return out


_SUCCESS_BYTES = b'{"Reason":"Success"}'
_SUCCESS: Mapping[str, Any] = {"Reason": "Success"}


def _loaded(value: Any) -> Mapping[str, Any]:
    """An object field the decoder left as its bytes (:data:`RAW`), or found whole, as a mapping."""
    if isinstance(value, msgspec.Raw):
        raw = bytes(value)
        if raw == _SUCCESS_BYTES:
            return _SUCCESS
        value = orjson.loads(raw) if raw else None
    return value if isinstance(value, dict) else _EMPTY


def _pairs(v: Any) -> list:
    """An environment section as Spark lists it: its (name, value) pairs in the log's order."""
    pairs = [[k, x] for k, x in v.items()] if isinstance(v, dict) else [list(p) for p in v or ()]
    return sorted(pairs, key=lambda p: p[0]) if pairs and isinstance(pairs[0], list) and len(pairs[0]) == 2 else pairs


def _count_end(entity: StageState | JobState, index: int, completed: int, failed: int, killed_why: str | None) -> None:
    """One task attempt ended, in a stage's or a job's counts (``index``: the task's, packed with its stage's
    for a job)."""
    entity.active_tasks -= 1
    entity.completed_tasks += completed
    if completed:
        entity.completed_indices.add(index)
    entity.failed_tasks += failed
    if killed_why is not None:
        entity.killed_tasks += 1
        entity.killed_summary[killed_why] = entity.killed_summary.get(killed_why, 0) + 1


class StatusListener:
    """Applies events to ``state`` (see the module docstring)."""

    def __init__(self, state: AppState | None = None) -> None:
        self.state = state or AppState()
        self.live_stages: dict[tuple[int, int], StageState] = {}
        self.live_jobs: dict[int, JobState] = {}
        self.live_executors: dict[str, ExecutorState] = {}
        self.dead_executors: dict[str, ExecutorState] = {}
        self.live_tasks: dict[int, tuple[TaskRow, tuple[int, int]]] = {}
        self.live_rdds: dict[int, RddState] = {}
        self._handlers: dict[str, Callable[[dict], None]] = {
            "SparkListenerLogStart": self._log_start,
            "SparkListenerApplicationStart": self._app_start,
            "SparkListenerApplicationEnd": self._app_end,
            "SparkListenerEnvironmentUpdate": self._environment,
            "SparkListenerResourceProfileAdded": self._resource_profile,
            "SparkListenerExecutorAdded": self._executor_added,
            "SparkListenerExecutorRemoved": self._executor_removed,
            "SparkListenerBlockManagerAdded": self._block_manager_added,
            "SparkListenerJobStart": self._job_start,
            "SparkListenerJobEnd": self._job_end,
            "SparkListenerStageSubmitted": self._stage_submitted,
            "SparkListenerStageCompleted": self._stage_completed,
            "SparkListenerTaskStart": self._task_start,
            "SparkListenerTaskGettingResult": self._task_getting_result,
            "SparkListenerTaskEnd": self._task_end,
            "SparkListenerStageExecutorMetrics": self._stage_executor_metrics,
            "SparkListenerUnpersistRDD": self._unpersist,
            "SparkListenerBlockUpdated": self._block_updated,
            SQL_START: self._sql_start,
            SQL_END: self._sql_end,
            SQL_ADAPTIVE: self._sql_adaptive,
            _PROCESS_ADDED: self._process_added,
            _SCHEDULER + _PROCESS_ADDED: self._process_added,
        }
        for name, kind in _EXCLUSION.items():
            self._handlers[name] = self._exclusion(kind)

    def feed(self, event: dict) -> None:
        handler = self._handlers.get(event.get("Event"))  # type: ignore[arg-type]
        if handler is not None:
            handler(event)

    # --- the application ------------------------------------------------------------------------------------------

    def _log_start(self, e: dict) -> None:
        self.state.spark_version = e.get("Spark Version") or ""

    def _app_start(self, e: dict) -> None:
        s = self.state
        s.app_id = e.get("App ID")
        s.name = e.get("App Name") or ""
        s.attempt_id = e.get("App Attempt ID")
        s.start = e.get("Timestamp")
        s.spark_user = e.get("User") or ""
        logs = e.get("Driver Logs")
        driver = self.live_executors.get("driver")
        if logs and driver is not None:
            driver.logs = dict(logs)
            driver.attributes = dict(e.get("Driver Attributes") or {})

    def _app_end(self, e: dict) -> None:
        s = self.state
        s.end = e.get("Timestamp")
        s.completed = True
        s.exit_code = e.get("ExitCode")
        driver = self.live_executors.get("driver")
        if driver is not None and s.end is not None and s.start is not None:
            # Spark 4 shows the driver's time as the application's, and its GC time as its JVM reported it
            driver.total_duration = s.end - s.start
            driver.total_gc_time = driver.peaks[PEAK_METRICS.index("TotalGCTime")] if driver.peaks else 0

    def _environment(self, e: dict) -> None:
        env = {k: _pairs(v) for k, v in e.items() if k != "Event"}
        self.state.environment = env
        for k, v in env.get("Spark Properties", ()):
            if k == "spark.task.cpus":
                try:
                    self.state.cpus_per_task = int(v)
                except ValueError:
                    pass

    def _resource_profile(self, e: dict) -> None:
        rid = e.get("Resource Profile Id", 0)
        self.state.resource_profiles[rid] = {
            "executor": dict(e.get("Executor Resource Requests") or {}),
            "task": dict(e.get("Task Resource Requests") or {})}

    def _sql_start(self, e: dict) -> None:
        """What a SQL execution's start says that the plan model (``backend.spark.sql_plan``) does not keep."""
        eid = e.get("executionId")
        if isinstance(eid, int):
            kept = self.state.sql_starts.setdefault(eid, {})
            kept["planDescription"] = e.get("physicalPlanDescription") or ""
            for key in ("queryId", "rootExecutionId", "modifiedConfigs"):
                if e.get(key) is not None:
                    kept[key] = e[key]

    def _sql_adaptive(self, e: dict) -> None:
        eid = e.get("executionId")
        if isinstance(eid, int) and e.get("physicalPlanDescription") is not None:
            self.state.sql_starts.setdefault(eid, {})["planDescription"] = e["physicalPlanDescription"]

    def _sql_end(self, e: dict) -> None:
        eid = e.get("executionId")
        if isinstance(eid, int) and e.get("errorMessage") is not None:
            self.state.sql_starts.setdefault(eid, {})["errorMessage"] = e["errorMessage"]

    def _process_added(self, e: dict) -> None:
        info = e.get("info") or {}
        pid = str(e.get("processId"))
        self.state.processes[pid] = {"id": pid, "hostPort": info.get("hostPort"), "isActive": True,
                                     "totalCores": info.get("cores", 0), "addTime": e.get("time"),
                                     "processLogs": dict(info.get("logUrlInfo") or {})}

    # --- executors ------------------------------------------------------------------------------------------------

    def _executor(self, executor_id: str, time: int) -> ExecutorState:
        ex = self.live_executors.get(executor_id)
        if ex is None:
            ex = self.live_executors[executor_id] = ExecutorState(executor_id, time)
            self.state.executors[executor_id] = ex
        return ex

    def _max_tasks(self, cores: int, profile_id: int) -> int:
        """How many tasks fit on the executor: its cores over each task's CPUs (its profile's, else
        ``spark.task.cpus``)."""
        cpus = self.state.cpus_per_task
        profile = self.state.resource_profiles.get(profile_id)
        if profile is not None:
            task_cpus = (profile["task"].get("cpus") or {}).get("Amount")
            if task_cpus:
                cpus = int(task_cpus)
        return cores // max(cpus, 1)

    def _executor_added(self, e: dict) -> None:
        info = e.get("Executor Info") or _EMPTY
        ex = self._executor(e.get("Executor ID"), e.get("Timestamp", 0))  # type: ignore[arg-type]
        ex.host = info.get("Host")
        ex.is_active = True
        ex.total_cores = info.get("Total Cores", 0)
        ex.resource_profile_id = info.get("Resource Profile Id", 0)
        ex.max_tasks = self._max_tasks(ex.total_cores, ex.resource_profile_id)
        ex.logs = dict(info.get("Log Urls") or {})
        ex.resources = dict(info.get("Resources") or {})
        ex.attributes = dict(info.get("Attributes") or {})

    def _executor_removed(self, e: dict) -> None:
        ex = self.live_executors.pop(e.get("Executor ID"), None)  # type: ignore[arg-type]
        if ex is None:
            return
        ex.is_active = False
        ex.remove_time = e.get("Timestamp")
        ex.remove_reason = e.get("Removed Reason")
        for rdd in self.live_rdds.values():
            drop_executor(rdd, ex.executor_id)
        if any((s.submission or 0) < (ex.remove_time or 0) for s in self.live_stages.values()):
            self.dead_executors[ex.executor_id] = ex

    def _block_manager_added(self, e: dict) -> None:
        bm = e.get("Block Manager ID") or _EMPTY
        ex = self._executor(bm.get("Executor ID"), e.get("Timestamp", 0))  # type: ignore[arg-type]
        ex.host_port = f"{bm.get('Host')}:{bm.get('Port')}"
        on_heap = e.get("Maximum Onheap Memory")
        if on_heap is not None:
            ex.total_on_heap = on_heap
            ex.total_off_heap = e.get("Maximum Offheap Memory", 0)
            ex.used_on_heap = ex.used_off_heap = 0
        ex.is_active = True
        ex.max_memory = e.get("Maximum Memory", 0)

    def _exclusion(self, kind: str) -> Callable[[dict], None]:
        def handle(e: dict) -> None:
            if kind in ("executor", "executor-"):
                ex = self.live_executors.get(e.get("executorId"))  # type: ignore[arg-type]
                if ex is not None:
                    ex.excluded = kind == "executor"
            elif kind in ("node", "node-"):
                for ex in self.live_executors.values():
                    if ex.hostname == e.get("hostId") and ex.executor_id != "driver":
                        ex.excluded = kind == "node"
            else:
                stage = self.live_stages.get((e.get("stageId"), e.get("stageAttemptId")))  # type: ignore[arg-type]
                if kind == "executor-stage":
                    ids = [e.get("executorId")]
                    hosts = [ex for ex in (self.live_executors.get(ids[0]),) if ex is not None]  # type: ignore[arg-type]
                else:
                    ids = [ex.executor_id for ex in self.live_executors.values() if ex.host == e.get("hostId")]
                    hosts = [ex for ex in self.live_executors.values() if ex.hostname == e.get("hostId")]
                if stage is not None:
                    for executor_id in ids:
                        stage.executor_summary(executor_id).excluded = True  # type: ignore[arg-type]
                    stage.excluded_executors.update(ids)  # type: ignore[arg-type]
                for ex in hosts:
                    ex.excluded_in_stages.add(e.get("stageId"))  # type: ignore[arg-type]
        return handle

    # --- jobs and stages ------------------------------------------------------------------------------------------

    def _stage(self, info: Mapping[str, Any]) -> StageState:
        key: tuple[int, int] = (info.get("Stage ID"), info.get("Stage Attempt ID", 0))  # type: ignore[assignment]
        stage = self.live_stages.get(key)
        if stage is None:
            stage = self.live_stages[key] = StageState(*key)
            self.state.stages[key] = stage
        self._stage_info(stage, info)
        return stage

    @staticmethod
    def _stage_info(stage: StageState, info: Mapping[str, Any]) -> None:
        stage.name = info.get("Stage Name") or ""
        stage.details = info.get("Details") or ""
        stage.num_tasks = info.get("Number of Tasks", 0)
        stage.rdd_ids = [r.get("RDD ID") for r in info.get("RDD Info") or ()]
        stage.submission = info.get("Submission Time")
        stage.completion = info.get("Completion Time")
        stage.failure_reason = info.get("Failure Reason")
        stage.accumulables = accumulable_infos(info.get("Accumulables"))
        stage.resource_profile_id = info.get("Resource Profile Id", 0)
        stage.push_enabled = bool(info.get("Shuffle Push Enabled", False))
        stage.mergers_count = info.get("Shuffle Push Mergers Count", 0)

    def _job_start(self, e: dict) -> None:
        infos = e.get("Stage Infos") or []
        props = e.get("Properties") or _EMPTY
        last = max(infos, key=lambda i: i.get("Stage ID", 0)) if infos else None
        sql = props.get("spark.sql.execution.id")
        tags = props.get("spark.job.tags")
        job = JobState(
            e.get("Job ID"),  # type: ignore[arg-type]
            last.get("Stage Name", "") if last else "",
            props.get("spark.job.description"),
            e.get("Submission Time") if (e.get("Submission Time") or 0) > 0 else None,
            list(e.get("Stage IDs") or []),
            props.get("spark.jobGroup.id"),
            sorted(t for t in tags.split(",") if t) if isinstance(tags, str) else [],
            sum(i.get("Number of Tasks", 0) for i in infos if i.get("Completion Time") is None),
            int(sql) if isinstance(sql, str) and sql.lstrip("-").isdigit() else None)
        self.live_jobs[job.job_id] = job
        self.state.jobs[job.job_id] = job
        for info in infos:
            stage = self._stage(info)
            stage.jobs.append(job)
            stage.job_ids.add(job.job_id)

    def _job_end(self, e: dict) -> None:
        job = self.live_jobs.pop(e.get("Job ID"), None)  # type: ignore[arg-type]
        if job is None:
            return
        for key, stage in list(self.live_stages.items()):
            if stage.stage_id in job.stage_ids and stage.status == "PENDING":
                stage.status = "SKIPPED"
                job.skipped_stages.add(stage.stage_id)
                job.skipped_tasks += stage.num_tasks
                del self.live_stages[key]
        result = (e.get("Job Result") or _EMPTY).get("Result")
        job.status = "SUCCEEDED" if result == "JobSucceeded" else "FAILED"
        t = e.get("Completion Time")
        job.completion = t if t is not None and t > 0 else None
        job.frozen = job_doc(job)

    def _stage_submitted(self, e: dict) -> None:
        info = e.get("Stage Info") or _EMPTY
        stage = self._stage(info)
        stage.status = "ACTIVE"
        props = e.get("Properties") or _EMPTY
        stage.pool = props.get("spark.scheduler.pool") or "default"
        stage.jobs = [j for j in self.live_jobs.values() if stage.stage_id in j.stage_ids]
        stage.job_ids = {j.job_id for j in stage.jobs}
        stage.description = props.get("spark.job.description")
        for job in stage.jobs:
            job.completed_stages.discard(stage.stage_id)
            job.active_stages += 1
        for rdd in info.get("RDD Info") or ():
            level = level_of(rdd.get("Storage Level"))
            rid = rdd.get("RDD ID")
            if valid_level(level) and rid not in self.live_rdds:
                r = self.live_rdds[rid] = RddState(rid, rdd.get("Name") or "", rdd.get("Number of Partitions", 0),
                                                   level)
                self.state.rdds[rid] = r

    def _stage_completed(self, e: dict) -> None:
        info = e.get("Stage Info") or _EMPTY
        key = (info.get("Stage ID"), info.get("Stage Attempt ID", 0))
        stage = self.live_stages.get(key)  # type: ignore[arg-type]
        if stage is not None:
            self._stage_info(stage, info)
            if stage.failure_reason is not None:
                stage.status = "FAILED"
            elif stage.submission is not None:
                stage.status = "COMPLETE"
            else:
                stage.status = "SKIPPED"
            for job in stage.jobs:
                if stage.status == "COMPLETE":
                    job.completed_stages.add(stage.stage_id)
                elif stage.status == "SKIPPED":
                    job.skipped_stages.add(stage.stage_id)
                    job.skipped_tasks += stage.num_tasks
                else:
                    job.failed_stages += 1
                job.active_stages -= 1
            for executor_id in stage.excluded_executors:
                ex = self.live_executors.get(executor_id)
                if ex is not None:
                    ex.excluded_in_stages.discard(stage.stage_id)
            if stage.active_tasks == 0:
                del self.live_stages[key]  # type: ignore[arg-type]
        self.dead_executors = {k: ex for k, ex in self.dead_executors.items()
                               if any((s.submission or 0) < (ex.remove_time or 0) for s in self.live_stages.values())}

    # --- tasks ----------------------------------------------------------------------------------------------------

    def _task_start(self, e: dict) -> None:
        info = e.get("Task Info") or _EMPTY
        key = (e.get("Stage ID"), e.get("Stage Attempt ID", 0))
        task = TaskRow(info.get("Task ID"), info.get("Index", 0), info.get("Attempt", 0),  # type: ignore[arg-type]
                       info.get("Partition ID", -1), info.get("Launch Time", 0), info.get("Executor ID"),  # type: ignore[arg-type]
                       info.get("Host"), info.get("Locality"), bool(info.get("Speculative")))  # type: ignore[arg-type]
        task.fetch_start = info.get("Getting Result Time") or 0
        task.status = "GET RESULT" if task.fetch_start else "RUNNING"
        task.accumulables = accumulable_infos(info.get("Accumulables"))
        self.live_tasks[task.task_id] = (task, key)  # type: ignore[assignment]
        stage = self.live_stages.get(key)  # type: ignore[arg-type]
        if stage is not None:
            stage.tasks.rows[task.task_id] = task
            stage.tasks.version += 1
            stage.active_tasks += 1
            if stage.first_launch is None or task.launch < stage.first_launch:
                stage.first_launch = task.launch
            stage.locality[task.locality] = stage.locality.get(task.locality, 0) + 1
            stage.active_per_executor[task.executor] = stage.active_per_executor.get(task.executor, 0) + 1
            if task.speculative:
                stage.speculation[0] += 1
                stage.speculation[1] += 1
            for job in stage.jobs:
                job.active_tasks += 1
        ex = self.live_executors.get(task.executor)
        if ex is not None:
            ex.active_tasks += 1
            ex.total_tasks += 1

    def _task_getting_result(self, e: dict) -> None:
        info = e.get("Task Info") or _EMPTY
        live = self.live_tasks.get(info.get("Task ID"))  # type: ignore[arg-type]
        if live is not None:
            live[0].fetch_start = info.get("Getting Result Time") or 0
            live[0].status = "GET RESULT"

    def _task_end(self, e: dict) -> None:
        info = e.get("Task Info")
        if not info:
            return
        reason = _loaded(e.get("Task End Reason"))
        kind = reason.get("Reason")
        # Spark 4 reads an end without metrics (an executor lost, an old log's failure) as all zeros
        metrics = read_task_metrics(e.get("Task Metrics") or _EMPTY)
        peaks = read_peaks(_loaded(e.get("Task Executor Metrics")))
        executor = info.get("Executor ID")
        finish = info.get("Finish Time", 0)
        duration = finish - info.get("Launch Time", 0) if finish else 0
        live = self.live_tasks.pop(info.get("Task ID"), None)
        delta = None
        if live is not None:
            task = live[0]
            ended_in = self.state.stages.get(live[1])
            if ended_in is not None:
                ended_in.tasks.version += 1
            task.finish = finish
            task.fetch_start = info.get("Getting Result Time") or 0
            task.duration = duration
            failed, killed = bool(info.get("Failed")), bool(info.get("Killed"))
            task.status = "FAILED" if failed else "KILLED" if killed else "SUCCESS" if finish else "UNKNOWN"
            task.accumulables = accumulable_infos(info.get("Accumulables"))
            task.error = None if kind == "Success" else error_message(reason)
            if metrics is not None:
                delta = metrics if task.metrics is None else tuple(a - b for a, b in zip(metrics, task.metrics,
                                                                                           strict=True))
                task.metrics = metrics
        completed, failed_n, killed_n = (1, 0, 0) if kind == "Success" else \
            (0, 0, 1) if kind in ("TaskKilled", "TaskCommitDenied") else (0, 1, 0)
        key = (e.get("Stage ID"), e.get("Stage Attempt ID", 0))
        stage = self.live_stages.get(key)  # type: ignore[arg-type]
        if stage is not None:
            if delta is not None:
                add_into(stage.metrics, delta)
            index = info.get("Index", 0)
            why = killed_reason(reason) if killed_n else None
            _count_end(stage, index, completed, failed_n, why)
            stage.active_per_executor[executor] = stage.active_per_executor.get(executor, 0) - 1
            if info.get("Speculative"):
                spec = stage.speculation
                spec[1] -= 1
                spec[2] += completed
                spec[3] += failed_n
                spec[4] += killed_n
            remove = stage.active_tasks == 0 and stage.status in ("COMPLETE", "FAILED")
            packed = (stage.stage_id << 32) | index
            for job in stage.jobs:
                _count_end(job, packed, completed, failed_n, why)
                if remove and job.frozen is not None:
                    job.frozen = job_doc(job)  # Spark writes the job again as the stage leaves
            summary = stage.executor_summary(executor)
            summary.task_time += duration
            summary.succeeded += completed
            summary.failed += failed_n
            summary.killed += killed_n
            if delta is not None:
                add_into(summary.metrics, delta)
            stage.peaks = peak_update(stage.peaks, peaks)
            summary.peaks = peak_update(summary.peaks, peaks)
            if remove:
                del self.live_stages[key]  # type: ignore[arg-type]
        ex = self.live_executors.get(executor)
        if ex is not None:
            ex.active_tasks -= 1
            ex.completed_tasks += completed
            ex.failed_tasks += failed_n
            ex.total_duration += duration
            if kind != "Resubmitted" and metrics is not None:
                ex.total_gc_time += metrics[5]
                ex.total_input_bytes += metrics[10]
                ex.total_shuffle_read += metrics[19] + metrics[17]
                ex.total_shuffle_write += metrics[31]
            ex.peaks = peak_update(ex.peaks, peaks)

    def _stage_executor_metrics(self, e: dict) -> None:
        peaks = read_peaks(e.get("Executor Metrics"))
        executor_id = e.get("Executor ID")
        ex = self.live_executors.get(executor_id) or self.dead_executors.get(executor_id)  # type: ignore[arg-type]
        if ex is not None:
            ex.peaks = peak_update(ex.peaks, peaks)
        stage = self.live_stages.get((e.get("Stage ID"), e.get("Stage Attempt ID", 0)))  # type: ignore[arg-type]
        if stage is not None:
            stage.peaks = peak_update(stage.peaks, peaks)
            summary = stage.executor_summary(executor_id)  # type: ignore[arg-type]
            summary.peaks = peak_update(summary.peaks, peaks)

    # --- storage ------------------------------------------------------------------------------------------------

    def _unpersist(self, e: dict) -> None:
        rdd = self.live_rdds.pop(e.get("RDD ID"), None)  # type: ignore[arg-type]
        self.state.rdds.pop(e.get("RDD ID"), None)  # type: ignore[arg-type]
        if rdd is not None:
            unpersist(rdd, self.live_executors)

    def _block_updated(self, e: dict) -> None:
        block_updated(e.get("Block Updated Info") or _EMPTY, self.live_rdds, self.live_executors)


STATUS_EVENTS: tuple[str, ...] = (
    "SparkListenerLogStart", "SparkListenerApplicationStart", "SparkListenerApplicationEnd",
    "SparkListenerEnvironmentUpdate", "SparkListenerResourceProfileAdded", "SparkListenerExecutorAdded",
    "SparkListenerExecutorRemoved", "SparkListenerBlockManagerAdded", "SparkListenerJobStart", "SparkListenerJobEnd",
    "SparkListenerStageSubmitted", "SparkListenerStageCompleted", "SparkListenerTaskStart",
    "SparkListenerTaskGettingResult", "SparkListenerTaskEnd", "SparkListenerStageExecutorMetrics",
    "SparkListenerUnpersistRDD", "SparkListenerBlockUpdated", _PROCESS_ADDED, _SCHEDULER + _PROCESS_ADDED,
    *_EXCLUSION, *SQL_EVENTS,
)


_PUSH = dict.fromkeys(["Corrupt Merged Block Chunks", "Merged Fallback Count", "Merged Remote Blocks Fetched",
                       "Merged Local Blocks Fetched", "Merged Remote Chunks Fetched", "Merged Local Chunks Fetched",
                       "Merged Remote Bytes Read", "Merged Local Bytes Read", "Merged Remote Requests Duration"])
_TASK_INFO = dict.fromkeys(["Task ID", "Index", "Attempt", "Partition ID", "Launch Time", "Executor ID", "Host",
                            "Locality", "Speculative", "Getting Result Time", "Finish Time", "Failed", "Killed"])
_TASK_INFO["Accumulables"] = RAW  # mostly Spark's internal metrics and SQL metrics: decoded only if others are there
# The fields read of the two events that are most of a log (two per task); every other event is read whole.
_TASK_READ: dict[str, dict[str, Any]] = {
    "SparkListenerTaskStart": {"Stage ID": None, "Stage Attempt ID": None, "Task Info": _TASK_INFO},
    "SparkListenerTaskEnd": {
        "Stage ID": None, "Stage Attempt ID": None, "Task Info": _TASK_INFO, "Task End Reason": RAW,
        "Task Executor Metrics": RAW,
        "Task Metrics": {
            **dict.fromkeys(["Executor Deserialize Time", "Executor Deserialize CPU Time", "Executor Run Time",
                             "Executor CPU Time", "Result Size", "JVM GC Time", "Result Serialization Time",
                             "Memory Bytes Spilled", "Disk Bytes Spilled", "Peak Execution Memory"]),
            "Input Metrics": dict.fromkeys(["Bytes Read", "Records Read"]),
            "Output Metrics": dict.fromkeys(["Bytes Written", "Records Written"]),
            "Shuffle Read Metrics": {
                **dict.fromkeys(["Remote Blocks Fetched", "Local Blocks Fetched", "Fetch Wait Time",
                                 "Remote Bytes Read", "Remote Bytes Read To Disk", "Local Bytes Read",
                                 "Total Records Read", "Remote Requests Duration"]),
                "Shuffle Push Read Metrics": _PUSH},
            "Shuffle Write Metrics": dict.fromkeys(["Shuffle Bytes Written", "Shuffle Write Time",
                                                    "Shuffle Records Written"])}},
}


def status_decoder() -> EventDecoder:
    """Decodes the events :class:`StatusListener` reads (task events narrowed to the fields it reads, typed as the
    Spark model's are); skips every other line."""
    return fields_decoder(_TASK_READ, whole=[k for k in STATUS_EVENTS if k not in _TASK_READ])
