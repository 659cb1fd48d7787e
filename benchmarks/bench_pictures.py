"""How fast the diagnosis pictures of a 100,000-task application render, in headless chromium against a real
server on 127.0.0.1. Goal: the blame waterfall for a time and the executor timeline each in <= 1 s.

The log is the one ``replay_vs_history_server.py`` builds (and ``blame_overhead.py`` uses): the shared 1,000-task
shuffle job (``pyspark-4.3/spark430_1000tasks_shuffle.jsonl.gz`` in ``$FLOWSCOPE_SPARK_EVENTS``, default
``../shared/spark-events``) copied ``--copies`` times into one application (100: 100 jobs, 100,400 tasks; written
once to ``benchmarks/out/``). The server replays it once (not measured); then, ``--repeat`` times each:

* **executor timeline**: the Executors tab drawn from nothing: GET .../tasks (every bar, columnar) and the
  slowest time's blame, lanes assigned, the WebGL bars and the critical path drawn by plotly, until the next
  frame is painted;
* **blame waterfall**: the Blame tab drawn from nothing: GET .../blame (the 50 slowest times of a job), the list
  and the slowest time's waterfall, until painted; and the waterfall alone for another time (a click in the list).

Reported per picture: the median and worst wall time, and, because the machine may be shared, the CPU the browser
spent (user + system time of every chromium process, from /proc: renderer, GPU, browser) and the CPU the server
spent answering (this process's ``time.process_time``: the server runs in a thread of it), plus the load average.
On a loaded machine the wall time is the CPU time stretched by the wait for a core: CPU is the figure to compare.

    .venv/bin/python benchmarks/bench_pictures.py [--copies 100] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import httpx  # noqa: E402

from backend.web.app import Settings  # noqa: E402
from tests.e2e.browser import chromium  # noqa: E402
from tests.e2e.server import running_server  # noqa: E402

# In the page: draw one picture from nothing and wait for the frame after it (painted), in ms.
EXECUTORS = """async ([sid]) => {
    const ui = window.__flowscopeUI;
    const box = document.querySelector('#tab-executors');
    box.innerHTML = '';
    const t0 = performance.now();
    await ui.drawer.executors.show(sid, null, null, []);
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const el = document.querySelector('#executor-chart');
    const bars = el.data.filter((t) => (t.name || '').startsWith('stage '))
        .reduce((a, t) => a + t.x.filter((v) => v !== null).length / 2, 0);
    return { ms: performance.now() - t0, parts: ui.drawer.executors.timing, bars,
             critical: +el.dataset.criticalTasks };
}"""
BLAME = """async ([sid, scope]) => {
    const ui = window.__flowscopeUI;
    const box = document.querySelector('#tab-blame');
    box.innerHTML = '';
    ui.drawer.blame.picked = null;
    const t0 = performance.now();
    await ui.drawer.blame.show(sid, scope);
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    const t1 = performance.now();
    await ui.drawer.blame.waterfall(Math.min(1, ui.drawer.blame.times.length - 1));
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    return { ms: t1 - t0, click_ms: performance.now() - t1, times: ui.drawer.blame.times.length,
             segments: ui.drawer.blame.picked.blame.length };
}"""


def browser_cpu_ms() -> float:
    """User + system CPU of every chromium process under this one (renderer, GPU/SwiftShader, browser), from
    /proc: what the page cost whatever else the machine runs."""
    parent: dict[int, int] = {}
    comm: dict[int, str] = {}
    ticks: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        pid = int(d)
        parent[pid], comm[pid], ticks[pid] = int(fields[1]), name, int(fields[11]) + int(fields[12])
    me, total = os.getpid(), 0
    for pid in parent:
        p, seen = pid, 0
        while p in parent and p != me and seen < 64:
            p, seen = parent[p], seen + 1
        if p == me and "chrom" in comm[pid]:
            total += ticks[pid]
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def measure(page, script: str, args: list) -> dict:
    c0, s0 = browser_cpu_ms(), time.process_time()
    out = page.evaluate(script, args)
    out["browser_cpu_ms"] = browser_cpu_ms() - c0
    out["server_cpu_ms"] = (time.process_time() - s0) * 1000  # this process: the server's thread (and the driver)
    return out


def summary(runs: list[dict], key: str = "ms") -> str:
    v = [r[key] for r in runs]
    cpu = statistics.median(r["browser_cpu_ms"] for r in runs)
    srv = statistics.median(r["server_cpu_ms"] for r in runs)
    return (f"median {statistics.median(v):.0f} ms, worst {max(v):.0f} ms wall; browser CPU {cpu:.0f} ms, "
            f"server CPU {srv:.0f} ms (medians)")


def main(argv: list[str] | None = None) -> int:
    from replay_vs_history_server import DEFAULT_SOURCE, ensure_log

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--json", action="store_true", help="also print the runs as JSON")
    args = ap.parse_args(argv)
    log, meta = ensure_log(args.source, args.copies, False)
    print(f"log: {meta['jobs']} jobs, {meta['tasks']:,} tasks, {meta['bytes'] / 1e6:.0f} MB; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    with running_server(Settings(allowed_dirs=[log.parent])) as srv, \
            httpx.Client(base_url=srv.url, timeout=600) as api:
        t0, c0 = time.perf_counter(), time.process_time()
        sid = api.post("/api/sessions", json={"path": str(log)}).json()["id"]
        srv.wait_for(sid, timeout=1800, client=api)
        print(f"session replayed in {time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU "
              f"(not measured below)", flush=True)
        total = api.get(f"/api/sessions/{sid}/tasks", params={"limit": 1}).json()["total"]
        slowest = api.get(f"/api/sessions/{sid}/blame", params={"top": 1}).json()["times"][0]
        scope = ",".join(map(str, slowest["scope"]))
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{srv.url}/#/s/{sid}?scope={scope}")
            page.wait_for_selector("#graph .node", timeout=60000)
            page.wait_for_function("() => window.Plotly || true")
            # plotly's load apart
            page.evaluate("() => import('/static/js/drawer/plotly.js').then((m) => m.loadPlotly())")
            ex, bl = [], []
            for _ in range(args.repeat):
                ex.append(measure(page, EXECUTORS, [sid]))
                bl.append(measure(page, BLAME, [sid, slowest["scope"]]))
            if errors:
                raise SystemExit(f"page errors: {errors}")
    print(f"executor timeline, {ex[0]['bars']:,.0f} bars of {total:,} tasks, {ex[0]['critical']} on the critical "
          f"path: {summary(ex)}")
    parts = {k: statistics.median(r["parts"][k] for r in ex) for k in ex[0]["parts"]}
    print("  of which (medians, ms): " + ", ".join(f"{k} {v:.0f}" for k, v in parts.items()))
    print(f"blame tab ({bl[0]['times']} times of job scope {scope}, waterfall of {bl[0]['segments']} segments): "
          f"{summary(bl)}; another time's waterfall: median {statistics.median(r['click_ms'] for r in bl):.0f} ms")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if args.json:
        print(json.dumps({"executors": ex, "blame": bl}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
