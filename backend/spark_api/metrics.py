"""A task's metrics and an executor's peak memory metrics: read from events, added up, and named as the API names
them.

A task's metrics are one tuple of :data:`TASK_METRICS` integers (a missing field is 0, as Spark reads an old log);
a stage's, a job's or an executor's sums are lists of the same length. Peak executor metrics are a list of
:data:`PEAK_METRICS` values kept as running maxima.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["PEAK_METRICS", "TASK_METRICS", "COL", "add_into", "metrics_json", "peak_json", "peak_update",
           "read_peaks", "read_task_metrics"]

# (column, the field's path in the event's "Task Metrics")
_SR, _PUSH, _SW = "Shuffle Read Metrics", "Shuffle Push Read Metrics", "Shuffle Write Metrics"
_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("executorDeserializeTime", ("Executor Deserialize Time",)),
    ("executorDeserializeCpuTime", ("Executor Deserialize CPU Time",)),
    ("executorRunTime", ("Executor Run Time",)),
    ("executorCpuTime", ("Executor CPU Time",)),
    ("resultSize", ("Result Size",)),
    ("jvmGcTime", ("JVM GC Time",)),
    ("resultSerializationTime", ("Result Serialization Time",)),
    ("memoryBytesSpilled", ("Memory Bytes Spilled",)),
    ("diskBytesSpilled", ("Disk Bytes Spilled",)),
    ("peakExecutionMemory", ("Peak Execution Memory",)),
    ("inputBytesRead", ("Input Metrics", "Bytes Read")),
    ("inputRecordsRead", ("Input Metrics", "Records Read")),
    ("outputBytesWritten", ("Output Metrics", "Bytes Written")),
    ("outputRecordsWritten", ("Output Metrics", "Records Written")),
    ("shuffleRemoteBlocksFetched", (_SR, "Remote Blocks Fetched")),
    ("shuffleLocalBlocksFetched", (_SR, "Local Blocks Fetched")),
    ("shuffleFetchWaitTime", (_SR, "Fetch Wait Time")),
    ("shuffleRemoteBytesRead", (_SR, "Remote Bytes Read")),
    ("shuffleRemoteBytesReadToDisk", (_SR, "Remote Bytes Read To Disk")),
    ("shuffleLocalBytesRead", (_SR, "Local Bytes Read")),
    ("shuffleRecordsRead", (_SR, "Total Records Read")),
    ("shuffleRemoteReqsDuration", (_SR, "Remote Requests Duration")),
    ("shuffleCorruptMergedBlockChunks", (_SR, _PUSH, "Corrupt Merged Block Chunks")),
    ("shuffleMergedFetchFallbackCount", (_SR, _PUSH, "Merged Fallback Count")),
    ("shuffleMergedRemoteBlocksFetched", (_SR, _PUSH, "Merged Remote Blocks Fetched")),
    ("shuffleMergedLocalBlocksFetched", (_SR, _PUSH, "Merged Local Blocks Fetched")),
    ("shuffleMergedRemoteChunksFetched", (_SR, _PUSH, "Merged Remote Chunks Fetched")),
    ("shuffleMergedLocalChunksFetched", (_SR, _PUSH, "Merged Local Chunks Fetched")),
    ("shuffleMergedRemoteBytesRead", (_SR, _PUSH, "Merged Remote Bytes Read")),
    ("shuffleMergedLocalBytesRead", (_SR, _PUSH, "Merged Local Bytes Read")),
    ("shuffleMergedRemoteReqsDuration", (_SR, _PUSH, "Merged Remote Requests Duration")),
    ("shuffleBytesWritten", (_SW, "Shuffle Bytes Written")),
    ("shuffleWriteTime", (_SW, "Shuffle Write Time")),
    ("shuffleRecordsWritten", (_SW, "Shuffle Records Written")),
)
TASK_METRICS: tuple[str, ...] = tuple(name for name, _ in _FIELDS)


COL: dict[str, int] = {name: i for i, name in enumerate(TASK_METRICS)}  # each metric's place in a tuple

_EMPTY: Mapping[str, Any] = {}


def read_task_metrics(tm: Mapping[str, Any]) -> tuple[int, ...]:
    """A ``"Task Metrics"`` object as a tuple in :data:`TASK_METRICS` order (its numbers already checked by the
    decoder: ``backend.spark_api.listener.status_decoder``)."""
    g = tm.get
    sr = g(_SR) or _EMPTY
    push = sr.get(_PUSH) or _EMPTY
    sw = g(_SW) or _EMPTY
    inp = g("Input Metrics") or _EMPTY
    out = g("Output Metrics") or _EMPTY
    s, p = sr.get, push.get
    return (
        g("Executor Deserialize Time") or 0, g("Executor Deserialize CPU Time") or 0,
        g("Executor Run Time") or 0, g("Executor CPU Time") or 0, g("Result Size") or 0,
        g("JVM GC Time") or 0, g("Result Serialization Time") or 0, g("Memory Bytes Spilled") or 0,
        g("Disk Bytes Spilled") or 0, g("Peak Execution Memory") or 0,
        inp.get("Bytes Read") or 0, inp.get("Records Read") or 0,
        out.get("Bytes Written") or 0, out.get("Records Written") or 0,
        s("Remote Blocks Fetched") or 0, s("Local Blocks Fetched") or 0, s("Fetch Wait Time") or 0,
        s("Remote Bytes Read") or 0, s("Remote Bytes Read To Disk") or 0, s("Local Bytes Read") or 0,
        s("Total Records Read") or 0, s("Remote Requests Duration") or 0,
        p("Corrupt Merged Block Chunks") or 0, p("Merged Fallback Count") or 0, p("Merged Remote Blocks Fetched") or 0,
        p("Merged Local Blocks Fetched") or 0, p("Merged Remote Chunks Fetched") or 0,
        p("Merged Local Chunks Fetched") or 0, p("Merged Remote Bytes Read") or 0, p("Merged Local Bytes Read") or 0,
        p("Merged Remote Requests Duration") or 0,
        sw.get("Shuffle Bytes Written") or 0, sw.get("Shuffle Write Time") or 0, sw.get("Shuffle Records Written") or 0,
    )


def add_into(total: list[int], metrics: Sequence[int]) -> None:
    """Add one task's metrics to a running sum."""
    total[:] = map(operator.add, total, metrics)


def metrics_json(m: Sequence[int]) -> dict:
    """A task's ``taskMetrics`` object."""
    return {
        "executorDeserializeTime": m[0], "executorDeserializeCpuTime": m[1], "executorRunTime": m[2],
        "executorCpuTime": m[3], "resultSize": m[4], "jvmGcTime": m[5], "resultSerializationTime": m[6],
        "memoryBytesSpilled": m[7], "diskBytesSpilled": m[8], "peakExecutionMemory": m[9],
        "inputMetrics": {"bytesRead": m[10], "recordsRead": m[11]},
        "outputMetrics": {"bytesWritten": m[12], "recordsWritten": m[13]},
        "shuffleReadMetrics": {
            "remoteBlocksFetched": m[14], "localBlocksFetched": m[15], "fetchWaitTime": m[16],
            "remoteBytesRead": m[17], "remoteBytesReadToDisk": m[18], "localBytesRead": m[19],
            "recordsRead": m[20], "remoteReqsDuration": m[21],
            "shufflePushReadMetrics": {
                "corruptMergedBlockChunks": m[22], "mergedFetchFallbackCount": m[23],
                "remoteMergedBlocksFetched": m[24], "localMergedBlocksFetched": m[25],
                "remoteMergedChunksFetched": m[26], "localMergedChunksFetched": m[27],
                "remoteMergedBytesRead": m[28], "localMergedBytesRead": m[29],
                "remoteMergedReqsDuration": m[30]}},
        "shuffleWriteMetrics": {"bytesWritten": m[31], "writeTime": m[32], "recordsWritten": m[33]},
    }


# The executor metrics Spark keeps peaks of (ExecutorMetricType), in its order.
PEAK_METRICS: tuple[str, ...] = (
    "JVMHeapMemory", "JVMOffHeapMemory", "OnHeapExecutionMemory", "OffHeapExecutionMemory", "OnHeapStorageMemory",
    "OffHeapStorageMemory", "OnHeapUnifiedMemory", "OffHeapUnifiedMemory", "DirectPoolMemory", "MappedPoolMemory",
    "ProcessTreeJVMVMemory", "ProcessTreeJVMRSSMemory", "ProcessTreePythonVMemory", "ProcessTreePythonRSSMemory",
    "ProcessTreeOtherVMemory", "ProcessTreeOtherRSSMemory", "MinorGCCount", "MinorGCTime", "MajorGCCount",
    "MajorGCTime", "TotalGCTime", "ConcurrentGCCount", "ConcurrentGCTime",
)


def read_peaks(values: Mapping[str, Any] | None) -> list[int]:
    """An ``"Executor Metrics"`` object as a list in :data:`PEAK_METRICS` order (a missing metric is 0)."""
    if not values:
        return _ZERO_PEAKS
    g = values.get
    return [v if type(v := g(name)) is int else 0 for name in PEAK_METRICS]


def peak_update(peaks: list[int] | None, new: list[int]) -> list[int]:
    """The running maxima after one more report (the first report sets them)."""
    if peaks is None:
        return [max(v, 0) for v in new]
    if new is not _ZERO_PEAKS:
        peaks[:] = map(max, peaks, new)
    return peaks


_ZERO_PEAKS = [0] * len(PEAK_METRICS)  # a report without metrics (shared: never changed)


def peak_json(peaks: Sequence[int]) -> dict:
    return dict(zip(PEAK_METRICS, peaks, strict=True))
