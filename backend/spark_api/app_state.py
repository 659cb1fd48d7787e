"""The state of one Spark application as the History Server's status store holds it: jobs, stage attempts and
their tasks, executors, cached RDDs, the environment.

Plain records, filled by :class:`backend.spark_api.listener.StatusListener` and read by the documents
(``backend/spark_api/documents/``); each field means what the REST field of the same name means (Spark's
``status/api/v1`` classes). Times are epoch milliseconds, ``None`` where Spark has none.
"""

from __future__ import annotations

from typing import Any

from backend.spark_api.metrics import TASK_METRICS
from backend.spark_api.task_table import StageTasks

__all__ = ["AppState", "ExecutorStageSummary", "ExecutorState", "JobState", "RddPartition", "RddState",
           "StageState", "storage_description"]


def _zeros() -> list[int]:
    return [0] * len(TASK_METRICS)


class JobState:
    __slots__ = ("active_stages", "active_tasks", "completed_indices", "completed_stages", "completed_tasks",
                 "completion", "description", "failed_stages", "failed_tasks", "frozen", "job_group", "job_id",
                 "job_tags", "killed_summary", "killed_tasks", "name", "num_tasks", "skipped_stages", "skipped_tasks",
                 "sql_execution_id", "stage_ids", "status", "submission")

    def __init__(self, job_id: int, name: str, description: str | None, submission: int | None,
                 stage_ids: list[int], job_group: str | None, job_tags: list[str], num_tasks: int,
                 sql_execution_id: int | None) -> None:
        self.job_id = job_id
        self.name = name
        self.description = description
        self.submission = submission
        self.completion: int | None = None
        self.stage_ids = stage_ids
        self.job_group = job_group
        self.job_tags = job_tags
        self.num_tasks = num_tasks
        self.sql_execution_id = sql_execution_id
        self.status = "RUNNING"
        self.active_tasks = self.completed_tasks = self.failed_tasks = self.killed_tasks = self.skipped_tasks = 0
        self.completed_indices: set[int] = set()
        self.killed_summary: dict[str, int] = {}
        self.skipped_stages: set[int] = set()
        self.completed_stages: set[int] = set()
        self.active_stages = 0
        self.failed_stages = 0
        # the job's document as Spark's store last wrote it, once the job ended (later changes are not written)
        self.frozen: dict | None = None


class ExecutorStageSummary:
    __slots__ = ("excluded", "failed", "killed", "metrics", "peaks", "succeeded", "task_time")

    def __init__(self) -> None:
        self.task_time = 0
        self.failed = self.succeeded = self.killed = 0
        self.metrics = _zeros()
        self.excluded = False
        self.peaks: list[int] | None = None


class StageState:
    __slots__ = ("accumulables", "active_per_executor", "active_tasks", "attempt_id", "completed_indices",
                 "completed_tasks", "completion", "description", "details", "excluded_executors",
                 "executor_summaries", "failed_tasks", "failure_reason", "first_launch", "job_ids", "jobs",
                 "killed_summary", "killed_tasks", "locality", "mergers_count", "metrics", "name", "num_tasks",
                 "peaks", "pool", "push_enabled", "rdd_ids", "resource_profile_id", "speculation", "stage_id",
                 "status", "submission", "tasks")

    def __init__(self, stage_id: int, attempt_id: int) -> None:
        self.stage_id = stage_id
        self.attempt_id = attempt_id
        self.status = "PENDING"
        self.name = ""
        self.details = ""
        self.num_tasks = 0
        self.rdd_ids: list[int] = []
        self.submission: int | None = None
        self.completion: int | None = None
        self.failure_reason: str | None = None
        self.accumulables: list[dict] = []
        self.resource_profile_id = 0
        self.push_enabled = False
        self.mergers_count = 0
        self.job_ids: set[int] = set()
        self.jobs: list[JobState] = []
        self.description: str | None = None
        self.pool = "default"
        self.active_tasks = self.completed_tasks = self.failed_tasks = self.killed_tasks = 0
        self.completed_indices: set[int] = set()
        self.killed_summary: dict[str, int] = {}
        self.first_launch: int | None = None
        self.locality: dict[str, int] = {}
        self.metrics = _zeros()
        self.executor_summaries: dict[str, ExecutorStageSummary] = {}
        self.active_per_executor: dict[str, int] = {}
        self.excluded_executors: set[str] = set()
        self.peaks: list[int] | None = None
        # speculative attempts: numTasks, numActiveTasks, numCompletedTasks, numFailedTasks, numKilledTasks
        self.speculation = [0, 0, 0, 0, 0]
        self.tasks = StageTasks()

    def executor_summary(self, executor_id: str) -> ExecutorStageSummary:
        s = self.executor_summaries.get(executor_id)
        if s is None:
            s = self.executor_summaries[executor_id] = ExecutorStageSummary()
        return s


class ExecutorState:
    __slots__ = ("active_tasks", "add_time", "attributes", "completed_tasks", "disk_used", "excluded",
                 "excluded_in_stages", "executor_id", "failed_tasks", "host", "host_port", "is_active", "logs",
                 "max_memory", "max_tasks", "memory_used", "peaks", "rdd_blocks", "remove_reason", "remove_time",
                 "resource_profile_id", "resources", "total_cores", "total_duration", "total_gc_time",
                 "total_input_bytes", "total_off_heap", "total_on_heap", "total_shuffle_read", "total_shuffle_write",
                 "total_tasks", "used_off_heap", "used_on_heap")

    def __init__(self, executor_id: str, add_time: int) -> None:
        self.executor_id = executor_id
        self.add_time = add_time
        self.host_port: str | None = None
        self.host: str | None = None
        self.is_active = True
        self.total_cores = 0
        self.remove_time: int | None = None
        self.remove_reason: str | None = None
        self.rdd_blocks = 0
        self.memory_used = self.disk_used = 0
        self.max_tasks = 0
        self.max_memory = 0
        self.total_tasks = self.active_tasks = self.completed_tasks = self.failed_tasks = 0
        self.total_duration = self.total_gc_time = self.total_input_bytes = 0
        self.total_shuffle_read = self.total_shuffle_write = 0
        self.excluded = False
        self.excluded_in_stages: set[int] = set()
        self.logs: dict[str, str] = {}
        self.attributes: dict[str, str] = {}
        self.resources: dict[str, Any] = {}
        self.resource_profile_id = 0
        self.total_on_heap = -1  # unknown until a block manager reports it (old logs never do)
        self.total_off_heap = 0
        self.used_on_heap = self.used_off_heap = 0
        self.peaks: list[int] | None = None

    @property
    def has_memory_info(self) -> bool:
        return self.total_on_heap >= 0

    @property
    def hostname(self) -> str:
        return self.host if self.host is not None else (self.host_port or "").split(":")[0]


def storage_description(use_disk: bool, use_memory: bool, off_heap: bool, deserialized: bool,
                        replication: int) -> str:
    """A storage level as Spark prints it (``StorageLevel.description``)."""
    out = "Disk " if use_disk else ""
    if use_memory:
        out += "Memory (off heap) " if off_heap else "Memory "
    out += "Deserialized " if deserialized else "Serialized "
    return out + f"{replication}x Replicated"


class RddPartition:
    __slots__ = ("block_name", "disk_used", "executors", "memory_used", "storage_level")

    def __init__(self, block_name: str) -> None:
        self.block_name = block_name
        self.executors: list[str] = []
        self.memory_used = 0
        self.disk_used = 0
        self.storage_level = ""


class RddDistribution:
    __slots__ = ("disk_used", "memory_used", "off_heap_used", "on_heap_used")

    def __init__(self) -> None:
        self.memory_used = self.disk_used = self.on_heap_used = self.off_heap_used = 0


class RddState:
    __slots__ = ("disk_used", "distributions", "level", "memory_used", "name", "num_partitions", "off_heap",
                 "partitions", "rdd_id", "storage_level")

    def __init__(self, rdd_id: int, name: str, num_partitions: int, level: tuple[bool, bool, bool, bool, int]) -> None:
        self.rdd_id = rdd_id
        self.name = name
        self.num_partitions = num_partitions
        self.level = level  # (disk, memory, off heap, deserialized, replication) as the application asked
        self.storage_level = storage_description(*level)
        self.off_heap = level[2]
        self.memory_used = self.disk_used = 0
        self.partitions: dict[str, RddPartition] = {}
        self.distributions: dict[str, RddDistribution] = {}

    def distribution(self, executor_id: str) -> RddDistribution:
        d = self.distributions.get(executor_id)
        if d is None:
            d = self.distributions[executor_id] = RddDistribution()
        return d


class AppState:
    """One application attempt."""

    def __init__(self) -> None:
        self.app_id: str | None = None
        self.name = ""
        self.attempt_id: str | None = None
        self.start: int | None = None
        self.end: int | None = None
        self.spark_user = ""
        self.completed = False
        self.exit_code: int | None = None
        self.spark_version = ""
        self.environment: dict[str, list] = {}
        self.resource_profiles: dict[int, dict] = {}
        self.cpus_per_task = 1
        self.jobs: dict[int, JobState] = {}
        self.stages: dict[tuple[int, int], StageState] = {}
        self.executors: dict[str, ExecutorState] = {}
        self.rdds: dict[int, RddState] = {}
        self.processes: dict[str, dict] = {}
        self.sql_starts: dict[int, dict] = {}  # SQL execution id -> its plan's text and ids (``documents/sql``)
        self.last_event_time = 0  # the latest time an event carried: a running task's duration runs to it
