"""flowscope's ``/api/v1`` against Spark's own History Server, side by side, on every Spark fixture.

One History Server (from the installed pyspark, keeping every job, stage and task) and one flowscope server on
127.0.0.1 read the same fixture logs (fixtures/spark/*/eventlog_v2_*). For each application, every document the
REST API has (the application, its jobs and each job, its stages with and without details and summaries, each stage
attempt, its task list both ways round and its task summary, executors, all executors, cached RDDs and each one, the
environment, the SQL executions with their plans, the other processes) is requested from both and compared field by
field. Left out: each attempt's ``lastUpdated``/``lastUpdatedEpoch`` (the files' modification times: the History
Server reads copies) and ``logSourceName``/``logSourceFullPath``, which Spark 4.3 added after the expectations of
its own test suite, the judge flowscope follows (tests/test_spark_rest_suite.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from backend.web.app import Settings
from tests.conftest import FIXTURES
from tests.e2e.server import running_server
from tests.spark_history_server import listed_history_server, stage_log

IGNORED = {"lastUpdated", "lastUpdatedEpoch", "logSourceName", "logSourceFullPath"}
LOGS = sorted((FIXTURES / "spark").glob("*/eventlog_v2_*"))


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Where two JSON documents differ, field by field."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for key in sorted((set(ours) | set(theirs)) - IGNORED):
            if key not in ours:
                out.append(f"{path}.{key}: only Spark's")
            elif key not in theirs:
                out.append(f"{path}.{key}: only ours")
            else:
                out += differences(ours[key], theirs[key], f"{path}.{key}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        out = [f"{path}: {len(ours)} items, Spark's {len(theirs)}"] if len(ours) != len(theirs) else []
        for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    return [] if ours == theirs else [f"{path}: ours {ours!r}, Spark's {theirs!r}"]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, httpx.Client, list[str]]]:
    """(flowscope's /api/v1 client, the History Server's, the application ids)."""
    directory = tmp_path_factory.mktemp("hs-logs")
    apps = sorted({stage_log(log, directory) for log in LOGS})
    settings = Settings(allowed_dirs=[FIXTURES], open_paths=[str(p) for p in LOGS],
                        data_dir=tmp_path_factory.mktemp("data"))
    with listed_history_server(directory, set(apps)) as base, running_server(settings) as srv, \
            httpx.Client(base_url=srv.url + "/api/v1/", timeout=120) as ours, \
            httpx.Client(base_url=base.removesuffix("applications"), timeout=120) as theirs:
        yield ours, theirs, apps


def _paths(theirs: httpx.Client, app: str) -> list[str]:
    """Every document of one application, found by walking Spark's answers."""
    a = f"applications/{app}"
    paths = [a, f"{a}/jobs", f"{a}/stages", f"{a}/stages?details=true&withSummaries=true", f"{a}/executors",
             f"{a}/allexecutors", f"{a}/storage/rdd", f"{a}/environment", f"{a}/allmiscellaneousprocess",
             f"{a}/sql?details=true&planDescription=true&length=100000", f"{a}/sql?details=false&offset=1&length=2"]
    for s in theirs.get(f"{a}/stages").json():
        one = f"{a}/stages/{s['stageId']}/{s['attemptId']}"
        paths += [f"{a}/stages/{s['stageId']}", one, f"{one}/taskList?length=100000",
                  f"{one}/taskList?sortBy=-runtime&length=100000", f"{one}/taskList?status=failed",
                  f"{one}/taskSummary", f"{one}/taskSummary?quantiles=0.01,0.5,0.99"]
    paths += [f"{a}/jobs/{j['jobId']}" for j in theirs.get(f"{a}/jobs").json()]
    paths += [f"{a}/storage/rdd/{r['id']}" for r in theirs.get(f"{a}/storage/rdd").json()]
    paths += [f"{a}/sql/{e['id']}" for e in theirs.get(f"{a}/sql?details=false&length=100000").json()]
    return paths


def test_every_document_equals_the_history_servers(servers: tuple[httpx.Client, httpx.Client, list[str]]) -> None:
    ours, theirs, apps = servers
    assert len(apps) == len(LOGS) >= 20
    mismatches: list[str] = []
    compared = 0
    for app in apps:
        for path in _paths(theirs, app):
            mine, spark = ours.get(path), theirs.get(path)
            if mine.status_code != spark.status_code:
                mismatches.append(f"{path}: status {mine.status_code}, Spark's {spark.status_code}: {mine.text[:200]}")
                continue
            if spark.status_code != 200:
                assert mine.text == spark.text, path  # the same error, in the same words
                continue
            found = differences(mine.json(), spark.json())
            mismatches += [f"{path}: {d}" for d in found[:5]]
            compared += 1
    assert not mismatches, "\n".join(mismatches[:40])
    assert compared > 500
