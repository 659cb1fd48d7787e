"""The Spark model names the SQL plan operator of each stage in its one pass over the log (``plan_naming``): the
same operator, with the same ids, as the plans ``flowscope plan`` reads whole (``stage_operators``), on every
fixture and every real log; blame reads it from the records' marks, a recording's as an event log's."""

from __future__ import annotations

import json

import orjson
import pytest

from backend.eventlog import EventLogReader, find_logs
from backend.spark.diagnosis.blame import blame_replay
from backend.spark.recording.convert import SparkLogConversion
from backend.spark.sql_plan.read import read_plans
from backend.spark.sql_plan.stage_operators import stage_operators
from flowscope.cli import main

from .conftest import REPO, spark_event_cases
from .test_event_decode import _logs_under

FIXTURE_LOGS = _logs_under(REPO / "fixtures" / "spark")
REAL_LOGS = spark_event_cases(_logs_under)
PLAN_FIXTURES = [log for log in FIXTURE_LOGS if log.path.parent.name.startswith("plan_")]


def _named_by_the_model(log) -> dict[int, dict]:
    named: dict[int, dict] = {}
    for rec in SparkLogConversion(log):
        if rec.get("type") == "mark" and "plan_operators" in rec:
            assert rec["label"] == f"SQL execution {rec['sql_execution']}: the plan operators its stages ran"
            named.update({int(stage): op for stage, op in rec["plan_operators"].items()})
    return named


def _same_naming_as_the_plans(log) -> dict[int, dict]:
    named = _named_by_the_model(log)
    assert named == stage_operators(read_plans(log.path)[0])
    return named


# Worked out by hand from each plan's operators and the stages they ran in (``flowscope plan``): stage -> (name, id,
# the stage's operators other than those that only pass rows on). A join names its stage before an aggregation, an
# aggregation before a sort or a scan, an exchange only a stage with nothing else ranked (a bare Range is no scan).
EXPECTED = {
    "plan_broadcast": {0: ("Range", 13, [13]), 1: ("BroadcastHashJoin", 7, [3, 5, 7, 9]),
                       3: ("HashAggregate", 2, [2, 3])},
    "plan_cross_join": {1: ("BroadcastNestedLoopJoin", 7, [3, 5, 7, 13])},
    "plan_partitions": {0: ("Sort", 3, [0, 3, 5]), 2: ("HashAggregate", 5, [3, 5, 8])},
    "plan_small_files": {0: ("Exchange", 5, [5, 7]), 2: ("Exchange", 5, [1, 5])},
    "plan_sort_merge_join": {0: ("Exchange", 12, [12, 16]), 4: ("SortMergeJoin", 8, [4, 6, 8, 10, 12, 18, 20]),
                             8: ("HashAggregate", 2, [2, 4]), 11: ("SortMergeJoin", 6, [2, 4, 6, 8, 9, 15, 16])},
}


@pytest.mark.parametrize("log", FIXTURE_LOGS, ids=lambda log: log.path.parent.name)
def test_the_model_names_what_the_plans_name_on_every_fixture(log):
    named = _same_naming_as_the_plans(log)
    if log in PLAN_FIXTURES:
        assert named, "a plan fixture's SQL stages are named"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_operator_named_is_the_one_ranked_first(name):
    (log,) = [log for log in PLAN_FIXTURES if log.path.parent.name == name]
    named = _named_by_the_model(log)
    got = {stage: (named[stage]["name"], named[stage]["id"], named[stage]["operators"]) for stage in EXPECTED[name]
           if stage in named}
    assert got == EXPECTED[name]


_REAL_NAMED: dict = {}  # log path -> stages named, from the test below (the one after it reads them)


@pytest.mark.spark_events
@pytest.mark.parametrize("log", REAL_LOGS, ids=lambda log: str(log.path.name) if log else "none")
def test_the_model_names_what_the_plans_name_on_every_real_log(log):
    _REAL_NAMED[log.path] = len(_same_naming_as_the_plans(log))


@pytest.mark.spark_events
def test_some_real_logs_have_their_stages_named():
    """The comparison above holds trivially on a log without SQL: at least one real log names stages."""
    named = [log.path.name for log in REAL_LOGS
             if _REAL_NAMED.get(log.path, None) or (log.path not in _REAL_NAMED and _named_by_the_model(log))]
    assert named, "no real log had a stage named"


def test_an_adaptive_plan_is_named_by_its_final_ids():
    """An adaptive re-plan renumbers the operators (a shuffle read added below a join): the ids named are those of
    the plan the execution ended with, which ``flowscope plan`` and the Plan tab show."""
    (log,) = [log for log in PLAN_FIXTURES if log.path.parent.name == "plan_sort_merge_join"]
    named = _named_by_the_model(log)
    plans = read_plans(log.path)[0].to_json()["executions"]
    joins = [op for op in named.values() if op["name"] == "SortMergeJoin"]
    updated = 0
    for op in joins:
        (ex,) = [ex for ex in plans if ex["execution"] == op["execution"]]
        updated += ex["plan_updates"] > 0
        assert {n["id"]: n["name"] for n in ex["nodes"]}[op["id"]] == "SortMergeJoin"
    assert updated, "a join of an execution that was re-planned"


def test_blame_names_the_operator_from_a_recording_as_from_the_log(tmp_path, capsys):
    (log,) = [log for log in PLAN_FIXTURES if log.path.parent.name == "plan_sort_merge_join"]
    rec = tmp_path / "smj.jsonl"
    assert main(["record", "-q", str(log.path), "-o", str(rec)]) == 0
    capsys.readouterr()
    answers = []
    for path in (log.path, rec):
        assert main(["blame", str(path), "--json"]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0] == answers[1]
    named = [s["holder"]["plan_operator"] for t in answers[0]["times"] for s in t["blame"]
             if "plan_operator" in s["holder"]]
    assert {op["name"] for op in named} >= {"SortMergeJoin"}


def test_a_damaged_naming_is_reported_and_left_out(tmp_path):
    """A progress log's ``plan_operators`` that is not a stage naming is a field blame ignores, said with its line."""
    (log,) = [log for log in PLAN_FIXTURES if log.path.parent.name == "plan_sort_merge_join"]
    records = list(SparkLogConversion(log))
    _, times = blame_replay(records, name_plans=True)
    stage = next(s["holder"]["stage"] for t in times for s in t.blame if "plan_operator" in s["holder"])
    at = next(i for i, r in enumerate(records) if str(stage) in r.get("plan_operators", {}))
    damaged = {**records[at]["plan_operators"], str(stage): {"execution": 0, "id": "eight", "name": 3}}
    records[at] = {**records[at], "plan_operators": damaged}
    problems: list = []
    _, times = blame_replay(((i + 1, r) for i, r in enumerate(records)), problems.append, "smj.jsonl",
                            name_plans=True)
    (problem,) = [p for p in problems if "plan_operators" in str(p)]
    assert f"smj.jsonl:{at + 1}" in str(problem)
    assert stage not in {s["holder"]["stage"] for t in times for s in t.blame if "plan_operator" in s["holder"]}


@pytest.mark.parametrize("log", PLAN_FIXTURES[:3], ids=lambda log: log.path.parent.name)
def test_a_model_spared_the_plans_makes_the_same_records_without_the_naming(log):
    """``flowscope frontiers`` never shows the naming: its model is spared the plans, and nothing else changes."""
    named = list(SparkLogConversion(log))
    spared = list(SparkLogConversion(log, name_plans=False))
    assert len(spared) < len(named)
    assert spared == [r for r in named if "plan_operators" not in r]


def test_an_execution_the_log_never_ends_is_named_at_the_applications_end(tmp_path):
    """Without its ``SQLExecutionEnd`` an execution's stages are named when the application ends, as the plans
    read whole name them."""
    (log,) = [log for log in PLAN_FIXTURES if log.path.parent.name == "plan_sort_merge_join"]
    cut = tmp_path / "app-no-sql-end"
    with cut.open("wb") as out:
        for ev in EventLogReader(log.path):
            if not str(ev.event.get("Event")).endswith("SQLExecutionEnd"):
                out.write(orjson.dumps(ev.event) + b"\n")
    (cut_log,) = find_logs(tmp_path)
    records = list(SparkLogConversion(cut_log))
    named = [r for r in records if "plan_operators" in r]
    ended = next(i for i, r in enumerate(records) if r.get("label") == "application ended")
    assert named and all(records.index(r) < ended for r in named)
    assert _same_naming_as_the_plans(cut_log)
