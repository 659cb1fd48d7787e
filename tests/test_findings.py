"""Findings that say what to do: each fires on the log that shows it and not on the clean ones, says which threshold
fired, and the thresholds can be changed from a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.eventlog import EventLogReader, find_logs
from backend.spark.diagnosis.thresholds import ENV, TABLE, ThresholdsError, load
from backend.spark.recording.convert import SparkLogConversion
from flowscope.cli import main as cli
from tests.conftest import SPARK_EVENTS

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures" / "spark"
NEW_KINDS = {"gc", "spill", "fetch-wait", "data-skew", "slow-executor", "too-few-partitions", "tiny-tasks",
             "idle-cores", "driver-bound", "task-failures"}
CLEAN = ("batch_shuffle", "iterative_pagerank", "iterative_kmeans", "streaming_stateful")


def fixture_path(name: str) -> Path:
    (log,) = find_logs(FIXTURES / name)
    return Path(str(log.path))


def findings(path) -> list[dict]:
    return [r for r in SparkLogConversion(path) if r["type"] == "mark" and r.get("finding") in NEW_KINDS]


def kinds(path) -> set[str]:
    return {m["finding"] for m in findings(path)}


@pytest.fixture(autouse=True)
def default_thresholds(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


@pytest.mark.parametrize("name, kind, setting", [
    ("gc_pressure", "gc", "spark.executor.memory"),
    ("spill", "spill", "spark.sql.shuffle.partitions"),
    ("skewed_straggler", "data-skew", "spark.sql.adaptive.skewJoin.enabled"),
    ("task_retries", "task-failures", "spark.task.maxFailures"),
    ("executor_lost", "task-failures", "spark.executor.memoryOverhead"),
])
def test_each_finding_fires_on_its_fixture(name, kind, setting):
    marks = [m for m in findings(fixture_path(name)) if m["finding"] == kind]
    assert marks, name
    m = marks[0]
    assert setting in m["recommendation"] and m["recommendation"].endswith(".")
    assert m["label"] and isinstance(m["metric"], dict) and m["stage"] is not None and m["attempt"] is not None
    assert m["threshold"]["name"].split(".")[0] == kind.replace("-", "_")
    assert m["threshold"]["source"] and isinstance(m["threshold"]["value"], (int, float))
    assert m["scope"] and m["node"] is not None  # the page opens the stage's output at its moment


def events_of(name: str) -> list[dict]:
    return [ev.event for ev in EventLogReader(fixture_path(name))]


def task_spans(events: list[dict]) -> list[tuple[float, float]]:
    """Every task attempt's run, launch to finish (seconds), as its TaskEnd says."""
    return [(e["Task Info"]["Launch Time"] / 1000, e["Task Info"]["Finish Time"] / 1000) for e in events
            if e["Event"] == "SparkListenerTaskEnd"]


def covered(spans: list[tuple[float, float]]) -> float:
    """The time at least one of ``spans`` covers."""
    total, reach = 0.0, float("-inf")
    for a, b in sorted(spans):
        total += max(0.0, b - max(a, reach))
        reach = max(reach, b)
    return total


def test_the_gc_finding_says_its_figures():
    """Its figures are the stage attempt's successful tasks' Task Metrics, summed here from the log."""
    (m,) = [m for m in findings(fixture_path("gc_pressure")) if m["finding"] == "gc"]
    ends = [e for e in events_of("gc_pressure") if e["Event"] == "SparkListenerTaskEnd"
            and (e["Stage ID"], e["Stage Attempt ID"]) == (m["stage"], m["attempt"])
            and e["Task End Reason"]["Reason"] == "Success"]
    assert ends
    gc_ms = sum(e["Task Metrics"]["JVM GC Time"] for e in ends)
    run_ms = sum(e["Task Metrics"]["Executor Run Time"] for e in ends)
    assert m["metric"] == {"gc_s": pytest.approx(gc_ms / 1000, abs=1e-3),
                           "run_s": pytest.approx(run_ms / 1000, abs=1e-3),
                           "ratio": pytest.approx(gc_ms / run_ms, abs=1e-4), "tasks": len(ends)}
    assert m["threshold"]["and"][0]["name"] == "gc.min_s"


@pytest.mark.parametrize("name", CLEAN)
def test_no_finding_on_the_clean_logs(name):
    assert kinds(fixture_path(name)) == set()


def test_each_fixture_shows_only_its_own_trouble():
    assert kinds(fixture_path("gc_pressure")) == {"gc"}
    assert kinds(fixture_path("spill")) == {"spill"}
    assert kinds(fixture_path("skewed_straggler")) == {"data-skew"}


@pytest.mark.spark_events
def test_slow_executor_and_too_few_partitions_on_real_logs():
    """Spark's own test log with a "bad exec" executor: its tasks read the median and ran long, on executor 3
    (one finding for the executor, not one per straggler); a YARN log's stages ran 2 tasks on 3 cores."""
    slow = [m for m in findings(SPARK_EVENTS / "app-20161115172038-0000") if m["finding"] == "slow-executor"]
    assert [m["executor"] for m in slow] == ["3"]
    assert "spark.speculation" in slow[0]["recommendation"]
    few = [m for m in findings(SPARK_EVENTS / "application_1553914137147_0018") if m["finding"] == "too-few-partitions"]
    assert few and all(m["metric"]["tasks"] < m["metric"]["cores"] for m in few)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_thresholds_from_a_file_change_what_fires(tmp_path, monkeypatch):
    """A TOML file lowers the application-wide thresholds: batch_shuffle (clean by default) now shows idle cores and
    driver-bound time, each saying the threshold came from the file; a JSON file raises the GC threshold past the
    fixture's ratio and the GC finding is gone."""
    toml = write(tmp_path / "t.toml", "[idle_cores]\nratio = 0.2\nmin_core_hours = 0\n\n[driver_bound]\nmin_s = 0\n")
    monkeypatch.setenv(ENV, str(toml))
    app = {m["finding"]: m for m in findings(fixture_path("batch_shuffle"))}
    assert set(app) == {"idle-cores", "driver-bound"}
    idle = app["idle-cores"]
    assert idle["threshold"]["value"] == 0.2 and idle["threshold"]["source"] == f"set in {toml}"
    assert idle["stage"] is None and "spark.dynamicAllocation.enabled" in idle["recommendation"]
    driver = app["driver-bound"]
    # the figures, worked out here from the log's events
    events = events_of("batch_shuffle")
    spans = task_spans(events)
    (added,) = [e for e in events if e["Event"] == "SparkListenerExecutorAdded"]  # the local driver, never removed
    (end,) = [e["Timestamp"] / 1000 for e in events if e["Event"] == "SparkListenerApplicationEnd"]
    offered = added["Executor Info"]["Total Cores"] * (end - added["Timestamp"] / 1000)
    used = sum(b - a for a, b in spans)
    assert 0 < used < offered
    assert idle["metric"] == {"offered_core_hours": pytest.approx(offered / 3600, abs=1e-6),
                              "used_core_hours": pytest.approx(used / 3600, abs=1e-6),
                              "idle_core_hours": pytest.approx((offered - used) / 3600, abs=1e-6),
                              "idle_ratio": pytest.approx((offered - used) / offered, abs=1e-4)}
    # the wall time counts from the application's start (not the driver's executor registering, logged before it
    # and stamped later) to its end; the no-task time is what no task's run covered
    (start,) = [e["Timestamp"] / 1000 for e in events if e["Event"] == "SparkListenerApplicationStart"]
    assert start != added["Timestamp"] / 1000
    wall = end - start
    busy = covered(spans)
    assert 0 < busy < wall
    assert driver["metric"]["wall_s"] == pytest.approx(wall, abs=1e-3)
    assert driver["metric"]["no_task_s"] == pytest.approx(wall - busy, abs=1e-3)
    assert driver["metric"]["ratio"] == pytest.approx((wall - busy) / wall, abs=1e-4)
    monkeypatch.setenv(ENV, str(write(tmp_path / "t.json", json.dumps({"gc": {"ratio": 0.9}}))))
    assert "gc" not in kinds(fixture_path("gc_pressure"))


def test_the_straggler_rule_takes_its_thresholds_from_the_table(tmp_path, monkeypatch):
    """skewed_straggler's straggler ran 14x its siblings' median: at 20x it is no straggler, so no data skew
    either; its marks say which thresholds they used."""
    marks = {m["finding"]: m for m in SparkLogConversion(fixture_path("skewed_straggler"))
             if m["type"] == "mark" and m.get("finding")}
    assert marks["straggler"]["threshold"]["name"] == "straggler.factor"
    assert marks["skew"]["threshold"]["and"][0]["name"] == "skew.min_tasks"
    monkeypatch.setenv(ENV, str(write(tmp_path / "s.toml", "[straggler]\nfactor = 20\n")))
    found = {m["finding"] for m in SparkLogConversion(fixture_path("skewed_straggler"))
             if m["type"] == "mark" and m.get("finding")}
    assert found == {"skew"}


def test_long_tasks_one_wave_per_core_are_too_few_partitions(tmp_path, monkeypatch):
    """slot_starvation's two-task stages on two cores (one task a core): the warm-up (its Python workers starting
    took seconds) and the hog (two 3 s sleeps). With tasks of 2 s counted as long, both are too few partitions for
    Spark's 2-3 tasks per core; the waiter's short tasks are not."""
    assert "too-few-partitions" not in kinds(fixture_path("slot_starvation"))
    monkeypatch.setenv(ENV, str(write(tmp_path / "p.toml", '"too_few_partitions.min_task_s" = 2\n')))
    few = [m for m in findings(fixture_path("slot_starvation")) if m["finding"] == "too-few-partitions"]
    assert [m["stage"] for m in few] == [0, 1]
    hog = few[1]
    assert hog["metric"]["tasks"] == 2 and hog["metric"]["cores"] == 2 and hog["metric"]["median_task_s"] >= 3
    assert hog["threshold"]["name"] == "too_few_partitions.tasks_per_core"
    assert "about 4 smaller" in hog["recommendation"]


def test_fetch_wait_with_lower_thresholds(tmp_path, monkeypatch):
    """executor_lost's reduce stage waited 0.65 s for shuffle blocks (7% of its run time): under the defaults no
    finding, with the ratio at 5% and the floor at half a second one, naming the settings to raise."""
    assert "fetch-wait" not in kinds(fixture_path("executor_lost"))
    monkeypatch.setenv(ENV, str(write(tmp_path / "f.toml", "[fetch_wait]\nratio = 0.05\nmin_s = 0.5\n")))
    (m,) = [m for m in findings(fixture_path("executor_lost")) if m["finding"] == "fetch-wait"]
    assert m["stage"] == 2 and m["attempt"] == 0 and 0.05 <= m["metric"]["ratio"] < 0.2
    assert "spark.reducer.maxSizeInFlight" in m["recommendation"]
    assert m["threshold"]["source"] == f"set in {tmp_path / 'f.toml'}"


@pytest.mark.spark_events
def test_tiny_tasks_with_a_lower_task_count(tmp_path, monkeypatch):
    """The 1,000-task shuffle job's tasks are tiny; over DataFlint's 5,000 tasks it would be a finding."""
    log = SPARK_EVENTS / "pyspark-4.3" / "spark430_1000tasks_shuffle.jsonl.gz"
    assert "tiny-tasks" not in kinds(log)
    monkeypatch.setenv(ENV, str(write(tmp_path / "t.toml", '"tiny_tasks.min_tasks" = 500\n')))
    (m,) = [m for m in findings(log) if m["finding"] == "tiny-tasks"]
    assert m["metric"]["tasks"] > 500 and m["metric"]["median_task_s"] < 0.5


def test_a_bad_thresholds_file_is_named_with_its_cause(tmp_path, capsys):
    unknown = write(tmp_path / "u.toml", "[gc]\nratoi = 0.2\n")
    with pytest.raises(ThresholdsError, match=r"u\.toml: unknown threshold 'gc\.ratoi'"):
        load(unknown)
    broken = write(tmp_path / "b.json", '{"gc.ratio": 0.2,\n')
    with pytest.raises(ThresholdsError, match=r"b\.json:2: not JSON"):
        load(broken)
    with pytest.raises(ThresholdsError, match="must be a number"):
        load(write(tmp_path / "n.toml", 'spill.min_bytes = "lots"\n'))
    assert cli(["frontiers", str(fixture_path("spill")), "--thresholds", str(unknown)]) == 2
    assert "unknown threshold 'gc.ratoi'" in capsys.readouterr().err


def test_the_table_names_a_source_for_every_threshold():
    assert len({t.name for t in TABLE}) == len(TABLE)
    assert all(t.source and t.meaning and t.unit for t in TABLE)
    doc = (REPO / "docs" / "findings.md").read_text()
    assert all(f"`{t.name}`" in doc for t in TABLE)  # docs/findings.md lists every one
