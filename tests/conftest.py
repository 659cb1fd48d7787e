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


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test session (Spark takes seconds to start)."""
    import os

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
