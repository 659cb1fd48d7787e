"""Groups of findings in headless chromium: skewed_straggler replicated into one application (the benchmarks'
replicator) opens on an Overview and a Findings tab that list one group per kind, count what flowscope report
counts, open a group's worst finding, and list the rest when asked. Screenshots go to test-artifacts/."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from backend.web.app import Settings
from flowscope.cli import main
from tests.conftest import REPO
from tests.e2e.browser import shot
from tests.e2e.server import running_server

COPIES = 5


@pytest.fixture(scope="module")
def replicated(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("replicate", REPO / "benchmarks" / "replay_vs_history_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (source,) = (REPO / "fixtures" / "spark" / "skewed_straggler").glob("eventlog_v2_*")
    target = tmp_path_factory.mktemp("groups") / "app-groups"
    module.generate(source, COPIES, target)
    return target


@pytest.fixture(scope="module")
def server(replicated) -> Iterator[Any]:
    with running_server(Settings(allowed_dirs=[replicated.parent])) as srv:
        yield srv


@pytest.fixture
def viewport():
    return {"width": 1440, "height": 1000}


def test_the_findings_tab_counts_what_the_report_counts_and_folds_repeats(page, server, replicated, capsys):
    assert main(["report", str(replicated), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["findings_total"] == 3 * COPIES and len(printed["groups"]) == 3
    with httpx.Client(base_url=server.url, timeout=30) as c:
        sid = c.post("/api/sessions", json={"path": str(replicated)}).json()["id"]
        server.wait_for(sid, client=c)
    page.goto(f"{server.url}/#/s/{sid}")
    # the Overview: one row per group, its count and impact
    page.wait_for_selector("#overview:not([hidden]) tr.ov-finding")
    assert page.locator("#overview tr.ov-finding").count() == len(printed["groups"])
    count = page.get_attribute("#overview-findings-count", "data-total")
    assert int(count) == printed["findings_total"]
    shot(page, "finding-groups-overview")
    page.click("#overview-close")
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="findings"]')
    page.wait_for_selector("#tab-findings .finding-group")
    assert int(page.get_attribute("#findings-total", "data-total")) == printed["findings_total"]
    page.wait_for_function("(n) => document.querySelector('#findings-count').textContent === String(n)",
                           arg=printed["findings_total"])
    groups = page.locator("#tab-findings .finding-group")
    assert groups.count() == len(printed["groups"])
    for i, g in enumerate(printed["groups"]):
        head = groups.nth(i).locator(".group-head").inner_text()
        assert g["label"] in head and f"{COPIES} findings" in head
    # a group shows its worst finding; its other instances on demand
    straggler = page.locator("#tab-findings .finding-group.straggler")
    assert straggler.locator(".finding-instance").count() == 1
    straggler.locator(".group-more").click()
    assert straggler.locator(".group-rest .finding-instance").count() == COPIES - 1
    shot(page, "finding-groups-tab")
    # the worst one opens its moment: the straggler's scope, just before it ended
    (worst,) = [f for f in printed["findings"] if f["kind"] == "straggler" and f["group"] == [
        i for i, g in enumerate(printed["groups"]) if g["kind"] == "straggler"][0]][:1]
    straggler.locator(".finding-instance").first.click()
    page.wait_for_function("(s) => String(window.__flowscope.scope) === s", arg=",".join(map(str, worst["scope"])))
