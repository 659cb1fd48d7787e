"""The browser view in headless chromium: graph, colours while stepping and seeking, nested scopes, "why",
live following, charts. Screenshots go to test-artifacts/."""

from __future__ import annotations

import orjson

from backend.feeds.progress_feeds import PushFeed
from tests.e2e.browser import shot
from tests.e2e.logs import pipeline_records


def lex_min(frontiers):
    times = [t for f in frontiers for t in f]
    return min(times, key=orjson.dumps) if times and isinstance(times[0], list) else (min(times) if times else None)


def le(a, b):
    if isinstance(a, int):
        return isinstance(b, int) and a <= b
    return all(le(x, y) for x, y in zip(a, b, strict=True))  # times of one scope: one depth


def expected_status(frontier, t):
    if not frontier:
        return "done"
    at = False
    for f in frontier:
        if le(f, t):
            if f == t:
                at = True
            else:
                return "behind"
    return "at" if at else "passed"


def expected_classes(api, sid, batch, scope=""):
    st = api.get(f"/api/sessions/{sid}/state", params={"batch": batch, "scope": scope}).json()
    rows = st["ports"]
    t = lex_min([r[3] for r in rows])
    if rows and isinstance(t, list):
        t = min((x for r in rows for x in r[3]), key=lambda x: (x[0], x[1]))
    return {f"{r[0]},{r[1]},{r[2]}": expected_status(r[3], t) for r in rows}


def dom_classes(page):
    return page.eval_on_selector_all(
        "#graph circle.port",
        "els => Object.fromEntries(els.map(e => "
        "[e.dataset.port, [...e.classList].find(c => c.startsWith('st-')).slice(3)]))")


def wait_batch(page, batch):
    page.wait_for_function(f"document.querySelector('#graph').dataset.batch === '{batch}'", timeout=10000)


def seek(page, batch):
    page.fill("#batch-input", str(batch))
    page.press("#batch-input", "Enter")
    wait_batch(page, batch)


def test_replay_graph_colours_step_and_seek(page, server, api, loop_sid):
    page.goto(f"{server.url}/#/s/{loop_sid}")
    page.wait_for_selector("#graph circle.port")
    assert page.locator("#graph .node.operator, #graph .node.scope").count() == 4
    assert page.get_attribute("#graph", "data-operators") == "4"
    assert page.locator("#graph path.edge").count() == 3
    assert page.inner_text("#head") == "91"
    wait_batch(page, 91)
    assert set(dom_classes(page).values()) == {"done"}  # the whole log has completed

    seek(page, 20)
    at20 = dom_classes(page)
    assert at20 == expected_classes(api, loop_sid, 20)
    assert at20["in,4,0"] == "at" and at20["out,1,0"] == "passed"
    assert page.get_attribute("#graph", "data-mode") == "history"
    shot(page, "replay-batch-20")

    page.click("#step-fwd")
    wait_batch(page, 21)
    page.click("#step-back")
    page.click("#step-back")
    wait_batch(page, 19)
    assert dom_classes(page) == expected_classes(api, loop_sid, 19)

    seek(page, 0)
    at0 = dom_classes(page)
    assert at0 == expected_classes(api, loop_sid, 0) and at0 != at20
    assert at0["out,1,0"] == "at"  # the input holds its initial capability at 0
    badge = page.locator('#graph g.badge[data-badge="out,1,0"] text')
    assert badge.text_content() == "1"  # one capability held

    # seek by wall time: batches 19 and 20 ran 0.90 s and 0.95 s after the first one
    page.fill("#time-seek", "+0.92")
    page.press("#time-seek", "Enter")
    wait_batch(page, 19)

    # the chosen time recolours: at t = 5 every port of batch 20 still has a time <= 5 to come
    seek(page, 20)
    page.fill("#time-input", "5")
    page.press("#time-input", "Enter")
    page.wait_for_function("document.querySelector('#graph').dataset.time === '5'")
    assert set(dom_classes(page).values()) <= {"behind", "done"} and "behind" in dom_classes(page).values()


def test_open_a_nested_scope_and_come_back(page, server, api, loop_sid):
    page.goto(f"{server.url}/#/s/{loop_sid}?batch=20")
    page.wait_for_selector("#graph .node.scope")
    wait_batch(page, 20)
    page.click('#graph .node.scope text.open')
    page.wait_for_selector('#graph .node.enter')
    assert page.locator("#crumbs a.current").inner_text() == "loop"
    assert page.locator("#graph .node.operator").count() == 3
    assert page.locator("#graph .node.enter, #graph .node.leave").count() == 2
    assert page.locator("#graph path.edge.feedback").count() == 1
    wait_batch(page, 20)
    page.wait_for_function("document.querySelectorAll('#graph circle.port.st-none').length === 0")
    assert dom_classes(page) == expected_classes(api, loop_sid, 20, "3")
    shot(page, "nested-scope-loop")
    page.click("#crumbs a[data-path='']")
    page.wait_for_selector("#graph .node.scope")
    page.wait_for_function("document.querySelector('#crumbs a.current').textContent === 'root'")
    assert page.locator("#graph .node.operator, #graph .node.scope").count() == 4


def test_the_first_graph_is_asked_for_before_the_modules_run_and_only_once(page, server, loop_sid):
    """index.html asks for the scope in the address's graph while the modules load; the page takes that answer
    (one request, sent before start()), and a scope opened later is asked for as usual."""
    page.goto(f"{server.url}/#/s/{loop_sid}?scope=3")
    page.wait_for_selector("#graph .node.enter")
    got = page.evaluate("""() => ({
        graphs: performance.getEntriesByType("resource").filter((e) => e.name.includes("/graph?")).map((e) =>
            [e.name.slice(location.origin.length), e.startTime]),
        start: performance.getEntriesByName("fs:start", "mark")[0].startTime,
        left: window.__flowscopeFirstGraph })""")
    assert [g[0] for g in got["graphs"]] == [f"/api/sessions/{loop_sid}/graph?scope=3&compact=1"], got
    assert got["graphs"][0][1] < got["start"] and got["left"] is None, got
    page.click("#crumbs a[data-path='']")
    page.wait_for_selector("#graph .node.scope")
    names = page.evaluate("""performance.getEntriesByType("resource").filter((e) => e.name.includes("/graph?"))
        .map((e) => e.name.slice(location.origin.length))""")
    assert names[-1] == f"/api/sessions/{loop_sid}/graph?scope=&compact=1" and len(names) == 2, names


def test_the_first_stream_is_opened_before_the_modules_run_and_adopted_once(page, server, api, loop_sid):
    """index.html opens the address's scope's stream while the modules load; the page adopts that socket (one
    connection, its early snapshot used, the state drawn), and switching scope later goes over the same socket."""
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    page.add_init_script("""(() => { const Real = window.WebSocket; window.__socketsOpenedAt = [];
        window.WebSocket = class extends Real { constructor(...a) { super(...a); window.__socketsOpenedAt.push(
            performance.now()); } }; })()""")
    page.goto(f"{server.url}/#/s/{loop_sid}?scope=3")
    page.wait_for_function("window.__flowscope && typeof window.__flowscope.firstRender === 'number'")
    got = page.evaluate("""() => ({
        start: performance.getEntriesByName("fs:start", "mark")[0].startTime,
        left: window.__flowscopeFirstStream, rows: window.__flowscope.rows.size })""")
    assert len(sockets) == 1 and sockets[0].endswith(f"/api/sessions/{loop_sid}/stream?scope=3"), sockets
    assert got["left"] is None and got["rows"] > 0, got
    opened_at = page.evaluate("window.__socketsOpenedAt")
    assert len(opened_at) == 1 and opened_at[0] < got["start"], (opened_at, got)
    head = api.get(f"/api/sessions/{loop_sid}").json()["batches"]
    wait_batch(page, head)
    assert dom_classes(page) == expected_classes(api, loop_sid, head, "3")
    page.click("#crumbs a[data-path='']")
    page.wait_for_selector("#graph .node.scope")
    page.wait_for_function("document.querySelectorAll('#graph circle.port.st-none').length === 0")
    assert len(sockets) == 1, sockets


def test_why_is_this_stuck_shows_the_holder_and_follows_it_inside(page, server, loop_sid):
    page.goto(f"{server.url}/#/s/{loop_sid}?batch=20")
    page.wait_for_selector('#graph circle[data-port="in,4,0"]')
    wait_batch(page, 20)
    page.click('#graph circle[data-port="in,4,0"]')
    assert "sink" in page.inner_text("#details h3")
    assert page.input_value("#why-time") == "0"
    page.click("#why-ask")
    holder = page.wait_for_selector('#why .holder[data-holder="out,3,0"]')
    assert "loop" in holder.text_content() and "inside a nested scope" in holder.text_content()
    assert page.get_attribute("#why .verdict", "data-held") == "1"
    assert page.locator("#graph path.edge.hl").count() == 1
    assert page.locator("#graph .node.hl").count() == 2
    shot(page, "why-root")
    page.click("#why .holder button")  # ask inside the scope
    page.wait_for_selector("#graph .node.enter")
    inner = page.wait_for_selector('#why .holder[data-holder="in,2,0"]')
    assert "step" in inner.text_content() and "messages in flight" in inner.text_content()
    # the path: step's input -> its output 1 (inside the operator) -> the channel to the scope's output
    assert page.locator("#graph path.edge.hl").count() == 1
    assert page.locator("#graph .node.hl").count() == 2
    shot(page, "why-inside-loop")


def test_a_live_session_is_followed_and_can_be_scrubbed_while_it_grows(page, server, api):
    feed = PushFeed("live pipeline")
    sid = server.call(server.manager.add, feed, "live pipeline", True).id
    records = list(pipeline_records(12, 40, header=False))
    half = len(records) // 2
    feed.push_many(records[:half])
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_selector("#graph circle.port")
    assert page.locator("#graph .node.operator").count() == 12
    page.wait_for_function("+document.querySelector('#graph').dataset.batch > 0")
    assert page.get_attribute("#graph", "data-mode") == "live"
    assert "on" in page.get_attribute("#live", "class")
    seek(page, 5)  # scrub back while data keeps arriving
    feed.push_many(records[half:])
    total = sum(1 for r in records if r["type"] == "progress")
    page.wait_for_function(f"document.querySelector('#head').textContent === '{total}'")
    assert page.get_attribute("#graph", "data-batch") == "5"  # still where the user left it
    page.click("#live")
    wait_batch(page, total)
    feed.end()
    page.wait_for_function("document.querySelector('#session-status').textContent.startsWith('done')")
    assert set(dom_classes(page).values()) == {"done"}
    shot(page, "live-done")


def test_charts_search_and_findings(page, server, loop_sid):
    page.goto(f"{server.url}/#/s/{loop_sid}?batch=40")
    page.wait_for_selector("#chart-frontier .main-svg", timeout=15000)
    assert page.get_attribute("#chart-frontier", "data-traces") == "4"
    page.fill("#search", "step")
    hit = page.wait_for_selector("#search-hits div[data-i]")
    assert "step" in hit.inner_text()
    hit.click()
    page.wait_for_selector("#graph .node.enter")
    page.wait_for_selector("#graph .node.sel")
    assert page.locator("#graph .node.sel").count() == 1
    assert "step" in page.inner_text("#details h3")
    assert page.get_attribute("#graph .node.sel", "data-box") == "2"
    page.click('#tabs button[data-tab="workers"]')
    page.wait_for_selector("#workers-table tr[data-worker='0']")
    page.click('#tabs button[data-tab="marks-tab"]')
    page.wait_for_selector("#tab-marks-tab .list-row")
    assert page.locator("#tab-marks-tab .list-row").count() == 13
    shot(page, "charts-search")


def test_landing_page_lists_sessions_and_reports_a_bad_path(page, server, loop_sid):
    page.goto(f"{server.url}/#/")
    page.wait_for_selector(f'#session-table tr[data-sid="{loop_sid}"]')
    page.fill("#open-path", "/etc/passwd")
    page.click("#open-form button")
    err = page.wait_for_selector("#open-error:not([hidden])")
    assert "outside the directories" in err.inner_text()
