"""A driver loop in headless chromium, on the real PageRank run (fixtures/spark/iterative_pagerank): the loop scope's
Blame tab lists its iterations as "job J, iteration i", and the waterfall opens on the iteration's own tasks."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.browser import shot
from tests.e2e.view_fixtures import open_spark_fixture


@pytest.fixture(scope="module")
def server(spark_server):
    return spark_server


@pytest.fixture(scope="module")
def pagerank(server):
    sid = open_spark_fixture(server, "iterative_pagerank")
    tree = httpx.get(f"{server.url}/api/sessions/{sid}/scopes", timeout=20).json()
    (loop,) = [s for region in tree["scopes"] for s in region["scopes"] if s["depth"] == 2]
    assert loop["name"] == "loop: reduceByKey at make_fixtures.py:109" and loop["operators"] == 4
    return sid, loop["path"]


@pytest.fixture
def viewport():
    return {"width": 1440, "height": 1000}


def test_the_loops_blame_tab_names_each_iteration(page, server, pagerank):
    sid, loop_path = pagerank
    with httpx.Client(base_url=server.url, timeout=20) as c:
        times = c.get(f"/api/sessions/{sid}/blame", params={"scope": ",".join(map(str, loop_path))}).json()["times"]
    assert sorted((t["time"], t["iteration"], t["job_ids"]) for t in times) == [
        ([1, 1], 1, [1]), ([2, 2], 2, [2]), ([3, 3], 3, [3])]
    page.goto(f"{server.url}/#/s/{sid}?scope={','.join(map(str, loop_path))}")
    page.wait_for_selector("#graph circle.port")
    page.click('#tabs button[data-tab="blame"]')
    page.wait_for_selector("#tab-blame .blame-time.active", timeout=15000)
    rows = [r.inner_text() for r in page.query_selector_all("#tab-blame .blame-time")]
    assert sorted(r for r in rows if "iteration" in r) == sorted(rows) and len(rows) == 3, rows
    for j in (1, 2, 3):
        assert any(f"job {j}, iteration {j}" in r for r in rows), rows
    page.wait_for_selector("#blame-waterfall .main-svg")
    labels = [t.text_content() for t in page.query_selector_all("#blame-waterfall .ytick text")]
    assert any(label.split(". ", 1)[-1].startswith("task ") for label in labels), labels
    shot(page, "blame-loop-iterations")
    # the longest bar is the iteration's slowest task: it opens "Why is this stuck?" at its moment, naming it
    bars = page.query_selector_all("#blame-waterfall .bars .point")
    widths = [float(b.query_selector("path").bounding_box()["width"]) for b in bars]
    box = bars[widths.index(max(widths))].query_selector("path").bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    late = page.wait_for_selector("#why .late-holder", timeout=15000)
    first = page.inner_text("#tab-blame .blame-time.active")
    job = int(first.split("job ", 1)[1].split(",")[0])
    assert f"job {job}, iteration {job}" in late.inner_text(), late.inner_text()
    shot(page, "blame-loop-late")
