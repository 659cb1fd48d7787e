"""Spark's own History Server for tests that compare flowscope with it: started from the installed pyspark (as
benchmarks/replay_vs_history_server.py starts it) over a directory of logs, once they are all listed."""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import shutil
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

from backend.eventlog import EventLogReader
from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("hs_bench", REPO / "benchmarks" / "replay_vs_history_server.py")
assert _spec is not None and _spec.loader is not None
hs_bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hs_bench)

__all__ = ["hs_bench", "listed_history_server", "stage_log"]


def stage_log(log: Path, into: Path) -> str:
    """Copy one log into the History Server's directory, as a name Spark reads; the application id."""
    app = None
    for ev in EventLogReader(log):
        if ev.event.get("Event") == "SparkListenerApplicationStart":
            app = ev.event.get("App ID")
            break
    assert app, f"{log}: no application id"
    if log.is_dir():
        shutil.copytree(log, into / log.name)
    elif log.name.endswith(".gz"):
        (into / app).write_bytes(gzip.decompress(log.read_bytes()))
    else:
        shutil.copy(log, into / log.name)
    return app


@contextlib.contextmanager
def listed_history_server(directory: Path, apps: set[str], memory: str = "1g") -> Iterator[str]:
    """A History Server over ``directory``; yields its ``/api/v1/applications`` URL once it lists ``apps``."""
    with hs_bench.history_server(directory, memory) as (base, proc, out):
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, out.read_text()[-3000:]
            assert time.monotonic() < deadline, f"the History Server did not list {sorted(apps)}"
            try:
                listed = {a["id"] for a in hs_bench.get_json(base, 5)}
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
                listed = set()  # not up yet, or answering with its start-up page
            if apps <= listed:
                break
            time.sleep(0.2)
        yield base
