"""Blame (backend/spark/diagnosis/blame.py, docs/blame.md) on the real Spark fixtures, through the CLI,
the REST API and a live (followed) session."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from backend.eventlog import EventLogReader, find_logs
from backend.spark.diagnosis.blame import blame_log, select
from backend.spark.recording.convert import SparkLogConversion
from backend.web.app import Settings
from flowscope.cli import main as cli
from tests.e2e.logs import pipeline_records
from tests.e2e.server import running_server

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures" / "spark"
NAMES = ("batch_shuffle", "streaming_stateful", "iterative_pagerank", "skewed_straggler", "task_retries",
         "streaming_stall", "slot_starvation", "driver_stall", "executor_lost", "iterative_kmeans")
KINDS = {"task", "waiting-for-slots", "scheduler", "recompute", "driver", "capability", "message"}


def fixture_log(name: str):
    (log,) = find_logs(FIXTURES / name)
    return log


_blamed: dict[str, list] = {}


def blamed(name: str) -> list:
    if name not in _blamed:
        _blamed[name] = blame_log(SparkLogConversion(fixture_log(name)))
    return _blamed[name]


def check_tiling(b) -> None:
    """Segments are in time order, contiguous from start to end, and their seconds sum to the latency."""
    assert b.blame, b
    assert b.blame[0]["from"] == pytest.approx(b.start) and b.blame[-1]["to"] == pytest.approx(b.end)
    for a, c in zip(b.blame, b.blame[1:], strict=False):
        assert a["to"] == pytest.approx(c["from"]), b.blame
    assert sum(s["seconds"] for s in b.blame) == pytest.approx(b.latency_s, abs=1e-4)
    assert all(s["kind"] in KINDS and s["seconds"] > 0 for s in b.blame)


@pytest.mark.parametrize("name", NAMES)
def test_every_completed_job_or_batch_is_blamed_and_tiled(name):
    times = blamed(name)
    assert times
    for b in times:
        check_tiling(b)
        assert b.job_ids, b  # every Spark time is a job or a micro-batch that ran jobs
    jobs = {j for b in times for j in b.job_ids}
    status = json.loads((FIXTURES / name / "spark-status.json").read_text())
    spark_jobs = {j["jobId"] for j in status["jobs"]}
    assert jobs <= spark_jobs and jobs  # every job blamed is one Spark reported


def test_skewed_straggler_blames_the_straggler_task():
    slowest = select(blamed("skewed_straggler"), top=1)[0]
    task = max(slowest.blame, key=lambda s: s["seconds"])
    assert task["kind"] == "task"
    h = task["holder"]
    assert h["index"] == 0 and h["executor"] == "driver" and h["median_task_s"] > 0
    assert task["seconds"] / slowest.latency_s > 0.6
    assert h["duration_s"] > 4 * h["median_task_s"]
    # what-if: at the median, the job ends earlier by the straggler's excess (bounded by the next task's end)
    assert 0 < h["what_if"]["ends_earlier_s"] <= h["duration_s"] - h["median_task_s"] + 1e-6
    # its map stage had tasks waiting for the two slots, held by its own other tasks
    waits = [s for s in slowest.blame if s["kind"] == "waiting-for-slots"]
    assert waits and all(x["job"] in slowest.job_ids for s in waits for x in s["holder"]["held_by"])


def test_streaming_stall_blames_the_slow_udf_partition():
    (b,) = [b for b in blamed("streaming_stall") if b.batch_id == 4]
    assert b.name == "query slow_udf (streaming)" and b.time == 4 and len(b.job_ids) == 1
    assert 4.0 < b.latency_s < 5.0
    task = max(b.blame, key=lambda s: s["seconds"])
    h = task["holder"]
    assert task["kind"] == "task" and "BatchEvalPython" in h["operator"] and h["index"] == 0
    assert task["seconds"] / b.latency_s > 0.85 and h["median_task_s"] < 0.5
    assert h["what_if"]["ends_earlier_s"] > 3.5
    first = b.blame[0]
    assert first["kind"] == "driver" and "queryPlanning" in first["holder"]["doing"]
    # the start is the trigger (progress.timestamp), and the latency is the one Spark reported for the batch
    status = json.loads((FIXTURES / "streaming_stall" / "spark-status.json").read_text())
    (reported,) = [p for p in status["query"]["batches"] if p["batchId"] == 4]
    assert b.latency_s == pytest.approx(reported["triggerMs"] / 1000, abs=0.002)
    others = [x for x in blamed("streaming_stall") if x.batch_id not in (None, 4, 0)]
    assert all(x.latency_s < 2.5 for x in others)


def test_what_if_walks_again_and_another_stage_takes_over(tmp_path, capsys):
    """Two stages feed the driver's results: A's straggler (task 11) releases the time last, B's one task ended a
    second before it. Had task 11 run A's median, A would have been done long before B; the time would then have
    waited for B: it ends 1 s earlier, not the 4 s the straggler's own excess says, and the answer names B."""
    def progress(seq: int, at: float, updates: list, task: int | None = None, stage: int | None = None) -> dict:
        rec = {"type": "progress", "scope": [], "worker": 0, "seq": seq, "at": at, "updates": updates}
        if task is not None:
            rec["cause"] = {"event": "TaskEnd", "task": task, "stage": stage, "attempt": 0, "index": task % 10,
                            "launched": 1.0}
        return rec

    def operator(node: int, name: str, inputs: int, outputs: int, attrs: dict, **more: Any) -> dict:
        return {"type": "operator", "scope": [], "node": node, "name": name, "inputs": inputs, "outputs": outputs,
                "attrs": attrs, **more}

    records = [
        {"type": "header", "format": "flowscope-progress", "version": 1},
        operator(1, "driver (new work)", 0, 1, {"role": "source"}, capabilities=[[0]]),
        operator(2, "stage A", 1, 1, {"stage_ids": [1]}),
        operator(3, "stage B", 1, 1, {"stage_ids": [2]}),
        operator(4, "driver (results)", 2, 0, {"role": "sink"}),
        *({"type": "edge", "scope": [], "from": a, "to": b} for a, b in [
            (["out", 1, 0], ["in", 2, 0]), (["out", 1, 0], ["in", 3, 0]),
            (["out", 2, 0], ["in", 4, 0]), (["out", 3, 0], ["in", 4, 1])]),
        {"type": "mark", "scope": [], "at": 1.0, "label": "job 0 started (epoch 0)", "job": 0, "epoch": 0},
        progress(0, 1.0, [[["out", 1, 0], 0, -1], [["out", 1, 0], 1, 1], [["out", 2, 0], 0, 2],
                          [["out", 3, 0], 0, 1]]),
        progress(1, 2.0, [[["out", 2, 0], 0, -1], [["in", 4, 0], 0, 1]], task=10, stage=1),
        progress(2, 5.0, [[["out", 3, 0], 0, -1], [["in", 4, 1], 0, 1]], task=20, stage=2),
        progress(3, 6.0, [[["out", 2, 0], 0, -1], [["in", 4, 0], 0, 1]], task=11, stage=1),
        progress(4, 6.5, [[["in", 4, 0], 0, -2], [["in", 4, 1], 0, -1]]),
    ]
    (b,) = blame_log(records)
    check_tiling(b)
    (task,) = [s for s in b.blame if s["kind"] == "task"]
    h = task["holder"]
    assert (h["task"], h["duration_s"], h["median_task_s"]) == (11, 5.0, 1.0)
    assert h["what_if"]["ends_earlier_s"] == pytest.approx(1.0)  # 6.0 -> B's end at 5.0, not 6.0 -> 2.0
    then = h["what_if"]["then_held_by"]
    assert then["operator"] == "stage B" and then["task"] == 20 and then["port"] == ["out", 3, 0]
    log = Path(tmp_path) / "two-stages.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert cli(["blame", str(log)]) == 0
    assert "would have ended 1.00 s earlier, then held by task 20 of stage 2 (stage B)" in capsys.readouterr().out


def spark_jobs(name: str) -> dict:
    """Spark's own jobs of a fixture (its REST answers), by job id."""
    status = json.loads((FIXTURES / name / "spark-status.json").read_text())
    return {j["jobId"]: j for j in status["jobs"]}


def test_slot_starvation_blames_the_job_holding_both_slots():
    jobs = spark_jobs("slot_starvation")
    (hog,) = [j for j, info in jobs.items() if info.get("description", "").startswith("hog")]
    (waiter,) = [j for j, info in jobs.items() if info.get("description", "").startswith("waiter")]
    (b,) = [b for b in blamed("slot_starvation") if b.job_ids == [waiter]]
    wait = max(b.blame, key=lambda s: s["seconds"])
    assert wait["kind"] == "waiting-for-slots" and wait["seconds"] / b.latency_s > 0.5, b.blame
    h = wait["holder"]
    assert h["slots"] == 2
    # the culprit first: the other job, whose stage had both slots, and nothing but the two jobs
    assert h["held_by"][0]["job"] == hog and h["held_by"][0]["stage"] in jobs[hog]["stageIds"]
    assert h["held_by"][0]["tasks"] == 2 and {x["job"] for x in h["held_by"]} <= {hog, waiter}
    # the waiter's own tasks were short: the wait, not the work, made it late
    assert sum(s["seconds"] for s in b.blame if s["kind"] == "task") < wait["seconds"]
    (hog_time,) = [x for x in blamed("slot_starvation") if x.job_ids == [hog]]
    assert not any(s["kind"] == "waiting-for-slots" for s in hog_time.blame)


def test_driver_stall_in_foreach_batch_is_blamed_on_the_driver():
    status = json.loads((FIXTURES / "driver_stall" / "spark-status.json").read_text())
    stalled, stall_s = status["stalled_batch"], status["driver_stall_s"]
    batches = {b.batch_id: b for b in blamed("driver_stall") if b.batch_id is not None}
    b = batches[stalled]
    assert b.name == "query driver_stall (streaming)" and b.job_ids
    (reported,) = [p for p in status["query"]["batches"] if p["batchId"] == stalled]
    assert b.latency_s == pytest.approx(reported["triggerMs"] / 1000, abs=0.002)
    driver_s = sum(s["seconds"] for s in b.blame if s["kind"] == "driver")
    assert driver_s / b.latency_s > 0.6 and driver_s > stall_s, b.blame
    # the culprit: the driver before the batch's first job, inside addBatch (the foreachBatch function's sleep),
    # not Spark's planning phases
    first = max(b.blame, key=lambda s: s["seconds"])
    assert first is b.blame[0] and first["kind"] == "driver" and first["to"] <= min(
        s["from"] for s in b.blame if s["kind"] in ("task", "scheduler")) + 1e-6
    assert "addBatch's driver-side code before its first job" in first["holder"]["doing"]
    assert first["holder"]["driver_before_first_job_ms"] >= stall_s * 1000
    # no other batch (past the first, which starts the query) spends half as long there
    others = [x for k, x in batches.items() if k not in (0, stalled)]
    assert others and all(x.blame[0]["seconds"] < first["seconds"] / 2 for x in others)


def test_executor_lost_blames_the_recompute():
    """Executor 1 died mid-shuffle: the reduce attempt failed to fetch, the map stage re-ran its lost partitions,
    then the reduce stage re-ran; most of the job's latency is that recomputation (and the failed attempt)."""
    status = json.loads((FIXTURES / "executor_lost" / "spark-status.json").read_text())
    attempts = {(s["stageId"], s["attemptId"]): s["status"] for s in status["stages"]}
    (failed,) = [k for k, v in attempts.items() if v == "FAILED"]
    rerun = {sid for sid, attempt in attempts if attempt > 0}
    assert failed[0] in rerun and len(rerun) == 2  # the reduce stage and its map stage
    (b,) = [b for b in blamed("executor_lost") if len(b.job_ids) == 1 and b.job_ids[0] in
            {j["jobId"] for j in status["jobs"] if failed[0] in j["stageIds"]}]
    # the lost executor's cost: the failed attempt, and the re-run attempts' tasks (running, or waiting for the one
    # core left, which the re-run's own tasks held)
    lost = [s for s in b.blame if s["kind"] == "recompute" or s["holder"].get("attempt", 0) > 0]
    assert sum(s["seconds"] for s in lost) / b.latency_s > 0.5, b.blame
    recompute = [s for s in b.blame if s["kind"] == "recompute"]
    # the critical path runs through the failed attempt, then each re-run attempt, in that order, to the end
    named = [(s["holder"]["stage"], s["holder"]["attempt"]) for s in recompute]
    assert named[0] == failed and recompute[0]["holder"]["failed_attempt"] == failed[1]
    assert {k for k in named[1:]} == {(sid, 1) for sid in rerun}
    assert named[-1] == (failed[0], 1)
    # the re-run attempts' tasks are tasks (keyed by their partition, not their index in the re-run's task set):
    # each names its task, partition and the surviving executor, and the wait before it names the re-run itself
    reruns = {}
    for ev in EventLogReader(fixture_log("executor_lost")):
        e = ev.event
        if e["Event"] == "SparkListenerTaskStart" and e["Stage Attempt ID"] > 0:
            info = e["Task Info"]
            reruns[info["Task ID"]] = (e["Stage ID"], info["Partition ID"], info["Index"])
    for s in recompute[1:]:
        h = s["holder"]
        assert reruns[h["task"]] == (h["stage"], h["partition"], h["index"]) and h["executor"] == "0", h
        wait = b.blame[b.blame.index(s) - 1]
        assert wait["kind"] == "waiting-for-slots" and wait["holder"]["slots"] == 1, wait
        assert wait["holder"]["held_by"] == [{"stage": h["stage"], "job": b.job_ids[0], "tasks": 1}], wait
    assert any(h["partition"] != h["index"] for h in (s["holder"] for s in recompute[1:]))  # the reduce re-run
    assert b.blame[-1]["kind"] == "driver" and b.blame[-1]["holder"]["doing"] == "receiving results"
    assert b.blame[-2] is recompute[-1]  # its last task delivered the job's last result
    assert not any(s["kind"] == "driver" and "nothing" in s["holder"].get("doing", "") for s in b.blame)
    assert b.to_json().get("status") is None  # Spark recomputed: the job succeeded


def test_executor_lost_recompute_says_why_the_work_is_redone(capsys):
    """Every recompute segment names the failure behind it, as the log says: the reduce attempt's fetch failure of
    the lost executor's shuffle output, and why Spark removed that executor."""
    fetch, removed = None, {}
    for ev in EventLogReader(fixture_log("executor_lost")):
        e = ev.event
        reason = e.get("Task End Reason") or {}
        if e["Event"] == "SparkListenerTaskEnd" and reason.get("Reason") == "FetchFailed" and fetch is None:
            fetch = (e["Stage ID"], e["Stage Attempt ID"], reason["Block Manager Address"]["Executor ID"])
        elif e["Event"] == "SparkListenerExecutorRemoved":
            removed[e["Executor ID"]] = e["Removed Reason"]
    assert fetch is not None and fetch[2] in removed
    (b,) = [b for b in blamed("executor_lost") if any(s["kind"] == "recompute" for s in b.blame)]
    recompute = [s for s in b.blame if s["kind"] == "recompute"]
    assert len(recompute) == 3
    for s in recompute:
        f = s["holder"]["failure"]
        assert (f["stage"], f["attempt"], f["executor"]) == fetch and f["reason"] == "FetchFailed", f
        assert f["executor_removed"] == removed[fetch[2]] and "FetchFailedException" in f["message"]
    assert cli(["blame", str(fixture_log("executor_lost").path)]) == 0
    text = capsys.readouterr().out
    assert f"stage {fetch[0]}.{fetch[1]} (" in text and f"failed: FetchFailed (executor {fetch[2]}, " in text
    assert text.count(f"re-run after stage {fetch[0]}.{fetch[1]} failed: FetchFailed (executor {fetch[2]}") == 2
    assert f"executor {fetch[2]} removed: {removed[fetch[2]]}" in text
    # every wait for a slot in this log was behind the stage's own earlier tasks (the one core left): said so
    (job0,) = [x for x in blamed("executor_lost") if x is not b]
    waits = [s for t in (job0, b) for s in t.blame if s["kind"] == "waiting-for-slots"]
    assert waits and all({x["stage"] for x in s["holder"]["held_by"]} == {s["holder"]["stage"]} for s in waits)
    lines = [x for x in text.splitlines() if "waiting-for-slots" in x]
    assert len(lines) == len(waits) and all("its own earlier tasks" in x for x in lines), lines


def test_task_retries_failed_job_says_it_failed_and_why(tmp_path, capsys):
    """task_retries' job 1 fails (partition 3 fails on every attempt): its time says so, with the exception Spark
    reports (a Python worker's traceback reduced to the exception it ends with), in the JSON, the text and REST;
    the job that succeeded (its task retried) says nothing of the kind."""
    ends = {}
    for ev in EventLogReader(fixture_log("task_retries")):
        e = ev.event
        if e["Event"] == "SparkListenerJobEnd":
            ends[e["Job ID"]] = e["Job Result"]
    (failed,) = [j for j, r in ends.items() if r["Result"] == "JobFailed"]
    exception = ends[failed]["Exception"]["Message"].strip().splitlines()
    (raised,) = [x for x in exception if x.startswith("RuntimeError: ")]  # what the doomed partition raised
    times = {tuple(b.job_ids): b for b in blamed("task_retries")}
    doomed = times[(failed,)].to_json()
    assert doomed["status"] == "failed" and doomed["failure"].endswith(raised), doomed["failure"]
    assert "Traceback" not in doomed["failure"] and "\n" not in doomed["failure"]
    (seg,) = [s for s in doomed["blame"] if s["holder"].get("failed_attempt") is not None]
    assert seg["holder"]["failure"]["reason"] == "ExceptionFailure" and raised in seg["holder"]["failure"]["message"]
    assert all("status" not in times[(j,)].to_json() for j in ends if j != failed)
    log = fixture_log("task_retries").path
    assert cli(["blame", str(log)]) == 0
    text = capsys.readouterr().out
    (head,) = [x for x in text.splitlines() if f"(job {failed})" in x]
    assert " failed after " in head and head.endswith(raised), head
    settings = Settings(allowed_dirs=[log.parent], data_dir=tmp_path / "data")
    with running_server(settings) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        r = c.post("/api/sessions", json={"path": str(log)})
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        assert srv.wait_for(sid, status=("done", "failed"), client=c)["status"] == "done"
        rest = {tuple(t["job_ids"]): t for t in c.get(f"/api/sessions/{sid}/blame").json()["times"]}
    assert rest[(failed,)]["status"] == "failed" and rest[(failed,)]["failure"] == doomed["failure"]
    assert all("status" not in t for k, t in rest.items() if k != (failed,))


def test_hostile_failure_fields_are_reported_and_left_out():
    """A cause's ``failure`` that is not an object of scalars and a mark's ``failure`` that is not a string are
    reported with their lines and left out: the time is still blamed."""
    good = hostile_records()
    records = good[:8] + [good[10]]  # the graph, an executor, job 0's start, the stage's capabilities
    records += [
        {"type": "progress", "scope": [], "worker": 0, "seq": 1, "at": 2.0,
         "updates": [[["out", 2, 0], 0, -3], [["in", 3, 0], 0, 1]],
         "cause": {"event": "StageCompleted", "stage": 1, "attempt": 0, "failed": True, "failure": ["lost"]}},
        {"type": "mark", "scope": [], "at": 2.5, "label": "job 0 failed (epoch 0)", "job": 0, "epoch": 0,
         "status": "FAILED", "failure": {"x": 1}},
        {"type": "progress", "scope": [], "worker": 0, "seq": 2, "at": 2.5, "updates": [[["in", 3, 0], 0, -1]]},
    ]
    problems: list = []
    (b,) = blame_log(records, problems.append)
    said = sorted(str(p) for p in problems)
    assert len(said) == 2 and any("cause.failure" in p for p in said) and any("mark.failure" in p for p in said)
    check_tiling(b)
    assert b.job_ids == [0] and b.failure == "job 0 failed" and b.to_json()["status"] == "failed"
    (rec,) = [s for s in b.blame if s["kind"] == "recompute"]
    assert "failure" not in rec["holder"] and rec["holder"]["failed_attempt"] == 0


def test_a_log_without_spark_conventions_gets_capability_and_message_segments():
    times = blame_log(pipeline_records(4, 5))
    assert times
    for b in times:
        check_tiling(b)
        assert b.job_ids == [] and b.batch_id is None
        assert {s["kind"] for s in b.blame} <= {"capability", "message", "driver"}


def test_cli_blame_on_the_event_log_and_its_recording_agree(tmp_path, capsys):
    log = fixture_log("streaming_stall").path
    rec = tmp_path / "stall.jsonl"
    assert cli(["record", "-q", str(log), "-o", str(rec)]) == 0
    capsys.readouterr()
    assert cli(["blame", str(log), "--json"]) == 0
    direct = json.loads(capsys.readouterr().out)
    assert cli(["blame", str(rec), "--json"]) == 0
    recorded = json.loads(capsys.readouterr().out)
    # each stage's SQL plan operator is named from the recording too (the model's marks carry it)
    named = [s["holder"]["plan_operator"] for t in direct["times"] for s in t["blame"]
             if "plan_operator" in s["holder"]]
    assert named and recorded == direct
    (b4,) = [t for t in direct["times"] if t["batch_id"] == 4]
    assert set(b4) >= {"scope", "name", "time", "job_ids", "batch_id", "start", "end", "latency_s", "blame"}
    assert cli(["blame", str(rec), "--scope", "[2]", "--top", "1"]) == 0
    text = capsys.readouterr().out
    assert "batch 4" in text and "task 9" in text and "partition 0" in text and "3.9" in text
    assert cli(["blame", str(tmp_path / "missing.jsonl")]) == 2


def test_cli_blame_scope_forms_and_mistakes(capsys):
    """``--scope`` goes through the REST API's parser (``2``, ``[2]``); a scope the log lacks, a ``--top`` under 1
    or a time that is not JSON is a usage error said on stderr (exit code 2), not an empty answer. ``--nested``
    without ``--scope`` is nested from the root: every scope's times, as without it."""
    log = str(fixture_log("streaming_stall").path)
    answers = []
    for form in ("2", "[2]", " [ 2 ] "):
        assert cli(["blame", log, "--scope", form, "--json"]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0] == answers[1] == answers[2]
    assert answers[0]["times"] and {tuple(t["scope"]) for t in answers[0]["times"]} == {(2,)}
    assert cli(["blame", log, "--scope", "2,1"]) == 2
    out = capsys.readouterr()
    assert "no scope [2, 1] (scopes: [], [1], [2];" in out.err and not out.out
    for option, bad in (("--top", "0"), ("--top", "-1"), ("--top", "x"), ("--time", "x"), ("--scope", "a")):
        with pytest.raises(SystemExit) as e:
            cli(["blame", log, option, bad])
        assert e.value.code == 2 and f"argument {option}: " in capsys.readouterr().err
    assert cli(["blame", log, "--json"]) == 0
    everything = json.loads(capsys.readouterr().out)
    assert cli(["blame", log, "--nested", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == everything and len(everything["times"]) > len(answers[0]["times"])


def test_rest_blame_follows_a_live_session(tmp_path):
    rec = tmp_path / "stall.jsonl"
    full = tmp_path / "full.jsonl"
    assert cli(["record", "-q", str(fixture_log("streaming_stall").path), "-o", str(full)]) == 0
    lines = full.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"label":"batch 2 done"' in line) + 1
    rec.write_text("".join(lines[:cut]))
    settings = Settings(allowed_dirs=[tmp_path], data_dir=tmp_path / "data")
    with running_server(settings) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        r = c.post("/api/sessions", json={"path": str(rec), "follow": True})
        assert r.status_code == 201, r.text
        sid = r.json()["id"]

        def batches() -> set:
            r = c.get(f"/api/sessions/{sid}/blame", params={"scope": "2"})
            assert r.status_code == 200, r.text
            return {t["batch_id"] for t in r.json()["times"]}

        deadline = time.monotonic() + 15
        while 2 not in batches() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert {0, 1, 2} <= batches() and 4 not in batches()
        with rec.open("a") as f:
            f.write("".join(lines[cut:]))
        while 8 not in batches() and time.monotonic() < deadline + 15:
            time.sleep(0.1)
        r = c.get(f"/api/sessions/{sid}/blame", params={"scope": "2", "top": 1})
        (slowest,) = r.json()["times"]
        assert slowest["batch_id"] == 4 and max(s["seconds"] for s in slowest["blame"]) > 3.5
        assert c.get(f"/api/sessions/{sid}/blame", params={"time": "{"}).status_code == 400


def test_memory_stays_bounded_over_many_times():
    """Intervals and task spans of finished times are dropped: a long log keeps only what open times need."""
    from backend.spark.diagnosis.blame import spark_blame
    from tracker.analysis.blame import PRUNE_EVERY
    from tracker.progress_log.replay import Replay

    replay = Replay("long")
    tracker = spark_blame(replay)
    largest = 0
    for rec in pipeline_records(5, 3 * PRUNE_EVERY):
        replay.apply(rec)
        tracker.record(rec)
        largest = max(largest, sum(len(sb.closed) for sb in tracker.scopes.values()))
    times = tracker.times()
    assert len(times) == 3 * PRUNE_EVERY
    for b in times[:: PRUNE_EVERY // 4]:
        check_tiling(b)
    # without pruning every epoch's ~10 intervals would stay; with it, at most about a prune period's worth
    assert largest < 12 * (PRUNE_EVERY + 10)
    assert sum(len(sb.closed) for sb in tracker.scopes.values()) < largest


def hostile_records() -> list[dict]:
    """A Spark-shaped progress log (driver, one stage, results) whose metadata blame reads has the wrong types: a
    task's cause with a launch that is no time and one after its end, a stage attempt that is a list, a stage
    detail's job that is a list (once failed GET .../blame), a task detail's stage that is a list and marks whose
    epoch and batch are lists (once failed the whole session)."""
    def progress(seq: int, at: float, updates: list, cause: dict | None = None) -> dict:
        rec = {"type": "progress", "scope": [], "worker": 0, "seq": seq, "at": at, "updates": updates}
        return {**rec, "cause": cause} if cause is not None else rec

    def task_end(task: int, launched: Any, attempt: Any = 0) -> dict:
        return {"event": "TaskEnd", "task": task, "stage": 1, "attempt": attempt, "launched": launched}

    def detail(key: str, value: dict, at: float) -> dict:
        return {"type": "detail", "scope": [], "port": ["out", 2, 0], "time": 0, "key": key, "at": at,
                "value": value}

    return [
        {"type": "header", "format": "flowscope-progress", "version": 1},
        {"type": "operator", "scope": [], "node": 1, "name": "driver (new work)", "inputs": 0, "outputs": 1,
         "capabilities": [[0]], "attrs": {"role": "source"}},
        {"type": "operator", "scope": [], "node": 2, "name": "stage: count", "inputs": 1, "outputs": 1,
         "attrs": {"stage_ids": [1]}},
        {"type": "operator", "scope": [], "node": 3, "name": "driver (results)", "inputs": 1, "outputs": 0,
         "attrs": {"role": "sink"}},
        {"type": "edge", "scope": [], "from": ["out", 1, 0], "to": ["in", 2, 0]},
        {"type": "edge", "scope": [], "from": ["out", 2, 0], "to": ["in", 3, 0]},
        {"type": "mark", "at": 0.5, "label": "executor 1 added (1 cores)", "executor": "1", "cores": 1,
         "executor_event": "added"},
        {"type": "mark", "scope": [], "at": 1.0, "label": "job 0 started (epoch 0)", "job": 0, "epoch": 0},
        {"type": "mark", "scope": [], "at": 1.0, "label": "job 1 started (epoch 0)", "job": 1, "epoch": [0]},
        {"type": "mark", "scope": [], "at": 1.0, "label": "batch 0 done", "batch": [0], "trigger_start": 0.5},
        progress(0, 1.0, [[["out", 1, 0], 0, -1], [["out", 1, 0], 1, 1], [["out", 2, 0], 0, 3]]),
        detail("stage 1.0", {"kind": "stage", "stage": 1, "attempt": 0, "job": [2], "tasks": 3}, 1.0),
        detail("task 4", {"kind": "task", "task": 4, "stage": 1, "launched": 1.1, "host": "h"}, 1.1),
        detail("task 5", {"kind": "task", "task": 5, "stage": [1], "launched": 1.5, "host": "h"}, 1.5),
        progress(1, 2.0, [[["out", 2, 0], 0, -1], [["in", 3, 0], 0, 1]], task_end(4, 1.1, [1])),
        progress(2, 2.5, [[["out", 2, 0], 0, -1], [["in", 3, 0], 0, 1]], task_end(6, 9.0)),
        progress(3, 3.0, [[["out", 2, 0], 0, -1], [["in", 3, 0], 0, 1]], task_end(5, 1.5)),
        progress(4, 4.0, [[["in", 3, 0], 0, -1]], task_end(7, "x")),
        progress(5, 4.5, [[["in", 3, 0], 0, -2]]),
    ]


def test_a_hostile_logs_blame_fields_are_reported_and_left_out(tmp_path, capsys):
    """Over a real server: the session loads, GET .../blame answers (tiled, the fields left out) and GET .../errors
    names each bad field with its line; the CLI prints the same problems."""
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in hostile_records()))
    settings = Settings(allowed_dirs=[tmp_path], data_dir=tmp_path / "data")
    with running_server(settings) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        r = c.post("/api/sessions", json={"path": str(path)})
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        info = srv.wait_for(sid, status=("done", "failed"), client=c)
        assert info["status"] == "done", info
        r = c.get(f"/api/sessions/{sid}/blame")
        assert r.status_code == 200, r.text
        (t,) = r.json()["times"]
        assert t["job_ids"] == [0] and t["batch_id"] is None and t["latency_s"] == pytest.approx(3.5)
        segs = t["blame"]
        assert sum(s["seconds"] for s in segs) == pytest.approx(3.5) and all(s["seconds"] > 0 for s in segs)
        # task 5's launch is a time: it ran from 1.5, waiting before that on the slot task 4 held, whose job
        # (a list in its stage's detail) is left out
        (run,) = [s for s in segs if s["holder"].get("task") == 5 and s["kind"] == "task"]
        assert run["from"] == pytest.approx(1.5) and run["holder"]["launched"] == 1.5
        wait = segs[segs.index(run) - 1]
        assert wait["kind"] == "waiting-for-slots" and wait["holder"]["held_by"] == [
            {"stage": 1, "job": None, "tasks": 1}], wait
        errors = c.get(f"/api/sessions/{sid}/errors").json()["errors"]
    lines = {i + 1: r for i, r in enumerate(hostile_records())}  # the header is line 1
    said = {(e["line"], e["reason"].split(" ", 3)[2]) for e in errors}
    expected = {(9, "mark.epoch"), (10, "mark.batch"), (12, "detail"), (14, "detail"), (15, "cause.attempt"),
                (16, "cause.launched"), (18, "cause.launched")}
    assert said == expected, errors
    assert all(e["reason"].startswith("blame ignores ") for e in errors)
    assert lines[16]["cause"]["launched"] > lines[16]["at"]  # after the batch that ended the task: not its launch
    capsys.readouterr()
    assert cli(["blame", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"{path}:16: ignored-field: blame ignores cause.launched 9.0" in err, err
    assert len(err.splitlines()) == len(expected)
