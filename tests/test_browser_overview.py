"""The Overview in headless chromium on a real Spark log (skewed_straggler): it opens first, over the graph; its
rows open their moments (a finding where the Findings tab opens it, a slow time at its top blame segment); the
graph is one click away and the Overview comes back; a progress log from another engine opens on its graph."""

from __future__ import annotations

import httpx
import pytest

from backend.web.app import Settings
from tests.conftest import LOOP_LOG
from tests.e2e.browser import shot
from tests.e2e.server import running_server
from tests.e2e.view_fixtures import SPARK_FIXTURES, open_spark_fixture


@pytest.fixture(scope="module")
def server():
    """A server that opens the Spark fixtures and the progress-log example."""
    with running_server(Settings(allowed_dirs=[SPARK_FIXTURES, LOOP_LOG.parent], checkpoint_every=16)) as srv:
        yield srv


@pytest.fixture(scope="module")
def straggler_sid(server):
    return open_spark_fixture(server, "skewed_straggler")


@pytest.fixture
def viewport():
    return {"width": 1440, "height": 1000}


def log_of(name: str):
    (log,) = (SPARK_FIXTURES / name).glob("eventlog_v2_*")
    return log


def overview_of(server, sid: str) -> dict:
    with httpx.Client(base_url=server.url, timeout=20) as c:
        return c.get(f"/api/sessions/{sid}/overview").json()


def test_the_overview_opens_first_and_a_finding_row_opens_its_moment(page, server, straggler_sid):
    o = overview_of(server, straggler_sid)
    kinds = [g["kind"] for g in o["groups"]]
    assert sorted(kinds) == ["data-skew", "skew", "straggler"]
    impacts = [g["impact_s"] for g in o["groups"]]
    assert impacts == sorted(impacts, reverse=True)  # the larger impact first
    page.goto(f"{server.url}/#/s/{straggler_sid}")
    page.wait_for_selector("#overview:not([hidden]) .ov-finding")
    text = page.inner_text("#overview")
    low = text.lower()  # headings are upper-cased by the stylesheet
    assert "slowest" in low and "findings" in low and "what if" in low
    assert o["findings"][0]["recommendation"] in text
    page.wait_for_selector("#overview-whatif-chart .main-svg", timeout=15000)
    assert page.get_attribute("#overview-whatif-chart", "data-points") == "4"
    shot(page, "overview")
    slow = next(f for f in o["findings"] if f["kind"] == "straggler")
    page.click("#overview tr.ov-finding.straggler")
    page.wait_for_selector("#overview", state="hidden")
    page.wait_for_function("(s) => String(window.__flowscope.scope) === s", arg=",".join(map(str, slow["scope"])))
    page.wait_for_selector(f'#why .late-holder tr[data-task="{slow["task"]}"]', timeout=15000)
    assert int(page.input_value("#batch-input")) < slow["after"]  # just before the straggler's end


def test_a_slow_time_row_opens_its_top_holder_and_the_graph_is_one_click_away(page, server, straggler_sid):
    o = overview_of(server, straggler_sid)
    slowest = o["slowest"][0]
    assert slowest["top"]["kind"] == "task" and slowest["top"]["holder"]["stage"] == o["findings"][0]["stage"]
    page.goto(f"{server.url}/#/s/{straggler_sid}")
    row = page.wait_for_selector("#overview tr.ov-slow")
    assert f"{slowest['latency_s']:.2f} s" in row.inner_text()
    assert f"task {slowest['top']['holder']['task']}" in row.inner_text()
    row.click()
    page.wait_for_selector("#overview", state="hidden")
    page.wait_for_function("(s) => String(window.__flowscope.scope) === s", arg=",".join(map(str, slowest["scope"])))
    page.wait_for_selector("#why .holder, #why .late-holder", timeout=15000)
    # back to the Overview, then the graph
    page.click("#overview-open")
    page.wait_for_selector("#overview:not([hidden]) .ov-slow")
    page.click("#overview-close")
    page.wait_for_selector("#overview", state="hidden")
    page.click("#graph .node")  # nothing covers the graph any more


def test_a_deep_link_and_another_engines_log_open_on_the_graph(page, server, straggler_sid, api, loop_sid):
    page.goto(f"{server.url}/#/s/{straggler_sid}?scope=2")
    page.wait_for_selector("#graph .node")
    assert page.locator("#overview").is_hidden()
    page.goto(f"{server.url}/#/s/{loop_sid}")
    page.wait_for_selector("#graph .node")
    page.wait_for_selector(f'#overview[data-sid="{loop_sid}"]', state="attached")  # answered, and not shown:
    assert page.locator("#overview").is_hidden()
    page.click("#overview-open")  # but it is there to ask for: the slowest times and their blame
    page.wait_for_selector("#overview:not([hidden]) .ov-slow")
    assert "what if" not in page.inner_text("#overview").lower()


def test_a_post_mortem_opens_on_its_overview_and_its_rows_open_stored_moments(page, tmp_path):
    """The bundle stores the Overview and its chart: opened from file://, with no server, it shows first, and the
    straggler's row opens its stored moment (no nearest one said), naming the task still running."""
    from backend.export.bundle import build_bundle

    out = tmp_path / "straggler.html"
    build_bundle(log_of("skewed_straggler"), out)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    page.wait_for_selector("#overview:not([hidden]) tr.ov-finding.straggler")
    page.wait_for_selector("#overview-whatif-chart .main-svg", timeout=15000)
    page.click("#overview tr.ov-finding.straggler")
    page.wait_for_selector("#overview", state="hidden")
    page.wait_for_selector("#why .late-holder tr[data-task]", timeout=15000)
    assert page.locator("#toast:not([hidden])").count() == 0, page.inner_text("#toast")
    assert not errors, errors


def test_the_overview_links_the_applications_rest_documents(page, server, straggler_sid):
    """The Overview links Spark's REST API of its application (backend/spark_api): the jobs link answers the same
    jobs the Overview counts."""
    o = overview_of(server, straggler_sid)
    rest = o["application"]["rest"]
    assert rest.startswith("/api/v1/applications/local-")
    page.goto(f"{server.url}/#/s/{straggler_sid}")
    page.wait_for_selector("#overview:not([hidden]) .ov-rest-link")
    links = {a.inner_text(): a.get_attribute("href") for a in page.query_selector_all("#overview .ov-rest-link")}
    assert links["jobs"] == rest + "/jobs" and links["application"] == rest
    with httpx.Client(base_url=server.url, timeout=60) as c:
        jobs = c.get(links["jobs"]).json()
        assert len(jobs) == o["application"]["jobs"]
        assert c.get(links["application"]).json()["id"] == rest.split("/")[4]
