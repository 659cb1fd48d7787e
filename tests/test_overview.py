"""The Overview's answer (``backend/views/overview.py``) as ``flowscope report`` prints it and the server answers it,
on real Spark logs and on a progress log from another engine; the bundle stores it."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

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


def test_a_straggler_application_leads_with_its_slow_job_and_its_findings(capsys):
    o = report_json(capsys, log_of("skewed_straggler"))
    app = o["application"]
    assert app["engine"] == "spark" and app["jobs"] == 2 and app["times"] == 2 and app["recorded_cores"] == 2
    assert 0 < app["idle_cores_pct"] < 100
    w = app["whatif"]
    assert w["2x"]["cores"] == 4 and w["0.5x"]["cores"] == 1
    assert w["2x"]["wall_s"] <= app["duration_s"] + 1e-6 <= w["0.5x"]["wall_s"] + 1e-6
    slow = o["slowest"][0]
    assert slow["latency_s"] == max(t["latency_s"] for t in o["slowest"])
    assert slow["top"]["kind"] == "task"
    kinds = [f["kind"] for f in o["findings"]]
    assert kinds == ["straggler", "skew", "data-skew"] and o["findings_total"] == 3
    for f in o["findings"]:
        assert set(f) >= FINDING_KEYS
        assert f["stage"] == slow["top"]["holder"]["stage"] and f["scope"] == slow["scope"]
        assert "spark." in f["recommendation"] and f["threshold"] and f["metric"]
    straggler = o["findings"][0]
    assert straggler["threshold"]["name"] == "straggler.factor"
    assert straggler["metric"]["ratio"] >= straggler["threshold"]["value"]


def test_the_text_points_every_line_at_a_time_and_a_holder(capsys):
    log = log_of("skewed_straggler")
    assert main(["report", str(log)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("2 jobs, 2 completed times")
    assert any(line.startswith("  what if: 4 cores") for line in lines)
    opens = [line for line in lines if line.strip().startswith("open: ")]
    assert len(opens) == 2 + 3  # each slowest time and each finding
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
    assert [f["kind"] for f in overview["findings"]] == ["straggler", "skew", "data-skew"]
    assert data["answers"][answer_key(f"{base}/cores-whatif", {})]["application"]["recorded_cores"] == 2
