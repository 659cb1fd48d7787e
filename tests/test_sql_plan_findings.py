"""Plan findings on real Spark runs: each fires on the fixture made for it and on no other fixture, citing its
metric and threshold; time per operator is Spark's measurement or says it is not measured.

Two thresholds cannot be reached by a fixture small enough to ship (a broadcast over 1 GB, a cross join over
10^10 row pairs): those two are checked at lowered thresholds (:data:`LOWERED`), passed as a caller would pass
its own thresholds table, the same for every fixture."""

from __future__ import annotations

import pytest

from backend.spark.sql_plan.findings import FINDING_KINDS, PLAN_THRESHOLDS
from backend.spark.sql_plan.read import read_plans
from tests.conftest import FIXTURES

LOWERED = {"large_broadcast": {**PLAN_THRESHOLDS["large_broadcast"], "bytes": 1_000_000},
           "large_cross_join": {**PLAN_THRESHOLDS["large_cross_join"], "scanned_rows": 1_000_000}}
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


def test_every_finding_has_a_fixture() -> None:
    assert set(MADE_FOR) == set(FINDING_KINDS)
    assert {fixture for fixture, _ in MADE_FOR.values()} <= set(ALL_FIXTURES)


@pytest.mark.parametrize("fixture", ALL_FIXTURES)
def test_findings_fire_on_their_fixture_and_nowhere_else(fixture: str) -> None:
    found = _findings(fixture)
    expected = {kind: executions for kind, (name, executions) in MADE_FOR.items() if name == fixture}
    got: dict[str, set[int]] = {}
    for f in found:
        got.setdefault(f["finding"], set()).add(f["execution"])
        assert f["type"] == "mark" and f["label"] and f["recommendation"] and f["metric"]
        assert f["threshold"] is not None and f["value"] is not None and isinstance(f["operator"], int)
        assert f["stage"] is None or isinstance(f["stage"], int)
    assert got == expected


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
