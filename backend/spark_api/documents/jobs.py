"""``/jobs`` and ``/jobs/{id}``: Spark's ``JobData``."""

from __future__ import annotations

from backend.spark_api.app_state import AppState, JobState
from backend.spark_api.times import spark_time

__all__ = ["JOB_STATUSES", "job_doc", "job_list", "one_job"]

JOB_STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "UNKNOWN")


def job_doc(job: JobState) -> dict:
    doc: dict = {"jobId": job.job_id, "name": job.name}
    if job.description is not None:
        doc["description"] = job.description
    if job.submission is not None:
        doc["submissionTime"] = spark_time(job.submission)
    if job.completion is not None:
        doc["completionTime"] = spark_time(job.completion)
    doc["stageIds"] = job.stage_ids
    if job.job_group is not None:
        doc["jobGroup"] = job.job_group
    doc.update({
        "jobTags": job.job_tags, "status": job.status, "numTasks": job.num_tasks,
        "numActiveTasks": job.active_tasks, "numCompletedTasks": job.completed_tasks,
        "numSkippedTasks": job.skipped_tasks, "numFailedTasks": job.failed_tasks,
        "numKilledTasks": job.killed_tasks, "numCompletedIndices": len(job.completed_indices),
        "numActiveStages": job.active_stages, "numCompletedStages": len(job.completed_stages),
        "numSkippedStages": len(job.skipped_stages), "numFailedStages": job.failed_stages,
        "killedTasksSummary": dict(job.killed_summary)})
    return doc


def _doc(job: JobState) -> dict:
    return job.frozen if job.frozen is not None else job_doc(job)


def job_list(state: AppState, statuses: list[str]) -> list[dict]:
    """Every job, newest id first, those with one of ``statuses`` (upper case) if any are given."""
    docs = [_doc(state.jobs[j]) for j in sorted(state.jobs, reverse=True)]
    return [d for d in docs if d["status"] in statuses] if statuses else docs


def one_job(state: AppState, job_id: int) -> dict | None:
    job = state.jobs.get(job_id)
    return None if job is None else _doc(job)
