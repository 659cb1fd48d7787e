"""Shared test helpers: paths into the repository and the shared folder beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
LOOP_LOG = FIXTURES / "progress" / "loop.jsonl"


@pytest.fixture
def loop_log() -> Path:
    return LOOP_LOG
