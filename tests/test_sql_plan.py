"""The SQL plan model: plans from every log version read cleanly, the command's JSON, the combining rules, and bad
plans reported with their line (the History Server comparison is tests/test_sql_plan_history_server.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.eventlog.eventlog_layout import find_logs
from backend.spark.sql_plan.graph import build_graph
from backend.spark.sql_plan.metrics import StageTable, bytes_to_string, combine, ms_to_string, spark_string
from backend.spark.sql_plan.read import read_plans
from flowscope.cli import main
from tests.conftest import FIXTURES, SPARK_EVENTS

BATCH = next((FIXTURES / "spark" / "batch_shuffle").glob("eventlog_v2_*"))
START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"


@pytest.mark.spark_events
def test_every_corpus_log_reads_without_a_problem() -> None:
    """Spark's own test logs (1.2 to 4.2, SQL plans from 2.4 and 3.1, broken attempts) and pyspark 4.3's."""
    executions = 0
    for log in find_logs(SPARK_EVENTS, recursive=True):
        plans, problems = read_plans(log.path)
        assert problems == [], log.path
        for ex in plans.executions.values():
            assert ex.graph is not None and ex.graph.nodes, (log.path, ex.id)
        executions += len(plans.executions)
    assert executions >= 9  # 1 + 2 + 3 in Spark's logs, 3 in pyspark 4.3's


def test_plan_json_is_the_documented_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(BATCH), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    (execution,) = answer["executions"]
    assert {"execution", "description", "nodes", "findings"} <= set(execution)
    names = [n["name"] for n in execution["nodes"]]
    assert "Exchange" in names and "HashAggregate" in names and "ResultQueryStage" not in names
    for node in execution["nodes"]:
        assert {"id", "name", "desc", "children", "codegen_stage", "stages", "metrics"} <= set(node)
        for m in node["metrics"]:
            assert {"name", "type", "value", "min", "med", "max"} <= set(m)
            assert m["type"] in ("sum", "size", "timing", "average", "nsTiming")
    exchange = next(n for n in execution["nodes"] if n["name"] == "Exchange")
    assert len(exchange["stages"]) == 2  # written by the map stage, read by the next one
    rows = {m["name"]: m for m in exchange["metrics"]}["shuffle records written"]
    assert rows["type"] == "sum" and rows["value"] > 0 and rows["min"] is None
    inside = [n for n in execution["nodes"] if n["codegen_stage"] is not None and "members" not in n]
    assert inside and all(n["stages"] for n in inside)
    assert main(["plan", str(BATCH), "--execution", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["executions"][0]["execution"] == 0


def test_plan_text_and_a_missing_execution(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(BATCH)]) == 0
    out = capsys.readouterr().out
    assert "SQL execution 0" in out and "Exchange #" in out and "not measured by Spark" in out
    assert main(["plan", str(BATCH), "--execution", "7"]) == 2
    assert "no SQL execution 7 (executions: 0)" in capsys.readouterr().err


def test_spark_number_formats() -> None:
    assert [bytes_to_string(n) for n in (0, 672, 2047, 2048, 33554432, 5 * 2**30)] == \
        ["0.0 B", "672.0 B", "2047.0 B", "2.0 KiB", "32.0 MiB", "5.0 GiB"]
    # Spark rounds half up on the float it divided: 1.25 s is 1.3 s, not Python's 1.2
    assert [ms_to_string(n) for n in (999, 1250, 59_999, 60_000, 3_600_000)] == \
        ["999 ms", "1.3 s", "60.0 s", "1.0 m", "1.00 h"]


def test_combining_follows_sparks_listener() -> None:
    types = {1: "size", 2: "sum", 3: "nsTiming"}
    a = StageTable(4, 0, 3)
    a.update(10, 0, False, [(1, 5), (2, 1)], types)  # a failed attempt of index 0 ...
    a.update(11, 0, True, [(1, 7), (2, 2)], types)  # ... replaced by its success
    a.update(12, 0, True, [(1, 100), (2, 50)], types)  # a late duplicate of a done index: ignored
    a.update(13, 1, True, [(1, -1), (3, 2_500_000)], types)  # -1: "not set", dropped from size metrics
    size = combine("size", [a], 1, [])
    assert size is not None and (size.value, size.min, size.med, size.max) == (7, 0, 7, 7)  # index 2 stays 0
    assert size.max_at == (4, 0, 11)
    assert spark_string(size) == \
        "total (min, med, max (stageId: taskId))\n7.0 B (0.0 B, 7.0 B, 7.0 B (stage 4.0: task 11))"
    total = combine("sum", [a], 2, [3])
    assert total is not None and total.value == 5 and spark_string(total) == "5"
    driver = combine("size", [a], 1, [9])  # a driver value above every task's: the max is the driver's
    assert driver is not None and driver.max_at is None and spark_string(driver).endswith("(driver))")
    ns = combine("nsTiming", [a], 3, [])
    assert ns is not None and ns.value == 2  # ms, truncated
    assert combine("size", [a], 99, []) is None


def test_codegen_clusters_and_reused_exchanges() -> None:
    def node(name: str, *children: dict, acc: int | None = None) -> dict:
        return {"nodeName": name, "simpleString": name, "children": list(children), "metadata": {},
                "metrics": [] if acc is None else [{"name": "rows", "accumulatorId": acc, "metricType": "sum"}]}
    exchange = node("Exchange", node("Range", acc=2), acc=1)
    plan = node("SortMergeJoin", node("WholeStageCodegen (1)", node("Sort", node("InputAdapter", exchange))),
                node("ReusedExchange", exchange))
    g = build_graph(plan)
    assert [(n.id, n.name) for n in g.nodes.values()] == \
        [(0, "SortMergeJoin"), (1, "WholeStageCodegen (1)"), (2, "Sort"), (3, "Exchange"), (4, "Range")]
    assert g.nodes[2].codegen_stage == 1 and g.nodes[3].codegen_stage is None
    assert sorted(g.edges) == [(2, 0), (3, 0), (3, 2), (4, 3)]  # the reused exchange is an edge from the original


def test_a_bad_plan_is_reported_with_its_line_and_skipped(tmp_path: Path) -> None:
    good = {"nodeName": "Range", "simpleString": "Range", "children": [], "metadata": {}, "metrics": []}
    lines = [{"Event": "SparkListenerLogStart", "Spark Version": "4.3.0"},
             {"Event": START, "executionId": 0, "description": "bad", "time": 1, "sparkPlanInfo":
              {"nodeName": "Filter", "simpleString": "Filter", "children": "oops", "metrics": []}},
             {"Event": START, "executionId": 1, "description": "good", "time": 2, "sparkPlanInfo": good}]
    log = tmp_path / "local-1"
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    plans, problems = read_plans(log)
    assert len(problems) == 1 and "line 2" in problems[0] and "SQL execution 0" in problems[0]
    assert plans.executions[0].graph is None and plans.executions[1].graph is not None


def test_blame_names_the_plan_operator_of_a_stage(capsys: pytest.CaptureFixture[str]) -> None:
    (log,) = (FIXTURES / "spark" / "plan_sort_merge_join").glob("eventlog_v2_*")
    plans, _ = read_plans(log)
    assert main(["blame", str(log), "--json"]) == 0
    holders = [s["holder"] for t in json.loads(capsys.readouterr().out)["times"] for s in t["blame"]
               if s["kind"] == "task"]
    named = [h for h in holders if "plan_operator" in h]
    assert named and len(named) == len(holders)
    for h in named:
        op = h["plan_operator"]
        nodes = {n["id"]: n for n in plans.to_json(op["execution"])["executions"][0]["nodes"]}
        assert h["stage"] in nodes[op["id"]]["stages"] and op["name"] == nodes[op["id"]]["name"]
        assert op["id"] in op["operators"] and all(h["stage"] in nodes[i]["stages"] for i in op["operators"])
    assert main(["blame", str(log)]) == 0
    first = named[0]
    assert f"(stage {first['stage']}.{first['attempt']} · {first['plan_operator']['name']} " \
           f"#{first['plan_operator']['id']}," in capsys.readouterr().out


def test_a_log_cut_mid_execution_shows_the_running_tasks() -> None:
    """The plan's progress: an operator whose stage still has tasks running says how many and the longest (its
    stages are known once one task of the stage has reported its metrics): the longest is the earliest launch of
    a task still running, up to the latest launch or finish the log has reached."""
    from backend.eventlog import EventLogReader
    from backend.spark.sql_plan.plans import SqlPlans

    events = [ev.event for ev in EventLogReader(BATCH)]
    running: dict[int, dict[int, int]] = {}  # stage -> {task: launch time (ms)}
    latest = 0  # the latest launch or finish time read (ms)
    cut = stage = None
    for i, e in enumerate(events):
        if e["Event"] == "SparkListenerTaskStart":
            running.setdefault(e["Stage ID"], {})[e["Task Info"]["Task ID"]] = e["Task Info"]["Launch Time"]
            latest = max(latest, e["Task Info"]["Launch Time"])
        elif e["Event"] == "SparkListenerTaskEnd":
            running[e["Stage ID"]].pop(e["Task Info"]["Task ID"])
            latest = max(latest, e["Task Info"]["Finish Time"])
            if running[e["Stage ID"]] and any(a.get("Metadata") == "sql" for a in e["Task Info"]["Accumulables"]):
                cut, stage = i + 1, e["Stage ID"]  # a task of a SQL stage ended, another still runs
                break
    assert cut is not None and stage is not None
    plans = SqlPlans()
    for i, e in enumerate(events[:cut]):
        plans.feed(e, i + 1)
    (execution,) = plans.to_json()["executions"]
    assert execution["completed"] is None
    running_nodes = [n for n in execution["nodes"] if "running" in n]
    assert running_nodes and all(stage in n["stages"] for n in running_nodes)
    longest_s = (latest - min(running[stage].values())) / 1000
    assert len(running[stage]) >= 1 and longest_s > 0
    assert all(n["running"] == {"tasks": len(running[stage]), "longest_s": pytest.approx(longest_s, abs=1e-3)}
               for n in running_nodes)


def test_hostile_fields_are_survived() -> None:
    """Fields of the wrong type anywhere the plans read, and a plan nested deeper than Python's stack: no crash,
    the deep plan reported, the rest still read."""
    from backend.spark.sql_plan.plans import SqlPlans

    deep: dict = {"nodeName": "Range", "simpleString": "Range", "children": [], "metrics": []}
    for _ in range(5000):
        deep = {"nodeName": "Filter", "simpleString": "Filter", "children": [deep], "metrics": []}
    plans = SqlPlans()
    odd: list = [None, 7, "x", [1], {"a": 1}]
    for i, value in enumerate(odd):
        plans.feed({"Event": START, "executionId": i, "sparkPlanInfo": value, "time": value}, i)
        plans.feed({"Event": "SparkListenerJobStart", "Job ID": i, "Properties": {"spark.sql.execution.id": str(i)},
                    "Stage Infos": [value], "Stage IDs": value}, i)
        plans.feed({"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Task Info": {"Task ID": 1, "Index": value,
                                                                                  "Accumulables": [value]}}, i)
        plans.feed({"Event": "SparkListenerTaskEnd", "Stage ID": value, "Task Info": value}, i)
        plans.feed({"Event": "SparkListenerStageSubmitted", "Stage Info": value}, i)
        plans.feed({"Event": "org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates",
                    "executionId": i, "accumUpdates": value}, i)
        plans.feed({"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLAdaptiveSQLMetricUpdates",
                    "executionId": i, "sqlPlanMetrics": value}, i)
    plans.feed({"Event": START, "executionId": 9, "sparkPlanInfo": deep}, 99)
    answer = plans.to_json()
    assert len(answer["executions"]) == len(odd) + 1
    assert any("line 99" in p and "SQL execution 9" in p for p in plans.problems)


def test_a_stage_that_just_started_shows_its_operators_running() -> None:
    """Before any task of a stage has ended, its codegen stages (its RDDs' scopes) already name its operators."""
    from backend.eventlog import EventLogReader
    from backend.spark.sql_plan.plans import SqlPlans

    events = [ev.event for ev in EventLogReader(BATCH)]
    ended: set[int] = set()
    sql_stages: set[int] = set()
    cut = stage = None
    for i, e in enumerate(events):
        if e["Event"] == "SparkListenerJobStart" and "spark.sql.execution.id" in e.get("Properties", {}):
            sql_stages.update(e["Stage IDs"])
        elif e["Event"] == "SparkListenerTaskEnd":
            ended.add(e["Stage ID"])
        elif e["Event"] == "SparkListenerTaskStart" and e["Stage ID"] in sql_stages - ended:
            cut, stage = i + 1, e["Stage ID"]  # a SQL stage's first task started, none of its tasks ended
            break
    assert cut is not None
    plans = SqlPlans()
    for i, e in enumerate(events[:cut]):
        plans.feed(e, i + 1)
    (execution,) = plans.to_json()["executions"]
    running = [n for n in execution["nodes"] if "running" in n]
    assert running and all(stage in n["stages"] for n in running)
    assert any(n["codegen_stage"] is not None and "members" not in n for n in running)
