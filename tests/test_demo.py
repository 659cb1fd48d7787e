"""`flowscope demo`, the embedded default: a real local PySpark streaming pipeline attached live, served and
looked at in headless chromium: its plans are the live application's, its cores the configuration's local[2]."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

from .conftest import REPO
from .e2e.browser import chromium, shot


def test_demo_runs_a_live_pyspark_pipeline_and_serves_its_view():
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowscope.cli", "demo", "--batches", "5", "--stall", "2", "--rows-per-second", "10"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 240
        url = None
        while time.monotonic() < deadline:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line:
                assert proc.poll() is None, "".join(lines[-30:])
                continue
            lines.append(line)
            found = re.search(r"(http://127\.0\.0\.1:\d+/#/s/[0-9a-f]+)", line)
            if found:
                url = found.group(1)
            if "the query stopped" in line:
                break
        assert url and "the query stopped" in "".join(lines), "".join(lines[-30:])
        # everything printed is the demo's own: Spark's JVM chatter goes to the log file it names
        assert all(line.startswith("flowscope") for line in lines if line.strip()), "".join(lines)
        base, sid = url.split("/#/s/")
        sessions = json.load(urllib.request.urlopen(f"{base}/api/sessions"))
        assert [s for s in sessions if s["id"] == sid], sessions  # GET /api/sessions: a list
        scopes = json.load(urllib.request.urlopen(f"{base}/api/sessions/{sid}/scopes"))
        text = json.dumps(scopes)
        assert "demo_windows" in text, "the streaming query is a region of the live session"
        marks = json.load(urllib.request.urlopen(f"{base}/api/sessions/{sid}/marks"))
        done = [m for m in marks["marks"] if "done" in m.get("label", "")]  # GET .../marks: {"marks": [...], ...}
        assert len(done) >= 5, "every micro-batch's progress arrived live"
        # a live application's SQL plans: each micro-batch's execution, as the listener streamed it
        plans = json.load(urllib.request.urlopen(f"{base}/api/sessions/{sid}/plan"))
        assert plans["executions"] and all(ex["nodes"] for ex in plans["executions"]), plans
        # the cores: the listener attached after the executor was added, so the configuration says them (local[2])
        overview = json.load(urllib.request.urlopen(f"{base}/api/sessions/{sid}/overview"))
        assert overview["application"]["recorded_cores"] == 2
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            missing: list[str] = []
            page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
            page.goto(url)
            page.wait_for_selector("#overview:not([hidden]) #overview-close")  # a Spark application opens on it
            assert "tasks on 2 cores" in page.inner_text("#overview .ov-facts")
            shot(page, "demo-overview")
            page.click("#overview-close")
            page.wait_for_selector("#graph .node.scope")
            assert page.locator("#graph .node.scope", has_text="demo_windows").count() == 1
            page.locator("#graph .node.scope", has_text="demo_windows").locator("text.open").click()
            page.wait_for_function("document.querySelectorAll('#graph .node.operator').length >= 3")
            shot(page, "demo-query")
            page.click('#tabs button[data-tab="plan"]')
            page.wait_for_selector("#tab-plan svg.plan-graph", timeout=30000)
            shot(page, "demo-plan")
            assert not [u for u in missing if "/plan" in u], missing
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
