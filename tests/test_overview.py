"""The Overview's answer (``backend/views/overview.py``) as ``flowscope report`` prints it and the server answers it,
on real Spark logs and on a progress log from another engine; the bundle stores it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from backend.eventlog import EventLogReader
from backend.export.bundle import answer_key, build_bundle
from backend.web.app import Settings
from flowscope.cli import main
from tests.conftest import LOOP_LOG
from tests.e2e.server import running_server
from tests.e2e.view_fixtures import SPARK_FIXTURES, open_spark_fixture
from tests.test_bundle import stored

FINDING_KEYS = {"kind", "stage", "attempt", "scope", "batch", "text", "recommendation", "metric", "threshold"}


def log_of(name: str) -> Path:
    (log,) = (SPARK_FIXTURES / name).glob("eventlog_v2_*")
    return log


def report_json(capsys, log: Path) -> dict:
    assert main(["report", str(log), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def median(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def test_a_straggler_application_leads_with_its_slow_job_and_its_findings(capsys):
    """The figures, each worked out here from the log's events: the application's wall time and task time, idle
    task slots, and the findings' figures from the straggler's stage (its tasks' runs and what they read)."""
    log = log_of("skewed_straggler")
    o = report_json(capsys, log)
    events = [ev.event for ev in EventLogReader(log)]
    ends = [e for e in events if e["Event"] == "SparkListenerTaskEnd"]
    (start,) = [e["Timestamp"] / 1000 for e in events if e["Event"] == "SparkListenerApplicationStart"]
    (end,) = [e["Timestamp"] / 1000 for e in events if e["Event"] == "SparkListenerApplicationEnd"]
    task_s = sum(e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"] for e in ends) / 1000
    app = o["application"]
    assert app["engine"] == "spark" and app["jobs"] == 2 and app["times"] == 2 and app["recorded_cores"] == 2
    assert app["duration_s"] == pytest.approx(end - start, abs=1e-6) and app["tasks"] == len(ends)
    assert app["task_seconds"] == pytest.approx(task_s, abs=1e-6)
    assert app["idle_cores_pct"] == pytest.approx(100 * (1 - task_s / (2 * (end - start))), abs=0.05)
    w = app["whatif"]
    assert w["2x"]["cores"] == 4 and w["0.5x"]["cores"] == 1
    assert w["2x"]["wall_s"] <= app["duration_s"] + 1e-6 <= w["0.5x"]["wall_s"] + 1e-6
    slow = o["slowest"][0]
    assert slow["latency_s"] == max(t["latency_s"] for t in o["slowest"])
    assert slow["top"]["kind"] == "task"
    kinds = [f["kind"] for f in o["findings"]]
    assert sorted(kinds) == ["data-skew", "skew", "straggler"] and o["findings_total"] == 3
    # one group each (one job ran the stage), ranked by impact; every finding in its group's order
    assert [g["kind"] for g in o["groups"]] == kinds and [f["group"] for f in o["findings"]] == [0, 1, 2]
    impacts = [g["impact_s"] for g in o["groups"]]
    assert impacts == sorted(impacts, reverse=True) and all(i > 0 for i in impacts)
    for f in o["findings"]:
        assert set(f) >= FINDING_KEYS | {"impact_s", "impact_note", "group"}
        assert f["stage"] == slow["top"]["holder"]["stage"] and f["scope"] == slow["scope"]
        assert "spark." in f["recommendation"]

    # the straggler's stage: its tasks' runs and what each read (shuffle records and bytes)
    stage = [e for e in ends if e["Stage ID"] == slow["top"]["holder"]["stage"]]
    runs = [(e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"]) / 1000 for e in stage]
    reads = [e["Task Metrics"]["Shuffle Read Metrics"] for e in stage]
    records = [r["Total Records Read"] for r in reads]
    read_bytes = [r["Local Bytes Read"] + r["Remote Bytes Read"] for r in reads]
    longest = runs.index(max(runs))
    others = median(runs[:longest] + runs[longest + 1:])
    mean = sum(runs) / len(runs)
    straggler, skew, data_skew = (next(f for f in o["findings"] if f["kind"] == k)
                                  for k in ("straggler", "skew", "data-skew"))
    assert straggler["threshold"]["name"] == "straggler.factor"
    assert straggler["metric"] == {"duration_s": pytest.approx(runs[longest], abs=1e-6),
                                   "median_task_s": pytest.approx(others, abs=1e-6),
                                   "ratio": pytest.approx(runs[longest] / others, abs=0.005)}
    assert skew["threshold"]["name"] == "skew.score"
    assert skew["metric"] == {"skew": pytest.approx(sum(abs(r - mean) for r in runs) / len(runs) / mean, abs=1e-4),
                              "tasks": len(runs), "median_task_s": pytest.approx(median(runs), abs=1e-6),
                              "max_task_s": pytest.approx(max(runs), abs=1e-6)}
    assert data_skew["threshold"]["name"] == "data_skew.read_factor"
    assert data_skew["metric"] == {
        "task": stage[longest]["Task Info"]["Task ID"], "partition": stage[longest]["Task Info"]["Index"],
        "executor": stage[longest]["Task Info"]["Executor ID"], "duration_s": pytest.approx(runs[longest], abs=1e-6),
        "median_task_s": pytest.approx(others, abs=1e-6),
        "records": records[longest], "median_records": median(records),
        "bytes": read_bytes[longest], "median_bytes": median(read_bytes),
        "read_ratio": pytest.approx(read_bytes[longest] / median(read_bytes), abs=0.005)}


def test_the_text_points_every_line_at_a_time_and_a_holder(capsys):
    log = log_of("skewed_straggler")
    assert main(["report", str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("2 jobs, 2 completed times")
    assert any(line.startswith("  what if: 4 cores") for line in lines)
    opens = [line for line in lines if line.strip().startswith("open: ")]
    assert len(opens) == 2 + 3  # each slowest time and each group of findings (one finding each here)
    # thresholds as a person reads them, not a dict
    assert "      threshold: skew.score >= 0.5 (Flink FLIP-418's data-skew score); skew.min_tasks >= 4" \
        " (flowscope)" in lines
    assert not any(line.strip().startswith("threshold: ") and "{" in line for line in lines)
    assert all(f"flowscope replay {log} --at " in line and "--scope " in line for line in opens)
    at = lines.index("slowest:")
    assert lines[at + 1].startswith("  scope [2] time 0 (job 1) took")
    assert "task " in lines[at + 2] and "(stage 2.0" in lines[at + 2]


def test_contract_findings_are_listed_with_their_batch(capsys):
    """executor_lost: the map stage's resubmission takes back a passed frontier (the contract checker's finding)."""
    o = report_json(capsys, log_of("executor_lost"))
    contract = [f for f in o["findings"] if f.get("contract")]
    assert contract and all(set(f) >= FINDING_KEYS for f in contract)
    assert "frontier-regression" in {f["kind"] for f in contract}
    assert all(isinstance(f["batch"], int) and f["port"] for f in contract)
    # the resubmitted stage caused them: said so, not taken for a producer's bug
    assert all(f["attempt"] and f["recommendation"].startswith("Spark re-ran a stage") for f in contract)


def test_a_progress_log_gets_what_applies_to_it(capsys):
    o = report_json(capsys, LOOP_LOG)
    app = o["application"]
    assert app["engine"] == "progress-log" and app["whatif"] is None and app["idle_cores_pct"] is None
    assert app["tasks"] == 0 and app["times"] > 0
    assert o["slowest"] and all(t["top"]["kind"] in ("capability", "message") for t in o["slowest"])
    assert o["findings"] == []


@pytest.fixture(scope="module")
def server():
    with running_server(Settings(allowed_dirs=[SPARK_FIXTURES], checkpoint_every=16)) as srv:
        yield srv


def test_the_server_answers_what_the_command_prints(capsys, server):
    log = log_of("skewed_straggler")
    printed = report_json(capsys, log)
    sid = open_spark_fixture(server, "skewed_straggler")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        answered = c.get(f"/api/sessions/{sid}/overview").json()
        whatif = c.get(f"/api/sessions/{sid}/cores-whatif", params={"cores": "2,4"}).json()
        default = c.get(f"/api/sessions/{sid}/cores-whatif").json()
        bad = c.get(f"/api/sessions/{sid}/cores-whatif", params={"cores": "0"})
    for o in (printed, answered):
        o["application"].pop("name")
    # the server's answer also links the application's documents in Spark's REST API (backend/spark_api)
    assert answered["application"].pop("rest") == f"/api/v1/applications/{log.name.removeprefix('eventlog_v2_')}"
    assert answered == printed
    assert whatif["cores"] == [2, 4] and len(whatif["times"]) == 2
    assert default["cores"] == [1, 2, 4, 8]  # half, the recorded 2, twice, four times
    assert bad.status_code == 400 and "'0'" in bad.json()["detail"]


def test_the_bundle_stores_the_overview_and_its_chart(tmp_path):
    out = tmp_path / "straggler.html"
    build_bundle(log_of("skewed_straggler"), out, spaced=0)
    data = stored(out)
    base = f"/api/sessions/{data['sid']}"
    overview = data["answers"][answer_key(f"{base}/overview", {})]
    assert sorted(f["kind"] for f in overview["findings"]) == ["data-skew", "skew", "straggler"]
    assert [g["kind"] for g in overview["groups"]] == [f["kind"] for f in overview["findings"]]
    assert data["answers"][answer_key(f"{base}/cores-whatif", {})]["application"]["recorded_cores"] == 2
