"""The Spark model against Spark itself: every real event log converts, ends empty, keeps the progress contract,
and agrees with what Spark's History Server reports (the expectation files) about jobs, stages and tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.spark.model.spark_model import SparkModel
from tracker.progress_log.replay import Replay

from .conftest import SPARK_EVENTS, spark_event_cases

pytestmark = pytest.mark.spark_events

EXPECT = SPARK_EVENTS / "expectations"


def top_level_logs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_file() and p.name not in ("README.md", "SHA256SUMS"))


def convert(path: Path, on_record=None):
    model, replay = SparkModel(), Replay(str(path), check_contracts=True)
    lines = 0
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            lines += 1
            event = json.loads(raw)
            for record in model.feed(event, lineno):
                replay.apply(record, lineno)
                if on_record:
                    on_record(record, replay)
    replay.finish()
    return model, replay, lines


@pytest.mark.parametrize("path", spark_event_cases(top_level_logs), ids=lambda p: getattr(p, "name", None))
def test_every_real_log_converts_and_ends_empty(path):
    model, replay, lines = convert(path)
    assert replay.errors == []
    assert replay.findings == [], [str(f) for f in replay.findings[:3]]
    handled = lines - sum(model.unknown_events.values())
    assert handled >= 1 and sum(model.unknown_events.values()) + handled == lines, "every line accounted for"
    assert model.ended and not model.uncertain
    for scope in replay.state()["scopes"]:
        for port in scope["ports"]:
            assert port["frontier"] == [] and port["pointstamps"] == [], (scope["name"], port)


def expected_jobs(name):
    return {j["jobId"]: j["status"] for j in json.loads((EXPECT / name).read_text())}


def expected_stages(name):
    rows = json.loads((EXPECT / name).read_text())
    return {(s["stageId"], s["attemptId"]): s["status"] for s in rows}, sum(
        s["numCompleteTasks"] + s["numFailedTasks"] + s.get("numKilledTasks", 0) for s in rows)


@pytest.mark.parametrize("log,jobs,stages", [
    ("local-1422981780767", "job_list_json_expectation.json", "stage_list_json_expectation.json"),
    ("local-1426533911241", "job_list_from_multi_attempt_app_json_1__expectation.json",
     "stage_list_with_accumulable_json_expectation.json"),
    ("local-1426633911242", "job_list_from_multi_attempt_app_json_2__expectation.json", None),
    ("app-20200706201101-0003", None, "stage_list_with_peak_metrics_expectation.json"),
])
def test_jobs_stages_and_tasks_agree_with_the_history_server(log, jobs, stages):
    model, _, _ = convert(SPARK_EVENTS / log)
    summary = model.summary()
    if jobs:
        assert summary.jobs == expected_jobs(jobs)
    if stages:
        expected, tasks = expected_stages(stages)
        shown = {k: v for k, v in summary.stages.items() if v != "SKIPPED"}
        assert shown == expected
        assert summary.tasks == tasks


@pytest.mark.parametrize(
    "log", ["local-1422981780767", "local-1642039451826", "app-20200706201101-0003", "local-1430917381534"]
)
def test_at_every_job_end_the_result_has_passed_the_epoch(log):
    checked = []

    def on_record(record, replay):
        if (record["type"] == "mark" and "epoch" in record
                and record["label"].startswith("job ") and "started" not in record["label"]):
            scope = replay.root.find(record["scope"])
            frontier = scope.tracker.frontier(__import__("tracker").Target(2, 0))
            assert all(t > record["epoch"] for t in frontier), (record, frontier)
            checked.append(record["job"])

    model, replay, _ = convert(SPARK_EVENTS / log, on_record)
    assert sorted(checked) == sorted(model.jobs)


def test_regions_and_operators_read_like_the_application():
    model, replay, _ = convert(SPARK_EVENTS / "local-1430917381534")
    state = replay.state()
    region = next(s for s in state["scopes"] if s["path"] == [1])
    sub = replay.root.find([1])
    names = {op.name for op in sub.children.values()}
    assert {"driver (new work)", "driver (results)", "map at <console>:26", "collect at <console>:26"} <= names
    shuffle = next(op for op in sub.children.values() if op.name == "map at <console>:26")
    assert shuffle.attrs["stage_ids"] == [0] and shuffle.attrs["tasks"] == 100
    assert region["name"].startswith("job 0")
