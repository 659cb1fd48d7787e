"""A team's event-log directory served two ways: ``flowscope serve --follow DIR`` against Spark's own History Server.

The directory: ``--apps`` (default 10,000) real applications, copies of the PySpark fixture
``fixtures/spark/batch_shuffle`` (Spark 4's layout: a rolling ``eventlog_v2_<app>/`` directory, zstd), each under its
own App ID (tests/e2e/app_copies.py), written once to ``benchmarks/out/``. Both servers are fresh processes on
127.0.0.1 (start-up included, as a user meets it); the History Server is started as
benchmarks/replay_vs_history_server.py starts it.

Measured, with the load average (``uptime``) beside each figure since the machine is shared:

Under load the wall times stretch: each figure also gives the process's CPU seconds (threads included).

* **listed**: from the server's start until ``GET /api/v1/applications`` (History Server) or ``GET /api/sessions``
  (flowscope) lists every application. Goal: flowscope at least 5x faster.
* **peak RSS** of flowscope's process with every application listed and ``--retain`` (50) applications opened
  (replayed, in memory). Goal: at most 400 MB.
* **listed after a restart**: flowscope stopped and started again on the same ``--data-dir``, until its first
  ``GET /api/sessions`` lists every application. Goal: under 2 s.
* **open one application**: from the first request for an application nobody opened until its replay is done
  (``GET /api/sessions/{id}`` polled), against ``flowscope frontiers`` of the same log (a fresh process).
  Goal: no more than frontiers + 0.5 s. The History Server's first ``GET .../{id}/jobs`` beside it.

Run::

    .venv/bin/python benchmarks/history_listing.py                  # 10,000 applications, both servers
    .venv/bin/python benchmarks/history_listing.py --apps 2000 --no-history-server
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import replay_vs_history_server as hs_bench  # noqa: E402  (the History Server started as that benchmark starts it)

from tests.e2e.app_copies import ensure_copies  # noqa: E402

free_port, history_server, peak_rss_mb = hs_bench.free_port, hs_bench.history_server, hs_bench.peak_rss_mb
cpu_seconds = hs_bench.cpu_seconds


def load() -> str:
    """The load averages, as ``uptime`` says them."""
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip().split("load ")[-1]


def get_json(url: str, timeout: float = 30.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.load(resp)


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        try:
            value = predicate()
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
            value = None
        if value:
            return value
        time.sleep(interval)
    raise SystemExit(f"timed out after {timeout} s waiting for {what}")


@contextlib.contextmanager
def flowscope_server(logs: Path, data: Path, port: int, retain: int) -> Iterator[subprocess.Popen]:
    """``flowscope serve --follow logs`` as a user starts it, stopped on the way out."""
    proc = subprocess.Popen([sys.executable, "-m", "flowscope.cli", "serve", "--follow", str(logs), "--data-dir",
                             str(data), "--port", str(port), "--retain", str(retain)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        hs_bench.stop_process(proc)


def listed_all(base: str, n: int) -> bool:
    return len(get_json(f"{base}/api/sessions", 60)) >= n


def scanned_all(base: str, n: int) -> bool:
    """The index says every application is listed (asked cheaply: the list itself is megabytes), and the list
    says so too."""
    figures = get_json(f"{base}/api/health").get("applications") or {}
    return figures.get("listed", 0) >= n and listed_all(base, n)


def open_until_done(base: str, sid: str, timeout: float = 300.0) -> float:
    started = time.perf_counter()
    wait_for(lambda: get_json(f"{base}/api/sessions/{sid}", 60)["status"] == "done", timeout, f"{sid} replayed",
             0.01)
    return time.perf_counter() - started


def bench_flowscope(logs: Path, ids: list[str], retain: int) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="flowscope-history-bench-") as tmp:
        data = Path(tmp) / "data"
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        started = time.perf_counter()
        with flowscope_server(logs, data, port, retain) as proc:
            wait_for(lambda: scanned_all(base, len(ids)), 900, "every application listed", 0.1)
            out["listed_s"], out["listed_load"] = time.perf_counter() - started, load()
            out["listed_cpu"] = cpu_seconds(proc.pid)
            one = ids[len(ids) // 2]
            out["open_s"], out["open_load"] = open_until_done(base, one), load()
            for sid in ids[:retain - 1]:  # --retain full
                open_until_done(base, sid)
            out["opened"] = get_json(f"{base}/api/health")["applications"]["opened"]
            out["peak_rss_mb"], out["rss_load"] = peak_rss_mb(proc.pid), load()
        started = time.perf_counter()
        with flowscope_server(logs, data, port, retain) as proc:
            wait_for(lambda: listed_all(base, len(ids)), 120, "every application listed after the restart", 0.02)
            out["restart_listed_s"], out["restart_load"] = time.perf_counter() - started, load()
            out["restart_cpu"] = cpu_seconds(proc.pid)
    log = next((logs / f"eventlog_v2_{ids[len(ids) // 2]}").iterdir())
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "flowscope.cli", "frontiers", str(log.parent)], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)
    out["frontiers_s"], out["frontiers_load"] = time.perf_counter() - started, load()
    return out


def bench_history_server(logs: Path, ids: list[str], memory: str) -> dict:
    out: dict = {}
    with history_server(logs, memory) as (apps_url, proc, output):
        started = time.perf_counter()

        def listed() -> bool:
            if proc.poll() is not None:
                raise SystemExit("the History Server exited; its output:\n" + output.read_text()[-3000:])
            return len(get_json(apps_url, 60)) >= len(ids)

        wait_for(listed, 1800, "the History Server to list every application", 0.5)
        out["listed_s"], out["listed_load"] = time.perf_counter() - started, load()
        out["listed_cpu"] = cpu_seconds(proc.pid)
        out["peak_rss_mb"] = peak_rss_mb(proc.pid)
        one = ids[len(ids) // 2]
        started = time.perf_counter()
        wait_for(lambda: get_json(f"{apps_url}/{one}/jobs", 300) is not None, 300, "the jobs of one application")
        out["open_s"], out["open_load"] = time.perf_counter() - started, load()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apps", type=int, default=10_000)
    ap.add_argument("--retain", type=int, default=50)
    ap.add_argument("--memory", default="4g", help="the History Server's heap (SPARK_DAEMON_MEMORY)")
    ap.add_argument("--no-history-server", action="store_true")
    args = ap.parse_args(argv)
    logs = HERE / "out" / f"apps-batch_shuffle-x{args.apps}"
    print(f"{args.apps} applications in {logs} (written once) ...", flush=True)
    ids = ensure_copies(logs, args.apps)
    fs = bench_flowscope(logs, ids, args.retain)
    print(f"flowscope: every application listed after {fs['listed_s']:.1f} s, {fs['listed_cpu']:.1f} s of CPU "
          f"(load {fs['listed_load']})")
    print(f"flowscope: peak RSS {fs['peak_rss_mb']:.0f} MB with {fs['opened']} applications opened "
          f"(load {fs['rss_load']})")
    print(f"flowscope: listed after a restart in {fs['restart_listed_s']:.2f} s, {fs['restart_cpu']:.2f} s of CPU "
          f"(load {fs['restart_load']})")
    print(f"flowscope: one application opened (replayed) in {fs['open_s']:.2f} s (load {fs['open_load']}); "
          f"flowscope frontiers of its log {fs['frontiers_s']:.2f} s (load {fs['frontiers_load']})")
    if not args.no_history_server:
        hs = bench_history_server(logs, ids, args.memory)
        print(f"History Server: every application listed after {hs['listed_s']:.1f} s, {hs['listed_cpu']:.1f} s of CPU "
              f"(load {hs['listed_load']}), "
              f"peak RSS {hs['peak_rss_mb']:.0f} MB; one application's jobs in {hs['open_s']:.2f} s "
              f"(load {hs['open_load']})")
        print(f"listing: flowscope {hs['listed_s'] / fs['listed_s']:.1f}x faster "
              f"({hs['listed_cpu'] / fs['listed_cpu']:.1f}x less CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
