"""The Plan tab in headless chromium on a real Spark log (plan_sort_merge_join): the REST answer (its findings at the
session's thresholds), then a plan opened, an operator selected and its stage highlighted in the job graph; search
and collapse. Screenshots go to test-artifacts/."""

from __future__ import annotations

import httpx
import pytest

from backend.spark.diagnosis.thresholds import ENV
from tests.e2e.browser import shot
from tests.e2e.view_fixtures import open_spark_fixture


@pytest.fixture(scope="module")
def server(spark_server):
    return spark_server


@pytest.fixture(scope="module")
def smj_sid(server):
    return open_spark_fixture(server, "plan_sort_merge_join")


@pytest.fixture
def viewport():
    return {"width": 1440, "height": 1100}


def test_rest_plan_names_each_executions_region(server, smj_sid):
    with httpx.Client(base_url=server.url, timeout=30) as c:
        answer = c.get(f"/api/sessions/{smj_sid}/plan", params={"layout": "true"}).json()
        assert c.get(f"/api/sessions/{smj_sid}/plan", params={"execution": 9}).status_code == 404
    assert [e["execution"] for e in answer["executions"]] == [0, 1] and answer["problems"] == []
    scopes = [e["scope"] for e in answer["executions"]]
    assert all(isinstance(s, list) and s for s in scopes) and scopes[0] != scopes[1]
    for e in answer["executions"]:
        assert set(e["layout"]["nodes"]) == {str(n["id"]) for n in e["nodes"] if "members" not in n}
        assert any(f["finding"] == "broadcastable_sort_merge_join" for f in e["findings"])
        assert all(f["scope"] == e["scope"] for f in e["findings"])
    grown = httpx.get(f"{server.url}/api/sessions/{smj_sid}/plan", params={"series": "true", "execution": 1},
                      timeout=30).json()["executions"][0]
    for node in grown["nodes"]:
        for m in node["metrics"]:
            if m["type"] == "sum" and m["series"]:
                times = [t for t, _ in m["series"]]
                assert times == sorted(times) and m["series"][-1][1] == m["value"], (node["name"], m["name"])


def test_rest_plan_findings_use_the_sessions_thresholds(server, smj_sid, tmp_path, monkeypatch):
    """A session made under the defaults says its join finding fired on DataFlint's 10 MB; one made while a
    thresholds file (serve's --thresholds names it in the environment) sets the broadcastable sides to 0 B finds no
    broadcastable join in the same log, while the first session still does."""

    def smj_findings(sid: str) -> list[dict]:
        answer = httpx.get(f"{server.url}/api/sessions/{sid}/plan", timeout=30).json()
        return [f for e in answer["executions"] for f in e["findings"]
                if f["finding"] == "broadcastable_sort_merge_join"]

    default = smj_findings(smj_sid)
    assert default and all(f["threshold"]["name"] == "plan.broadcastable_sort_merge_join.small_side_bytes"
                           and f["threshold"]["value"] == 10_000_000 and "DataFlint" in f["threshold"]["source"]
                           for f in default)
    none = tmp_path / "none.toml"
    none.write_text("[plan.broadcastable_sort_merge_join]\nsmall_side_bytes = 0\nmedium_side_bytes = 0\n")
    monkeypatch.setenv(ENV, str(none))
    assert smj_findings(open_spark_fixture(server, "plan_sort_merge_join")) == []
    assert smj_findings(smj_sid) == default


def test_blame_names_the_plan_operator_on_the_page(page, server, smj_sid):
    """The REST blame answer carries each SQL stage's plan operator, and the Blame tab's waterfall says it."""
    times = httpx.get(f"{server.url}/api/sessions/{smj_sid}/blame", timeout=30).json()["times"]
    tasks = [s["holder"] for t in times for s in t["blame"] if s["kind"] == "task"]
    assert tasks and all("plan_operator" in h for h in tasks)
    page.goto(f"{server.url}/#/s/{smj_sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="blame"]')
    page.wait_for_selector("#tab-blame .blame-time", timeout=15000)
    names = {f"· {h['plan_operator']['name']} #{h['plan_operator']['id']} ·" for h in tasks}
    seen: list[str] = []
    for k in range(len(page.query_selector_all("#tab-blame .blame-time"))):  # a time whose path has a task
        page.locator("#tab-blame .blame-time").nth(k).click()
        page.wait_for_selector("#blame-waterfall .main-svg", timeout=15000)
        page.wait_for_timeout(300)
        seen = [t.text_content() or "" for t in page.query_selector_all("#blame-waterfall .ytick text")]
        if any(n in label for n in names for label in seen):
            break
    assert any(n in label for n in names for label in seen), seen
    shot(page, "plan-blame-operator")


def test_selecting_an_operator_highlights_its_stage(page, server, smj_sid):
    plan = httpx.get(f"{server.url}/api/sessions/{smj_sid}/plan", params={"execution": 1}, timeout=30).json()
    (execution,) = plan["executions"]
    smj = next(n for n in execution["nodes"] if n["name"] == "SortMergeJoin")
    assert smj["stages"]
    page.goto(f"{server.url}/#/s/{smj_sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="plan"]')
    page.wait_for_selector("#tab-plan g.plan-node", timeout=15000)
    page.select_option("#tab-plan .plan-pick", "1")
    page.locator(f'#tab-plan g.plan-node[data-node="{smj["id"]}"]').click()
    page.wait_for_selector("#tab-plan .plan-details h4:has-text('SortMergeJoin')")
    assert page.inner_text("#tab-plan .plan-stages") == ", ".join(map(str, smj["stages"]))
    assert page.query_selector_all("#tab-plan .plan-details svg.plan-spark polyline")  # rows growing over time
    # the job graph opened the execution's region and selected the box of the operator's stage
    page.wait_for_function("(scope) => JSON.stringify(window.__flowscope.scope) === JSON.stringify(scope)",
                           arg=execution["scope"], timeout=15000)
    page.wait_for_selector("#graph .node.sel", timeout=15000)
    selected = page.evaluate("""() => {
        const box = document.querySelector('#graph .node.sel').dataset.box;
        const n = window.__flowscope.layout.nodes.find((x) => x.box === box);
        return n.attrs.stage_ids; }""")
    assert set(selected) & set(smj["stages"])
    assert page.query_selector_all("#graph .node.match")
    shot(page, "plan-operator-stage")
    # and its tasks in the Executors tab: the bars of its stages stay, the others fade
    page.click('#tabs button[data-tab="executors"]')
    page.wait_for_selector("#executor-chart .main-svg", timeout=15000)
    page.wait_for_function("(s) => document.querySelector('#executor-chart').dataset.emphasized === s",
                           arg=",".join(map(str, smj["stages"])), timeout=15000)
    opacity = page.evaluate("""() => Object.fromEntries(document.querySelector('#executor-chart').data
        .filter((t) => /^stage \\d+$/.test(t.name)).map((t) => [t.name, t.opacity]))""")
    assert opacity and all(o == (1 if int(name.split()[1]) in smj["stages"] else 0.15) for name, o in opacity.items())
    assert any(o == 1 for o in opacity.values())


def test_search_and_collapse(page, server, smj_sid):
    page.goto(f"{server.url}/#/s/{smj_sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="plan"]')
    page.wait_for_selector("#tab-plan g.plan-node", timeout=15000)
    before = len(page.query_selector_all("#tab-plan g.plan-node"))
    page.fill("#tab-plan .plan-search", "exchange")
    matches = page.query_selector_all("#tab-plan g.plan-node.match")
    assert matches and all("Exchange" in (m.text_content() or "") for m in matches)
    assert page.inner_text("#tab-plan .plan-count") == f"{len(matches)} match" + ("es" if len(matches) != 1 else "")
    page.locator("#tab-plan text.plan-cluster-title").first.click()
    page.wait_for_selector("#tab-plan g.plan-cluster.folded")
    assert len(page.query_selector_all("#tab-plan g.plan-node")) < before
    page.click("#tab-plan .plan-fit")
    fitted = page.get_attribute("#tab-plan svg.plan-graph", "viewBox")
    page.hover("#tab-plan svg.plan-graph")
    page.mouse.wheel(0, -300)  # zoom in about the pointer: a smaller view box
    page.wait_for_function("(v) => document.querySelector('#tab-plan svg.plan-graph').getAttribute('viewBox') !== v",
                           arg=fitted)
    zoomed = [float(x) for x in page.get_attribute("#tab-plan svg.plan-graph", "viewBox").split()]
    assert zoomed[2] < float(fitted.split()[2])
    page.click("#tab-plan .plan-fit")
    assert page.get_attribute("#tab-plan svg.plan-graph", "viewBox") == fitted
    shot(page, "plan-search-collapse")


def test_a_plan_finding_in_the_findings_tab_opens_its_operator(page, server):
    sid = open_spark_fixture(server, "plan_small_files")
    plan = httpx.get(f"{server.url}/api/sessions/{sid}/plan", timeout=30).json()
    findings = [f for e in plan["executions"] for f in e["findings"]]
    assert [f["finding"] for f in findings] == ["small_files", "small_files"]
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="findings"]')
    rows = page.wait_for_selector("#tab-findings .plan-finding-row", timeout=15000)
    assert "small_files" in rows.inner_text()
    page.locator("#tab-findings .plan-finding-row").nth(1).click()
    read = findings[1]
    name = next(n["name"] for e in plan["executions"] for n in e["nodes"]
                if e["execution"] == read["execution"] and n["id"] == read["operator"])
    page.wait_for_selector(f"#tab-plan .plan-details h4:has-text('{name} #{read['operator']}')", timeout=15000)
    assert "small_files" in page.inner_text("#tab-plan .plan-details")
    assert page.query_selector(f'#tab-plan g.plan-node.sel[data-node="{read["operator"]}"]')
    shot(page, "plan-finding-opened")
