"""``/api/v1``: Spark's monitoring REST API, as the History Server serves it, for every Spark application the server
holds (``backend/spark_api``).

The applications come from one seam, ``app.state.spark_applications`` (a ``backend.spark_api.catalog.Applications``):
the list's fields, and one attempt's store, replayed in a worker thread when first asked for. Paths with and
without an attempt id are parsed here, as Spark's resources match them; errors are Spark's, in plain text (404
"unknown app: foobar", "unknown stage: 12345", 400 for a bad ``quantiles`` or date).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool

from backend.spark_api.app_store import AppStore
from backend.spark_api.catalog import Applications
from backend.spark_api.documents.applications import ListFilter, app_doc, app_list, attempt_doc
from backend.spark_api.documents.environment import environment_doc
from backend.spark_api.documents.event_logs import logs_zip
from backend.spark_api.documents.executors import executor_list, process_list
from backend.spark_api.documents.jobs import job_list, one_job
from backend.spark_api.documents.sql import execution_doc, execution_list
from backend.spark_api.documents.stages import StageQuery, stage_doc, stage_list
from backend.spark_api.documents.storage import rdd_doc, rdd_list
from backend.spark_api.documents.tasks import TASK_SORTS, task_list, task_summary
from backend.spark_api.quantiles import parse_quantiles
from backend.web.api.deps import encode

router = APIRouter(prefix="/api/v1", tags=["spark rest api"])

RESOURCES = {"jobs", "stages", "executors", "allexecutors", "allmiscellaneousprocess", "storage", "environment",
             "logs", "sql"}


class SparkError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _json(content: Any) -> Response:
    return Response(encode(content), media_type="application/json")


def _applications(request: Request) -> Applications:
    return request.app.state.spark_applications


def spark_version() -> str:
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return "4.0.0"


@router.get("/version", summary="The Spark version whose REST API this is")
async def version() -> Response:
    return _json({"spark": spark_version()})


@router.get("/applications", summary="Every application (Spark's ApplicationInfo list)")
async def applications(request: Request) -> Response:
    q = request.query_params
    try:
        limit = int(q["limit"]) if "limit" in q else None
        f = ListFilter.parse(q.getlist("status"), q.get("minDate"), q.get("maxDate"), q.get("minEndDate"),
                             q.get("maxEndDate"), limit)
    except ValueError as e:
        return PlainTextResponse(str(e), 400)
    apps = await run_in_threadpool(_applications(request).listings)
    return _json(app_list(apps, f))


@router.get("/applications/{rest:path}", summary="One application, one attempt, or one of their documents")
async def application(rest: str, request: Request) -> Response:
    parts = [p for p in rest.split("/") if p != ""]
    try:
        return await run_in_threadpool(_answer, _applications(request), parts, request.query_params)
    except SparkError as e:
        return PlainTextResponse(e.message, e.status)


def _answer(apps: Applications, parts: list[str], q: Any) -> Response:
    app_id = parts[0]
    listing = next((a for a in apps.listings() if a.app_id == app_id), None)
    if len(parts) == 1:
        if listing is None:
            raise SparkError(404, f"unknown app: {app_id}")
        return _json(app_doc(listing))
    if parts[1] in RESOURCES:
        attempt_id, resource = None, parts[1:]
    else:
        attempt_id, resource = parts[1], parts[2:]
    attempt = None if listing is None else next((a for a in listing.attempts if a.attempt_id == attempt_id), None)
    if resource == ["logs"] and attempt_id is None and listing is not None:
        return _logs(app_id, None, [a.store for a in listing.attempts if a.store is not None])
    if attempt is None or attempt.store is None:
        raise SparkError(404, f"no such app: {app_id}" + (f"/{attempt_id}" if attempt_id is not None else ""))
    if not resource:
        return _json(attempt_doc(attempt))
    if resource == ["logs"]:
        return _logs(app_id, attempt_id, [attempt.store])
    handler = _HANDLERS.get(resource[0])
    if handler is None:
        raise SparkError(404, "Not Found")
    return handler(attempt.store, resource[1:], q)


def _logs(app_id: str, attempt_id: str | None, stores: list[AppStore]) -> Response:
    name = f"eventLogs-{app_id}" + (f"-{attempt_id}" if attempt_id else "") + ".zip"
    return Response(logs_zip(stores), media_type="application/octet-stream",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


def _int(text: str, what: str = "Not Found") -> int:
    try:
        return int(text)
    except ValueError:
        raise SparkError(404, what) from None


def _bool(q: Any, name: str, default: bool) -> bool:
    v = q.get(name)
    return default if v is None else v.lower() == "true"


def _statuses(q: Any, name: str = "status") -> list[str]:
    return [s.upper().replace("_", " ") for s in q.getlist(name)]


def _jobs(store: AppStore, rest: list[str], q: Any) -> Response:
    state = store.catch_up()
    if not rest:
        return _json(job_list(state, _statuses(q)))
    job_id = _int(rest[0])
    doc = one_job(state, job_id)
    if doc is None or len(rest) > 1:
        raise SparkError(404, f"unknown job: {job_id}")
    return _json(doc)


def _quantiles(q: Any, default: str) -> list[float]:
    try:
        return parse_quantiles(q.get("quantiles") or default)
    except ValueError as e:
        raise SparkError(400, str(e)) from None


def _stage_query(q: Any, details_default: bool) -> StageQuery:
    return StageQuery(_bool(q, "details", details_default), _statuses(q, "taskStatus"),
                      _bool(q, "withSummaries", False), _quantiles(q, "0.0,0.25,0.5,0.75,1.0"))


def _stages(store: AppStore, rest: list[str], q: Any) -> Response:
    state = store.catch_up()
    now = store.last_updated()
    if not rest:
        return _json(stage_list(state, now, _statuses(q), _stage_query(q, False)))
    stage_id = _int(rest[0])
    attempts = sorted(k[1] for k in state.stages if k[0] == stage_id)
    if len(rest) == 1:
        if not attempts:
            raise SparkError(404, f"unknown stage: {stage_id}")
        query = _stage_query(q, True)
        return _json([stage_doc(state.stages[(stage_id, a)], state, now, query) for a in attempts])
    attempt_id = _int(rest[1])
    stage = state.stages.get((stage_id, attempt_id))
    if stage is None:
        if attempts:
            raise SparkError(404, f"unknown attempt for stage {stage_id}.  Found attempts: "
                                  f"[{','.join(map(str, attempts))}]")
        raise SparkError(404, f"unknown stage: {stage_id}")
    if len(rest) == 2:
        return _json(stage_doc(stage, state, now, _stage_query(q, True)))
    if rest[2] == "taskSummary" and len(rest) == 3:
        summary = task_summary(stage, now, _quantiles(q, "0.05,0.25,0.5,0.75,0.95"))
        if summary is None:
            raise SparkError(404, f"No tasks reported metrics for {stage_id} / {attempt_id} yet.")
        return _json(summary)
    if rest[2] == "taskList" and len(rest) == 3:
        sort = q.get("sortBy") or "ID"
        if sort not in TASK_SORTS:
            raise SparkError(404, "Not Found")
        return _json(task_list(stage, state, now, _int(q.get("offset") or "0"), _int(q.get("length") or "20"),
                               sort, _statuses(q)))
    raise SparkError(404, "Not Found")


def _executors(active_only: bool) -> Callable[[AppStore, list[str], Any], Response]:
    def handle(store: AppStore, rest: list[str], q: Any) -> Response:
        if rest:
            raise SparkError(404, "Not Found")
        return _json(executor_list(store.catch_up(), active_only))
    return handle


def _processes(store: AppStore, rest: list[str], q: Any) -> Response:
    if rest:
        raise SparkError(404, "Not Found")
    return _json(process_list(store.catch_up()))


def _storage(store: AppStore, rest: list[str], q: Any) -> Response:
    if not rest or rest[0] != "rdd" or len(rest) > 2:
        raise SparkError(404, "Not Found")
    state = store.catch_up()
    if len(rest) == 1:
        return _json(rdd_list(state))
    rdd_id = _int(rest[1])
    rdd = state.rdds.get(rdd_id)
    if rdd is None:
        raise SparkError(404, f"no rdd found w/ id {rdd_id}")
    return _json(rdd_doc(rdd, state))


def _environment(store: AppStore, rest: list[str], q: Any) -> Response:
    if rest:
        raise SparkError(404, "Not Found")
    return _json(environment_doc(store.catch_up()))


def _sql(store: AppStore, rest: list[str], q: Any) -> Response:
    state = store.catch_up()
    plans = store.sql()
    details, described = _bool(q, "details", True), _bool(q, "planDescription", True)
    if not rest:
        return _json(execution_list(plans, state.sql_starts, details, described,
                                    _int(q.get("offset") or "0"), _int(q.get("length") or "20")))
    eid = _int(rest[0])
    ex = plans.executions.get(eid)
    if ex is None or len(rest) > 1:
        raise SparkError(404, f"unknown query execution id: {eid}")
    return _json(execution_doc(plans, ex, state.sql_starts.get(eid, {}), details, described))


_HANDLERS: dict[str, Callable[[AppStore, list[str], Any], Response]] = {
    "jobs": _jobs, "stages": _stages, "executors": _executors(True), "allexecutors": _executors(False),
    "allmiscellaneousprocess": _processes, "storage": _storage, "environment": _environment, "sql": _sql,
}
