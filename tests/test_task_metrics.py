"""A task's time split as Spark measures it: read from every real log, absent said as absent, carried to blame, the
executor timeline and explain."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from backend.eventlog import EventLogReader, find_logs
from backend.spark.diagnosis.blame import blame_log
from backend.spark.diagnosis.task_metrics import AT, FIELDS, PHASES, SUMMED, RunningSums, as_dict, summarize
from backend.spark.diagnosis.task_timeline import TaskTimeline
from backend.spark.recording.convert import SparkLogConversion
from flowscope.cli import main as cli
from tests.conftest import SPARK_EVENTS, spark_event_cases

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures" / "spark"


def fixture_log(name: str):
    (log,) = find_logs(FIXTURES / name)
    return log


def converted(path) -> list[dict]:
    return list(SparkLogConversion(path))


def task_splits(records: list[dict]) -> dict:
    """Task id -> its split with its fields named, from the TaskEnd batches' causes and the clears that carry one
    (an array in FIELDS order)."""
    out = {}
    for r in records:
        if r["type"] == "progress" and r.get("cause", {}).get("event") == "TaskEnd" and "metrics" in r["cause"]:
            assert len(r["cause"]["metrics"]) == len(FIELDS)
            out[r["cause"]["task"]] = as_dict(r["cause"]["metrics"])
        elif r["type"] == "detail" and r["value"] is None and r["key"].startswith("task ") and "metrics" in r:
            out[int(r["key"].split()[1])] = as_dict(r["metrics"])
    return out


def stage_summaries(records: list[dict]) -> dict:
    """'stage S.A' -> the attempt's sums and quantiles, from its stage detail's clear."""
    return {r["key"]: r["metrics"] for r in records
            if r["type"] == "detail" and r["value"] is None and r["key"].startswith("stage ") and "metrics" in r}


@pytest.mark.spark_events
def test_the_split_is_the_history_servers():
    """Spark's own History Server answer for stage 0 of local-1430917381534 (a Spark 1.4 log): scheduler delay,
    getting-result time, run, deserialize, GC and shuffle write per task are what it reports; CPU time, which that
    log does not have, is None here where the History Server says 0."""
    expected = json.loads((SPARK_EVENTS / "expectations" / "stage_task_list_expectation.json").read_text())
    splits = task_splits(converted(SPARK_EVENTS / "local-1430917381534"))
    assert len(expected) == 20
    for t in expected:
        b = splits[t["taskId"]]
        m = t["taskMetrics"]
        assert b["duration_ms"] == t["duration"]
        assert b["scheduler_delay_ms"] == t["schedulerDelay"], t["taskId"]
        assert b["getting_result_ms"] == t["gettingResultTime"]
        assert b["run_ms"] == m["executorRunTime"] and b["deserialize_ms"] == m["executorDeserializeTime"]
        assert b["gc_ms"] == m["jvmGcTime"] and b["result_serialization_ms"] == m["resultSerializationTime"]
        assert b["shuffle_write_ns"] == m["shuffleWriteMetrics"]["writeTime"]
        assert b["input_records"] == m["inputMetrics"]["recordsRead"]
        assert m["executorCpuTime"] == 0 and b["cpu_ns"] is None  # absent, not 0


@pytest.mark.spark_events
@pytest.mark.parametrize("log", spark_event_cases(lambda root: find_logs(root) + find_logs(root / "historical")),
                         ids=lambda log: getattr(log, "name", str(log)))
def test_every_real_log_gives_every_task_its_split(log):
    """Every successful task of every real log (Spark 1.2 to 4.x) has a split with every field, each a number or
    None; every completed stage attempt has a summary, which lists as absent exactly the fields none of its tasks
    had (a few logs ran no task: nothing to check there but that the model found none either)."""
    events = [ev.event for ev in EventLogReader(log.path)]
    succeeded = {e["Task Info"]["Task ID"] for e in events if e["Event"] == "SparkListenerTaskEnd"
                 and (e.get("Task End Reason") or {}).get("Reason") == "Success"}
    completed = {f"stage {e['Stage Info']['Stage ID']}.{e['Stage Info'].get('Stage Attempt ID', 0)}"
                 for e in events if e["Event"] == "SparkListenerStageCompleted"}
    records = converted(log.path)
    splits = task_splits(records)
    assert succeeded <= set(splits)
    ends = [r for r in records if r["type"] == "progress" and r.get("cause", {}).get("event") == "TaskEnd"
            and r["cause"].get("task") is not None]
    assert bool(ends) == bool(succeeded) and all("metrics" in r["cause"] for r in ends)
    for b in splits.values():
        assert set(b) == set(FIELDS)
        assert all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in b.values())
        if b["scheduler_delay_ms"] is not None:
            assert b["scheduler_delay_ms"] >= 0
    summaries = stage_summaries(records)
    assert set(summaries) == completed
    for key, summary in summaries.items():
        for f in SUMMED:
            assert (f in summary["absent"]) == (f not in summary["sums"]), (key, f)


def test_a_summary_skips_what_a_task_lacks_and_names_what_none_had():
    """Sums and quantiles over the tasks that have a field (floats summed in sorted order, as the History Server
    reads them); a field no task had is absent; a stage with no finished task has every field absent."""
    a: list = [None] * len(FIELDS)
    b: list = [None] * len(FIELDS)
    c: list = [None] * len(FIELDS)
    a[AT["run_ms"]], b[AT["run_ms"]], c[AT["run_ms"]] = 30, 10, 20
    a[AT["gc_ms"]], c[AT["gc_ms"]] = 0.1, 0.2  # b lacks it
    out = summarize([a, b, c])
    assert out["sums"]["run_ms"] == 60 and out["quantiles"]["run_ms"] == {"min": 10, "p25": 10, "median": 20,
                                                                         "p75": 30, "max": 30}
    assert out["sums"]["gc_ms"] == 0.3 and out["quantiles"]["gc_ms"]["median"] == pytest.approx(0.15)
    assert "gc_ms" not in out["absent"] and "cpu_ns" in out["absent"] and out["tasks_spilled"] is None
    empty = summarize([])
    assert empty["tasks"] == 0 and empty["sums"] == {} and empty["absent"] == list(SUMMED)


def test_running_sums_add_each_task_once_and_keep_absent_as_none():
    """A growing list of splits: each task is added once, a field none had stays None, floats are added in order."""
    def task(run, gc):
        t: list = [None] * len(FIELDS)
        t[AT["run_ms"]], t[AT["gc_ms"]] = run, gc
        return t

    tasks = [task(5, None)]
    sums = RunningSums()
    assert sums.add(tasks) == {**sums.sums, "tasks": 1} and sums.sums["run_ms"] == 5 and sums.sums["gc_ms"] is None
    tasks += [task(7, 0.1), task(1, 0.2)]
    out = sums.add(tasks)
    assert out["tasks"] == 3 and out["run_ms"] == 13 and out["gc_ms"] == 0.1 + 0.2 and out["cpu_ns"] is None
    assert sums.add(tasks)["run_ms"] == 13  # nothing new: nothing added again


@pytest.mark.spark_events
def test_an_old_log_says_what_it_lacks():
    """Spark 1.2 wrote no CPU times and no record counts: absent, never 0; a 4.x log has them."""
    old = stage_summaries(converted(SPARK_EVENTS / "local-1422981759269"))
    assert old and all({"cpu_ns", "deserialize_cpu_ns", "input_records", "peak_execution_memory"} <= set(s["absent"])
                       for s in old.values())
    new = stage_summaries(converted(fixture_log("spill").path))
    assert all("cpu_ns" not in s["absent"] for s in new.values())
    spill = new["stage 3.0"]
    assert spill["sums"]["memory_spilled"] > 0 and spill["tasks_spilled"] == spill["tasks"] == 2
    assert set(spill["quantiles"]["run_ms"]) == {"min", "p25", "median", "p75", "max"}
    assert spill["peak_jvm_heap"] and all(v > 0 for v in spill["peak_jvm_heap"].values())


def test_blame_task_segments_carry_their_split():
    """Every task and recompute segment naming a task carries that task's split, in the JSON and the CLI text."""
    for name in ("skewed_straggler", "executor_lost"):
        records = converted(fixture_log(name).path)
        splits = task_splits(records)
        seen = 0
        for t in blame_log(records, checked_records=True):
            for seg in t.to_json()["blame"]:
                h = seg["holder"]
                if seg["kind"] in ("task", "recompute") and "task" in h:
                    assert h["breakdown"] == splits[h["task"]], (name, h["task"])
                    seen += 1
        assert seen, name


def test_blame_text_prints_the_split(capsys):
    assert cli(["blame", str(fixture_log("skewed_straggler").path), "--top", "1"]) == 0
    text = capsys.readouterr().out
    # the straggler's line, then where its time went
    assert re.search(r"task 6 \(stage 2\.0.*\n +run 3\.\d\d s, CPU \d+ ms, GC \d+ ms", text), text


def test_the_executor_timeline_splits_each_bar_into_sparks_phases():
    timeline = TaskTimeline()
    for r in converted(fixture_log("gc_pressure").path):
        timeline.record(r)
    d = timeline.to_json()
    phases = d["phases"]
    assert list(phases) == [p.removesuffix("_ms") for p in PHASES]
    for i in range(d["total"]):
        if d["outcome"][i] != "ok":
            continue
        parts = [phases[p][i] for p in phases]
        assert all(v is not None and v >= 0 for v in parts)
        duration_ms = (d["ended"][i] - d["launched"][i]) * 1000
        assert sum(parts) == pytest.approx(duration_ms, abs=2)  # the phases add up to the bar
    assert max(phases["gc"]) > 500  # the fixture's GC pressure shows


def test_explain_on_a_running_stage_says_what_its_finished_tasks_spent(tmp_path, capsys):
    """skewed_straggler's stage 2: while the straggler runs, its three finished siblings' time is said."""
    log = tmp_path / "skew.jsonl"
    assert cli(["record", "-q", str(fixture_log("skewed_straggler").path), "-o", str(log)]) == 0
    records = [json.loads(line) for line in log.open()]
    progress = [r for r in records if r["type"] == "progress"]
    third = [i for i, r in enumerate(progress) if r["cause"].get("event") == "TaskEnd" and r["cause"]["stage"] == 2][2]
    capsys.readouterr()
    assert cli(["explain", str(log), "--scope", "2", "--port", "in,2,0", "--at", str(third + 1)]) == 0
    text = capsys.readouterr().out
    assert re.search(r"its 3 finished tasks spent: run \d\.\d\d s, CPU \d+ ms, GC \d+ ms", text), text
    assert cli(["explain", str(log), "--scope", "2", "--port", "in,2,0", "--at", str(third + 1), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    (late,) = [h for h in answer["late"] if h["running"]]
    finished = late["stages"][-1]["finished"]
    assert finished["tasks"] == 3 and finished["run_ms"] > 0
