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


def test_the_regions_blame_list_holds_its_loops_iterations(page, server, pagerank):
    """The region's "slowest times" list holds the times of the loop nested in it, each named by its iteration,
    over REST (`nested`) and in the Blame tab; picking an iteration's row draws that iteration's waterfall, and a
    bar opens the loop's scope at its moment."""
    sid, loop_path = pagerank
    region = ",".join(map(str, loop_path[:1]))
    with httpx.Client(base_url=server.url, timeout=20) as c:
        own = c.get(f"/api/sessions/{sid}/blame", params={"scope": region}).json()["times"]
        times = c.get(f"/api/sessions/{sid}/blame", params={"scope": region, "nested": "true"}).json()["times"]
    assert sorted(t["time"] for t in own) == [0, 4]  # the exact scope: the jobs outside the loop
    assert sorted((t["scope"] == loop_path, t["iteration"], t["job_ids"]) for t in times) == [
        (False, None, [0]), (False, None, [4]), (True, 1, [1]), (True, 2, [2]), (True, 3, [3])]
    page.goto(f"{server.url}/#/s/{sid}?scope={region}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="blame"]')
    page.wait_for_selector("#tab-blame .blame-time.active", timeout=15000)
    rows = [r.inner_text() for r in page.query_selector_all("#tab-blame .blame-time")]
    assert len(rows) == 5, rows
    for j in (1, 2, 3):
        assert sum(f"job {j}, iteration {j}" in r and "loop: " in r for r in rows) == 1, rows
    k = next(i for i, r in enumerate(rows) if "job 2, iteration 2" in r)
    page.query_selector_all("#tab-blame .blame-time")[k].click()
    page.wait_for_function("(k) => document.querySelector('#tab-blame .blame-time.active').dataset.i === String(k)",
                           arg=k)
    page.wait_for_function("() => (document.querySelector('#blame-waterfall .gtitle') || {}).textContent"
                           "?.includes('job 2, iteration 2')")
    shot(page, "blame-region-with-iterations")
    bars = page.query_selector_all("#blame-waterfall .bars .point")
    widths = [float(b.query_selector("path").bounding_box()["width"]) for b in bars]
    box = bars[widths.index(max(widths))].query_selector("path").bounding_box()  # the longest: easy to hit
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_function("(p) => String(window.__flowscope.scope) === p", arg=",".join(map(str, loop_path)))
