"""Fixtures the browser-view tests share (registered by tests/conftest.py): a server with the loop log open, an
HTTP client to it, one chromium per module and a fresh page per test that fails the test on any page error.

A test module that needs another server or page shape defines a fixture of the same name, which takes precedence.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from backend.app import Settings
from tests.conftest import LOOP_LOG
from tests.e2e.browser import chromium
from tests.e2e.server import running_server


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    with running_server(Settings(allowed_dirs=[LOOP_LOG.parent], checkpoint_every=32)) as srv:
        yield srv


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
