"""Plan findings on real Spark runs: each fires on the fixture made for it and on no other fixture, citing its
metric and threshold; time per operator is Spark's measurement or says it is not measured.

Two thresholds cannot be reached by a fixture small enough to ship (a broadcast over 1 GB, a cross join over
10^10 row pairs): those two are checked at lowered thresholds (:data:`LOWERED`), their rows of the thresholds table
overridden as a thresholds file overrides them, the same for every fixture."""

from __future__ import annotations

import json

import pytest

from backend.spark.diagnosis.thresholds import ENV, TABLE, Thresholds
from backend.spark.sql_plan.findings import FINDING_KINDS
from backend.spark.sql_plan.read import read_plans
from flowscope.cli import main as cli
from tests.conftest import FIXTURES

LOWERED = Thresholds({"plan.large_broadcast.bytes": 1_000_000, "plan.large_cross_join.scanned_rows": 1_000_000},
                     "the test's lowered thresholds")
# the fixture made for each finding, and the SQL executions in it that must raise it
MADE_FOR = {
    "broadcastable_sort_merge_join": ("plan_sort_merge_join", {0, 1}),
    "small_files": ("plan_small_files", {0, 1}),  # written, then read back
    "partitioned_scan_without_filter": ("plan_partitions", {2}),  # 0 writes, 1 reads with a partition filter
    "large_broadcast": ("plan_broadcast", {0}),
    "large_cross_join": ("plan_cross_join", {0}),
    "long_filter": ("plan_long_filter", {0}),
}
ALL_FIXTURES = sorted(p.parent.name for p in (FIXTURES / "spark").glob("*/eventlog_v2_*"))


def _findings(name: str) -> list[dict]:
    (log,) = (FIXTURES / "spark" / name).glob("eventlog_v2_*")
    plans, problems = read_plans(log)
    assert problems == []
    return [f for ex in plans.to_json(thresholds=LOWERED)["executions"] for f in ex["findings"]]


def test_every_finding_has_a_fixture_and_its_thresholds_in_the_table() -> None:
    assert set(MADE_FOR) == set(FINDING_KINDS)
    assert {t.name.split(".")[1] for t in TABLE if t.name.startswith("plan.")} == set(FINDING_KINDS)
    assert {fixture for fixture, _ in MADE_FOR.values()} <= set(ALL_FIXTURES)


@pytest.mark.parametrize("fixture", ALL_FIXTURES)
def test_findings_fire_on_their_fixture_and_nowhere_else(fixture: str) -> None:
    found = _findings(fixture)
    expected = {kind: executions for kind, (name, executions) in MADE_FOR.items() if name == fixture}
    got: dict[str, set[int]] = {}
    for f in found:
        got.setdefault(f["finding"], set()).add(f["execution"])
        assert f["type"] == "mark" and f["label"] and f["recommendation"] and f["metric"]
        assert f["threshold"]["name"].startswith(f"plan.{f['finding']}.") and f["value"] is not None
        assert {"name", "value", "unit", "source"} <= set(f["threshold"]) and isinstance(f["operator"], int)
        assert f["stage"] is None or isinstance(f["stage"], int)
    assert got == expected


def test_findings_say_which_threshold_fired() -> None:
    """Small files fire on the average size, with the file count as the rule's second condition; a default says
    DataFlint is its source, a lowered one where it was set."""
    small = next(f for f in _findings("plan_small_files") if f["finding"] == "small_files")
    assert small["threshold"]["name"] == "plan.small_files.max_average_bytes"
    assert small["threshold"]["value"] == 3_000_000 and small["threshold"]["unit"] == "bytes"
    assert "DataFlint" in small["threshold"]["source"]
    assert [a["name"] for a in small["threshold"]["and"]] == ["plan.small_files.min_files"]
    (broadcast,) = [f for f in _findings("plan_broadcast") if f["finding"] == "large_broadcast"]
    assert broadcast["threshold"] == {"name": "plan.large_broadcast.bytes", "value": 1_000_000, "unit": "bytes",
                                      "source": "set in the test's lowered thresholds", "op": ">"}


def test_a_thresholds_file_changes_a_plan_finding(tmp_path, monkeypatch, capsys) -> None:
    """``flowscope plan --thresholds``: with small files counted from 1,000 files, plan_small_files' writes and reads
    (over 100 files, under 1,000) raise no finding; a JSON file lowering the filter length finds plan_long_filter's
    condition long at the figure the file set."""
    monkeypatch.setenv(ENV, "")  # the flag names the file in the environment: put it back afterwards
    (log,) = (FIXTURES / "spark" / "plan_small_files").glob("eventlog_v2_*")
    assert cli(["plan", str(log), "--json"]) == 0
    assert any(f["finding"] == "small_files" for ex in json.loads(capsys.readouterr().out)["executions"]
               for f in ex["findings"])
    toml = tmp_path / "plan.toml"
    toml.write_text("[plan.small_files]\nmin_files = 1000\n")
    assert cli(["plan", str(log), "--json", "--thresholds", str(toml)]) == 0
    assert [f for ex in json.loads(capsys.readouterr().out)["executions"] for f in ex["findings"]] == []
    (log,) = (FIXTURES / "spark" / "plan_long_filter").glob("eventlog_v2_*")
    (ex,) = [ex for ex in read_plans(log)[0].to_json()["executions"] if ex["findings"]]
    length = ex["findings"][0]["value"]
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"plan.long_filter.chars": length + 1}))
    assert cli(["plan", str(log), "--json", "--thresholds", str(short)]) == 0
    assert [f for ex in json.loads(capsys.readouterr().out)["executions"] for f in ex["findings"]] == []
    assert cli(["plan", str(log), "--thresholds", str(toml)]) == 0
    text = capsys.readouterr().out
    assert "threshold plan.long_filter.chars = 1,000" in text


def test_time_per_operator_is_sparks_or_says_not_measured() -> None:
    (log,) = (FIXTURES / "spark" / "plan_spill").glob("eventlog_v2_*")
    plans, _ = read_plans(log)
    nodes = plans.to_json()["executions"][0]["nodes"]
    aggregates = [n for n in nodes if n["name"] == "HashAggregate"]
    assert aggregates and all(n["time"]["measured"] and "time in aggregation build" in n["time"]["by"]
                              for n in aggregates)
    spilled = [m["value"] for n in aggregates for m in n["metrics"] if m["name"] == "spill size"]
    assert spilled and max(spilled) > 0  # the fixture's aggregation spilled
    exchange = next(n for n in nodes if n["name"] == "Exchange")
    assert {"shuffle write time", "fetch wait time"} <= set(exchange["time"]["by"])
    project = next(n for n in nodes if n["name"] == "Project")
    assert project["time"] == {"measured": False, "note": "not measured by Spark"}
    codegen = next(n for n in nodes if "members" in n)
    assert codegen["time"]["of"] == "pipeline"
