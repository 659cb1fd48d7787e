"""The findings that say what to do and a task's time split, in headless chromium on real fixtures: the Findings
tab lists gc_pressure's GC finding with its recommendation and threshold and opens its stage at its moment; the
Executors tab splits each task bar into Spark's event-timeline phases; the Blame tab's hover says where a task's
time went. Screenshots go to test-artifacts/."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.browser import shot
from tests.e2e.view_fixtures import open_spark_fixture


@pytest.fixture(scope="module")
def server(spark_server):
    return spark_server


@pytest.fixture(scope="module")
def gc_sid(server):
    return open_spark_fixture(server, "gc_pressure")


@pytest.fixture
def viewport():
    return {"width": 1440, "height": 1000}


def test_the_findings_tab_says_what_to_change_and_opens_the_stage(page, server, gc_sid):
    found = httpx.get(f"{server.url}/api/sessions/{gc_sid}/marks", params={"finding": "true"}).json()["marks"]
    (gc,) = [m for m in found if m["finding"] == "gc"]
    assert gc["threshold"]["name"] == "gc.ratio" and "spark.executor.memory" in gc["recommendation"]
    assert gc["metric"]["ratio"] >= 0.1
    page.goto(f"{server.url}/#/s/{gc_sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="findings"]')
    row = page.wait_for_selector("#tab-findings .spark-finding.gc")
    text = row.inner_text()
    assert gc["label"] in text and gc["recommendation"] in text and "gc.ratio >= 0.1 (Dr. Elephant" in text
    shot(page, "findings-gc")
    row.click()
    # its moment: the batch the finding was raised at, in the stage's scope, the stage's output selected
    scope = ",".join(map(str, gc["scope"]))
    page.wait_for_function("([b, s]) => +document.querySelector('#batch-input').value === b"
                           " && String(window.__flowscope.scope) === s", arg=[gc["after"], scope])
    page.wait_for_function("(p) => location.hash.includes(p)", arg=f"port=out,{gc['node']},0")


def test_the_executors_tab_splits_each_task_into_its_phases(page, server, gc_sid):
    tasks = httpx.get(f"{server.url}/api/sessions/{gc_sid}/tasks").json()
    assert set(tasks["phases"]) >= {"scheduler_delay", "deserialize", "compute", "gc", "shuffle_write"}
    page.goto(f"{server.url}/#/s/{gc_sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="executors"]')
    page.wait_for_selector("#executor-chart .main-svg", timeout=15000)
    page.click('#tab-executors button[data-colour="phases"]')
    page.wait_for_function("() => document.querySelector('#executor-chart').dataset.colour === 'phases'"
                           " && document.querySelector('#executor-chart').data.some((t) => t.name === 'GC')")
    traces = page.evaluate("""() => document.querySelector('#executor-chart').data
        .filter((t) => t.meta && t.meta.phase)
        .map((t) => ({phase: t.meta.phase, n: t.x.filter((v) => v !== null).length / 2,
                      text: t.text.filter((v) => v !== null)}))""")
    by_phase = {t["phase"]: t for t in traces}
    ok = sum(1 for o in tasks["outcome"] if o == "ok")
    assert by_phase["compute"]["n"] == ok and by_phase["gc"]["n"] > 0  # every task has its computing part
    assert any("GC " in x and "executor computing" in x for x in by_phase["gc"]["text"])
    shot(page, "executor-phases")


def test_the_blame_hover_says_where_a_tasks_time_went(page, server, gc_sid):
    times = httpx.get(f"{server.url}/api/sessions/{gc_sid}/blame", params={"top": 1}).json()["times"]
    seg = next(s for s in times[0]["blame"] if s["kind"] == "task")
    assert seg["holder"]["breakdown"]["gc_ms"] > 0
    page.goto(f"{server.url}/#/s/{gc_sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="blame"]')
    page.wait_for_selector("#blame-waterfall .main-svg", timeout=15000)
    hovers = page.evaluate("() => document.querySelector('#blame-waterfall').data[0].hovertext")
    assert any("time: run " in h and "GC " in h for h in hovers), hovers


def test_why_is_this_stuck_says_what_the_finished_tasks_spent(page, server):
    """skewed_straggler's straggler finding opens its stage just before the straggler's end: the panel names the
    running straggler and says what its three finished siblings spent their time on."""
    sid = open_spark_fixture(server, "skewed_straggler")
    found = httpx.get(f"{server.url}/api/sessions/{sid}/marks", params={"finding": "true"}).json()["marks"]
    (slow,) = [m for m in found if m["finding"] == "straggler"]
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="findings"]')
    page.click("#tab-findings .spark-finding.straggler")
    page.wait_for_selector(f'#why .late-holder tr[data-task="{slow["task"]}"]', timeout=15000)
    done = page.wait_for_selector("#why .late-holder .finished")
    assert done.inner_text().startswith("its 3 finished tasks spent: run ")
    shot(page, "why-finished-tasks")


def test_a_python_udfs_time_shows_in_the_executors_phases_and_the_blame_hover(page, server):
    """python_udf: each task of the UDF's stage has a Python workers phase (its time within the run, as the tasks
    API says), the Blame tab's hover says it, and the Findings tab lists python-udf naming its operator."""
    sid = open_spark_fixture(server, "python_udf")
    tasks = httpx.get(f"{server.url}/api/sessions/{sid}/tasks").json()
    python = [v for v in tasks["phases"]["python"] if v]
    assert len(python) == 6  # the warm-up's 2 tasks and the UDF stage's 4
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="executors"]')
    page.wait_for_selector("#executor-chart .main-svg", timeout=15000)
    page.click('#tab-executors button[data-colour="phases"]')
    page.wait_for_function("() => document.querySelector('#executor-chart').dataset.colour === 'phases' && "
                           "document.querySelector('#executor-chart').data.some((t) => t.name === 'Python workers')")
    (trace,) = page.evaluate("""() => document.querySelector('#executor-chart').data
        .filter((t) => t.meta && t.meta.phase === 'python')
        .map((t) => ({n: t.x.filter((v) => v !== null).length / 2, text: t.text.filter((v) => v !== null)}))""")
    assert trace["n"] == len(python) and all("Python workers " in x for x in trace["text"])
    shot(page, "executor-phases-python")
    page.click('#tabs button[data-tab="blame"]')
    page.wait_for_selector("#blame-waterfall .main-svg", timeout=15000)
    hovers = page.evaluate("() => document.querySelector('#blame-waterfall').data[0].hovertext")
    assert any("Python workers " in h for h in hovers), hovers
    page.click('#tabs button[data-tab="findings"]')
    found = httpx.get(f"{server.url}/api/sessions/{sid}/marks", params={"finding": "true"}).json()["marks"]
    (udf,) = [m for m in found if m["finding"] == "python-udf"]
    assert udf["metric"]["operator"] == "BatchEvalPython" and "in BatchEvalPython" in udf["label"]
    row = page.wait_for_selector("#tab-findings .spark-finding.python-udf")
    assert "Python UDF time in stage 1" in row.inner_text() and "python_udf.ratio >= 0.5" in row.inner_text()
