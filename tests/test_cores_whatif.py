"""The cores what-if (``flowscope whatif``, ``backend/spark/diagnosis/cores_whatif.py``): its estimate for 4 cores
from a real local[2] run against the same application's real local[4] run, the scheduling on a schedule made by hand,
the bounds, and what it says when there is nothing to simulate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.spark.diagnosis.cores_whatif import CoresSpec, cores_whatif, parse_cores
from backend.spark.diagnosis.recorded_schedule import RecordedSchedule
from backend.spark.diagnosis.task_timeline import TaskTimeline
from flowscope.cli import main

ROOT = Path(__file__).resolve().parent.parent
SPARK = ROOT / "fixtures" / "spark"
SLEEPY = "sleepy two stages"  # the job both cores fixtures run (fixtures/spark/make_fixtures.py)


def log_of(name: str) -> Path:
    (log,) = (SPARK / name).glob("eventlog_v2_*")
    return log


def whatif_json(capsys, *argv: str) -> dict:
    assert main(["whatif", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def sleepy(answer: dict) -> dict:
    """The measured job's row: the time whose scope's region is the job described SLEEPY (the last job)."""
    return max(answer["times"], key=lambda t: max(t["job_ids"]))


def test_four_cores_from_the_local2_log_is_within_15_percent_of_the_local4_run(capsys):
    two = whatif_json(capsys, str(log_of("cores_local2")), "--cores", "2,4")
    four = whatif_json(capsys, str(log_of("cores_local4")), "--cores", "4")
    assert two["cores"] == [2, 4] and four["cores"] == [4]
    assert two["application"]["recorded_cores"] == 2 and four["application"]["recorded_cores"] == 4
    estimate = sleepy(two)["estimates_s"]["4"]
    real = sleepy(four)["latency_s"]
    assert abs(estimate - real) <= 0.15 * real, (estimate, real)
    # on the cores it ran with, the simulation gives back what was recorded (a check of the model itself)
    recorded = sleepy(two)
    assert abs(recorded["estimates_s"]["2"] - recorded["latency_s"]) <= 0.05 * recorded["latency_s"], recorded
    # and twice the cores is far from twice as fast to the real run only by what the model cannot see
    assert estimate < 0.65 * recorded["latency_s"]


def test_the_json_keeps_its_shape_and_the_bounds_hold(capsys):
    out = whatif_json(capsys, str(log_of("cores_local2")), "--cores", "1,2,4,16")
    assert set(out) >= {"cores", "times", "application", "assumptions"}
    app = out["application"]
    assert set(app) >= {"wall_s", "estimates_s", "critical_path_s", "perfect_parallelism_s"}
    assert list(app["estimates_s"]) == ["1", "2", "4", "16"]
    for t in out["times"]:
        assert set(t) >= {"scope", "time", "job_ids", "batch_id", "latency_s", "estimates_s"}
        est = [t["estimates_s"][k] for k in ("1", "2", "4", "16")]
        assert est == sorted(est, reverse=True), t  # more cores never slower
        assert est[-1] >= t["critical_path_s"] - 1e-6
        assert all(t["perfect_parallelism_s"][k] <= t["estimates_s"][k] + 1e-6 for k in ("1", "2", "4", "16"))
    est = [app["estimates_s"][k] for k in ("1", "2", "4", "16")]
    assert est == sorted(est, reverse=True)
    for k in ("1", "2", "4", "16"):
        assert app["perfect_parallelism_s"][k] <= app["estimates_s"][k] + 1e-6
        assert app["critical_path_s"] <= app["estimates_s"][k] + 1e-6
    assert any("no contention" in a for a in out["assumptions"])


def test_a_job_waiting_for_slots_stops_waiting_with_more_cores(capsys):
    """slot_starvation: the waiter's two short tasks waited about 3 s for the hog's two long ones on local[2]; with
    4 slots (the jobs overlapped, so they run together) they start at once."""
    out = whatif_json(capsys, str(log_of("slot_starvation")), "--cores", "2,4")
    waiter = max(out["times"], key=lambda t: max(t["job_ids"]))
    assert waiter["estimates_s"]["2"] > 2.0
    assert waiter["estimates_s"]["4"] < waiter["latency_s"] / 2, waiter


def _hand_made(durations: dict[tuple[int, int], list[float]], parents: dict[int, list[int]]) -> tuple:
    """One job (0) whose stage attempts run the given tasks back to back on one slot from t=100, as the Spark model's
    records: each attempt submitted when the job starts, or when the attempts it waits for completed (no delay)."""
    schedule, timeline = RecordedSchedule(), TaskTimeline()
    recs: list[dict] = [{"type": "mark", "at": 100.0, "label": "job 0 started", "scope": [1], "job": 0, "epoch": 0}]
    t = 100.0
    task = 0
    completed: dict[int, float] = {}
    for (stage, attempt), ds in durations.items():
        waits = [completed[p] for p in parents.get(stage, [])] + ([completed[stage]] if attempt else [])
        submitted = max(waits, default=100.0)
        value = {"kind": "stage", "stage": stage, "attempt": attempt, "job": 0, "tasks": len(ds),
                 "submitted": submitted, "parents": parents.get(stage, [])}
        recs.append({"type": "detail", "scope": [1], "port": ["out", 3, 0], "time": 0,
                     "key": f"stage {stage}.{attempt}", "at": submitted, "value": value})
        for d in ds:
            key = f"task {task}"
            recs.append({"type": "detail", "scope": [1], "port": ["out", 3, 0], "time": 0, "key": key, "at": t,
                         "value": {"kind": "task", "task": task, "stage": stage, "stage_attempt": attempt,
                                   "launched": t, "executor": "driver", "index": task}})
            t += d
            recs.append({"type": "detail", "scope": [1], "port": ["out", 3, 0], "time": 0, "key": key, "at": t,
                         "value": None})
            task += 1
        recs.append({"type": "detail", "scope": [1], "port": ["out", 3, 0], "time": 0,
                     "key": f"stage {stage}.{attempt}", "at": t, "value": None})
        completed[stage] = t
    recs.append({"type": "mark", "at": t, "label": "job 0 succeeded", "scope": [1], "job": 0, "epoch": 0,
                 "status": "SUCCEEDED"})
    for r in recs:
        schedule.record(r)
        timeline.record(r)
    return schedule, timeline


def test_stages_wait_for_their_parents_and_share_the_slots_first_in_first_out():
    # stage 0: four 1 s tasks; stage 1 reads it: two 1 s tasks; stage 2 reads nothing: one 3 s task
    schedule, timeline = _hand_made({(0, 0): [1, 1, 1, 1], (1, 0): [1, 1], (2, 0): [3]}, {1: [0]})
    out = cores_whatif(schedule, timeline, parse_cores("1,2,4,8"))
    app = out["application"]
    assert app["wall_s"] == 9.0 and app["tasks"] == 7 and app["task_seconds"] == 9.0
    # 2 slots: stage 0 (the lowest id) first, 0-2 s; then stage 1 (ready at 2 s, a lower id than stage 2) 2-3 s on
    # both; stage 2's task last, 3-6 s. 4 slots: stage 0 takes all four, 0-1 s; stage 2 1-4 s, stage 1 2-3 s.
    # 8 slots: stage 0 and stage 2 at once, stage 1 1-2 s: the 3 s task ends it.
    assert app["estimates_s"] == {"1": 9.0, "2": 6.0, "4": 4.0, "8": 3.0}
    assert app["critical_path_s"] == 3.0  # max(stage 0 then stage 1: 2 s, stage 2: 3 s)
    assert app["perfect_parallelism_s"] == {"1": 9.0, "2": 4.5, "4": 2.25, "8": 1.125}


def test_a_retried_stage_attempt_runs_after_the_one_it_replaces():
    schedule, timeline = _hand_made({(0, 0): [2, 2], (0, 1): [1, 1]}, {})
    out = cores_whatif(schedule, timeline, [CoresSpec("4", 4)])
    assert out["application"]["estimates_s"]["4"] == 3.0  # 2 s (attempt 0, both at once), then 1 s (attempt 1)


def test_a_log_without_tasks_says_there_is_nothing_to_simulate(capsys):
    out = whatif_json(capsys, str(ROOT / "fixtures" / "progress" / "loop.jsonl"), "--cores", "2")
    assert out["application"]["tasks"] == 0
    assert out["assumptions"][0].startswith("No task was recorded")
    assert all(t["estimates_s"] == {"2": None} for t in out["times"])


@pytest.mark.parametrize("bad", ["0", "two", "2x0", "2x3x4", ""])
def test_a_bad_core_count_is_a_usage_error(capsys, bad):
    with pytest.raises(ValueError):
        parse_cores(bad)
    with pytest.raises(SystemExit) as e:
        main(["whatif", str(log_of("cores_local2")), "--cores", bad])
    assert e.value.code == 2
    assert "--cores" in capsys.readouterr().err


def test_the_text_names_the_slowest_times_and_the_assumptions(capsys):
    assert main(["whatif", str(log_of("cores_local2")), "--cores", "2,4"]) == 0
    out = capsys.readouterr().out
    assert "application (2 cores)" in out and "4 cores" in out and "assumptions:" in out
    assert "(job 1)" in out


def test_a_long_application_keeps_its_latest_jobs_and_says_so(monkeypatch):
    import backend.spark.diagnosis.recorded_schedule as recorded

    monkeypatch.setattr(recorded, "KEEP_JOBS", 1)
    schedule = RecordedSchedule()
    for job in (0, 1):
        at = 100.0 + 10 * job
        schedule.record({"type": "mark", "at": at, "label": f"job {job} started", "scope": [1 + job], "job": job,
                         "epoch": 0})
        schedule.record({"type": "detail", "scope": [1 + job], "port": ["out", 3, 0], "time": 0,
                         "key": f"stage {job}.0", "at": at, "value": {"kind": "stage", "stage": job, "attempt": 0,
                                                                     "job": job, "tasks": 0, "submitted": at}})
    assert list(schedule.jobs) == [1] and list(schedule.stages) == [(1, 0)] and schedule.dropped_jobs == 1
    out = cores_whatif(schedule, TaskTimeline(), [CoresSpec("2", 2)])
    assert any("the 1 before them are taken as recorded" in a for a in out["assumptions"])
