"""Fixtures the browser-view tests share (registered by tests/conftest.py): a server with the loop log open, an
HTTP client to it, one chromium per module and a fresh page per test that fails the test on any page error; and
for the Spark views, a server over the shipped Spark fixtures (``spark_server``) with :func:`open_spark_fixture`.

A test module that needs another server or page shape defines a fixture of the same name, which takes precedence.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from backend.eventlog import find_logs
from backend.web.app import Settings
from tests.conftest import LOOP_LOG, REPO
from tests.e2e.browser import chromium
from tests.e2e.server import running_server


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with running_server(Settings(allowed_dirs=[LOOP_LOG.parent], checkpoint_every=32)) as srv:
        yield srv


SPARK_FIXTURES = REPO / "fixtures" / "spark"


@pytest.fixture(scope="module")
def spark_server() -> Iterator[Any]:
    """A server that may open the shipped Spark fixtures (a module names it ``server`` to use it throughout)."""
    with running_server(Settings(allowed_dirs=[SPARK_FIXTURES], checkpoint_every=16)) as srv:
        yield srv


def open_spark_fixture(server: Any, name: str) -> str:
    """Open the shipped Spark fixture ``name`` (fixtures/spark/NAME) as a session and wait until it is loaded."""
    (log,) = find_logs(SPARK_FIXTURES / name)
    with httpx.Client(base_url=server.url, timeout=20) as c:
        r = c.post("/api/sessions", json={"path": str(log.path)})
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        server.wait_for(sid, client=c)
    return sid


@pytest.fixture(scope="module")
def api(server: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=20) as c:
        yield c


@pytest.fixture(scope="module")
def loop_sid(server: Any, api: httpx.Client) -> str:
    sid = api.post("/api/sessions", json={"path": str(LOOP_LOG)}).json()["id"]
    server.wait_for(sid, client=api)
    return sid


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


@pytest.fixture
def viewport() -> dict:
    """The page's size; a module that needs a taller page overrides this fixture alone."""
    return {"width": 1440, "height": 900}


@pytest.fixture
def page(browser: Any, viewport: dict) -> Iterator[Any]:
    page = browser.new_page(viewport=viewport)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    page.close()
    assert not errors, errors
