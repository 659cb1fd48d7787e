"""The applications table in headless chromium: a server following a directory of real applications (copies of a
PySpark fixture's log, each its own App ID) lands on it; it sorts, filters by text and status, draws only the rows in
view, grows when an application appears, and a row opens the application on its Overview."""

from __future__ import annotations

import pytest

from backend.web.app import Settings
from tests.conftest import wait_until
from tests.e2e.app_copies import copy_id, source_text, write_copies, write_copy
from tests.e2e.browser import shot
from tests.e2e.server import running_server

COPIES = 300


def _name(i: int) -> str:
    return f"adhoc-{i:03d}" if i % 50 == 7 else f"nightly-{i:03d}"


@pytest.fixture(scope="module")
def followed(tmp_path_factory):
    logs = tmp_path_factory.mktemp("apps") / "logs"
    ids = write_copies(logs, COPIES, name=_name)
    text, source_id, _ = source_text()
    running = copy_id(source_id, COPIES)
    write_copy(logs, text.split(b'{"Event":"SparkListenerJobEnd"')[0], source_id, running, in_progress=True)
    settings = Settings(allowed_dirs=[logs], follow_dirs=[logs], data_dir=logs.parent / "data", poll=0.2)
    with running_server(settings) as srv:
        srv.logs = logs
        wait_until(lambda: srv.app.state.applications.scans[str(logs)] >= 1, "the first scan", 120)
        yield srv, ids, running


@pytest.fixture
def viewport():
    return {"width": 1500, "height": 900}


def _cell(page, column: int) -> list[str]:
    return page.eval_on_selector_all(f"#apps-rows .apps-row > span:nth-child({column})",
                                     "els => els.map(e => e.textContent.trim())")


def test_the_table_sorts_filters_and_draws_only_the_rows_in_view(page, followed):
    srv, ids, running = followed
    page.goto(srv.url + "/")
    page.wait_for_selector("#apps-rows .apps-row")
    assert page.inner_text("#apps-count") == str(COPIES + 1)
    assert page.locator("#sessions-card").is_hidden()
    drawn = page.locator("#apps-rows .apps-row").count()
    assert 0 < drawn < 80, f"{drawn} rows in the DOM for {COPIES + 1}: the table is not virtualised"
    names = sorted([_name(i) for i in range(COPIES)] + ["batch_shuffle"])
    page.click("#apps-head [data-sort=name]")
    assert _cell(page, 2)[:3] == names[:3]
    page.click("#apps-head [data-sort=name]")  # again: descending
    assert _cell(page, 2)[:3] == names[::-1][:3]
    page.eval_on_selector("#apps-scroll", "el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_function("(n) => [...document.querySelectorAll('#apps-rows .apps-row > span:nth-child(2)')]"
                           ".some(e => e.textContent === n)", arg=names[0])
    shot(page, "applications-table")
    page.fill("#apps-filter", "adhoc")
    adhoc = sorted((_name(i) for i in range(COPIES) if _name(i).startswith("adhoc")), reverse=True)
    page.wait_for_function("(n) => document.querySelector('#apps-count').textContent.startsWith(n + ' of')",
                           arg=str(len(adhoc)))
    assert _cell(page, 2) == adhoc
    page.fill("#apps-filter", "")
    page.select_option("#apps-status", "in_progress")
    page.wait_for_function("() => document.querySelectorAll('#apps-rows .apps-row').length === 1")
    assert _cell(page, 1) == [running] and "in progress" in _cell(page, 6)[0]


def test_a_new_application_appears_and_a_row_opens_its_overview(page, followed):
    srv, ids, running = followed
    page.goto(srv.url + "/")
    page.wait_for_selector("#apps-rows .apps-row")
    text, source_id, source_name = source_text()
    added = copy_id(source_id, COPIES + 1)
    write_copy(srv.logs, text, source_id, added, "appeared-later", source_name)
    page.fill("#apps-filter", "appeared-later")
    page.wait_for_selector(f'#apps-rows .apps-row[data-sid="{added}"]', timeout=20000)  # without a reload
    page.fill("#apps-filter", ids[42])
    page.click(f'#apps-rows .apps-row[data-sid="{ids[42]}"]')
    page.wait_for_selector(f'#overview[data-sid="{ids[42]}"]:not([hidden])', timeout=30000)
    assert page.inner_text("#overview h2") == _name(42)
    assert page.evaluate("location.hash") == f"#/s/{ids[42]}"
    shot(page, "applications-opened")
    page.goto(srv.url + "/")  # back on the list: the application opened is marked, its answer summarised
    page.fill("#apps-filter", ids[42])
    page.wait_for_function("() => /\\d/.test(document.querySelector('#apps-rows .apps-row > span:nth-child(7)')"
                           "?.textContent || '')", timeout=20000)
