"""``/stages``, ``/stages/{id}`` and ``/stages/{id}/{attempt}``: Spark's ``StageData``, with its tasks, executor
summaries and distributions when asked for."""

from __future__ import annotations

from backend.spark_api.app_state import AppState, ExecutorStageSummary, StageState
from backend.spark_api.documents.tasks import task_doc, task_summary
from backend.spark_api.metrics import PEAK_METRICS, peak_json
from backend.spark_api.quantiles import indexed_quantiles
from backend.spark_api.times import spark_time

__all__ = ["STAGE_STATUSES", "StageQuery", "stage_doc", "stage_list"]

STAGE_STATUSES = ("ACTIVE", "COMPLETE", "FAILED", "PENDING", "SKIPPED")


class StageQuery:
    """What a stage request asks for beyond the stage itself."""

    __slots__ = ("details", "quantiles", "task_statuses", "with_summaries")

    def __init__(self, details: bool = False, task_statuses: list[str] | None = None, with_summaries: bool = False,
                 quantiles: list[float] | None = None) -> None:
        self.details = details
        self.task_statuses = task_statuses or []
        self.with_summaries = with_summaries
        self.quantiles = quantiles or [0.0, 0.25, 0.5, 0.75, 1.0]


def _executor_summary_doc(s: ExecutorStageSummary) -> dict:
    m = s.metrics
    doc: dict = {"taskTime": s.task_time, "failedTasks": s.failed, "succeededTasks": s.succeeded,
           "killedTasks": s.killed, "inputBytes": m[10], "inputRecords": m[11], "outputBytes": m[12],
           "outputRecords": m[13], "shuffleRead": m[17] + m[19], "shuffleReadRecords": m[20],
           "shuffleWrite": m[31], "shuffleWriteRecords": m[33], "memoryBytesSpilled": m[7],
           "diskBytesSpilled": m[8], "isBlacklistedForStage": s.excluded}
    if s.peaks is not None:
        doc["peakMemoryMetrics"] = peak_json(s.peaks)
    doc["isExcludedForStage"] = s.excluded
    return doc


_EXECUTOR_DIST = ("taskTime", "failedTasks", "succeededTasks", "killedTasks", "inputBytes", "inputRecords",
                  "outputBytes", "outputRecords", "shuffleRead", "shuffleReadRecords", "shuffleWrite",
                  "shuffleWriteRecords", "memoryBytesSpilled", "diskBytesSpilled")


def _executor_distributions(docs: list[dict], quantiles: list[float]) -> dict:
    out: dict = {"quantiles": quantiles}
    for name in _EXECUTOR_DIST:
        out[name] = indexed_quantiles(sorted(d[name] for d in docs), quantiles)
    peaks = [d.get("peakMemoryMetrics") or {} for d in docs]
    out["peakMemoryMetrics"] = {name: indexed_quantiles(sorted(p.get(name, 0) for p in peaks), quantiles)
                                for name in PEAK_METRICS}
    return out


def stage_doc(stage: StageState, state: AppState, now: int, query: StageQuery | None = None) -> dict:
    m = stage.metrics
    doc: dict = {
        "status": stage.status, "stageId": stage.stage_id, "attemptId": stage.attempt_id,
        "numTasks": stage.num_tasks, "numActiveTasks": stage.active_tasks, "numCompleteTasks": stage.completed_tasks,
        "numFailedTasks": stage.failed_tasks, "numKilledTasks": stage.killed_tasks,
        "numCompletedIndices": len(stage.completed_indices)}
    if stage.submission is not None:
        doc["submissionTime"] = spark_time(stage.submission)
    if stage.first_launch is not None:
        doc["firstTaskLaunchedTime"] = spark_time(stage.first_launch)
    if stage.completion is not None:
        doc["completionTime"] = spark_time(stage.completion)
    if stage.failure_reason is not None:
        doc["failureReason"] = stage.failure_reason
    doc.update({
        "executorDeserializeTime": m[0], "executorDeserializeCpuTime": m[1], "executorRunTime": m[2],
        "executorCpuTime": m[3], "resultSize": m[4], "jvmGcTime": m[5], "resultSerializationTime": m[6],
        "memoryBytesSpilled": m[7], "diskBytesSpilled": m[8], "peakExecutionMemory": m[9], "inputBytes": m[10],
        "inputRecords": m[11], "outputBytes": m[12], "outputRecords": m[13], "shuffleRemoteBlocksFetched": m[14],
        "shuffleLocalBlocksFetched": m[15], "shuffleFetchWaitTime": m[16], "shuffleRemoteBytesRead": m[17],
        "shuffleRemoteBytesReadToDisk": m[18], "shuffleLocalBytesRead": m[19], "shuffleReadBytes": m[17] + m[19],
        "shuffleReadRecords": m[20], "shuffleCorruptMergedBlockChunks": m[22],
        "shuffleMergedFetchFallbackCount": m[23], "shuffleMergedRemoteBlocksFetched": m[24],
        "shuffleMergedLocalBlocksFetched": m[25], "shuffleMergedRemoteChunksFetched": m[26],
        "shuffleMergedLocalChunksFetched": m[27], "shuffleMergedRemoteBytesRead": m[28],
        "shuffleMergedLocalBytesRead": m[29], "shuffleRemoteReqsDuration": m[21],
        "shuffleMergedRemoteReqsDuration": m[30], "shuffleWriteBytes": m[31], "shuffleWriteTime": m[32],
        "shuffleWriteRecords": m[33], "name": stage.name})
    if stage.description is not None:
        doc["description"] = stage.description
    doc.update({"details": stage.details, "schedulingPool": stage.pool, "rddIds": stage.rdd_ids,
                "accumulatorUpdates": stage.accumulables})
    query = query or StageQuery()
    if query.details:
        rows = stage.tasks.ordered(None, False)
        if query.task_statuses:
            rows = [t for t in rows if t.status in query.task_statuses]
        doc["tasks"] = {str(t.task_id): task_doc(t, state, now) for t in rows}
        summaries = {k: _executor_summary_doc(s) for k, s in sorted(stage.executor_summaries.items())}
        doc["executorSummary"] = summaries
        if stage.speculation[0] > 0:
            spec = stage.speculation
            doc["speculationSummary"] = {"numTasks": spec[0], "numActiveTasks": spec[1],
                                         "numCompletedTasks": spec[2], "numFailedTasks": spec[3],
                                         "numKilledTasks": spec[4]}
    doc["killedTasksSummary"] = dict(stage.killed_summary)
    doc["resourceProfileId"] = stage.resource_profile_id
    if stage.peaks is not None:
        doc["peakExecutorMetrics"] = peak_json(stage.peaks)
    if query.details and query.with_summaries:
        summary = task_summary(stage, now, query.quantiles)
        if summary is not None:
            doc["taskMetricsDistributions"] = summary
        if doc["executorSummary"]:
            doc["executorMetricsDistributions"] = _executor_distributions(list(doc["executorSummary"].values()),
                                                                          query.quantiles)
    doc["isShufflePushEnabled"] = stage.push_enabled
    doc["shuffleMergersCount"] = stage.mergers_count
    return doc


def stage_list(state: AppState, now: int, statuses: list[str], query: StageQuery) -> list[dict]:
    """Every stage attempt, the newest (stage, attempt) first, those with one of ``statuses`` if any are given."""
    out = []
    for key in sorted(state.stages, reverse=True):
        stage = state.stages[key]
        if not statuses or stage.status in statuses:
            out.append(stage_doc(stage, state, now, query))
    return out
