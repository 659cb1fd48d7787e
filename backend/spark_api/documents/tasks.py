"""``/stages/{id}/{attempt}/taskList`` and ``/taskSummary``: Spark's ``TaskData`` and ``TaskMetricDistributions``."""

from __future__ import annotations

from collections.abc import Callable

from backend.spark_api.app_state import AppState, StageState
from backend.spark_api.metrics import metrics_json
from backend.spark_api.quantiles import indexed_quantiles
from backend.spark_api.task_table import TaskRow, getting_result_time, scheduler_delay
from backend.spark_api.times import spark_time

__all__ = ["TASK_SORTS", "TASK_STATUSES", "task_doc", "task_list", "task_summary"]

TASK_STATUSES = ("RUNNING", "KILLED", "FAILED", "SUCCESS", "UNKNOWN")


def _runtime_index(t: TaskRow) -> int:
    """The run time as Spark's store indexes it: a failed or killed attempt's is stored as ``-(v + 1)``, an
    attempt without metrics as -1, so they sort first."""
    m = t.metrics
    if m is None:
        return -1
    return m[2] if t.status == "SUCCESS" else -m[2] - 1


# sortBy -> (key, descending); Spark's TaskSorting names and their short forms
TASK_SORTS: dict[str, tuple[Callable[[TaskRow], int] | None, bool]] = {
    "ID": (None, False), "INCREASING_RUNTIME": (_runtime_index, False), "DECREASING_RUNTIME": (_runtime_index, True),
    "runtime": (_runtime_index, False), "-runtime": (_runtime_index, True)}


def task_doc(t: TaskRow, state: AppState, now: int) -> dict:
    doc: dict = {"taskId": t.task_id, "index": t.index, "attempt": t.attempt, "partitionId": t.partition,
                 "launchTime": spark_time(t.launch)}
    if t.fetch_start > 0:
        doc["resultFetchStart"] = spark_time(t.fetch_start)
    duration = t.duration if t.duration is not None else max(0, now - t.launch)
    doc["duration"] = duration
    doc.update({"executorId": t.executor, "host": t.host, "status": t.status, "taskLocality": t.locality,
                "speculative": t.speculative, "accumulatorUpdates": t.accumulables or []})
    if t.error is not None:
        doc["errorMessage"] = t.error
    if t.metrics is not None:
        doc["taskMetrics"] = metrics_json(t.metrics)
    ex = state.executors.get(t.executor)
    doc["executorLogs"] = dict(ex.logs) if ex is not None else {}
    doc["schedulerDelay"] = scheduler_delay(t, now)
    doc["gettingResultTime"] = getting_result_time(t, now)
    return doc


def task_list(stage: StageState, state: AppState, now: int, offset: int, length: int, sort: str,
              statuses: list[str]) -> list[dict]:
    key, descending = TASK_SORTS[sort]
    rows = stage.tasks.ordered(key, descending)
    if statuses:
        rows = [t for t in rows if t.status in statuses]
    chosen = list(rows)[max(offset, 0):max(offset, 0) + max(length, 0)]
    return [task_doc(t, state, now) for t in chosen]


# (path in the answer, how a successful attempt's value is read: a metrics column, or a derived value's name)
_SUMMARY: tuple[tuple[tuple[str, ...], int | str], ...] = (
    (("duration",), "duration"),
    (("executorDeserializeTime",), 0), (("executorDeserializeCpuTime",), 1), (("executorRunTime",), 2),
    (("executorCpuTime",), 3), (("resultSize",), 4), (("jvmGcTime",), 5), (("resultSerializationTime",), 6),
    (("gettingResultTime",), "gettingResultTime"), (("schedulerDelay",), "schedulerDelay"),
    (("peakExecutionMemory",), 9), (("memoryBytesSpilled",), 7), (("diskBytesSpilled",), 8),
    (("inputMetrics", "bytesRead"), 10), (("inputMetrics", "recordsRead"), 11),
    (("outputMetrics", "bytesWritten"), 12), (("outputMetrics", "recordsWritten"), 13),
    (("shuffleReadMetrics", "readBytes"), "readBytes"), (("shuffleReadMetrics", "readRecords"), 20),
    (("shuffleReadMetrics", "remoteBlocksFetched"), 14), (("shuffleReadMetrics", "localBlocksFetched"), 15),
    (("shuffleReadMetrics", "fetchWaitTime"), 16), (("shuffleReadMetrics", "remoteBytesRead"), 17),
    (("shuffleReadMetrics", "remoteBytesReadToDisk"), 18),
    (("shuffleReadMetrics", "totalBlocksFetched"), "totalBlocksFetched"),
    (("shuffleReadMetrics", "remoteReqsDuration"), 21),
    (("shuffleReadMetrics", "shufflePushReadMetricsDist", "corruptMergedBlockChunks"), 22),
    (("shuffleReadMetrics", "shufflePushReadMetricsDist", "mergedFetchFallbackCount"), 23),
    (("shuffleReadMetrics", "shufflePushReadMetricsDist", "remoteMergedBlocksFetched"), 24),
    (("shuffleReadMetrics", "shufflePushReadMetricsDist", "localMergedBlocksFetched"), 25),
    (("shuffleReadMetrics", "shufflePushReadMetricsDist", "remoteMergedChunksFetched"), 26),
    (("shuffleReadMetrics", "shufflePushReadMetricsDist", "localMergedChunksFetched"), 27),
    (("shuffleReadMetrics", "shufflePushReadMetricsDist", "remoteMergedBytesRead"), 28),
    (("shuffleReadMetrics", "shufflePushReadMetricsDist", "localMergedBytesRead"), 29),
    (("shuffleReadMetrics", "shufflePushReadMetricsDist", "remoteMergedReqsDuration"), 30),
    (("shuffleWriteMetrics", "writeBytes"), 31), (("shuffleWriteMetrics", "writeRecords"), 33),
    (("shuffleWriteMetrics", "writeTime"), 32),
)


def task_summary(stage: StageState, now: int, quantiles: list[float]) -> dict | None:
    """The distributions, as Spark's store computes them: each quantile's place is set by the count of attempts
    that succeeded with metrics, and read from each column's sorted values (a metric's over those attempts; the
    duration and getting-result time over every attempt, the scheduler delay over every one with metrics, as Spark
    indexes them). None when no attempt has succeeded yet."""
    tasks = stage.tasks
    succeeded, measured, every = tasks.summary_rows()
    n = len(succeeded)
    if n == 0:
        return None
    derived: dict[str, tuple[list[TaskRow], Callable[[TaskRow], int]]] = {
        "duration": (every, lambda t: t.duration if t.duration is not None else max(0, now - t.launch)),
        "gettingResultTime": (every, lambda t: getting_result_time(t, now)),
        "schedulerDelay": (measured, lambda t: scheduler_delay(t, now)),
        "readBytes": (succeeded, lambda t: t.metrics[17] + t.metrics[19]),  # type: ignore[index]
        "totalBlocksFetched": (succeeded, lambda t: t.metrics[14] + t.metrics[15]),  # type: ignore[index]
    }
    out: dict = {"quantiles": quantiles}
    for path, how in _SUMMARY:
        name = "/".join(path)
        if isinstance(how, int):
            column = tasks.sorted_column(name, succeeded, how)
        else:
            rows, value = derived[how]
            column = tasks.sorted_column(name, rows, value)
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = indexed_quantiles(column, quantiles, n)
    return out
