"""The SQL plan model against Spark's own History Server: every operator's metrics equal its REST answers.

One History Server (started from the installed pyspark, as benchmarks/replay_vs_history_server.py starts it) reads
every Spark fixture with a SQL execution and the corpus logs that have one (Spark's own test logs from 3.1 and
2.4, pyspark 4.3's); for each application and SQL execution, ``/api/v1/applications/{app}/sql/{execution}
?details=true`` gives the plan's nodes (Spark's graph ids and names) and each node's metrics as Spark prints them.
flowscope's plan of the same log must have the same nodes, edges and codegen stages, and each metric, printed as
Spark prints it (``metrics.spark_string``), must be the same text: total, min, median, max and the task holding
the max.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.eventlog import EventLogReader
from backend.spark.sql_plan.metrics import spark_string
from backend.spark.sql_plan.plans import SqlPlans
from backend.spark.sql_plan.read import read_plans
from tests.conftest import FIXTURES, SPARK_EVENTS, spark_events_missing
from tests.spark_history_server import hs_bench, listed_history_server, stage_log

# corpus logs with SQL executions (relative to the corpus); .gz ones are given to the History Server decompressed
CORPUS_SQL_LOGS = ["app-20200706201101-0003", "local-1642039451826",
                   "historical/application_1506645932520_24630151",
                   "pyspark-4.3/spark430_batch_rdd_sql.jsonl.gz", "pyspark-4.3/spark430_1000tasks_shuffle.jsonl.gz",
                   "pyspark-4.3/events/eventlog_v2_local-1795284909880",
                   "pyspark-4.3/ev_codec/local-1795286983642.zstd"]


def _fixture_logs() -> list[Path]:
    return sorted(p for p in (FIXTURES / "spark").glob("*/eventlog_v2_*") if _has_sql(p))


def _has_sql(path: Path) -> bool:
    return any("SQLExecutionStart" in str(ev.event.get("Event")) for ev in EventLogReader(path))


def _logs() -> list[Path]:
    logs = _fixture_logs()
    if spark_events_missing() is None:
        logs += [SPARK_EVENTS / p for p in CORPUS_SQL_LOGS]
    return logs


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Path]]]:
    """One History Server over every log; yields its applications URL and the application id -> log."""
    directory = tmp_path_factory.mktemp("hs-logs")
    apps = {stage_log(log, directory): log for log in _logs()}
    with listed_history_server(directory, set(apps)) as base:
        yield base, apps


def _plans(log: Path) -> SqlPlans:
    """The plans as ``flowscope plan`` reads them (its narrowed decoder included)."""
    plans, problems = read_plans(log)
    assert problems == [], problems
    return plans


def test_every_execution_matches_the_history_server(history: tuple[str, dict[str, Path]]) -> None:
    base, apps = history
    compared = 0
    mismatches: list[str] = []
    for app, log in sorted(apps.items()):
        plans = _plans(log)
        listed = hs_bench.get_json(f"{base}/{app}/sql?details=false&planDescription=false&length=100000", 60)
        assert sorted(e["id"] for e in listed) == sorted(plans.executions), app
        for eid in sorted(e["id"] for e in listed):
            execution = hs_bench.get_json(f"{base}/{app}/sql/{eid}?details=true&planDescription=false", 60)
            ours = plans.execution_json(plans.executions[execution["id"]])
            by_id = {n["id"]: n for n in ours["nodes"]}
            assert sorted(by_id) == sorted(n["nodeId"] for n in execution["nodes"]), (app, execution["id"])
            # the same edges (child -> parent), and the same codegen stage for each operator inside one
            assert sorted((c, n["id"]) for n in ours["nodes"] for c in n["children"]) == \
                sorted((e["fromId"], e["toId"]) for e in execution["edges"]), (app, execution["id"])
            for node in execution["nodes"]:
                mine = by_id[node["nodeId"]]
                assert mine["name"] == node["nodeName"], (app, execution["id"], node["nodeId"])
                inside = None if "members" in mine else mine["codegen_stage"]
                assert inside == node.get("wholeStageCodegenId"), (app, execution["id"], node["nodeId"])
                ex = plans.executions[execution["id"]]
                values = plans.values(ex)
                graph_node = ex.graph.nodes[node["nodeId"]] if ex.graph else None
                assert graph_node is not None
                mine_metrics = {m.name.strip(): spark_string(values[m.accumulator])
                                for m in graph_node.metrics if m.accumulator in values}
                theirs_metrics = {m["name"]: m["value"] for m in node["metrics"]}
                if mine_metrics != theirs_metrics:
                    mismatches.append(f"{app} execution {execution['id']} node {node['nodeId']} {node['nodeName']}: "
                                      f"ours {mine_metrics} theirs {theirs_metrics}")
                compared += len(theirs_metrics)
    assert not mismatches, "\n".join(mismatches[:30])
    assert compared > 100
