"""The canvas graph view (large scopes) in headless chromium: colours and badges match the server's state, and the
interactions of the SVG view work on it (select a port or an operator by clicking where it is drawn, open a
nested scope, the explain path highlighted, search); a large live scope is drawn on canvas by itself and stream
updates repaint only the boxes they touch. `?renderer=canvas` forces the canvas for the small loop log."""

from __future__ import annotations

import time

from backend.feeds.progress_feeds import PushFeed
from tests.e2e.browser import shot
from tests.e2e.logs import pipeline_records
from tests.test_browser_view import expected_classes

G = "window.__flowscopeUI.graph"


def wait_batch(page, batch):
    page.wait_for_function(f"document.querySelector('#graph-canvas').dataset.batch === '{batch}'", timeout=10000)


def open_canvas(page, server, sid, query=""):
    page.goto(f"{server.url}/?renderer=canvas#/s/{sid}{query}")
    page.wait_for_function(f"{G} && {G}.constructor.name === 'CanvasGraphView' && {G}.layout !== null")


def statuses(page):
    return page.evaluate(f"Object.fromEntries([...{G}.ports.entries()].map(([k, p]) => [k, p.status]))")


def click_at(page, what, double=False):
    pos = page.evaluate(f"{G}.screenOf({what!r})")
    assert pos, what
    (page.mouse.dblclick if double else page.mouse.click)(pos["x"], pos["y"])


def pixel(page, x, y):
    """The colour the canvas shows at a point of the world (the layout's coordinates), as #rrggbb."""
    return page.evaluate(f"""() => {{ const g = {G}; const c = g.canvas; const d = window.devicePixelRatio || 1;
        const px = Math.round(d * (g.view.x + g.view.s * {x})), py = Math.round(d * (g.view.y + g.view.s * {y}));
        const v = c.getContext('2d').getImageData(px, py, 1, 1).data;
        return '#' + [v[0], v[1], v[2]].map(n => n.toString(16).padStart(2, '0')).join(''); }}""")


def near(a, b, tolerance=6):
    return all(abs(int(a[i:i + 2], 16) - int(b[i:i + 2], 16)) <= tolerance for i in (1, 3, 5))


BG = {"behind": "#fdeaea", "at": "#fff5da", "passed": "#e8f6ee", "done": "#f1f3f6"}
BLOCK = {"behind": "#d64545", "at": "#f0a500", "passed": "#2e9e5b", "done": "#c9d0d8"}


def test_canvas_colours_badges_and_selection(page, server, api, loop_sid):
    open_canvas(page, server, loop_sid, "?batch=20")
    wait_batch(page, 20)
    assert page.get_attribute("#graph-canvas", "data-operators") == "4"
    assert page.locator("#graph").is_hidden() and page.locator("#graph-canvas").is_visible()
    at20 = statuses(page)
    assert at20 == expected_classes(api, loop_sid, 20)
    # what is drawn: each box's body in its status colour (a corner inside the box, clear of text and ports)
    for box in ("1", "4"):
        node = page.evaluate(f"{G}.boxes.get('{box}').node")
        st = page.evaluate(f"{G}.boxFlags('{box}').status")
        assert pixel(page, node["x"] + 12, node["y"] + node["h"] - 3) == BG[st], (box, st)
    shot(page, "canvas-batch-20")

    page.fill("#batch-input", "0")
    page.press("#batch-input", "Enter")
    wait_batch(page, 0)
    assert statuses(page) == expected_classes(api, loop_sid, 0)
    assert page.evaluate(f"{G}.badgeOf('out,1,0')") == 1  # one capability held

    pos = page.evaluate(f"{G}.screenOf('out,1,0')")  # hover: the tooltip names the port and its frontier
    page.mouse.move(pos["x"], pos["y"])
    tip = page.wait_for_selector("#tooltip:not([hidden])")
    assert "input · output 0" in tip.inner_text() and "frontier" in tip.inner_text()
    page.mouse.move(5, 5)
    click_at(page, "in,4,0")  # a port, where it is drawn
    page.wait_for_function("(document.querySelector('#details h3') || {textContent: ''}).textContent.includes('sink')")
    assert page.evaluate(f"{G}.selectedPort") == "in,4,0"
    click_at(page, "1")  # an operator's body
    page.wait_for_function(f"{G}.boxFlags('1').sel")
    assert "input" in page.inner_text("#details h3")

    # level of detail: zoomed far out, an operator is a block in its status's strong colour
    page.evaluate(f"{G}.zoom(0.05 / {G}.view.s)")
    page.wait_for_function(f"{G}.view.s < 0.16")
    page.wait_for_timeout(100)  # the next frame
    node = page.evaluate(f"{G}.boxes.get('4').node")
    st = page.evaluate(f"{G}.boxFlags('4').status")
    got = pixel(page, node["x"] + node["w"] / 2, node["y"] + node["h"] / 2)
    assert near(got, BLOCK[st]), (st, got)  # a block two pixels high: edges are anti-aliased


def test_canvas_explain_highlight_and_open_scope(page, server, loop_sid):
    open_canvas(page, server, loop_sid, "?batch=20")
    wait_batch(page, 20)
    click_at(page, "in,4,0")
    page.wait_for_selector("#why-ask")
    page.click("#why-ask")
    page.wait_for_selector('#why .holder[data-holder="out,3,0"]')
    hl = page.evaluate(f"{G}.highlighted()")
    assert sorted(hl["boxes"]) == ["3", "4"] and hl["edges"] == ["out,3,0>in,4,0"]
    assert page.evaluate(f"{G}.boxFlags('3').hl") and not page.evaluate(f"{G}.boxFlags('1').hl")
    # the highlighted channel is drawn in the highlight colour, the others dimmed
    assert page.evaluate(f"{G}.draws.full") >= 1
    shot(page, "canvas-why")

    # open the nested scope with a click on "open ▸" on its box
    pos = page.evaluate(f"""() => {{ const g = {G}; const n = g.boxes.get('3').node;
        const r = g.canvas.getBoundingClientRect(), v = g.view;
        return {{x: r.left + v.x + v.s * (n.x + n.w - 25),
                 y: r.top + v.y + v.s * (n.y + Math.min(31, n.h - 6) - 4)}}; }}""")
    page.mouse.click(pos["x"], pos["y"])
    page.wait_for_function("(document.querySelector('#crumbs a.current') || {}).textContent === 'loop'")
    page.wait_for_function(f"{G}.boxes.has('enter')")
    assert page.get_attribute("#graph-canvas", "data-operators") == "3"
    page.click("#crumbs a[data-path='']")
    page.wait_for_function(f"{G}.boxes.has('3') && !{G}.boxes.has('enter')")
    click_at(page, "3", double=True)  # a double click on a scope's box opens it too
    page.wait_for_function(f"{G}.boxes.has('enter')")


def test_canvas_search_selects_in_another_scope(page, server, loop_sid):
    open_canvas(page, server, loop_sid, "?batch=40")
    wait_batch(page, 40)
    page.fill("#search", "sink")
    page.wait_for_function(f"{G}.boxFlags('4').match")
    assert not page.evaluate(f"{G}.boxFlags('1').match")
    page.fill("#search", "step")
    page.wait_for_selector("#search-hits div[data-i]:has-text('step')")
    page.click("#search-hits div[data-i]:has-text('step')")
    page.wait_for_function(f"{G}.boxes.has('enter') && {G}.boxFlags('2') && {G}.boxFlags('2').sel")
    assert "step" in page.inner_text("#details h3")


def test_a_large_live_scope_is_drawn_on_canvas_and_updates_repaint_only_what_changed(page, server, api):
    n = 1200
    feed = PushFeed("large live")
    session = server.call(server.manager.add, feed, "large live", True)
    sid = session.id
    records = list(pipeline_records(n, 30, in_flight=6, header=False))
    structure = [r for r in records if r["type"] != "progress"]
    progress = [r for r in records if r["type"] == "progress"]
    feed.push_many(structure + progress[:50])
    while session.records < len(structure) + 50:  # the whole structure first: the page's first picture has it all
        time.sleep(0.02)
    page.goto(f"{server.url}/#/s/{sid}")  # no renderer forced: the size decides
    page.wait_for_function(f"window.__flowscopeUI && {G}.constructor.name === 'CanvasGraphView' && {G}.layout")
    page.wait_for_function("typeof window.__flowscope.firstRender === 'number'", timeout=30000)
    assert page.get_attribute("#graph-canvas", "data-operators") == str(n)
    before = page.evaluate(f"({{...{G}.draws}})")
    for i in range(50, 400, 25):
        feed.push_many(progress[i:i + 25])
    page.wait_for_function("+document.querySelector('#graph-canvas').dataset.batch >= 400", timeout=20000)
    after = page.evaluate(f"({{...{G}.draws}})")
    assert after["partial"] > before["partial"], (before, after)
    # the picture agrees with the stream's rows (what changed was repainted, nothing else went stale)
    mismatches = page.evaluate(f"""() => {{ const g = {G}; const rows = window.__flowscope.rows; let bad = 0;
        for (const [k, p] of g.ports) {{ const r = rows.get(k);
          const total = r ? r[4].reduce((a, pc) => a + pc[1], 0) : 0;
          if (total !== p.badgeValue) bad++; }} return bad; }}""")
    assert mismatches == 0
    api.delete(f"/api/sessions/{sid}")


def test_a_very_large_scope_shows_its_boxes_first_and_its_channels_right_after(page, server, api):
    """Above 1,000 boxes the channels are built after the first picture with state is painted (far out they are
    hairlines under the blocks), not in a task that holds that picture back; then every channel is drawn."""
    n = 1500
    feed = PushFeed("very large")
    records = pipeline_records(n, 12, in_flight=4, header=False)
    feed.push_many([next(records) for _ in range(2 * n - 1)] + [next(records) for _ in range(20)])
    session = server.call(server.manager.add, feed, "very large", True)
    sid = session.id
    while session.records < 2 * n - 1 + 20:  # the whole structure first: one layout, one set of channels
        time.sleep(0.02)
    page.goto(f"{server.url}/#/s/{sid}")
    page.wait_for_function("typeof window.__flowscope.firstRender === 'number'", timeout=60000)
    page.wait_for_function(f"{G}.timing.edgesAt !== undefined", timeout=30000)
    got = page.evaluate(f"""() => ({{ first: window.__flowscope.firstRender, edgesAt: {G}.timing.edgesAt,
        edges: {G}.edges.length, painted: {G}.draws.full }})""")
    assert got["first"] < got["edgesAt"], got
    assert got["edges"] == n - 1, got
    page.wait_for_function(f"{G}.draws.full > {got['painted']} || !{G}.baseStale", timeout=10000)
    api.delete(f"/api/sessions/{sid}")
