"""The diff view in headless chromium: two moments of the loop log compared in the drawer's Diff tab, the lists
agreeing with GET .../diff, the stuck and advanced operators outlined on the graph (SVG and canvas), a row
selecting its port."""

from __future__ import annotations

import pytest

from tests.e2e.browser import shot


def box_of(port):
    kind, node, _ = port
    return ("enter" if kind == "out" else "leave") if node == 0 else str(node)


@pytest.mark.parametrize("renderer", ["svg", "canvas"])
def test_diff_tab_lists_what_changed_and_outlines_it(page, server, api, loop_sid, renderer):
    page.goto(f"{server.url}/?renderer={renderer}#/s/{loop_sid}?scope=3&batch=30")
    page.wait_for_function("document.querySelector('#graph').dataset.batch === '30'")
    page.click('#tabs button[data-tab="diff"]')
    assert page.input_value("#diff-from") == "20" and page.input_value("#diff-to") == "30"  # suggested
    page.fill("#diff-from", "12")
    page.click("#diff-go")
    page.wait_for_selector("#diff-result .list-row")
    want = api.get(f"/api/sessions/{loop_sid}/diff", params={"scope": "3", "from": 12, "to": 30}).json()
    for kind in ("stuck", "advanced", "counts"):
        shown = page.eval_on_selector_all(f'#diff-result .list-row[data-kind="{kind}"]',
                                          "els => els.map(e => e.dataset.port)")
        assert shown == [",".join(map(str, x["port"])) for x in want[kind]], kind
    summary = page.inner_text("#diff-summary")
    assert f"{want['summary']['advanced']} advanced" in summary and f"{want['summary']['stuck']} stuck" in summary
    advanced_boxes = {box_of(x["port"]) for x in want["advanced"]}
    stuck_boxes = {box_of(x["port"]) for x in want["stuck"]} - advanced_boxes
    assert advanced_boxes
    if renderer == "svg":
        outlined = page.eval_on_selector_all("#graph .node.diff-advanced", "els => els.map(e => e.dataset.box)")
        stuck = page.eval_on_selector_all("#graph .node.diff-stuck", "els => els.map(e => e.dataset.box)")
    else:
        flags = page.evaluate("(g => Object.fromEntries([...g.boxes.keys()].map(b => [b, g.boxFlags(b).diff])))"
                              "(window.__flowscopeUI.graph)")
        outlined = [b for b, f in flags.items() if f == "advanced"]
        stuck = [b for b, f in flags.items() if f == "stuck"]
    assert set(outlined) == advanced_boxes and set(stuck) == stuck_boxes
    shot(page, f"diff-{renderer}")
    # a row selects its port
    first = want["advanced"][0]["port"]
    page.click(f'#diff-result .list-row[data-kind="advanced"][data-port="{",".join(map(str, first))}"]')
    page.wait_for_function("window.__flowscope.selected && window.__flowscope.selected.type === 'port'")
    assert page.evaluate("window.__flowscope.selected.key") == ",".join(map(str, first))
    page.click("#diff-clear")
    assert page.inner_text("#diff-result") == ""
    if renderer == "svg":
        assert page.locator("#graph .node.diff-advanced, #graph .node.diff-stuck").count() == 0
    else:
        assert page.evaluate("[...window.__flowscopeUI.graph.boxes.values()].every(b => !b.diff)")


def test_diff_tab_reports_a_bad_moment(page, server, loop_sid):
    page.goto(f"{server.url}/#/s/{loop_sid}?batch=30")
    page.wait_for_function("document.querySelector('#graph').dataset.batch === '30'")
    page.click('#tabs button[data-tab="diff"]')
    page.fill("#diff-from", "last tuesday")
    page.click("#diff-go")
    toast = page.wait_for_selector("#toast:not([hidden])")
    assert "mark:N" in toast.inner_text()
