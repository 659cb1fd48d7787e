"""The Spark pictures in headless chromium on real fixtures, in both graph views (SVG and `?renderer=canvas`):
stage labels that tell look-alike stages apart with the full call site on hover (batch_shuffle's SQL execution:
four stages all named "collect at make_fixtures.py:79"), skew and straggler badges on the stage that has them
and the finding behind a click (skewed_straggler), the executor timeline's critical path and colouring, and the
streaming charts. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import httpx
import pytest

from backend.views.projections import finding_opens_at
from tests.e2e.browser import shot
from tests.e2e.view_fixtures import open_spark_fixture

RENDERERS = ["svg", "canvas"]


@pytest.fixture(scope="module")
def server(spark_server):
    return spark_server


@pytest.fixture(scope="module")
def sids(server):
    """Session ids by fixture name, opened once per module."""
    out: dict[str, str] = {}

    def open_(name: str) -> str:
        if name not in out:
            out[name] = open_spark_fixture(server, name)
        return out[name]
    return open_


@pytest.fixture
def viewport():
    return {"width": 1440, "height": 1000}


def _goto(page, server, sid: str, scope: str, renderer: str) -> None:
    page.goto(f"{server.url}/?renderer={renderer}#/s/{sid}?scope={scope}")
    if renderer == "svg":
        page.wait_for_selector("#graph .node.operator")
    else:
        page.wait_for_function("() => window.__flowscopeUI.graph.boxes && window.__flowscopeUI.graph.boxes.size > 0")


def _texts(page) -> dict[str, dict]:
    """box -> {label, sub} as the view on screen draws them."""
    return page.evaluate("""() => {
        const g = window.__flowscopeUI.graph, out = {};
        for (const [box, b] of g.boxes) {
            if (b.text) out[box] = b.text;
            else if (b.el) {
                const t = b.el.querySelectorAll("text");
                out[box] = {label: t[0].textContent, sub: t[1] ? t[1].textContent : ""};
            }
        }
        return out;
    }""")


def _box_center(page, box: str) -> dict:
    return page.evaluate("""(box) => {
        const g = window.__flowscopeUI.graph;
        if (g.screenOf) return g.screenOf(box);
        const r = g.boxes.get(box).el.querySelector("rect.box").getBoundingClientRect();
        return {x: r.left + r.width / 2, y: r.top + r.height / 2};
    }""", box)


@pytest.mark.parametrize("renderer", RENDERERS)
def test_look_alike_stages_are_told_apart_and_hover_shows_the_call_site(page, server, sids, renderer):
    sid = sids("batch_shuffle")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        nodes = c.get(f"/api/sessions/{sid}/graph", params={"scope": "4"}).json()["nodes"]
    stages = {str(n["id"]): n for n in nodes if n["kind"] == "operator" and "stage_ids" in (n.get("attrs") or {})}
    assert len(stages) == 4 and {n["name"] for n in stages.values()} == {"collect at make_fixtures.py:79"}
    _goto(page, server, sid, "4", renderer)
    texts = {box: t for box, t in _texts(page).items() if box in stages}
    assert len(texts) == 4
    assert all(t["label"] == "collect · line 79" for t in texts.values()), texts
    subs = [t["sub"] for t in texts.values()]
    assert len(set(subs)) == 4, subs  # the second lines differ
    assert any("Exchange" in s for s in subs) and any("AQEShuffleRead" in s for s in subs), subs
    # stages 11 and 13 hold the same operators: their stage ids tell them apart
    assert any("stage 11" in s for s in subs) and any("stage 13" in s for s in subs), subs
    box = next(b for b, n in stages.items() if n["attrs"]["stage_ids"] == [16])
    at = _box_center(page, box)
    page.mouse.move(at["x"], at["y"] + 8)
    page.wait_for_selector("#tooltip:not([hidden])")
    tip = page.inner_text("#tooltip")
    assert "call site collect at make_fixtures.py:79" in tip and "stage 16" in tip, tip
    assert "AQEShuffleRead, WholeStageCodegen (3)" in tip, tip
    shot(page, f"stage-labels-{renderer}")


@pytest.mark.parametrize("renderer", RENDERERS)
def test_straggler_badge_on_its_stage_opens_the_finding(page, server, sids, renderer):
    sid = sids("skewed_straggler")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        marks = c.get(f"/api/sessions/{sid}/marks").json()["marks"]
    found = [m for m in marks if m.get("finding")]
    assert {m["finding"] for m in found} == {"straggler", "skew", "data-skew"}
    slow = next(m for m in found if m["finding"] == "straggler")
    scope, box = ",".join(map(str, slow["scope"])), str(slow["node"])
    _goto(page, server, sid, scope, renderer)
    if renderer == "svg":
        badge = page.wait_for_selector(f'#graph g.finding-badge[data-finding-box="{box}"]')
        text = badge.text_content()
        assert len(page.query_selector_all("#graph g.finding-badge")) == 1
        badge.click()
    else:
        page.wait_for_function("(box) => window.__flowscopeUI.graph.findingOf(box)", arg=box)
        text = page.evaluate("(box) => window.__flowscopeUI.graph.findingOf(box)", box)
        others = page.evaluate("""(box) => [...window.__flowscopeUI.graph.boxes.keys()]
            .filter((b) => b !== box && window.__flowscopeUI.graph.findingOf(b))""", box)
        assert others == []
        at = page.evaluate("(box) => window.__flowscopeUI.graph.screenOfFinding(box)", box)
        page.mouse.click(at["x"], at["y"])
    ratio = slow["duration_s"] / slow["median_task_s"]
    assert "straggler" in text and f"{ratio:.0f}×" in text and "skew" in text, text
    panel = page.wait_for_selector("#why #findings-answer .finding.straggler")
    body = panel.inner_text()
    assert slow["label"] in body and str(slow["task"]) in body
    assert "read" in body and f"{slow['records']} records" in body, body
    skew = page.query_selector("#why .finding.skew")
    assert skew is not None and "bytes skew" in skew.inner_text() and "input per task" in skew.inner_text()
    data = page.query_selector("#why .finding.data-skew")  # what to change, and the threshold that fired
    assert data is not None and "spark.sql.adaptive.skewJoin.enabled" in data.inner_text()
    assert "data_skew.read_factor = 3" in data.inner_text()
    shot(page, f"finding-badge-{renderer}")
    goto = panel.query_selector("button.finding-goto")
    assert f"show task {slow['task']} running" in goto.inner_text()
    goto.click()
    batch = straggler_running_batch(server, sid, slow)
    page.wait_for_function("(b) => +document.querySelector('#batch-input').value === b", arg=batch)
    page.wait_for_selector(f'#why .late-holder tr[data-task="{slow["task"]}"]', timeout=15000)


def test_streaming_charts_show_late_batches_and_how_the_interval_was_obtained(page, server, sids):
    sid = sids("streaming_stall")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        (q,) = c.get(f"/api/sessions/{sid}/streaming").json()["queries"]
    late = [b["batch"] for b in q["batches"] if b["late"]]
    assert 4 in late
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="streaming"]')
    page.wait_for_selector("#tab-streaming .stream-durations .main-svg", timeout=15000)
    note = page.inner_text("#tab-streaming .trigger-note")
    assert note.startswith("trigger interval 1 s: inferred"), note
    assert page.inner_text("#tab-streaming .late-count") == f"{len(late)} late"
    page.wait_for_function("() => document.querySelector('#tab-streaming .stream-durations').dataset.late")
    # the bars: one per batch, the late ones in the late colour
    fills = page.eval_on_selector_all("#tab-streaming .stream-durations .barlayer .trace:first-child .point path",
                                      "ps => ps.map((p) => getComputedStyle(p).fill)")
    assert len(fills) == len(q["batches"]), fills
    assert sum(f == "rgb(192, 57, 43)" for f in fills) == len(late), fills
    texts = "ts => ts.map((t) => t.textContent)"
    legend = page.eval_on_selector_all("#tab-streaming .stream-durations .legendtext", texts)
    assert "trigger interval 1 s (inferred)" in legend, legend
    annotation = page.eval_on_selector_all("#tab-streaming .stream-watermark .annotation-text", texts)
    assert any("no event-time watermark" in a for a in annotation), annotation
    shot(page, "streaming-stall")


def test_streaming_watermark_chart_and_the_users_trigger_setting(page, server, sids):
    sid = sids("streaming_stateful")
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="streaming"]')
    page.wait_for_selector("#tab-streaming .stream-watermark .main-svg", timeout=15000)
    assert "unknown" in page.inner_text("#tab-streaming .trigger-note")
    wm = page.get_attribute("#tab-streaming .stream-watermark", "data-watermarks")
    assert int(wm) >= 5
    points = page.query_selector_all("#tab-streaming .stream-watermark .scatterlayer .trace:first-child .points path")
    assert len(points) == int(wm)
    page.fill("#tab-streaming .stream-query .trigger-s", "1")
    page.click("#tab-streaming .stream-query .trigger-apply")
    page.wait_for_selector("#tab-streaming .trigger-note[data-source=setting]")
    assert "set by the user: 1 s" in page.inner_text("#tab-streaming .trigger-note")
    assert page.inner_text("#tab-streaming .late-count").endswith("late")
    shot(page, "streaming-watermark")


def _cursor_x(page, chart: str) -> float | None:
    return page.evaluate("""(sel) => { const el = document.querySelector(sel);
        const c = ((el && el.layout && el.layout.shapes) || []).find((s) => s.name === 'cursor');
        return c ? c.x0 : null; }""", f"#tab-streaming .{chart}")


def test_streaming_charts_follow_the_timeline_cursor(page, server, sids):
    """The Streaming tab's charts draw the timeline's moment: on the watermark chart at that time, on the
    durations chart across the slot of the batch running then; scrubbing moves both lines without a redraw."""
    sid = sids("streaming_stall")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        (q,) = c.get(f"/api/sessions/{sid}/streaming").json()["queries"]
        head = c.get(f"/api/sessions/{sid}/state", params={"scope": ""}).json()["head"]
    starts = [b["start"] for b in q["batches"]]
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="streaming"]')
    page.wait_for_selector("#tab-streaming .stream-watermark .main-svg", timeout=15000)
    draws = [page.get_attribute(f"#tab-streaming .{c}", "data-draws") for c in ("stream-durations", "stream-watermark")]
    seen = set()
    for batch in (head // 3, (2 * head) // 3, head):
        page.fill("#batch-input", str(batch))
        page.press("#batch-input", "Enter")
        page.wait_for_function("""(b) => { if (window.__flowscope.batch !== b) return false;
            const el = document.querySelector('#tab-streaming .stream-watermark');
            const c = ((el.layout && el.layout.shapes) || []).find((s) => s.name === 'cursor');
            return c && Math.abs(c.x0 - window.__flowscope.lastAt * 1000) < 1; }""", arg=batch)
        at = page.evaluate("() => window.__flowscope.lastAt")
        x = _cursor_x(page, "stream-durations")
        # the batch whose slot holds the moment: the last one started at or before it
        k = max((i for i, s in enumerate(starts) if s <= at), default=None)
        if k is None:
            assert x == -0.5
        else:
            assert x is not None and k - 0.5 <= x <= k + 0.5, (batch, at, x, k)
        seen.add(round(x, 3) if x is not None else None)
    assert len(seen) == 3  # it moved as the timeline did
    assert [page.get_attribute(f"#tab-streaming .{c}", "data-draws")
            for c in ("stream-durations", "stream-watermark")] == draws  # the lines moved, the charts stayed
    shot(page, "streaming-cursor")


def test_each_streaming_query_has_its_own_trigger_setting(page, server, sids):
    """The interval a user sets is the query's own: the request names the query (`triggers`), the note of that
    query says so, and clearing the input returns it to what the starts say."""
    sid = sids("streaming_stall")
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="streaming"]')
    page.wait_for_selector("#tab-streaming .stream-durations .main-svg", timeout=15000)
    query = page.get_attribute("#tab-streaming .stream-query", "data-query")
    with page.expect_request(lambda r: "/streaming?" in r.url and "triggers=" in r.url) as asked:
        page.fill("#tab-streaming .stream-query .trigger-s", "5")
        page.click("#tab-streaming .stream-query .trigger-apply")
    assert json.loads(parse_qs(urlparse(asked.value.url).query)["triggers"][0]) == {query: 5}
    page.wait_for_selector("#tab-streaming .trigger-note[data-source=setting]")
    assert "set by the user: 5 s" in page.inner_text("#tab-streaming .trigger-note")
    assert page.inner_text("#tab-streaming .late-count") == "0 late"  # no batch ran 5 s
    page.fill("#tab-streaming .stream-query .trigger-s", "")
    page.click("#tab-streaming .stream-query .trigger-apply")
    page.wait_for_selector("#tab-streaming .trigger-note[data-source=inferred]")


def _chart_traces(page) -> list[dict]:
    return page.evaluate("""() => document.querySelector('#executor-chart').data.map((t) => ({
        name: t.name, n: t.x.filter((v) => v !== null).length / (t.mode === 'markers' ? 1 : 2),
        ys: [...new Set(t.y.filter((v) => v !== null))], color: t.line ? t.line.color : null,
        text: t.text.filter((v) => v !== null), tasks: t.meta ? t.meta.tasks : null}))""")


def test_executor_timeline_overlays_the_picked_times_critical_path(page, server, sids):
    sid = sids("streaming_stall")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        (slowest,) = c.get(f"/api/sessions/{sid}/blame", params={"top": 1, "scope": "2"}).json()["times"]
        tasks = c.get(f"/api/sessions/{sid}/tasks").json()
    on_path = [s for s in slowest["blame"] if s["kind"] == "task"]
    assert slowest["batch_id"] == 4 and on_path  # the stalled batch, its slow task on the path
    page.goto(f"{server.url}/#/s/{sid}?scope=2")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="executors"]')
    page.wait_for_selector("#executor-chart .main-svg", timeout=15000)
    page.wait_for_function("() => document.querySelector('#executor-chart').dataset.criticalTasks !== undefined")
    note = page.inner_text("#critical-note")
    assert "batch 4" in note and "the slowest here" in note, note
    traces = _chart_traces(page)
    outline = next(t for t in traces if t["name"] == "on the critical path")
    assert outline["n"] == len(on_path) == int(page.get_attribute("#executor-chart", "data-critical-tasks"))
    assert any(f"task {on_path[0]['holder']['task']}" in x for x in outline["text"])
    lane = [t for t in traces if t["name"].startswith("critical: ")]
    assert {t["name"] for t in lane} == {f"critical: {s['kind']}" for s in slowest["blame"]}
    assert all(t["ys"] == [-2] for t in lane) and sum(t["n"] for t in lane) == len(slowest["blame"])
    ticks = page.eval_on_selector_all("#executor-chart .ytick text", "ts => ts.map((t) => t.textContent)")
    assert ticks[0] == "critical path" and "executor driver" in ticks, ticks
    # the outline is drawn under the stage bars (first), the stage bars' total is every task
    assert traces[0]["name"] == "on the critical path"
    assert sum(t["n"] for t in traces if t["name"].startswith("stage ")) == tasks["total"]  # one bar a task
    assert sum(t["tasks"] for t in traces if t["name"].startswith("stage ")) == tasks["total"]
    shot(page, "executor-critical-path")
    # the timeline cursor follows a seek without the bars being drawn again
    draws = page.get_attribute("#executor-chart", "data-draws")
    page.fill("#batch-input", "20")
    page.press("#batch-input", "Enter")
    page.wait_for_function("""() => { const el = document.querySelector('#executor-chart');
        const c = (el.layout.shapes || []).find((s) => s.name === 'cursor');
        return c && window.__flowscope.batch === 20 && Math.abs(c.x0 - window.__flowscope.lastAt * 1000) < 1; }""")
    assert page.get_attribute("#executor-chart", "data-draws") == draws
    # colour by duration: the same bars, binned by duration, the longest bin holding the 4 s task
    page.click('#tab-executors button[data-colour="duration"]')
    page.wait_for_function("() => document.querySelector('#executor-chart').dataset.colour === 'duration'")
    traces = _chart_traces(page)
    bins = [t for t in traces if t["name"].endswith(" s") and not t["name"].startswith(("critical", "on the"))]
    assert len(bins) >= 2 and sum(t["n"] for t in bins) == tasks["total"]
    longest = max(bins, key=lambda t: float(t["name"].split("–")[1].rstrip(" s")))
    assert any("task 9 " in x for x in longest["text"]), longest["text"]
    shot(page, "executor-by-duration")


def test_executor_timeline_picks_the_blame_tabs_time_and_marks_failed_attempts(page, server, sids):
    sid = sids("task_retries")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        tasks = c.get(f"/api/sessions/{sid}/tasks").json()
        times = c.get(f"/api/sessions/{sid}/blame").json()["times"]
    failed = tasks["outcome"].count("failed")
    assert failed >= 4  # the first attempts of one job, every attempt of the other
    page.goto(f"{server.url}/#/s/{sid}?scope={','.join(map(str, times[0]['scope']))}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="blame"]')
    rows = page.wait_for_selector("#tab-blame .blame-time.active", timeout=15000)
    assert rows is not None
    last = page.query_selector_all("#tab-blame .blame-time")[-1]
    picked_name = last.inner_text()
    last.click()
    page.wait_for_selector("#tab-blame .blame-time.active:last-child")
    page.click('#tabs button[data-tab="executors"]')
    page.wait_for_selector("#executor-chart .main-svg", timeout=15000)
    page.wait_for_function("() => !document.querySelector('#critical-note').textContent.includes('slowest')")
    note = page.inner_text("#critical-note")
    assert note.split("critical path of ")[1].split(" (")[0].split(" · ")[0] in picked_name, (note, picked_name)
    marks = next(t for t in _chart_traces(page) if t["name"] == "failed")
    assert marks["n"] == failed and all(" · failed: ExceptionFailure" in x for x in marks["text"]), marks["text"]
    assert set(tasks["reasons"].values()) == {"ExceptionFailure"} and len(tasks["reasons"]) == failed


def test_long_call_sites_keep_their_file_and_line(page, server, sids):
    """Stage names as an unredacted log has them (a long path, cut at 80 characters by the Spark model): the label
    keeps the action, the file and the line; stages from two files name their files; the hover has the whole."""
    sid = sids("batch_shuffle")
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    long_dir = "/home/someone/projects/analytics-pipelines/jobs/nightly/aggregation/"
    texts = page.evaluate("""async (dir) => {
        const { boxTexts, boxDetails } = await import("/static/js/graph/labels.js");
        const stage = (id, name, scopes) => ({ id, box: String(id), kind: "operator", name: name.slice(0, 80),
            attrs: { stage_ids: [id], stage_name: name, scopes, tasks: 4 } });
        const nodes = [
            stage(3, `collect at ${dir}sessionize_events.py:212`, ["Exchange", "WholeStageCodegen (1)"]),
            stage(4, `collect at ${dir}sessionize_events.py:212`, ["AQEShuffleRead", "WholeStageCodegen (2)"]),
            stage(5, `count at ${dir}load_users.py:40`, ["mapPartitions"]),
            stage(7, `mapPartitionsWithIndex at ${dir}load_users.py:1234`, ["mapPartitions"]),
            { id: 6, box: "6", kind: "operator", name: "stage: StateStoreSave", attrs: { stage_ids: [9],
              stage_name: "start at NativeMethodAccessorImpl.java:0", scopes: ["StateStoreSave"] } },
        ];
        const t = boxTexts({ nodes });
        return { t: Object.fromEntries(t), hover: boxDetails(nodes[0]) };
    }""", long_dir)
    t = texts["t"]
    assert t["3"]["label"] == "collect · sessio…:212", t  # the file's start and the line, never the path's start
    assert t["5"]["label"] == "count · load_users:40", t
    assert t["7"]["label"] == "mapPart… load_u…:1234", t  # a long action gives way, the line stays
    assert t["3"]["sub"] == "#3 · Exchange" and t["4"]["sub"] == "#4 · AQEShuffleRead", t
    assert t["6"]["label"].startswith("stage: StateStore"), t  # a streaming stage keeps the model's name
    assert all(len(x["label"]) <= 21 and len(x["sub"]) <= 24 for x in t.values())
    assert ["call site", f"collect at {long_dir}sessionize_events.py:212"] in texts["hover"]


def test_executor_bars_merge_far_out_and_split_when_zoomed(page, server, sids):
    """Level of detail of the executor timeline on 20,000 made-up back-to-back tasks (two executors, two slots
    each): the whole range draws far fewer bars than tasks, every task counted once; a zoomed range of under
    5,000 tasks draws each of its tasks as its own bar."""
    sid = sids("streaming_stall")
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    out = page.evaluate("""async () => {
        const { ExecutorView } = await import("/static/js/drawer/executors.js");
        const n = 20000, d = { executors: ["1", "2"], launched: [], ended: [], executor: [], stage: [], index: [],
            task: [], outcome: [] };
        for (let i = 0; i < n; i++) {
            const slot = i % 4, k = Math.floor(i / 4);
            d.launched.push(1000 + k * 0.01); d.ended.push(1000 + k * 0.01 + 0.009);
            d.executor.push(slot % 2); d.stage.push(Math.floor(k / 1000)); d.index.push(k); d.task.push(i);
            d.outcome.push("ok");
        }
        const v = new ExecutorView(document.createElement("div"), {}, null);
        v.timing = {};
        const m = v._prepare(d);
        const count = (bars) => ({ bars: bars.reduce((a, t) => a + t.x.length / 3, 0),
                                   tasks: bars.reduce((a, t) => a + t.meta.tasks, 0), names: bars.map((t) => t.name) });
        return { all: count(v._bars(m)), zoomed: count(v._bars(m, 1010, 1012)), lanes: m.height };
    }""")
    assert out["all"]["tasks"] == 20000 and out["all"]["bars"] < 200, out["all"]
    assert out["all"]["names"] == [f"stage {s}" for s in range(5)]
    # 1010..1012 s: launch steps 1000..1200 on each of the 4 slots, each its own bar
    assert out["zoomed"]["tasks"] == out["zoomed"]["bars"] and 790 <= out["zoomed"]["bars"] <= 810, out["zoomed"]


def test_zooming_the_executor_timeline_redraws_the_range_task_by_task(page, server, sids):
    """The drawn chart of 20,000 made-up tasks: zooming (plotly's own relayout) redraws the visible range with a
    bar per task; zooming back out merges them again."""
    sid = sids("streaming_stall")
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    out = page.evaluate("""async () => {
        const { ExecutorView } = await import("/static/js/drawer/executors.js");
        const { loadPlotly } = await import("/static/js/drawer/plotly.js");
        const n = 20000, d = { executors: ["1", "2"], launched: [], ended: [], executor: [], stage: [], index: [],
            task: [], outcome: [], total: n };
        for (let i = 0; i < n; i++) {
            const k = Math.floor(i / 4);
            d.launched.push(1000 + k * 0.01); d.ended.push(1000 + k * 0.01 + 0.009);
            d.executor.push(i % 2); d.stage.push(Math.floor(k / 1000)); d.index.push(k); d.task.push(i);
            d.outcome.push(i === 7 ? "failed" : "ok");
        }
        const box = document.querySelector("#tab-executors");
        box.hidden = false;
        box.innerHTML = '<span id="executor-note"></span><span id="critical-note"></span>'
            + '<div id="executor-chart"></div>';
        const v = new ExecutorView(box, {}, loadPlotly);
        v.timing = {};
        await v._draw(d, null, null);
        const el = box.querySelector("#executor-chart");
        const far = +el.dataset.bars;
        const relaid = new Promise((r) => el.on("plotly_afterplot", r));
        await window.Plotly.relayout(el, { "xaxis.range": [1010000, 1012000] });
        await relaid;
        await new Promise((r) => setTimeout(r, 200));
        const near = +el.dataset.bars;
        const failed = el.data.find((t) => t.name === "failed").x.length;
        await window.Plotly.relayout(el, { "xaxis.autorange": true });
        await new Promise((r) => setTimeout(r, 200));
        return { far, near, out: +el.dataset.bars, range: v.range, failed };
    }""")
    assert out["far"] < 200 and 790 <= out["near"] <= 810 and out["out"] == out["far"], out
    assert out["range"] is None and out["failed"] == 1


def test_root_shows_which_job_holds_the_findings(page, server, sids):
    sid = sids("skewed_straggler")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        found = [m for m in c.get(f"/api/sessions/{sid}/marks").json()["marks"] if m.get("finding")]
    (scope,) = {tuple(m["scope"]) for m in found}
    page.goto(f"{server.url}/#/s/{sid}")
    page.click("#overview-close")  # a Spark application opens on its Overview; the graph is one click away
    badge = page.wait_for_selector(f'#graph g.finding-badge[data-finding-box="{scope[0]}"]')
    assert len(page.query_selector_all("#graph g.finding-badge")) == 1  # the warm-up job has none
    assert "straggler" in badge.text_content() and "skew" in badge.text_content()
    badge.click()
    page.wait_for_selector("#why #findings-answer")
    assert "Findings in this scope" in page.inner_text("#why h3")
    assert len(page.query_selector_all("#why .finding")) == len(found)
    page.click("#why .finding.straggler button.finding-goto")
    slow = next(m for m in found if m["finding"] == "straggler")
    batch = straggler_running_batch(server, sid, slow)
    page.wait_for_function("([b, s]) => +document.querySelector('#batch-input').value === b"
                           " && String(window.__flowscope.scope) === s", arg=[batch, str(scope[0])])
    page.wait_for_selector(f'#graph g.finding-badge[data-finding-box="{slow["node"]}"]')  # the stage's own badge
    # just before its end the straggler alone held the stage's time: explain names it, running
    page.wait_for_selector(f'#why .late-holder tr[data-task="{slow["task"]}"]', timeout=15000)


def straggler_running_batch(server, sid: str, slow: dict) -> int:
    """The batch the page shows a straggler at: the last one before its end, its siblings done, it still running
    (the server's state at that wall time, as the page asks it)."""
    with httpx.Client(base_url=server.url, timeout=20) as c:
        st = c.get(f"/api/sessions/{sid}/state", params={"scope": ",".join(map(str, slow["scope"])),
                                                         "at": finding_opens_at(slow)}).json()
        assert st["batch"] < slow["after"]  # before the stage completed, where the finding was made
        held = {tuple(r[:3]): r for r in st["ports"]}
        assert held[("out", slow["node"], 0)][3], "the stage's output still holds its time"
    return st["batch"]


def test_a_resubmitted_stages_tasks_show_their_partition_everywhere(page, server, sids):
    """executor_lost: the re-run of the reduce stage holds only the lost partitions, so a task's index in its task
    set is not its partition. The waterfall, the explain panel's late tasks and the executor bars name the
    partition (the bar keeps the index, labelled as one)."""
    sid = sids("executor_lost")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        times = c.get(f"/api/sessions/{sid}/blame").json()["times"]
        tasks = c.get(f"/api/sessions/{sid}/tasks").json()
    (t, k, seg) = next((t, k, s) for t in times for k, s in enumerate(t["blame"]) if s["kind"] == "recompute"
                       and s["holder"].get("task") is not None and s["holder"]["partition"] != s["holder"]["index"])
    h = seg["holder"]
    row = tasks["task"].index(h["task"])
    assert (tasks["partition"][row], tasks["index"][row]) == (h["partition"], h["index"])
    page.goto(f"{server.url}/#/s/{sid}?scope={','.join(map(str, t['scope']))}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="blame"]')
    page.wait_for_selector("#blame-waterfall .main-svg", timeout=15000)
    labels = page.eval_on_selector_all("#blame-waterfall .ytick text", "ts => ts.map((t) => t.textContent)")
    said = f"task {h['task']} · stage {h['stage']} · partition {h['partition']} "
    assert any(said in x for x in labels), labels
    bar = page.query_selector_all("#blame-waterfall .bars .point")[k].query_selector("path").bounding_box()
    page.mouse.click(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
    cells = page.wait_for_selector(f'#why .late-holder tr[data-task="{h["task"]}"]', timeout=15000)
    assert cells.query_selector_all("td")[1].inner_text() == str(h["partition"])
    shot(page, "resubmitted-partition-late")
    page.click('#tabs button[data-tab="executors"]')
    page.wait_for_selector("#executor-chart .main-svg", timeout=15000)
    texts = [x for tr in _chart_traces(page) if tr["name"].startswith("stage ") for x in tr["text"]]
    assert any(x.startswith(f"{said}(index {h['index']} in the re-run)") for x in texts), texts
    first = next(x for x in texts if x.startswith(f"task {tasks['task'][0]} "))
    assert "in the re-run" not in first  # a first attempt's index is its partition: said once


def test_findings_tab_lists_stragglers_and_skew_and_goes_to_them(page, server, sids):
    """The Findings tab lists the Spark model's findings (not only the progress contract's): a straggler row opens
    its job's scope just before the straggler's end, its stage's output selected and explained, naming it."""
    sid = sids("skewed_straggler")
    with httpx.Client(base_url=server.url, timeout=20) as c:
        found = c.get(f"/api/sessions/{sid}/marks", params={"finding": "true"}).json()
        every = c.get(f"/api/sessions/{sid}/marks").json()["marks"]
    # the straggler, the skewed stage, and the straggler read as data skew (backend/spark/diagnosis/findings.py)
    assert found["total"] == len(found["marks"]) == sum(1 for m in every if m.get("finding")) == 3
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="findings"]')
    rows = page.wait_for_selector("#tab-findings .spark-finding.straggler")
    assert len(page.query_selector_all("#tab-findings .spark-finding")) == 3
    assert "No contract findings" in page.inner_text("#tab-findings")
    slow = next(m for m in found["marks"] if m["finding"] == "straggler")
    assert slow["label"] in rows.inner_text()
    rows.click()
    batch = straggler_running_batch(server, sid, slow)
    page.wait_for_function("([b, s]) => +document.querySelector('#batch-input').value === b"
                           " && String(window.__flowscope.scope) === s", arg=[batch, ",".join(map(str, slow["scope"]))])
    page.wait_for_selector(f'#why .late-holder tr[data-task="{slow["task"]}"]', timeout=15000)
    page.wait_for_function("(p) => location.hash.includes(p)", arg=f"port=out,{slow['node']},0")
