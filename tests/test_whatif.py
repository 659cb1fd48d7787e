"""What-if (tracker/analysis/whatif.py, GET .../whatif): release a pointstamp on a copy of the state, see what
advances."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from backend.eventlog import find_logs
from backend.web.app import Settings
from flowscope.cli import main as cli
from tests.e2e.server import running_server
from tracker.analysis.whatif import release
from tracker.progress_log.replay import replay_file
from tracker.reachability import Location

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "spark"


@pytest.fixture(scope="module")
def skew_log(tmp_path_factory) -> Path:
    (log,) = find_logs(FIXTURES / "skewed_straggler")
    out = tmp_path_factory.mktemp("skew") / "skew.jsonl"
    assert cli(["record", "-q", str(log.path), "-o", str(out)]) == 0
    return out


def straggler(log: Path) -> tuple[dict, int]:
    """The straggler finding, and the batch count just before the straggler's end."""
    recs = [json.loads(line) for line in log.open()]
    (mark,) = [r for r in recs if r["type"] == "mark" and r.get("finding") == "straggler"]
    n = 0
    for r in recs:
        if r["type"] == "progress":
            n += 1
            if r["cause"].get("event") == "TaskEnd" and r["cause"].get("task") == mark["task"]:
                return mark, n - 1
    raise AssertionError("the straggler never ended")


def test_releasing_the_straggler_lets_the_job_finish(skew_log):
    mark, at = straggler(skew_log)
    path, port = tuple(mark["scope"]), Location.from_json(["out", mark["node"], 0])
    replay = replay_file(skew_log, at=at)
    released, moved = release(replay, path, port, mark["time"])
    assert released == 1
    # the stage no longer holds the job's epoch: its output's frontier passes it
    (stage,) = [a for a in moved if a.scope == path and a.port == port]
    assert stage.before == [mark["time"]] and mark["time"] not in stage.after
    # the driver's results port does not move: the results delivered so far wait there until the job's end
    assert not [a for a in moved if a.scope == path and a.port == Location.from_json(["in", 2, 0])]
    with pytest.raises(ValueError):
        release(replay, path, port, mark["time"])  # nothing left there
    with pytest.raises(KeyError):
        release(replay, path, Location.from_json(["out", 99, 0]), 0)


def test_whatif_over_rest_uses_a_copy(skew_log, tmp_path):
    mark, at = straggler(skew_log)
    settings = Settings(allowed_dirs=[skew_log.parent], data_dir=tmp_path, checkpoint_every=8)
    with running_server(settings) as srv, httpx.Client(base_url=srv.url, timeout=20) as c:
        sid = c.post("/api/sessions", json={"path": str(skew_log)}).json()["id"]
        srv.wait_for(sid, client=c)
        params: dict[str, Any] = {"scope": ",".join(map(str, mark["scope"])), "port": f"out,{mark['node']},0",
                  "time": json.dumps(mark["time"]), "batch": at}
        for _ in range(2):  # the same answer twice: the first release did not touch the history's copies
            r = c.get(f"/api/sessions/{sid}/whatif", params=params)
            assert r.status_code == 200, r.text
            out = r.json()
            assert out["released"] == 1 and out["batch"] == at
            assert any(a["port"] == ["out", mark["node"], 0] and a["before"] == [mark["time"]]
                       for a in out["advanced"])
        state = c.get(f"/api/sessions/{sid}/state", params={"scope": params["scope"], "batch": at}).json()
        row = [p for p in state["ports"] if p[:3] == ["out", mark["node"], 0]][0]
        assert [mark["time"], 1] in row[4]  # the straggler still holds in the session's own history
        assert c.get(f"/api/sessions/{sid}/whatif", params={**params, "port": "sideways"}).status_code == 400
        assert c.get(f"/api/sessions/{sid}/whatif", params={**params, "time": "77"}).status_code == 400
        assert c.get(f"/api/sessions/{sid}/whatif", params={**params, "port": "out,99,0"}).status_code == 404
