"""Task-level holders: the Spark model's `detail` records name the tasks behind a stage's capabilities, and explain
(CLI, REST) says which pointstamp is actually late, on the real fixtures."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from backend.eventlog import find_logs
from backend.eventlog.eventlog import read_events
from backend.spark.diagnosis.tasks import TaskLedger, skew_score, stragglers
from backend.spark.recording.convert import SparkLogConversion
from backend.web.app import Settings
from flowscope.cli import main as cli
from tests.conftest import tracker_of
from tests.e2e.server import running_server
from tracker.analysis.details import describe
from tracker.progress_log.replay import Replay
from tracker.reachability import Location

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures" / "spark"


def fixture_log(name: str):
    (log,) = find_logs(FIXTURES / name)
    return log


@pytest.fixture(scope="module")
def stall_log(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("stall") / "stall.jsonl"
    assert cli(["record", "-q", str(fixture_log("streaming_stall").path), "-o", str(out)]) == 0
    return out


def progress_index(log: Path, pred) -> int:
    """The number of progress records up to and including the first that satisfies ``pred``."""
    n = 0
    for line in log.open():
        rec = json.loads(line)
        if rec["type"] == "progress":
            n += 1
            if pred(rec):
                return n
    raise AssertionError("no such progress record")


def stall_point(log: Path) -> int:
    """Mid-stall: the batch count just before the slow UDF task's end (its sibling has ended)."""
    slow = progress_index(log, lambda r: r["cause"].get("event") == "TaskEnd" and r["cause"].get("task") == 9)
    return slow - 1


def test_mid_stall_explain_names_the_running_task_before_the_driver(stall_log, capsys):
    at = stall_point(stall_log)
    assert cli(["explain", str(stall_log), "--scope", "[2]", "--port", "in,2,0", "--at", str(at)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    late = next(i for i, s in enumerate(lines) if s.strip().startswith("late:"))
    held = next(i for i, s in enumerate(lines) if "held by out(1,0)" in s)
    assert late < held, text  # the stage is named first, the driver's formal hold after
    assert "task 9 " in lines[late + 1] and "partition 0" in lines[late + 1] and "executor driver" in lines[late + 1]

    assert cli(["explain", str(stall_log), "--scope", "[2]", "--port", "in,2,0", "--at", str(at), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    first = answer["late"][0]
    assert first["implied"] is True and first["location"][0] == "out" and first["time"] == 4
    (task,) = first["running"]
    assert task["task"] == 9 and task["index"] == 0 and task["attempt"] == 0 and task["speculative"] is False
    assert task["executor"] == "driver" and task["host"] and task["running_s"] >= 0
    assert first["pending"]["count"] == 0 and first["pending"]["since"] <= task["launched"]
    assert answer["late"][-1]["location"] == ["out", 1, 0]  # the driver's capability, last


def test_explain_text_says_how_many_tasks_are_pending_since_when(tmp_path, capsys):
    """skewed_straggler's second job submits 4 tasks (3 launched before its first task ends): explain's text
    says, as the "Why is this stuck?" panel does, how many are pending and since when (the stage's submission)."""
    log = tmp_path / "skew.jsonl"
    assert cli(["record", "-q", str(fixture_log("skewed_straggler").path), "-o", str(log)]) == 0
    records = [json.loads(line) for line in log.open()]
    # the stage's detail as submitted (set again as its tasks finish, with what they spent their time on)
    stage = next(r for r in records if r["type"] == "detail" and r["key"] == "stage 1.0" and r["value"])
    submitted = stage["value"]["submitted"]
    at = progress_index(log, lambda r: r["cause"].get("event") == "StageSubmitted" and r["cause"]["stage"] == 1)
    capsys.readouterr()
    assert cli(["explain", str(log), "--scope", json.dumps(stage["scope"]), "--port", "in,2,0", "--at", str(at)]) == 0
    text = capsys.readouterr().out
    clock = time.strftime("%H:%M:%S", time.gmtime(submitted)) + f".{round(submitted * 1000) % 1000:03d}"
    (late,) = [s for s in text.splitlines() if s.strip().startswith("late:")]
    running = stage["value"]["tasks"] - 1  # one pending
    assert f"{running} running, 1 pending since {clock}" in late, text


def test_no_task_details_are_left_once_the_application_ended():
    for name in ("streaming_stall", "skewed_straggler", "task_retries", "iterative_pagerank"):
        conv = SparkLogConversion(fixture_log(name))
        replay = Replay(name)
        for rec in conv:
            assert replay.apply(rec), replay.errors
        assert len(replay.details) == 0, name
        ledger = conv.model.tasks
        assert not ledger.attempts, name  # bounded: completed attempts are aggregates only
        assert all(len(a.stragglers) <= 5 for a in ledger.completed.values())


def test_pending_tasks_are_counted_while_a_stage_waits_for_slots():
    """skewed_straggler runs 4-task stages on 2 cores: while the first tasks run, the others are pending."""
    conv = SparkLogConversion(fixture_log("skewed_straggler"))
    replay = Replay("skew")
    pending_seen = []
    for rec in conv:
        replay.apply(rec)
        if rec["type"] == "detail" and rec["value"] and rec["value"]["kind"] == "task":
            path, loc, t = tuple(rec["scope"]), Location.from_json(rec["port"]), rec["time"]
            replay.settle()
            count = dict(tracker_of(replay.root.find(path)).pointstamps_at(loc).updates()).get(t, 0)
            got = describe(replay.details.of(path, loc, t), count, rec["at"])
            assert got["running"] and got["running"][-1]["task"] == rec["value"]["task"]
            assert got["pending"]["count"] == max(0, count - len(got["running"]))
            pending_seen.append(got["pending"]["count"])
    assert max(pending_seen) >= 1 and min(pending_seen) == 0


def test_the_straggler_and_the_skew_are_findings():
    marks = [r for r in SparkLogConversion(fixture_log("skewed_straggler")) if r["type"] == "mark" and "finding" in r]
    (straggler,) = [m for m in marks if m["finding"] == "straggler"]
    assert straggler["index"] == 0 and straggler["duration_s"] > 4 * straggler["median_task_s"]
    assert any(m["finding"] == "skew" and m["stage"] == straggler["stage"] for m in marks)
    # what it read, from its TaskEnd's metrics: storage input plus shuffle bytes fetched locally and remotely
    (end,) = [ev for ev in (e.event for e in read_events(fixture_log("skewed_straggler").path))
              if ev.get("Event") == "SparkListenerTaskEnd" and ev["Task Info"]["Task ID"] == straggler["task"]]
    metrics = end["Task Metrics"]
    shuffle = metrics["Shuffle Read Metrics"]
    read = metrics["Input Metrics"]["Bytes Read"] + shuffle["Remote Bytes Read"] + shuffle["Local Bytes Read"]
    assert straggler["bytes"] == read > 0
    (skew,) = [m for m in marks if m["finding"] == "skew"]
    sizes = skew["summary"]["input_bytes"]
    assert sizes["max"] == read and sizes["median"] < read and skew["summary"]["bytes_skew"] > 0
    assert f"median {sizes['median'] / 1000:.1f} kB" in straggler["label"], straggler["label"]
    marks = [r for r in SparkLogConversion(fixture_log("streaming_stall")) if r["type"] == "mark" and "finding" in r]
    (straggler,) = [m for m in marks if m["finding"] == "straggler"]
    assert straggler["time"] == 4 and straggler["index"] == 0 and straggler["duration_s"] > 3.5


def test_skew_score_and_stragglers():
    assert skew_score([1, 1, 1, 1]) == 0
    assert skew_score([0, 0, 0, 4]) == pytest.approx(1.5)  # MAD 1.5 over mean 1
    tasks = [{"task": i, "duration": d} for i, d in enumerate([0.1, 0.12, 0.11, 5.0])]
    assert [t["task"] for t in stragglers(tasks)] == [3]
    assert stragglers([{"task": 0, "duration": 0.1}, {"task": 1, "duration": 0.4}]) == []  # too small to matter
    out: list[dict] = []
    TaskLedger().task_started({"Stage ID": 1}, {"Task ID": 1}, 0.0, out)
    assert out == []  # an unknown stage attempt: no detail


def test_a_bad_detail_record_is_reported_with_its_line():
    replay = Replay("bad")
    assert not replay.apply({"type": "detail", "scope": [], "port": ["sideways", 1, 0], "time": 0, "key": "k",
                             "value": {}}, 7)
    assert replay.errors[0].line == 7 and "sideways" in str(replay.errors[0])
    assert not replay.apply({"type": "detail", "scope": [], "port": ["out", 1, 0], "time": 0, "key": "k",
                             "value": 3}, 8)


def test_rest_explain_has_the_late_tasks(stall_log, tmp_path):
    at = stall_point(stall_log)
    settings = Settings(allowed_dirs=[stall_log.parent], data_dir=tmp_path, checkpoint_every=16)
    with running_server(settings) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        r = c.post("/api/sessions", json={"path": str(stall_log)})
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        srv.wait_for(sid, client=c)
        r = c.get(f"/api/sessions/{sid}/explain", params={"scope": "2", "port": "in,2,0", "batch": at})
        assert r.status_code == 200, r.text
        ans = r.json()
        assert ans["time"] == 4 and ans["holders"][0]["operator"] == "driver (new work)"
        # the past, restored from the history with the details of its time: the slow task, then the driver
        (task,) = ans["late"][0]["running"]
        assert task["task"] == 9 and task["index"] == 0 and ans["late"][0]["implied"]
        assert ans["late"][-1]["location"] == ["out", 1, 0]
        # the same at a batch far from any checkpoint (16) and at one right after it: both restore the details
        for b in (16, 17):
            r = c.get(f"/api/sessions/{sid}/explain", params={"scope": "1", "port": "in,2,0", "batch": b})
            assert r.status_code == 200
        r = c.get(f"/api/sessions/{sid}/explain", params={"scope": "2", "port": "in,2,0"})
        assert r.status_code == 200 and r.json()["time"] is None  # the finished session: complete


def test_the_history_restores_the_holder_details_of_every_batch(stall_log):
    from backend.sessions.history import History

    history = History(checkpoint_every=4)
    replay = Replay("live", observer=lambda info, scope, *_: history.batch_applied(replay, replay.last_at,
                                                                                   info.worker, scope.path))
    snapshots = {}
    for line in stall_log.open():
        rec = json.loads(line)
        if rec["type"] == "progress":
            snapshots[replay.batches_applied] = replay.details.snapshot()
        history.record(rec)
        replay.apply(rec)
    snapshots[replay.batches_applied] = replay.details.snapshot()
    assert any(snapshots.values())
    for k, expected in snapshots.items():
        with history.at_batch(k) as restored:
            assert restored.details.snapshot() == expected, k


def test_running_for_is_measured_to_the_end_of_the_state_shown(tmp_path, capsys):
    """iterative_pagerank's first stage launches its 2 tasks after batch N (its submission) and before batch N+1
    (the first task's end): the state after batch N lasts until batch N+1, so they have run until then, not 0 s,
    in explain at batch N by the CLI (progress log and Spark log) and the REST API (a past batch, restored from a
    checkpoint); a live tail with no next batch measures to the latest time seen."""
    spark_log = fixture_log("iterative_pagerank").path
    log = tmp_path / "pagerank.jsonl"
    assert cli(["record", "-q", str(spark_log), "-o", str(log)]) == 0
    records = [json.loads(line) for line in log.open()]
    batches = [r for r in records if r["type"] == "progress"]
    n, task = 0, None
    for r in records:
        if r["type"] == "progress":
            n += 1
        elif (r["type"] == "detail" and r["value"] and r["value"]["kind"] == "task"
              and r["value"]["launched"] > batches[n - 1]["at"]):
            task = r
            break
    assert task is not None
    next_at = batches[n]["at"]  # batch N+1's
    expected = round(next_at - task["value"]["launched"], 3)
    assert expected > 1  # a real wait (4.55 s on this log), not rounding
    scope, port = json.dumps(task["scope"]), ",".join(map(str, task["port"]))

    def running_s(late: list) -> float:
        (got,) = [t["running_s"] for h in late for t in h.get("running", []) if t["task"] == task["value"]["task"]]
        return got

    capsys.readouterr()
    for source in (log, spark_log):
        assert cli(["explain", str(source), "--scope", scope, "--port", port, "--at", str(n), "--json"]) == 0
        assert running_s(json.loads(capsys.readouterr().out)["late"]) == pytest.approx(expected, abs=1e-3), source

    settings = Settings(allowed_dirs=[log.parent], data_dir=tmp_path / "data", checkpoint_every=2)
    with running_server(settings) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        r = c.post("/api/sessions", json={"path": str(log)})
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        srv.wait_for(sid, client=c)
        r = c.get(f"/api/sessions/{sid}/explain", params={"scope": scope, "port": port, "batch": n})
        assert r.status_code == 200, r.text
        assert running_s(r.json()["late"]) == pytest.approx(expected, abs=1e-3)

    # a live tail: no next batch yet, so the latest time seen (the latest detail record's)
    replay = Replay("tail")
    i = records.index(task)
    for r in records[:i + 2]:
        assert replay.apply(r), replay.errors
    assert records[i + 1]["type"] == "detail" and replay.state_until == records[i + 1]["at"]
    assert replay.state_until > task["value"]["launched"]
