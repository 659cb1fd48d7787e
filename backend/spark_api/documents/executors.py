"""``/executors``, ``/allexecutors`` and ``/allmiscellaneousprocess``: Spark's ``ExecutorSummary`` and
``ProcessSummary``."""

from __future__ import annotations

from backend.spark_api.app_state import AppState, ExecutorState
from backend.spark_api.metrics import peak_json
from backend.spark_api.times import spark_time

__all__ = ["executor_doc", "executor_list", "process_list"]


def executor_doc(ex: ExecutorState) -> dict:
    doc: dict = {
        "id": ex.executor_id, "hostPort": ex.host_port if ex.host_port is not None else ex.host,
        "isActive": ex.is_active, "rddBlocks": ex.rdd_blocks, "memoryUsed": ex.memory_used, "diskUsed": ex.disk_used,
        "totalCores": ex.total_cores, "maxTasks": ex.max_tasks, "activeTasks": ex.active_tasks,
        "failedTasks": ex.failed_tasks, "completedTasks": ex.completed_tasks, "totalTasks": ex.total_tasks,
        "totalDuration": ex.total_duration, "totalGCTime": ex.total_gc_time, "totalInputBytes": ex.total_input_bytes,
        "totalShuffleRead": ex.total_shuffle_read, "totalShuffleWrite": ex.total_shuffle_write,
        "isBlacklisted": ex.excluded, "maxMemory": ex.max_memory, "addTime": spark_time(ex.add_time)}
    if ex.remove_time is not None:
        doc["removeTime"] = spark_time(ex.remove_time)
    if ex.remove_reason is not None:
        doc["removeReason"] = ex.remove_reason
    doc["executorLogs"] = dict(ex.logs)
    if ex.has_memory_info:
        doc["memoryMetrics"] = {"usedOnHeapStorageMemory": ex.used_on_heap,
                                "usedOffHeapStorageMemory": ex.used_off_heap,
                                "totalOnHeapStorageMemory": ex.total_on_heap,
                                "totalOffHeapStorageMemory": ex.total_off_heap}
    doc["blacklistedInStages"] = sorted(ex.excluded_in_stages)
    if ex.peaks is not None:
        doc["peakMemoryMetrics"] = peak_json(ex.peaks)
    doc.update({"attributes": dict(ex.attributes), "resources": dict(ex.resources),
                "resourceProfileId": ex.resource_profile_id, "isExcluded": ex.excluded,
                "excludedInStages": sorted(ex.excluded_in_stages)})
    return doc


def executor_list(state: AppState, active_only: bool) -> list[dict]:
    """``/executors`` (the active ones, ids in reverse order, as Spark's index gives them) or ``/allexecutors``."""
    if active_only:
        return [executor_doc(state.executors[k]) for k in sorted(state.executors, reverse=True)
                if state.executors[k].is_active]
    return [executor_doc(state.executors[k]) for k in sorted(state.executors)]


def process_list(state: AppState) -> list[dict]:
    out = []
    for pid in sorted(state.processes):
        p = dict(state.processes[pid])
        p["addTime"] = spark_time(p["addTime"] or 0)
        out.append(p)
    return out
