"""Browser benchmarks, in headless chromium against a real server on 127.0.0.1.

1. **Time to first render** of one scope of 200, 2,000 and 10,000 operators: from navigation start to the frame
   after the graph is drawn with every port coloured (layout cold: the server lays the scope out for this
   request; warm: a second visit, the layout cached; while streaming: a new page opened while batches stream at
   full speed). Goals: 2,000 operators <= 0.5 s, 10,000 <= 1 s.
2. **Frames per second while updates stream**: the same scopes, a live session receiving batches as fast as the
   tracker takes them (epochs marching through the whole pipeline), rAF callbacks counted for 4 s, how many
   stream messages were drawn, and the time from a stream message arriving to the frame that draws it (p50,
   p95: coalesced, so at most about one frame). Goal: >= 30 fps at 2,000 and 10,000 operators.
3. **Latency from a batch entering the tracker to the browser showing it**, at 5,000 batches/s pushed into a live
   session (200 operators): for every frame drawn, now minus the moment the oldest batch it shows was applied
   (both wall clocks of this machine), measured after the frame is painted. p50 and p95. Goal: p95 <= 200 ms.
4. **The applications table of 10,000 applications** (``serve --follow`` of a directory of copies of a real log,
   tests/e2e/app_copies.py): the page's load until the table is drawn, then the frames while the table is scrolled
   from top to bottom at 600 px a frame (fps, p95 frame interval, rows in the DOM), a sort by name and a filter
   (from the click or the keystroke to the frame that shows the result). Goal: >= 30 fps while scrolling.

Run: ``.venv/bin/python benchmarks/bench_browser.py [--sizes 200,2000,10000] [--rate 5000] [--seconds 6]
[--renderer svg|canvas] [--apps 10000]``
(needs Debian's chromium: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import httpx  # noqa: E402

from backend.feeds.progress_feeds import PushFeed  # noqa: E402
from backend.web.app import Settings  # noqa: E402
from tests.e2e.browser import chromium  # noqa: E402
from tests.e2e.logs import pipeline_records  # noqa: E402
from tests.e2e.server import running_server  # noqa: E402


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def structure_and_batches(operators: int, epochs: int, in_flight: int):
    """The structure records (a list) and an iterator over the rest, generated lazily: millions of record dicts
    held at once would make the server's garbage collector, not flowscope, the thing measured."""
    it = pipeline_records(operators, epochs, in_flight=in_flight, header=False)
    structure = []
    for r in it:
        if r["type"] in ("operator", "edge"):
            structure.append(r)
            if len(structure) == 2 * operators - 1:
                break
    return structure, it


class Pusher(threading.Thread):
    """Pushes records into a live feed at ``rate`` progress batches per second (0: as fast as possible)."""

    def __init__(self, feed: PushFeed, records, rate: float):
        super().__init__(daemon=True)
        self.feed, self.records, self.rate = feed, iter(records), rate
        self.stop = False
        self.pushed = 0  # progress batches

    def run(self) -> None:
        start = time.perf_counter()
        while not self.stop:
            if self.rate:
                want = int((time.perf_counter() - start) * self.rate) - self.pushed
                if want <= 0:
                    time.sleep(0.001)
                    continue
            else:
                if len(self.feed._queue) > 5000:
                    time.sleep(0.002)
                    continue
                want = 500
            chunk = []
            while want > 0:
                r = next(self.records, None)
                if r is None:
                    self.stop = True
                    break
                chunk.append(r)
                if r["type"] == "progress":
                    want -= 1
                    self.pushed += 1
            self.feed.push_many(chunk)


# Where the first render's time goes, read from the page's Performance timeline (ms from navigation start): the
# HTML, the last module or stylesheet fetched (none when the page inlines them: backend/web/page.py), the page's start()
# (modules evaluated), the graph request sent / its answer's first byte / received, the layout drawn (no state
# yet), the stream's snapshot, the first frame with state drawn, and the paint after it (what `firstRender` is).
BREAKDOWN = """() => {
  const mark = (n) => { const m = performance.getEntriesByName(n, "mark")[0]; return m ? m.startTime : NaN; };
  const res = performance.getEntriesByType("resource");
  const statics = res.filter((e) => e.name.includes("/static/"));
  const graph = res.find((e) => e.name.includes("/graph?")) || {};
  return {
    html: performance.getEntriesByType("navigation")[0].responseEnd,
    modules: statics.length ? Math.max(...statics.map((e) => e.responseEnd)) : NaN, files: statics.length,
    start: mark("fs:start"),
    graph_sent: graph.startTime, graph_first_byte: graph.responseStart, graph_received: mark("fs:graph-received"),
    layout_drawn: mark("fs:layout-drawn"), ws_open: mark("fs:ws-open"), ws_message: mark("fs:ws-message"),
    snapshot: mark("fs:snapshot"),
    first_frame: mark("fs:first-frame"), first_paint: window.__flowscope.firstRender,
    plotly: res.some((e) => e.name.includes("plotly") && e.startTime < window.__flowscope.firstRender),
  };
}"""
STEPS = ("html", "modules", "start", "graph_sent", "graph_first_byte", "graph_received", "layout_drawn", "ws_open",
         "ws_message", "snapshot", "first_frame", "first_paint")


def first_render(browser, url: str) -> tuple[float, dict]:
    """Seconds from navigation start to the paint after the first frame with every port coloured, and the
    breakdown (BREAKDOWN)."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url)
    page.wait_for_function("window.__flowscope && typeof window.__flowscope.firstRender === 'number'", timeout=120000)
    parts = page.evaluate(BREAKDOWN)
    page.close()
    return parts["first_paint"] / 1000, parts


def show_breakdown(label: str, parts: list[dict]) -> None:
    med = {k: pct([p[k] for p in parts if p.get(k) == p.get(k) and p.get(k) is not None], 50) for k in STEPS}
    print(f"         {label} (median ms from navigation start): "
          + ", ".join(f"{k} {med[k]:.0f}" for k in STEPS)
          + f"; {parts[0]['files']} static files; plotly fetched before the first paint: "
          + str(any(p["plotly"] for p in parts)), flush=True)


def browser_cpu() -> float:
    """CPU seconds used so far by this process's descendants (Playwright's driver, chromium and its renderers;
    exited ones through their parents' reaped-children times). Linux /proc; NaN elsewhere."""
    try:
        parent, times = {}, {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open(f"/proc/{d}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                parent[int(d)] = int(fields[1])
                times[int(d)] = sum(int(x) for x in fields[11:15])
    except OSError:
        return float("nan")
    mine, total = {os.getpid()}, 0
    grew = True
    while grew:
        grew = False
        for pid, pp in parent.items():
            if pp in mine and pid not in mine:
                mine.add(pid)
                total += times[pid]
                grew = True
    return total / os.sysconf("SC_CLK_TCK")


def add_session(srv, api, n: int, structure: list) -> tuple[str, PushFeed]:
    """A live session holding ``structure``, once the server has applied all of it (not only the operators: a
    page opened before the channels are in would be timed on a partial layout)."""
    feed = PushFeed(f"bench {n}")
    feed.push_many(structure)
    sid = srv.call(srv.manager.add, feed, f"bench {n}", False).id
    while api.get(f"/api/sessions/{sid}").json()["records"] < len(structure):
        time.sleep(0.02)
    return sid, feed


def bench_render_and_fps(browser, srv, api, sizes, seconds, renderer="", repeat=1):
    rows = []
    for n in sizes:
        colds, warms, cold_parts, warm_parts = [], [], [], []
        c0, b0 = time.process_time(), browser_cpu()
        for rep in range(repeat):  # a new session each time: the first visit lays it out afresh
            structure, batches = structure_and_batches(n, max(12, 100_000 // n), max(4, n // 25))
            sid, feed = add_session(srv, api, n, structure)
            url = f"{srv.url}/{'?renderer=' + renderer if renderer else ''}#/s/{sid}"
            cold, parts = first_render(browser, url)
            colds.append(cold)
            cold_parts.append(parts)
            warm, parts = first_render(browser, url)
            warms.append(warm)
            warm_parts.append(parts)
            if rep < repeat - 1:
                api.delete(f"/api/sessions/{sid}")
        cpu, bcpu = time.process_time() - c0, browser_cpu() - b0
        cold, warm = pct(colds, 50), pct(warms, 50)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(url)
        page.wait_for_function("window.__flowscope && typeof window.__flowscope.firstRender === 'number'",
                               timeout=120000)
        view = page.evaluate("window.__flowscopeUI ? window.__flowscopeUI.graph.constructor.name : 'GraphView'")
        pusher = Pusher(feed, batches, 0)
        pusher.start()
        time.sleep(0.5)
        streaming, _ = first_render(browser, url)  # a new page opened while the server streams at full speed
        page.evaluate("""() => { const S = window.__flowscope; S.benchFrames = 0; S.benchStart = S.frame;
            S.benchRunning = true; if (S.drawLag) S.drawLag.length = 0;
            const tick = () => { if (!S.benchRunning) return; S.benchFrames++; requestAnimationFrame(tick); };
            requestAnimationFrame(tick); }""")
        b0 = api.get(f"/api/sessions/{sid}").json()["batches"]
        time.sleep(seconds)
        frames, drawn, lag = page.evaluate("""() => { const S = window.__flowscope; S.benchRunning = false;
            return [S.benchFrames, S.frame - S.benchStart, (S.drawLag || []).slice()]; }""")
        b1 = api.get(f"/api/sessions/{sid}").json()["batches"]
        pusher.stop = True
        pusher.join()
        page.close()
        api.delete(f"/api/sessions/{sid}")
        rows.append((n, cold, warm, streaming, frames / seconds, drawn / seconds, (b1 - b0) / seconds))
        print(f"{n:>6} operators ({view}): first render {cold:.2f} s cold, {warm:.2f} s warm (medians of {repeat}: "
              f"cold {' '.join(f'{x:.2f}' for x in colds)}, warm {' '.join(f'{x:.2f}' for x in warms)}; "
              f"CPU over them: {cpu:.1f} s server process, {bcpu:.1f} s chromium; load {os.getloadavg()[0]:.1f}), "
              f"{streaming:.2f} s while streaming; {frames / seconds:.0f} fps, {drawn / seconds:.0f} updates drawn/s "
              f"while {(b1 - b0) / seconds:,.0f} batches/s stream; message -> drawn p50 {pct(lag, 50):.0f} ms, "
              f"p95 {pct(lag, 95):.0f} ms", flush=True)
        show_breakdown("cold", cold_parts)
        show_breakdown("warm", warm_parts)
    return rows


def bench_latency(browser, srv, api, rate, seconds, operators=200):
    need = int(rate * (seconds + 4))
    structure, batches = structure_and_batches(operators, need // operators + 20, 40)
    sid, feed = add_session(srv, api, operators, structure)
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(f"{srv.url}/#/s/{sid}")
    page.wait_for_function("window.__flowscope && typeof window.__flowscope.firstRender === 'number'", timeout=60000)
    page.wait_for_function("window.Plotly !== undefined", timeout=60000)  # the charts' one-time load is done
    pusher = Pusher(feed, batches, rate)
    pusher.start()
    time.sleep(1.0)  # warm up
    page.evaluate("window.__flowscope.latency.length = 0")
    b0 = api.get(f"/api/sessions/{sid}").json()["batches"]
    t0 = time.perf_counter()
    time.sleep(seconds)
    lat = page.evaluate("window.__flowscope.latency.slice()")
    b1 = api.get(f"/api/sessions/{sid}").json()["batches"]
    achieved = (b1 - b0) / (time.perf_counter() - t0)
    pusher.stop = True
    pusher.join()
    page.close()
    api.delete(f"/api/sessions/{sid}")
    ms = [x * 1000 for x in lat]
    print(f"latency at {rate:,} batches/s offered ({achieved:,.0f}/s applied, {operators} operators): "
          f"p50 {pct(ms, 50):.0f} ms, p95 {pct(ms, 95):.0f} ms, max {max(ms) if ms else float('nan'):.0f} ms "
          f"over {len(ms)} frames", flush=True)
    return pct(ms, 50), pct(ms, 95), achieved


SCROLL = """async () => {
  const box = document.querySelector('#apps-scroll');
  box.scrollTop = 0;
  await new Promise((r) => requestAnimationFrame(r));
  const idle = [];  // the same page's frames with nothing to do: what the machine allows
  let last = performance.now();
  for (let i = 0; i < 60; i++) {
    await new Promise((r) => requestAnimationFrame(r));
    const now = performance.now();
    idle.push(now - last);
    last = now;
  }
  const frames = [];
  last = performance.now();
  while (box.scrollTop + box.clientHeight < box.scrollHeight - 1) {
    box.scrollTop += 600;
    await new Promise((r) => requestAnimationFrame(r));
    const now = performance.now();
    frames.push(now - last);
    last = now;
  }
  return {frames, idle, rows: document.querySelectorAll('#apps-rows .apps-row').length};
}"""

TIMED = """async ([what, arg]) => {
  const t0 = performance.now();
  if (what === 'sort') document.querySelector('#apps-head [data-sort=' + arg + ']').click();
  else { const f = document.querySelector('#apps-filter'); f.value = arg; f.dispatchEvent(new Event('input')); }
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  return performance.now() - t0;
}"""


def bench_applications(browser, apps: int) -> None:
    """The applications table of ``apps`` applications (4. in the module docstring)."""
    import tempfile
    from pathlib import Path

    from tests.e2e.app_copies import ensure_copies

    logs = Path(__file__).resolve().parent / "out" / f"apps-batch_shuffle-x{apps}"
    ensure_copies(logs, apps)
    with tempfile.TemporaryDirectory() as data, \
            running_server(Settings(allowed_dirs=[logs], follow_dirs=[logs], data_dir=Path(data))) as srv:
        while srv.app.state.applications.scans[str(logs)] < 1:
            time.sleep(0.2)
        page = browser.new_page(viewport={"width": 1500, "height": 900})
        t0 = time.perf_counter()
        page.goto(srv.url + "/")
        page.wait_for_function("(n) => document.querySelector('#apps-count')?.textContent === String(n)", arg=apps,
                               timeout=120000)
        loaded = time.perf_counter() - t0
        result = page.evaluate(SCROLL)
        frames = result["frames"]
        sort_ms = page.evaluate(TIMED, ["sort", "name"])
        filter_ms = page.evaluate(TIMED, ["filter", "adhoc"])
        page.close()
    fps = 1000 * len(frames) / sum(frames) if frames else float("nan")
    idle = 1000 * len(result["idle"]) / sum(result["idle"])
    print(f"applications table, {apps:,} rows: drawn {loaded:.2f} s after navigation; scrolled top to bottom in "
          f"{len(frames)} frames: {fps:.0f} fps, frame p95 {pct(frames, 95):.1f} ms, max {max(frames):.1f} ms, "
          f"{result['rows']} rows in the DOM (idle frames, nothing drawn: {idle:.0f} fps); "
          f"sort by name {sort_ms:.0f} ms, filter {filter_ms:.0f} ms", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="200,2000,10000")
    ap.add_argument("--rate", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--skip-render", action="store_true")
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="first renders (cold and warm) per size; medians shown")
    ap.add_argument("--renderer", default="", help="force the graph view: svg or canvas (default: by size)")
    ap.add_argument("--apps", type=int, default=10_000, help="applications in the applications table (0: skip it)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with running_server(Settings(check_contracts=False)) as srv, httpx.Client(base_url=srv.url, timeout=120) as api, \
            chromium() as browser:
        if not args.skip_render:
            bench_render_and_fps(browser, srv, api, sizes, args.seconds, args.renderer, args.repeat)
        if not args.skip_latency:
            bench_latency(browser, srv, api, args.rate, args.seconds)
        if args.apps:
            bench_applications(browser, args.apps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
