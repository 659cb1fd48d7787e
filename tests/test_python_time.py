"""PySpark's own time: a task's Python worker time read from its SQL metrics (row-at-a-time and Arrow operators),
shown in blame, explain and the Executors tab's phases within the run time, never counted twice (the plan's time
line included), and the Python findings, each on its fixture.

The expected Python times are summed here from the fixture logs' raw ``SparkListenerTaskEnd`` events (their
``Accumulables``), independently of ``python_time``'s reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard

from backend.eventlog import find_logs
from backend.spark.diagnosis.blame import blame_log
from backend.spark.diagnosis.python_time import python_parts, task_python
from backend.spark.diagnosis.task_timeline import TaskTimeline
from backend.spark.diagnosis.thresholds import ENV
from backend.spark.recording.convert import SparkLogConversion
from backend.spark.sql_plan.plans import SqlPlans
from flowscope.cli import main as cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "spark"
PYTHON_KINDS = {"python-udf", "python-worker-startup", "cpu-idle-tasks"}
NEW_FIXTURES = ("python_udf", "python_pandas_udf", "python_rdd_map", "python_worker_startup")
TOTAL = "time to run Python workers"


def fixture_path(name: str) -> Path:
    (log,) = find_logs(FIXTURES / name)
    return Path(str(log.path))


def raw_events(name: str) -> list[dict]:
    """The fixture's events as Spark wrote them, decoded whole here."""
    out = []
    for part in sorted(fixture_path(name).glob("events_*")):
        with part.open("rb") as f:
            text = zstandard.ZstdDecompressor().stream_reader(f).read().decode()
        out += [json.loads(line) for line in text.splitlines() if line.strip()]
    return out


def raw_task_python(name: str) -> dict[int, dict]:
    """Task id -> its run, fetch wait, GC and shuffle write (ms) and the sum of its "time to run Python workers"
    updates, for the successful tasks that set one."""
    out = {}
    for e in raw_events(name):
        if e["Event"] != "SparkListenerTaskEnd" or e["Task End Reason"]["Reason"] != "Success":
            continue
        totals = [int(a["Update"]) for a in e["Task Info"].get("Accumulables", []) if a.get("Name") == TOTAL]
        if totals:
            m = e["Task Metrics"]
            out[e["Task Info"]["Task ID"]] = {
                "stage": e["Stage ID"], "total": sum(totals), "run": m["Executor Run Time"],
                "fetch": m["Shuffle Read Metrics"]["Fetch Wait Time"], "gc": m["JVM GC Time"],
                "write": m["Shuffle Write Metrics"]["Shuffle Write Time"] / 1e6}
    return out


def shown_python_ms(t: dict) -> float:
    """What a task's breakdown must show: its Python total within its run less fetch wait, GC and shuffle write."""
    return min(t["total"], max(0, t["run"] - t["fetch"] - t["gc"] - t["write"]))


def records(name: str) -> list[dict]:
    return list(SparkLogConversion(fixture_path(name)))


def python_findings(name: str) -> list[dict]:
    return [r for r in records(name) if r["type"] == "mark" and r.get("finding") in PYTHON_KINDS]


@pytest.fixture(autouse=True)
def default_thresholds(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


# --- reading the metrics ---------------------------------------------------------------------------------------------


def test_two_operators_in_one_task_are_told_apart_and_not_added():
    """Two Python operators' metrics (consecutive ids each, as Spark makes them): the larger total is the task's;
    a reused worker's boot, dropped by Spark, is absent; sizes add up."""
    def op(first: int, total: int, boot: int | None, init: int, exec_: int) -> list[dict]:
        names = ["data sent to Python workers", "data returned from Python workers", "time to start Python workers",
                 "time to initialize Python workers", TOTAL, "time to execute Python code"]
        values = [100, 50, boot, init, total, exec_]
        return [{"ID": first + i, "Name": n, "Update": str(v)} for i, (n, v) in enumerate(zip(names, values,
                                                                                             strict=True))
                if v is not None]
    accs = op(10, 300, None, 900, 250) + [{"ID": 16, "Name": "duration", "Update": "5"}] + op(20, 800, 40, 60, 600)
    assert task_python(accs) == (800, 40, 60, 600, 200, 100, 24)
    assert task_python(accs[::-1]) == task_python(accs)  # the order Spark lists them in does not matter
    assert task_python([{"ID": 1, "Name": "duration", "Update": "5"}]) is None
    assert task_python(None) is None and task_python("x") is None


def test_the_python_time_stays_within_the_run_time():
    # total 900 ms, but fetch wait, GC and shuffle write took 300 of the 1,000 ms run: 700 ms are Python's
    assert python_parts(1000, 200, 50, 50, 900, 100, 200, 400) == (700, 300, 400)
    assert python_parts(1000, 0, 0, 0, 500, None, 4000, 300) == (500, 0, 300)  # a reused worker: no start measured
    assert python_parts(100, 0, 0, 0, 90, 500, 500, 0) == (90, 90, 0)  # start at most the Python time
    assert python_parts(None, 0, 0, 0, 90, None, 0, 0) is None and python_parts(5, 0, 0, 0, None, 1, 1, 1) is None


@pytest.mark.parametrize("name", ["python_udf", "python_pandas_udf"])
def test_blame_shows_each_tasks_python_time(name):
    """Row-at-a-time and Arrow (pandas UDF) alike: every task segment of a task with Python time says it, as summed
    from the raw metric updates; nothing is shown twice (computing and Python within the run)."""
    raw = raw_task_python(name)
    assert raw and sum(t["total"] for t in raw.values()) > 1000
    seen = 0
    for t in blame_log(records(name), checked_records=True):
        for seg in t.to_json()["blame"]:
            h = seg["holder"]
            if seg["kind"] == "task" and h.get("task") in raw:
                python = h["breakdown"]["python"]
                assert python["ms"] == pytest.approx(shown_python_ms(raw[h["task"]]), abs=0.01)
                assert 0 <= python["start_ms"] + python["exec_ms"] <= python["ms"] <= h["breakdown"]["run_ms"]
                seen += 1
    assert seen


def test_blame_text_says_the_python_time(capsys):
    assert cli(["blame", str(fixture_path("python_udf")), "--top", "1"]) == 0
    assert "Python workers " in capsys.readouterr().out


@pytest.mark.parametrize("name", ["python_udf", "python_pandas_udf"])
def test_the_executors_phases_carry_the_python_time(name):
    raw = raw_task_python(name)
    timeline = TaskTimeline()
    for r in records(name):
        timeline.record(r)
    d = timeline.to_json()
    phases = d["phases"]
    assert "python" in phases
    checked = 0
    for i in range(d["total"]):
        if d["outcome"][i] != "ok":
            continue
        parts = [phases[p][i] for p in phases]
        duration_ms = (d["ended"][i] - d["launched"][i]) * 1000
        assert sum(v for v in parts if v is not None) == pytest.approx(duration_ms, abs=2)  # nothing twice
        t = raw.get(d["task"][i])
        if t is not None:
            assert phases["python"][i] == pytest.approx(shown_python_ms(t), abs=0.01)
            checked += 1
    assert checked == len(raw)


def test_explain_and_the_stage_summary_sum_the_python_time():
    """The stage's detail (what explain says its finished tasks spent) and its summary sum the tasks' Python time."""
    raw = raw_task_python("python_udf")
    by_stage: dict[int, float] = {}
    for t in raw.values():
        by_stage[t["stage"]] = by_stage.get(t["stage"], 0) + shown_python_ms(t)
    recs = records("python_udf")
    summaries = {int(r["key"].split()[1].split(".")[0]): r["metrics"] for r in recs
                 if r["type"] == "detail" and r["value"] is None and r["key"].startswith("stage ") and "metrics" in r}
    finished = {}
    for r in recs:
        if r["type"] == "detail" and r["value"] and r["key"].startswith("stage ") and "finished" in r["value"]:
            finished[r["value"]["stage"]] = r["value"]["finished"]
    for stage, ms in by_stage.items():
        assert summaries[stage]["python"]["ms"] == pytest.approx(ms, abs=0.01)
        assert finished[stage]["python"]["ms"] == pytest.approx(ms, abs=0.01)  # all its tasks finished by then


def test_the_plans_time_line_no_longer_exceeds_the_run_time():
    """The Python operator's time is its "time to run Python workers", which contains its workers' start, init
    and code's execution: no more than its stage's tasks ran."""
    raw = raw_task_python("python_udf")
    plans = SqlPlans()
    for e in raw_events("python_udf"):
        plans.feed(e)
    run_by_stage: dict[int, int] = {}
    for t in raw.values():
        run_by_stage[t["stage"]] = run_by_stage.get(t["stage"], 0) + t["run"]
    seen = 0
    for ex in plans.to_json()["executions"]:
        for node in ex["nodes"]:
            if node["name"] != "BatchEvalPython":
                continue
            time = node["time"]
            assert time["by"] == [TOTAL] and "time to execute Python code" in time["parts"]
            assert set(time["parts"]) <= {"time to start Python workers", "time to initialize Python workers",
                                          "time to execute Python code"}
            stages = [s for s in node["stages"] if s in run_by_stage]
            assert time["ms"] == sum(t["total"] for t in raw.values() if t["stage"] in stages)
            assert time["ms"] <= sum(run_by_stage[s] for s in stages)
            seen += 1
    assert seen


# --- the findings -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, kind, operator, setting", [
    ("python_udf", "python-udf", "BatchEvalPython", "spark.sql.execution.arrow.pyspark.enabled"),
    ("python_pandas_udf", "python-udf", "ArrowEvalPython", "pyspark.sql.functions"),
    ("python_worker_startup", "python-worker-startup", "BatchEvalPython", "spark.python.worker.reuse"),
    ("python_rdd_map", "cpu-idle-tasks", None, "spark.python.profile"),
])
def test_each_python_finding_fires_on_its_fixture(name, kind, operator, setting):
    marks = python_findings(name)
    assert {m["finding"] for m in marks} == {kind}, marks
    m = marks[-1]  # the measured stage (a warm-up stage may come first)
    assert setting in m["recommendation"] and m["recommendation"].endswith(".")
    assert m["metric"].get("operator") == operator
    assert m["threshold"]["name"].split(".")[0] == kind.replace("-", "_") and m["threshold"]["source"]
    assert m["impact_s"] > 0 and "impact_note" not in m  # a note only says why an impact is missing
    assert m["scope"] and m["node"] is not None and m["stage"] is not None


def test_the_rdd_finding_says_what_the_tasks_may_wait_on():
    (m, *_) = [m for m in python_findings("python_rdd_map") if m["finding"] == "cpu-idle-tasks"][-1:]
    assert m["metric"]["possible"] == ["python", "cpu"] and "Python workers (RDD API" in m["label"]
    assert m["metric"]["cpu_s"] < m["metric"]["idle_s"]


# Existing fixtures where a Python finding is the truth: their RDD stages (PythonRDD) wait 5 s or more
# (cpu_idle_tasks.min_s) on functions that sleep, or for their Python workers to start (the RDD API's Python time is
# not recorded, so cpu-idle-tasks says the tasks waited while their JVM thread idled), and streaming_stall's UDF
# sleeps 4 s on one row in one micro-batch (python-udf there). Every other fixture's stages run JVM code alone,
# which cpu-idle-tasks leaves out.
RDD_FIXTURES = ("batch_shuffle", "cores_local2", "cores_local4", "executor_lost", "iterative_kmeans",
                "iterative_pagerank", "slot_starvation")
EXPECTED_ELSEWHERE = {"streaming_stall": {"python-udf"}, **{name: {"cpu-idle-tasks"} for name in RDD_FIXTURES}}


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()
                                        if p.is_dir() and p.name not in NEW_FIXTURES))
def test_the_python_findings_elsewhere(name):
    assert {m["finding"] for m in python_findings(name)} == EXPECTED_ELSEWHERE.get(name, set())


def test_the_overview_ranks_a_python_udf_by_its_python_time(capsys):
    """The report's impact of python-udf: its stage's tasks rescheduled without their Python workers' time, so
    more than 0 and no more than the job took."""
    assert cli(["report", str(fixture_path("python_udf")), "--json"]) == 0
    o = json.loads(capsys.readouterr().out)
    (udf,) = [f for f in o["findings"] if f["kind"] == "python-udf"]
    assert 0 < udf["impact_s"] <= max(t["latency_s"] for t in o["slowest"])
    assert "Python worker time" in udf["impact_note"]
