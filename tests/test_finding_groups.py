"""Findings' impact and groups: a real log replicated into one application (the benchmarks' replicator) folds each
kind's repeats into one group whose impact is the copies' sum, and each kind's impact agrees with what the
fixture's own events say, computed here from the events (not from the rules)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from backend.eventlog import EventLogReader
from backend.spark.diagnosis.thresholds import ENV
from flowscope.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures" / "spark"
COPIES = 6


def log_of(name: str) -> Path:
    (log,) = (FIXTURES / name).glob("eventlog_v2_*")
    return log


def events(log: Path) -> list[dict]:
    return [ev.event for ev in EventLogReader(log)]


def report(capsys, log: Path, *more: str) -> dict:
    assert main(["report", str(log), "--json", *more]) == 0
    return json.loads(capsys.readouterr().out)


def _replicator():
    spec = importlib.util.spec_from_file_location("replicate", REPO / "benchmarks" / "replay_vs_history_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def default_thresholds(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


@pytest.fixture(scope="module")
def replicated(tmp_path_factory):
    """skewed_straggler's jobs copied COPIES times into one application, and the stage id offset between copies."""
    rep = _replicator()
    source = log_of("skewed_straggler")
    target = tmp_path_factory.mktemp("replicated") / "app-replicated"
    meta = rep.generate(source, COPIES, target)
    body = [e for e in events(source) if e.get("Event") not in rep.ONCE_BEFORE | rep.ONCE_AFTER]
    return target, meta, rep.Renumber(body).stage


def test_repeats_of_one_stage_fold_into_one_group_per_kind(capsys, replicated):
    log, meta, stage_step = replicated
    one = report(capsys, log_of("skewed_straggler"))
    many = report(capsys, log)
    assert meta["jobs"] == COPIES * one["application"]["jobs"]
    assert many["findings_total"] == COPIES * one["findings_total"]
    assert len(many["groups"]) == len(one["groups"])  # one group per kind, whatever the copies
    for single in one["groups"]:
        (g,) = [g for g in many["groups"] if g["kind"] == single["kind"]]
        assert g["label"] == single["label"] and "make_fixtures.py" in g["label"]
        assert g["count"] == COPIES
        # the stage of every copy: the source's, shifted by the replicator's renumbering
        assert g["stages"] == [single["stages"][0] + k * stage_step for k in range(COPIES)]
        assert len(g["scopes"]) == COPIES and g["recommendation"] == single["recommendation"]
        # every copy ran the same tasks for the same times: the group's impact is the copies' sum
        assert g["impact_s"] == pytest.approx(COPIES * single["impact_s"], abs=1e-3)
        assert g["worst"]["impact_s"] == pytest.approx(single["impact_s"], abs=1e-3)
    impacts = [g["impact_s"] for g in many["groups"]]
    assert impacts == sorted(impacts, reverse=True)
    # every finding kept, each naming its group, group by group
    assert [f["group"] for f in many["findings"]] == sorted(f["group"] for f in many["findings"])
    assert all(many["groups"][f["group"]]["kind"] == f["kind"] for f in many["findings"])
    # the text lists the groups, not the repeats
    assert main(["report", str(log)]) == 0
    text = capsys.readouterr().out.splitlines()
    heads = [line for line in text if line.startswith("  [")]
    assert len(heads) == len(many["groups"])
    assert any(f"{COPIES} findings, in {COPIES} scopes" in line for line in heads)
    assert f"findings: {many['findings_total']} in {len(many['groups'])} groups, largest impact first" in text


def _stage_tasks(evs: list[dict], stage: int) -> list[dict]:
    return [e for e in evs if e.get("Event") == "SparkListenerTaskEnd" and e.get("Stage ID") == stage]


def test_a_straggler_costs_what_its_stage_would_have_ended_earlier(capsys):
    """skewed_straggler: the straggler's stage is its job's last; had the straggler run the median of the others,
    the stage would have ended when that or its last sibling ended."""
    log = log_of("skewed_straggler")
    o = report(capsys, log)
    (f,) = [f for f in o["findings"] if f["kind"] == "straggler"]
    tasks = _stage_tasks(events(log), f["stage"])
    (slow,) = [t for t in tasks if t["Task Info"]["Task ID"] == f["task"]]
    others = sorted((t["Task Info"]["Finish Time"] - t["Task Info"]["Launch Time"]) / 1000 for t in tasks
                    if t is not slow)
    n = len(others)
    median = others[n // 2] if n % 2 else (others[n // 2 - 1] + others[n // 2]) / 2
    info = slow["Task Info"]
    sooner = max(info["Launch Time"] / 1000 + median,
                 max(t["Task Info"]["Finish Time"] / 1000 for t in tasks if t is not slow))
    assert f["impact_s"] == pytest.approx(info["Finish Time"] / 1000 - sooner, abs=2e-3)
    assert (f["impact_s"], f["impact_note"].startswith("blame's what-if")) == (pytest.approx(f["impact_s"]), True)
    (data_skew,) = [g for g in o["groups"] if g["kind"] == "data-skew"]
    assert data_skew["impact_s"] == pytest.approx(f["impact_s"])  # the same straggler, read as data skew
    # the skewed stage evened out (every task at most the median) saves at least the straggler's cut, and at most
    # the longest task's excess over the median
    (skew,) = [g for g in o["groups"] if g["kind"] == "skew"]
    runs = sorted(others + [(info["Finish Time"] - info["Launch Time"]) / 1000])
    med = (runs[len(runs) // 2 - 1] + runs[len(runs) // 2]) / 2 if len(runs) % 2 == 0 else runs[len(runs) // 2]
    assert f["impact_s"] - 2e-3 <= skew["impact_s"] <= runs[-1] - med + 1e-6


def test_gc_costs_its_stage_the_gc_of_the_task_that_ended_it(capsys):
    """gc_pressure: the aggregation's tasks ran in one wave (no more tasks than cores), so without GC the stage
    would have ended when its longest task less its GC time did."""
    log = log_of("gc_pressure")
    evs = events(log)
    o = report(capsys, log)
    (f,) = [f for f in o["findings"] if f["kind"] == "gc"]
    tasks = _stage_tasks(evs, f["stage"])
    cores = sum(e["Executor Info"]["Total Cores"] for e in evs if e.get("Event") == "SparkListenerExecutorAdded")
    assert len(tasks) <= cores  # one wave: what makes this arithmetic the whole answer
    launched = min(t["Task Info"]["Launch Time"] for t in tasks)
    ended = max(t["Task Info"]["Finish Time"] for t in tasks)
    without = max(t["Task Info"]["Finish Time"] - t["Task Metrics"]["JVM GC Time"] for t in tasks)
    assert all(t["Task Info"]["Launch Time"] - launched < 50 for t in tasks)
    assert f["impact_s"] == pytest.approx((ended - without) / 1000, abs=0.06)
    assert "GC" in f["impact_note"]


def test_the_application_findings_cost_the_driver_time_and_the_idle_core_hours(capsys, tmp_path, monkeypatch):
    """driver_stall, with the thresholds lowered so both application findings fire: driver-bound costs the wall
    time with no task running, idle cores cost no time but core-hours, both from the events."""
    t = tmp_path / "t.toml"
    t.write_text('"driver_bound.min_s" = 0\n"driver_bound.ratio" = 0\n"idle_cores.ratio" = 0\n'
                 '"idle_cores.min_core_hours" = 0\n')
    monkeypatch.setenv(ENV, str(t))
    log = log_of("driver_stall")
    evs = events(log)
    o = report(capsys, log)
    start = next(e["Timestamp"] for e in evs if e.get("Event") == "SparkListenerApplicationStart") / 1000
    end = next(e["Timestamp"] for e in evs if e.get("Event") == "SparkListenerApplicationEnd") / 1000
    spans = sorted((e["Task Info"]["Launch Time"] / 1000, e["Task Info"]["Finish Time"] / 1000) for e in evs
                   if e.get("Event") == "SparkListenerTaskEnd")
    busy, reach = 0.0, float("-inf")
    for a, b in spans:  # the union of the tasks' runs
        busy += max(0.0, b - max(a, reach))
        reach = max(reach, b)
    (driver,) = [f for f in o["findings"] if f["kind"] == "driver-bound"]
    assert driver["impact_s"] == pytest.approx(end - start - busy, abs=0.01)
    added = [e for e in evs if e.get("Event") == "SparkListenerExecutorAdded"]
    offered = sum(e["Executor Info"]["Total Cores"] * (end - e["Timestamp"] / 1000) for e in added)
    used = sum(b - a for a, b in spans)
    (idle,) = [f for f in o["findings"] if f["kind"] == "idle-cores"]
    assert idle["impact_s"] == 0 and "core-hours" in idle["impact_note"]
    assert idle["core_hours"] == pytest.approx((offered - used) / 3600, abs=1e-4)
    (group,) = [g for g in o["groups"] if g["kind"] == "idle-cores"]
    assert group["core_hours"] == idle["core_hours"] and group is not o["groups"][0]  # ranked by its 0 s


def test_kinds_without_an_honest_estimate_say_why(capsys):
    """spill: Spark records bytes spilled, not time; a SQL plan finding: the other plan's cost is not recorded."""
    spill = report(capsys, log_of("spill"))
    (f,) = [f for f in spill["findings"] if f["kind"] == "spill"]
    assert f["impact_s"] is None and "bytes" in f["impact_note"]
    plan = report(capsys, log_of("plan_small_files"))
    small = [f for f in plan["findings"] if f["kind"] == "small_files"]
    assert len(small) == 2 and all(f["impact_s"] is None and f["impact_note"] for f in small)
    groups = [g for g in plan["groups"] if g["kind"] == "small_files"]
    assert all(g["impact_s"] is None and g["impact_note"] for g in groups)


def test_failed_attempts_cost_at_most_their_own_run(capsys):
    """task_retries: the failed attempts not run makes the job end earlier by no more than they ran."""
    log = log_of("task_retries")
    evs = events(log)
    o = report(capsys, log)
    (f,) = [f for f in o["findings"] if f["kind"] == "task-failures"][:1]
    failed = [e for e in _stage_tasks(evs, f["stage"])
              if (e.get("Task End Reason") or {}).get("Reason", "Success") != "Success"]
    lost = sum(e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"] for e in failed) / 1000
    assert failed and 0 <= f["impact_s"] <= lost + 1e-6
    assert "failed task attempts" in f["impact_note"]


@pytest.mark.spark_events
def test_too_few_partitions_cost_what_the_recommended_split_saves(capsys):
    """application_1553914137147_0018 ran stages of 2 tasks on 3 cores: the same task time split into 3 partitions
    runs in one wave of a third of it, so a stage whose tasks had the cores to themselves (launched together) ends
    when its longest task did less that third; one that shared them with another job's stage saves no more."""
    from tests.conftest import SPARK_EVENTS

    log = SPARK_EVENTS / "application_1553914137147_0018"
    evs = events(log)
    o = report(capsys, log)
    few = [f for f in o["findings"] if f["kind"] == "too-few-partitions"]
    assert few
    alone = 0
    for f in few:
        tasks = _stage_tasks(evs, f["stage"])
        runs = [(t["Task Info"]["Finish Time"] - t["Task Info"]["Launch Time"]) / 1000 for t in tasks]
        launches = [t["Task Info"]["Launch Time"] for t in tasks]
        cores = f["metric"]["cores"]
        assert len(runs) < cores
        saved = max(runs) - sum(runs) / cores
        if max(launches) - min(launches) < 1000:
            assert f["impact_s"] == pytest.approx(saved, abs=2e-3)
            alone += 1
        else:
            assert 0 < f["impact_s"] <= saved
    assert alone >= 2
    (group,) = [g for g in o["groups"] if g["kind"] == "too-few-partitions" and g["count"] > 1]
    assert group["impact_s"] == pytest.approx(sum(f["impact_s"] for f in few if f["group"] == o["groups"].index(group)))


@pytest.mark.spark_events
def test_a_slow_executor_costs_at_most_its_tasks_excess(capsys):
    """app-20161115172038-0000's "bad exec": its tasks of the stage at the other executors' median, rescheduled,
    end the job no earlier than nothing and no later than all their excess over that median taken out at once."""
    from tests.conftest import SPARK_EVENTS

    log = SPARK_EVENTS / "app-20161115172038-0000"
    evs = events(log)
    o = report(capsys, log)
    (f,) = [f for f in o["findings"] if f["kind"] == "slow-executor"]
    tasks = [t for t in _stage_tasks(evs, f["stage"])
             if (t.get("Task End Reason") or {}).get("Reason", "Success") == "Success"]
    runs = {t["Task Info"]["Task ID"]: ((t["Task Info"]["Finish Time"] - t["Task Info"]["Launch Time"]) / 1000,
                                        t["Task Info"]["Executor ID"]) for t in tasks}
    others = sorted(d for d, ex in runs.values() if ex != f["executor"])
    n = len(others)
    median = others[n // 2] if n % 2 else (others[n // 2 - 1] + others[n // 2]) / 2
    excess = sum(max(0.0, d - median) for d, ex in runs.values() if ex == f["executor"])
    assert 0 < f["impact_s"] <= excess + 1e-6
    assert f"executor {f['executor']}" in f["impact_note"]


def test_fetch_wait_costs_at_most_the_stage_s_waiting(capsys, tmp_path, monkeypatch):
    """executor_lost's reduce stage, with the thresholds lowered so fetch-wait fires: its tasks without their
    waits end the job earlier, by no more than the waits themselves."""
    t = tmp_path / "t.toml"
    t.write_text('"fetch_wait.ratio" = 0.05\n"fetch_wait.min_s" = 0.5\n')
    monkeypatch.setenv(ENV, str(t))
    log = log_of("executor_lost")
    evs = events(log)
    o = report(capsys, log)
    (f,) = [f for f in o["findings"] if f["kind"] == "fetch-wait"]
    waits = [(e.get("Task Metrics") or {}).get("Shuffle Read Metrics", {}).get("Fetch Wait Time", 0) / 1000
             for e in _stage_tasks(evs, f["stage"]) if e.get("Stage Attempt ID", 0) == f["attempt"]]
    assert sum(waits) > 0 and 0 <= f["impact_s"] <= sum(waits) + 1e-6
    assert "fetch wait" in f["impact_note"]


LOWERED = ('"plan.small_files.max_average_bytes" = 1e15\n"plan.small_files.min_files" = 0\n'
           '"plan.broadcastable_sort_merge_join.small_side_bytes" = 1e15\n"plan.large_broadcast.bytes" = 0\n'
           '"plan.large_cross_join.scanned_rows" = 0\n"plan.partitioned_scan_without_filter.min_partitions" = 0\n'
           '"plan.long_filter.chars" = 0\n')


@pytest.mark.parametrize("lowered", [False, True], ids=["defaults", "lowered"])
@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if list(p.glob("eventlog_v2_*"))))
def test_the_model_flags_every_execution_a_plan_finding_fires_on(name, lowered, tmp_path, monkeypatch):
    """The report reads a log's plans for their findings only where the Spark model flagged an execution whose
    final plan could raise one: every execution ``flowscope plan`` finds something in is flagged, with the
    thresholds as shipped and lowered until most rules fire."""
    from backend.spark.recording.convert import SparkLogConversion
    from backend.spark.sql_plan.read import read_plan_findings

    if lowered:
        t = tmp_path / "t.toml"
        t.write_text(LOWERED)
        monkeypatch.setenv(ENV, str(t))
    log = log_of(name)
    flagged = {r["sql_execution"] for r in SparkLogConversion(log)
               if r.get("type") == "mark" and r.get("plan_findings")}
    found, _ = read_plan_findings(log)
    assert {f["execution"] for f in found} <= flagged
    if lowered and name.startswith("plan_") and name != "plan_spill":
        assert found  # the lowered thresholds make the plan fixtures' rules fire (plan_spill has no such operator)


@pytest.mark.spark_events
@pytest.mark.parametrize("lowered", [False, True], ids=["defaults", "lowered"])
@pytest.mark.parametrize("name", ["app-20200706201101-0003", "local-1642039451826",
                                  "pyspark-4.3/spark430_batch_rdd_sql.jsonl.gz"])
def test_the_model_flags_every_execution_a_plan_finding_fires_on_in_real_logs(name, lowered, tmp_path, monkeypatch):
    """The same on real SQL logs (driver-set metrics, adaptive re-plans)."""
    from backend.spark.recording.convert import SparkLogConversion
    from backend.spark.sql_plan.read import read_plan_findings
    from tests.conftest import SPARK_EVENTS

    if lowered:
        t = tmp_path / "t.toml"
        t.write_text(LOWERED)
        monkeypatch.setenv(ENV, str(t))
    log = SPARK_EVENTS / name
    flagged = {r["sql_execution"] for r in SparkLogConversion(log)
               if r.get("type") == "mark" and r.get("plan_findings")}
    found, _ = read_plan_findings(log)
    assert {f["execution"] for f in found} <= flagged
    if lowered and name != "local-1642039451826":  # its plans have no operator a rule reads
        assert found
