"""Real PySpark applications (fixtures/spark/, made by fixtures/spark/make_fixtures.py) against what Spark itself
reported for them while they ran: every fixture converts cleanly, ends with every frontier empty, agrees with Spark
on jobs, stage attempts and tasks, and its frontiers pass each job's epoch at the job's end and each micro-batch at
the batch's progress event. One more test runs a fresh PySpark application in a subprocess and does the same live.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from backend.eventlog import EventLogReader, find_logs
from backend.spark.recording.convert import SparkLogConversion, record
from tracker import Target
from tracker.progress_log.replay import Replay, replay_file

from .conftest import REPO, tracker_of

FIXTURES = REPO / "fixtures" / "spark"
NAMES = ["batch_shuffle", "streaming_stateful", "iterative_pagerank", "skewed_straggler", "task_retries",
         "streaming_stall", "slot_starvation", "driver_stall", "executor_lost", "iterative_kmeans",
         "plan_sort_merge_join", "plan_broadcast", "plan_small_files", "plan_spill", "plan_partitions",
         "plan_cross_join", "plan_long_filter"]
STREAMING = {"streaming_stateful": "rate_windows", "streaming_stall": "slow_udf"}
# a foreachBatch sink runs its own jobs (a count) inside a batch: its plan shapes share stage operators
FOREACH_BATCH = {"driver_stall": "driver_stall"}
# Contract findings the design predicts for a fixture, with why. Failed or retried tasks keep their capability until
# a retry succeeds or the stage fails, so task_retries keeps the progress contract. executor_lost loses a shuffle
# output: its map stage is resubmitted after the reduce attempt failed to fetch, and takes capabilities at an epoch
# its own output's and the reduce stage's frontiers had passed (one capability without cause, frontier regressions
# at out 3, in 4.1, out 4). The re-run's tasks then produce (keyed by partition per attempt), so the reduce stage's
# second attempt consumes their output like any stage: no finding of its own (docs/spark-model.md).
PREDICTED_FINDINGS: dict[str, list[str]] = {
    "executor_lost": ["capability-without-cause"] + ["frontier-regression"] * 3,
}


class Converted:
    """A fixture converted and replayed with contract checks, with the checks at job ends and batch ends done as
    the marks go by (frontiers at that moment, not at the end)."""

    def __init__(self, log) -> None:
        self.conversion = SparkLogConversion(log)
        self.replay = Replay(str(log.path), check_contracts=True)
        self.job_ends: list[tuple[int, int, list, list]] = []  # (job, epoch, sink frontier, holders)
        self.batch_ends: list[tuple[str, int, list]] = []  # (query, batch, sink frontier)
        for rec in self.conversion:
            self.replay.apply(rec)
            if rec["type"] != "mark" or "scope" not in rec:
                continue
            label = rec["label"]
            if label.startswith("job ") and "started" not in label:
                self.job_ends.append((rec["job"], rec["epoch"], self.sink_frontier(rec["scope"]),
                                      self.holders(rec["scope"])))
            elif label.startswith("batch ") and label.endswith(" done"):
                self.batch_ends.append((rec["query"], rec["batch"], self.sink_frontier(rec["scope"])))
        self.replay.finish()
        self.summary = self.conversion.summary()
        self.model = self.conversion.model

    def holders(self, scope_path: list) -> list:
        """The ports of the region that hold pointstamps right now."""
        return [tuple(p["port"]) for p in self.replay.root.find(scope_path).port_state() if p["pointstamps"]]

    def sink_frontier(self, scope_path: list) -> list:
        self.replay.root.schedule()
        return list(tracker_of(self.replay.root.find(scope_path)).frontier(Target(2, 0)))


_converted: dict[str, Converted] = {}


def fixture_log(name: str):
    logs = find_logs(FIXTURES / name)
    assert len(logs) == 1, f"{FIXTURES / name}: expected one event log, found {logs}"
    return logs[0]


def converted(name: str) -> Converted:
    if name not in _converted:
        _converted[name] = Converted(fixture_log(name))
    return _converted[name]


def spark_status(name: str) -> dict:
    return json.loads((FIXTURES / name / "spark-status.json").read_text())


def test_every_fixture_is_there_and_small():
    for name in NAMES:
        log = fixture_log(name)
        assert log.rolling and log.codec == "zstd" and log.state == "complete", log
        size = sum(p.stat().st_size for p in (FIXTURES / name).rglob("*") if p.is_file())
        assert size < 300 * 1024, (name, size)


@pytest.mark.parametrize("name", NAMES)
def test_fixture_converts_cleanly_and_ends_empty(name):
    c = converted(name)
    s = c.summary
    assert s.corrupt_lines == 0 and s.errors == [] and s.accounted and s.ended and s.uncertain == []
    assert c.replay.errors == []
    assert [f.kind for f in c.replay.findings] == PREDICTED_FINDINGS.get(name, []), [str(f) for f in c.replay.findings]
    for scope in c.replay.state()["scopes"]:
        for port in scope["ports"]:
            assert port["frontier"] == [] and port["pointstamps"] == [], (scope["name"], port)


@pytest.mark.parametrize("name", NAMES)
def test_fixture_agrees_with_what_spark_reported(name):
    spark = spark_status(name)
    summary = converted(name).model.summary()
    assert summary.jobs == {j["jobId"]: j["status"] for j in spark["jobs"]}
    assert summary.stages == {(s["stageId"], s["attemptId"]): s["status"] for s in spark["stages"]}
    assert summary.tasks == spark["task_ends"]
    assert {int(k): v for k, v in spark["status_tracker"]["jobs"].items()} == summary.jobs
    assert converted(name).model.app_id == spark["app_id"]


@pytest.mark.parametrize("name", NAMES)
def test_at_every_job_end_the_sink_has_passed_the_jobs_epoch(name):
    """A batch region's job owns its epoch: at its end the sink has passed it. A micro-batch may run several jobs,
    so at a streaming job's end the query's source still holds the batch id (until the batch's progress event,
    checked below); what the job itself held is gone: the source is the only holder left in the region."""
    c = converted(name)
    assert sorted(job for job, *_ in c.job_ends) == sorted(c.model.jobs)
    for job, epoch, frontier, holders in c.job_ends:
        if c.model.jobs[job].region.kind == "streaming query":
            assert frontier == [epoch] and holders == [("out", 1, 0)], (job, epoch, frontier, holders)
        else:
            assert all(t > epoch for t in frontier), (job, epoch, frontier)


@pytest.mark.parametrize("name", sorted(STREAMING | FOREACH_BATCH))
def test_at_every_batch_end_the_sink_has_passed_the_batch(name):
    c = converted(name)
    spark = spark_status(name)
    assert [b for _, b, _ in c.batch_ends] == [p["batchId"] for p in spark["query"]["batches"]]
    assert {q for q, _, _ in c.batch_ends} == {spark["query"]["id"]}
    for _, batch, frontier in c.batch_ends:
        assert all(t > batch for t in frontier), (batch, frontier)


# --- what each application is there to show -------------------------------------------------------------------------


def operators(c: Converted, region_name: str) -> list:
    """The stage operators of a region (not its two driver nodes)."""
    scope = next(s for s in c.replay.root.scopes() if s.name == region_name)
    return [op for op in scope.children.values() if op.attrs.get("role") not in ("source", "sink")]


def test_batch_shuffle_reuses_shuffle_outputs():
    c = converted("batch_shuffle")
    skipped = [k for k, v in c.model.summary().stages.items() if v == "SKIPPED"]
    assert len(skipped) >= 4
    assert any(j["numSkippedStages"] for j in spark_status("batch_shuffle")["jobs"])
    assert any(r.name.startswith("SQL execution") for r in c.model.regions.values())


def test_streaming_batches_run_through_the_same_operators():
    """Stage ids change with every micro-batch; the operators do not. A query has as many operators as its plan
    has shapes: the rate query plans a batch without new rows (a watermark-only batch) differently."""
    for name, query in STREAMING.items():
        c = converted(name)
        region = f"query {query} (streaming)"
        jobs = [j for j in c.model.jobs.values() if j.region.name == region]
        shapes = Counter(tuple(c.model.stages[s].node for s in job.stages) for job in jobs)
        assert len(jobs) >= 7 and len(shapes) <= 2 and max(shapes.values()) >= 7, (name, shapes)
        assert len(operators(c, region)) == sum(len(shape) for shape in shapes)


def test_the_pagerank_loop_is_one_region_of_successive_epochs():
    c = converted("iterative_pagerank")
    jobs = sorted(c.model.jobs.values(), key=lambda j: j.job_id)
    assert {j.region.name for j in jobs} == {"job group pagerank"}
    assert [j.epoch for j in jobs] == list(range(len(jobs))) and len(jobs) >= 5
    # iteration after iteration reads the cached links and the previous ranks: their stages are skipped
    assert sum(v == "SKIPPED" for v in c.model.summary().stages.values()) >= 8


def test_the_skewed_job_has_one_straggler():
    durations: dict[int, list[int]] = {}
    for ev in EventLogReader(fixture_log("skewed_straggler")):
        e = ev.event
        if e["Event"] == "SparkListenerTaskEnd":
            info = e["Task Info"]
            durations.setdefault(e["Stage ID"], []).append(info["Finish Time"] - info["Launch Time"])
    reduce_stage = max(durations)
    times = sorted(durations[reduce_stage])
    assert times[-1] > 4 * statistics.median(times[:-1]), times
    assert spark_status("skewed_straggler")["rows_per_partition"][0] > 10 * max(
        spark_status("skewed_straggler")["rows_per_partition"][1:])


def test_retried_tasks_and_a_failed_job():
    c = converted("task_retries")
    failures = [ev.event["Task End Reason"]["Reason"] for ev in EventLogReader(fixture_log("task_retries"))
                if ev.event["Event"] == "SparkListenerTaskEnd" and ev.event["Task End Reason"]["Reason"] != "Success"]
    assert failures == ["ExceptionFailure"] * 5  # two retried, three for the doomed partition
    summary = c.model.summary()
    assert sorted(summary.jobs.values()) == ["FAILED", "SUCCEEDED"]
    assert "FAILED" in summary.stages.values()
    assert any(m["label"] == "job 1 failed (epoch 0)" for m in c.replay.marks)


def test_the_stalled_batch_shows_in_its_progress_mark():
    c = converted("streaming_stall")
    marks = [m for m in c.replay.marks if m["label"].startswith("batch ")]
    durations = {m["batch"]: m["duration_ms"] for m in marks}
    stalled = max(durations, key=lambda b: durations[b])
    assert durations[stalled] >= 4000
    assert sorted(durations.values())[-2] < 3000, durations  # one stall, not a slow query
    rows = {m["batch"]: m["input_rows"] for m in marks}
    assert rows[stalled + 1] > rows[stalled + 2], rows  # the next batch catches up


def test_a_lost_executor_resubmits_the_map_stage_and_the_checker_names_it():
    reasons = Counter(ev.event["Task End Reason"]["Reason"] for ev in EventLogReader(fixture_log("executor_lost"))
                      if ev.event["Event"] == "SparkListenerTaskEnd")
    assert reasons["ExecutorLostFailure"] >= 1 and reasons["FetchFailed"] >= 1
    c = converted("executor_lost")
    assert any(m["label"].startswith("executor 1 removed") for m in c.replay.marks)
    resubmitted = {(s["stageId"], s["attemptId"]) for s in spark_status("executor_lost")["stages"] if s["attemptId"]}
    # every finding is a resubmitted attempt's StageSubmitted, never at the driver's sink: the results the first
    # reduce attempt delivered still hold the epoch there until the job ends
    for f in c.replay.findings:
        cause = f.batch.cause
        assert cause["event"] == "StageSubmitted" and (cause["stage"], cause["attempt"]) in resubmitted, str(f)
        assert f.location.node != 2, str(f)


def test_record_command_on_a_fixture_redacted(tmp_path):
    out = tmp_path / "stall.jsonl.zst"
    summary = record(fixture_log("streaming_stall"), out, redact=True)
    assert summary.ended and summary.corrupt_lines == 0
    replay = replay_file(out, check_contracts=True)
    assert replay.errors == [] and replay.findings == []


# --- live: a fresh application, its own status tracker, the same log ---------------------------------------------

LIVE_SCRIPT = textwrap.dedent("""
    import json, os, sys, urllib.request
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from operator import add
    from pyspark.sql import SparkSession

    events = sys.argv[1]
    spark = (SparkSession.builder.master("local[2]").appName("flowscope-live-check")
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", events)
             .config("spark.ui.showConsoleProgress", "false").config("spark.ui.port", "0")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    counts = sc.parallelize(range(1000), 4).map(lambda x: (x % 10, 1)).reduceByKey(add, 2)
    counts.collect()
    counts.count()  # the shuffle is reused: a skipped stage
    sc._jsc.sc().listenerBus().waitUntilEmpty()
    tracker = sc.statusTracker()
    jobs = {j: tracker.getJobInfo(j).status for j in tracker.getJobIdsForGroup(None)}
    stages = {}
    for j in jobs:
        for s in tracker.getJobInfo(j).stageIds:
            info = tracker.getStageInfo(s)
            if info is not None:
                stages[s] = [info.currentAttemptId, info.numTasks, info.numCompletedTasks, info.numFailedTasks]
    base = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}"
    rest = json.load(urllib.request.urlopen(base + "/stages"))
    print(json.dumps({"app_id": sc.applicationId, "jobs": jobs, "stages": stages,
                      "attempts": [[s["stageId"], s["attemptId"], s["status"]] for s in rest]}))
    spark.stop()
""")


def test_a_live_application_agrees_with_its_own_status_tracker(tmp_path):
    assert shutil.which("java") or os.environ.get("JAVA_HOME"), "Spark needs Java (.ci/run checks for it)"
    events = tmp_path / "events"
    events.mkdir()
    script = tmp_path / "live.py"
    script.write_text(LIVE_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), events.as_uri()], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    reported = json.loads(proc.stdout.strip().splitlines()[-1])

    (log,) = find_logs(events)
    assert log.name == reported["app_id"]
    out = tmp_path / "live.jsonl"
    summary = record(log, out)
    assert summary.ended and summary.corrupt_lines == 0 and summary.uncertain == []
    replay = replay_file(out, check_contracts=True)
    assert replay.errors == [] and replay.findings == []
    assert all(not p["frontier"] for s in replay.state()["scopes"] for p in s["ports"])

    c = Converted(log)
    model = c.model.summary()
    assert model.jobs == {int(j): status for j, status in reported["jobs"].items()}
    assert model.stages == {(s, a): status for s, a, status in reported["attempts"]}
    ran = {int(s): v for s, v in reported["stages"].items() if v[2] + v[3] > 0}
    assert model.tasks == sum(v[2] + v[3] for v in ran.values())
    for s, (attempt, tasks, completed, failed) in ran.items():
        assert model.stages[(s, attempt)] == "COMPLETE" and completed == tasks and failed == 0
    assert "SKIPPED" in model.stages.values()
    for _job, epoch, frontier, _ in c.job_ends:
        assert all(t > epoch for t in frontier)
