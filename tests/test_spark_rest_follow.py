"""``/api/v1`` over a followed directory: its applications listed from the index of followed directories
(``backend/history``) without a session, and one replayed by the REST store when its documents are asked for."""

from __future__ import annotations

import shutil

import httpx

from backend.web.app import Settings
from tests.conftest import FIXTURES, wait_until
from tests.e2e.server import running_server


def test_a_followed_directorys_applications_answer_without_sessions(tmp_path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("batch_shuffle", "task_retries"):
        (log,) = (FIXTURES / "spark" / name).glob("eventlog_v2_*")
        shutil.copytree(log, logs / log.name)
    settings = Settings(allowed_dirs=[tmp_path], follow_dirs=[logs], data_dir=tmp_path / "data")
    with running_server(settings) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        wait_until(lambda: len(c.get("/api/v1/applications").json()) == 2, "the two applications listed")
        apps = c.get("/api/v1/applications").json()
        assert {a["id"] for a in apps} == {p.name.removeprefix("eventlog_v2_") for p in logs.iterdir()}
        assert all(a["attempts"][0]["completed"] and a["attempts"][0]["duration"] > 0 for a in apps)
        assert srv.app.state.manager.sessions == {}  # listed by the index: nothing replayed
        app = apps[0]["id"]
        jobs = c.get(f"/api/v1/applications/{app}/jobs").json()
        assert jobs and all(j["status"] in ("SUCCEEDED", "FAILED") for j in jobs)
        listed = c.get(f"/api/v1/applications/{app}").json()
        assert listed["attempts"][0]["endTime"] == apps[0]["attempts"][0]["endTime"]
        assert srv.app.state.manager.sessions == {}  # the REST store replayed it, not a session
