"""Shared test helpers: paths into the repository, and the external corpus of real Spark event logs.

The corpus (Spark's own test logs and logs written by PySpark 4.3) is too big to live in the repository. Tests find it
only through the environment variable FLOWSCOPE_SPARK_EVENTS (default: ``../shared/spark-events`` beside the
repository). A test that reads it carries the ``spark_events`` marker and uses :data:`SPARK_EVENTS`:

* variable unset and the default directory absent (a fresh clone on its own): the test is skipped, with a reason
  naming the variable;
* variable set but the directory missing: the test fails, so CI (which sets it) never skips them silently.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tracker.reachability import Tracker
from tracker.subgraph import Subgraph

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
LOOP_LOG = FIXTURES / "progress" / "loop.jsonl"

SPARK_EVENTS_VARIABLE = "FLOWSCOPE_SPARK_EVENTS"
SPARK_EVENTS_DEFAULT = REPO.parent / "shared" / "spark-events"
#: The corpus directory (it may not exist: see :func:`spark_events_missing`).
SPARK_EVENTS = Path(os.environ.get(SPARK_EVENTS_VARIABLE) or SPARK_EVENTS_DEFAULT)


# the browser-view tests' server, client, chromium and page; a real S3 API server (tests/s3_server.py)
pytest_plugins = ["tests.e2e.view_fixtures", "tests.s3_server"]


def tracker_of(scope: Subgraph) -> Tracker:
    """A scope's tracker, which a test reads once the scope ran (it exists then)."""
    assert scope.tracker is not None, f"scope {scope.label} has no tracker"
    return scope.tracker


def spark_events_missing() -> str | None:
    """Why the corpus cannot be read (None when it can)."""
    if SPARK_EVENTS.is_dir():
        return None
    if os.environ.get(SPARK_EVENTS_VARIABLE):
        return f"{SPARK_EVENTS_VARIABLE}={SPARK_EVENTS} is set but that directory does not exist"
    return (f"the real Spark event logs are not here: set {SPARK_EVENTS_VARIABLE} to their directory "
            f"(default {SPARK_EVENTS_DEFAULT})")


def spark_event_cases(list_logs: Callable[[Path], Iterable[Any]]) -> list[Any]:
    """Parameters for a test run once per corpus log: ``list_logs(SPARK_EVENTS)``, or, when the corpus is absent, one
    placeholder case (None) so that the test is still collected and the ``spark_events`` marker skips or fails it."""
    if spark_events_missing() is None:
        return list(list_logs(SPARK_EVENTS))
    return [pytest.param(None, id="no-spark-events")]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"spark_events: the test reads the real Spark event logs (${SPARK_EVENTS_VARIABLE})")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("spark_events") is None:
        return
    reason = spark_events_missing()
    if reason is None:
        return
    if os.environ.get(SPARK_EVENTS_VARIABLE):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def loop_log() -> Path:
    return LOOP_LOG


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session (Spark takes seconds to start)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[4]")
        .appName("flowscope-tests")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def wait_until(predicate, what: str, timeout: float = 20.0):
    """Poll ``predicate`` until it returns something true and return that; fail naming ``what`` after ``timeout``
    seconds. A test waits for the thing itself this way, never for a fixed time."""
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.02)
