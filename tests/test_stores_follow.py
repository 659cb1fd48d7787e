"""`flowscope serve --follow s3://...`: a rolling application in a bucket, listed and followed as Spark rolls it.

A real application's events (fixtures/spark/batch_shuffle) are cut into two rolled parts, as Spark 4 writes a
rolling log, and put into a real S3 API server (moto's, its own process) one object at a time: the first part with
the in-progress marker, then the second part, then the final marker. The server, a real `flowscope serve` process
on 127.0.0.1, lists the application, opens it when asked, must pick each new object up by polling the listing, and
end with the answer the same application gives from local disk (another server, beside it).
"""

from __future__ import annotations

import io
import re
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import zstandard

from backend.stores import StoreUrl
from backend.web.app import Settings

from .conftest import FIXTURES, REPO, wait_until
from .e2e.server import running_server
from .s3_server import S3Server
from .test_stores_commands import log_text

ROLLING = next((FIXTURES / "spark" / "batch_shuffle").glob("eventlog_v2_*"))
APP = ROLLING.name.removeprefix("eventlog_v2_")


def parts() -> tuple[bytes, bytes]:
    """The application's events as two zstd parts, cut at a line boundary half-way through."""
    lines = log_text(ROLLING).splitlines(keepends=True)
    half = len(lines) // 2
    compress = zstandard.ZstdCompressor().compress
    return compress(b"".join(lines[:half])), compress(b"".join(lines[half:]))


def serve(*args: str, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """A `flowscope serve` process on 127.0.0.1 and its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "flowscope.cli", "serve", "--port", "0", *args], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.match(r"flowscope: serving (http://127\.0\.0\.1:\d+)/", line)
    if m is None:
        proc.kill()
        raise AssertionError(line + (proc.stderr.read() if proc.stderr else ""))
    return proc, m.group(1)


def only(base: str) -> dict | None:
    """The one session of a server, once it has one."""
    found = httpx.get(f"{base}/api/sessions", timeout=10).json()
    assert len(found) <= 1, found
    return found[0] if found else None


def test_a_rolling_application_in_a_bucket_is_followed_part_by_part(s3: S3Server, tmp_path: Path):
    first, second = parts()
    local = tmp_path / "spark-events" / ROLLING.name
    local.mkdir(parents=True)
    (local / f"events_1_{APP}.zstd").write_bytes(first)
    (local / f"events_2_{APP}.zstd").write_bytes(second)
    (local / f"appstatus_{APP}").write_bytes(b"")
    app = f"{s3.bucket('follow')}/spark-events/{ROLLING.name}"
    s3.put_bytes(f"{app}/events_1_{APP}.zstd", first)
    s3.put_bytes(f"{app}/appstatus_{APP}.inprogress", b"")

    bucket = serve("--follow", "s3://follow/spark-events", "--data-dir", str(tmp_path / "index"), env=s3.env)
    disk_server = serve(str(local), env=s3.env)
    try:
        disk = wait_until(lambda: (s := only(disk_server[1])) and s["status"] == "done" and s, "the local log read",
                          timeout=120)
        assert disk["batches"] > 0
        base = bucket[1]
        listed = wait_until(lambda: (s := only(base)) and s["application"]["name"] and s, "the bucket's app listed",
                            timeout=120)  # listed from its first events, not replayed
        assert (listed["id"], listed["status"], listed["live"]) == (APP, "listed", True)
        assert listed["application"]["status"] == "in_progress" and listed["source"] == app

        def opened() -> dict:  # a route under the application's id opens it (replayed, and followed while running)
            return httpx.get(f"{base}/api/sessions/{APP}", timeout=10).json()

        in_bucket = wait_until(lambda: (s := opened()) and s["batches"] > 0 and s, "the bucket's app read", timeout=120)
        assert in_bucket["status"] in ("loading", "live") and in_bucket["kind"] == "spark-event-log"
        assert in_bucket["batches"] < disk["batches"], "only the first part is there yet"

        s3.put_bytes(f"{app}/events_2_{APP}.zstd", second)  # Spark rolls the log: the next part appears whole
        grown = wait_until(lambda: (s := opened()) and s["records"] == disk["records"] and s,
                           "the second part read", timeout=120)
        assert grown["status"] == "live", "the marker still says in progress"

        s3.put_bytes(f"{app}/appstatus_{APP}", b"")  # the application ended: Spark renames its marker
        s3.fs().rm_file(f"{app.removeprefix('s3://')}/appstatus_{APP}.inprogress")
        done = wait_until(lambda: (s := opened()) and s["status"] == "done" and s, "the end", timeout=120)
        same = ("records", "batches", "scopes", "operators", "findings", "marks", "errors")
        assert {k: done[k] for k in same} == {k: disk[k] for k in same}
        finished = wait_until(lambda: (s := only(base)) and s["application"]["status"] == "finished" and s,
                              "the list says finished", timeout=120)
        assert finished["application"]["end"] is not None
        # Spark's REST API answers for it too, its event log files read back from the bucket
        apps = httpx.get(f"{base}/api/v1/applications", timeout=30).json()
        assert [a["id"] for a in apps] == [APP]
        logs = httpx.get(f"{base}/api/v1/applications/{APP}/logs", timeout=30)
        assert logs.status_code == 200, logs.text
        with zipfile.ZipFile(io.BytesIO(logs.content)) as z:
            assert z.read(f"{ROLLING.name}/events_2_{APP}.zstd") == second
    finally:
        for proc, _ in (bucket, disk_server):
            proc.send_signal(signal.SIGINT)
            proc.wait(15)


def test_the_api_opens_urls_only_under_those_the_server_was_started_with(s3: S3Server, tmp_path: Path):
    allowed = s3.put_tree(ROLLING, f"{s3.bucket('api-logs')}/team/{ROLLING.name}")
    s3.put_tree(ROLLING, f"{s3.bucket('other-team')}/{ROLLING.name}")
    settings = Settings(allowed_dirs=[tmp_path], allowed_urls=[StoreUrl.parse("s3://api-logs/team")],
                        data_dir=tmp_path / "data")
    with running_server(settings) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        opened = c.post("/api/sessions", json={"path": allowed})
        assert opened.status_code == 201, opened.text
        sid = opened.json()["id"]
        done = wait_until(lambda: (s := c.get(f"/api/sessions/{sid}").json())["status"] == "done" and s, "read")
        assert done["batches"] > 0 and done["kind"] == "spark-event-log"
        for elsewhere in (f"s3://other-team/{ROLLING.name}", "s3://api-logs/team/../secrets", "s3://api-logs/teamx"):
            refused = c.post("/api/sessions", json={"path": elsewhere})
            assert refused.status_code == 403 and elsewhere in refused.json()["detail"], refused.text
        missing = c.post("/api/sessions", json={"path": "s3://api-logs/team/eventlog_v2_none"})
        assert missing.status_code in (404, 422) and "no such file" in missing.json()["detail"], missing.text
