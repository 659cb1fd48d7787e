"""A task's metrics and an executor's peak memory metrics: read from events, added up, and named as the API names
them.

A task's metrics are one tuple of :data:`TASK_METRICS` integers (a missing field is 0, as Spark reads an old log);
a stage's, a job's or an executor's sums are lists of the same length. Peak executor metrics are a list of
:data:`PEAK_METRICS` values kept as running maxima.
"""

from __future__ import annotations

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


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def read_task_metrics(tm: Mapping[str, Any]) -> tuple[int, ...]:
    """A ``"Task Metrics"`` object as a tuple in :data:`TASK_METRICS` order."""
    g = tm.get
    sr = g(_SR) or _EMPTY
    push = sr.get(_PUSH) or _EMPTY
    sw = g(_SW) or _EMPTY
    inp = g("Input Metrics") or _EMPTY
    out = g("Output Metrics") or _EMPTY
    return (
        _int(g("Executor Deserialize Time")), _int(g("Executor Deserialize CPU Time")),
        _int(g("Executor Run Time")), _int(g("Executor CPU Time")), _int(g("Result Size")),
        _int(g("JVM GC Time")), _int(g("Result Serialization Time")), _int(g("Memory Bytes Spilled")),
        _int(g("Disk Bytes Spilled")), _int(g("Peak Execution Memory")),
        _int(inp.get("Bytes Read")), _int(inp.get("Records Read")),
        _int(out.get("Bytes Written")), _int(out.get("Records Written")),
        _int(sr.get("Remote Blocks Fetched")), _int(sr.get("Local Blocks Fetched")), _int(sr.get("Fetch Wait Time")),
        _int(sr.get("Remote Bytes Read")), _int(sr.get("Remote Bytes Read To Disk")),
        _int(sr.get("Local Bytes Read")), _int(sr.get("Total Records Read")), _int(sr.get("Remote Requests Duration")),
        _int(push.get("Corrupt Merged Block Chunks")), _int(push.get("Merged Fallback Count")),
        _int(push.get("Merged Remote Blocks Fetched")), _int(push.get("Merged Local Blocks Fetched")),
        _int(push.get("Merged Remote Chunks Fetched")), _int(push.get("Merged Local Chunks Fetched")),
        _int(push.get("Merged Remote Bytes Read")), _int(push.get("Merged Local Bytes Read")),
        _int(push.get("Merged Remote Requests Duration")),
        _int(sw.get("Shuffle Bytes Written")), _int(sw.get("Shuffle Write Time")),
        _int(sw.get("Shuffle Records Written")),
    )


def add_into(total: list[int], metrics: Sequence[int]) -> None:
    """Add one task's metrics to a running sum."""
    for i, v in enumerate(metrics):
        if v:
            total[i] += v


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
    values = values or _EMPTY
    return [_int(values.get(name)) for name in PEAK_METRICS]


def peak_update(peaks: list[int] | None, new: Sequence[int]) -> list[int]:
    """The running maxima after one more report (the first report sets them)."""
    if peaks is None:
        return [max(v, 0) for v in new]
    for i, v in enumerate(new):
        if v > peaks[i]:
            peaks[i] = v
    return peaks


def peak_json(peaks: Sequence[int]) -> dict:
    return dict(zip(PEAK_METRICS, peaks, strict=True))
