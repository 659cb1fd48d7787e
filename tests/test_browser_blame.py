"""The diagnosis views in headless chromium on a real Spark log (streaming_stall): the Blame tab's slowest times
and waterfall (a segment opens explain at its moment, naming the slow task), the Executors tab's task bars, and
the explain panel's late tasks and what-if. Screenshots go to test-artifacts/."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.browser import shot
from tests.e2e.view_fixtures import open_spark_fixture


@pytest.fixture(scope="module")
def server(spark_server):
    return spark_server


@pytest.fixture(scope="module")
def stall_sid(server):
    return open_spark_fixture(server, "streaming_stall")


@pytest.fixture
def viewport():
    return {"width": 1440, "height": 1000}  # the waterfall and the executor lanes below the graph


def test_blame_waterfall_opens_the_slow_task_at_its_moment(page, server, stall_sid):
    page.goto(f"{server.url}/#/s/{stall_sid}?scope=2")
    page.wait_for_selector("#graph circle.port")
    page.click('#tabs button[data-tab="blame"]')
    first = page.wait_for_selector("#tab-blame .blame-time.active", timeout=15000)
    assert "batch 4" in first.inner_text()
    page.wait_for_selector("#blame-waterfall .main-svg")
    bars = page.query_selector_all("#blame-waterfall .bars .point")
    assert len(bars) >= 4
    widths = [float(b.query_selector("path").bounding_box()["width"]) for b in bars]
    slow = widths.index(max(widths))
    labels = [t.text_content() for t in page.query_selector_all("#blame-waterfall .ytick text")]
    assert any("task 9" in t and "partition 0" in t for t in labels), labels
    shot(page, "blame-waterfall")
    box = bars[slow].query_selector("path").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # plotly's drag layer takes clicks
    late = page.wait_for_selector("#why .late-holder", timeout=15000)
    assert "actually late" in late.inner_text().lower()
    row = page.wait_for_selector('#why .late-holder tr[data-task="9"]')
    assert "driver" in row.inner_text()
    batch = int(page.input_value("#batch-input"))
    assert 0 < batch < int(page.inner_text("#head"))  # the view went back to the stall
    # what-if on the driver's hold: the stage still holds batch 4, so the results port does not advance
    page.click("#why .holder button.whatif")
    result = page.wait_for_selector("#why .holder .whatif-result")
    assert "driver (results)" not in result.inner_text()
    shot(page, "blame-explain-late")


def test_executor_timeline_draws_every_task(page, server, stall_sid):
    with httpx.Client(base_url=server.url, timeout=20) as c:
        tasks = c.get(f"/api/sessions/{stall_sid}/tasks").json()
    assert tasks["total"] == len(tasks["launched"]) > 10 and None not in tasks["ended"]
    page.goto(f"{server.url}/#/s/{stall_sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="executors"]')
    page.wait_for_selector("#executor-chart .main-svg", timeout=15000)
    note = page.inner_text("#executor-note")
    assert f"{tasks['total']} task attempts on 1 executor" in note
    legend = [t.text_content() for t in page.query_selector_all("#executor-chart .legend .legendtext")]
    assert sorted(legend) == sorted(f"stage {s}" for s in set(tasks["stage"]))
    shot(page, "executor-timeline")


def test_a_finished_job_or_batch_mark_opens_its_own_waterfall(page, server, stall_sid):
    """A mark of a completed time (a micro-batch's "batch N done", a job's "succeeded") opens the Blame tab on
    that time, even one outside the listed scope's slowest (job 0 is in scope [1], the list is scope [2]'s)."""
    marks = httpx.get(f"{server.url}/api/sessions/{stall_sid}/marks").json()["marks"]
    done = {m["label"]: m for m in marks if m.get("completes") is not None}
    assert done["batch 1 done"]["completes"] == 1 and done["batch 1 done"]["scope"] == [2]
    assert done["job 0 succeeded (epoch 0)"]["scope"] == [1]
    assert not any(m.get("completes") is not None for m in marks if "started" in m["label"])
    page.goto(f"{server.url}/#/s/{stall_sid}?scope=2")
    page.wait_for_selector("#graph circle.port")
    page.click('#tabs button[data-tab="marks-tab"]')
    # a locator, resolved again at the click: the marks list may render anew meanwhile
    page.locator('#tab-marks-tab .list-row:has-text("batch 1 done") button.mark-blame').click()
    active = page.wait_for_selector("#tab-blame .blame-time.active", timeout=15000)
    assert "batch 1" in active.inner_text()
    page.wait_for_selector('#blame-waterfall .gtitle:has-text("batch 1")')
    shot(page, "blame-from-a-mark")
    page.click('#tabs button[data-tab="marks-tab"]')
    page.locator('#tab-marks-tab .list-row:has-text("job 0 succeeded") button.mark-blame').click()
    page.wait_for_selector('#tab-blame .blame-time.active:has-text("time 0")', timeout=15000)
    first = page.query_selector_all("#tab-blame .blame-time")[0]
    assert "active" in (first.get_attribute("class") or "")  # not among scope [2]'s times: listed first
    assert "batch" not in first.inner_text()


def test_a_failed_jobs_time_says_it_failed_and_its_recompute_says_why(page, server):
    """task_retries: job 1 fails (a planted exception on every attempt). Its row in the Blame tab says failed, its
    waterfall says why, and its recompute segment's hover names the failure, as the REST answer has them."""
    sid = open_spark_fixture(server, "task_retries")
    times = httpx.get(f"{server.url}/api/sessions/{sid}/blame").json()["times"]
    (failed,) = [t for t in times if t.get("status") == "failed"]
    redone = [s for s in failed["blame"] if s["kind"] == "recompute" and s["holder"].get("failure")]
    assert redone, failed["blame"]
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="blame"]')
    page.wait_for_selector("#tab-blame .blame-time", timeout=15000)
    rows = page.query_selector_all("#tab-blame .blame-time")
    flagged = [r for r in rows if r.query_selector(".pill.failed")]
    assert len(flagged) == 1 and f"{failed['latency_s']:.3f} s" in flagged[0].inner_text()
    flagged[0].click()
    page.wait_for_function("() => document.querySelector('#blame-status').textContent.includes('failed after')")
    status = page.query_selector("#blame-status")
    assert f"job {failed['job_ids'][0]} failed after" in status.inner_text()
    assert failed["failure"][:40] in status.inner_text()
    page.wait_for_selector("#blame-waterfall .main-svg")
    reason = redone[0]["holder"]["failure"]["reason"]
    hovers = page.evaluate("() => document.querySelector('#blame-waterfall').data[0].hovertext")
    assert any(f"redone after {reason}" in h for h in hovers), hovers
    labels = [t.text_content() for t in page.query_selector_all("#blame-waterfall .ytick text")]
    assert any(f"({reason})" in t for t in labels), labels
    shot(page, "blame-failed-job")
