"""Seeking as the browser does it: GET /state?batch=k on a session of a million batches.

Builds a session of ``--batches`` progress batches (a 50-operator pipeline, records generated lazily and fed to
the session without a file), then asks a real server for the state of the root scope at random batches, as the
timeline does when the user drags the scrubber, and at consecutive batches, as play does. Reports ingest rate,
history size, and seek latency p50 / p95 / max. Goal: well under a second anywhere in a 1M-batch session.

Run: ``.venv/bin/python benchmarks/bench_browser_seek.py [--batches 1000000] [--seeks 40]``
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import httpx  # noqa: E402

from backend.feeds.progress_feeds import IterFeed  # noqa: E402
from backend.web.app import Settings  # noqa: E402
from tests.e2e.logs import pipeline_records  # noqa: E402
from tests.e2e.server import running_server  # noqa: E402


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=1_000_000)
    ap.add_argument("--operators", type=int, default=50)
    ap.add_argument("--seeks", type=int, default=40)
    ap.add_argument("--check", action="store_true", help="check the progress contract while ingesting")
    args = ap.parse_args(argv)
    epochs = args.batches // args.operators + 1

    def records():
        n = 0
        for r in pipeline_records(args.operators, epochs, in_flight=8, header=False):
            if r["type"] == "progress":
                n += 1
                if n > args.batches:
                    return
            yield r

    with running_server(Settings(check_contracts=args.check)) as srv, httpx.Client(base_url=srv.url, timeout=60) as api:
        start = time.perf_counter()
        session = srv.call(srv.manager.add, IterFeed(records(), "bench"), "seek bench", args.check)
        sid = session.id
        while True:
            info = api.get(f"/api/sessions/{sid}").json()
            if info["status"] == "done":
                break
            time.sleep(1)
        ingest = time.perf_counter() - start
        h = session.history
        stored = sum(len(s.blob or b"") for s in h.segments)
        stored += sum(len(x) for s in h.segments if s.lines for x in s.lines)
        print(f"ingested {info['batches']:,} batches in {ingest:.1f} s ({info['batches'] / ingest:,.0f}/s, "
              f"contract checks {'on' if args.check else 'off'}); history: {len(h.segments)} segments, "
              f"{stored / 1e6:.1f} MB of compressed records", flush=True)
        rng = random.Random(7)
        n = info["batches"]
        times = []
        for k in [rng.randrange(n) for _ in range(args.seeks)]:
            t = time.perf_counter()
            st = api.get(f"/api/sessions/{sid}/state", params={"batch": k}).json()
            times.append(time.perf_counter() - t)
            assert st["batch"] == k
        print(f"random seeks: p50 {pct(times, 50) * 1000:.0f} ms, p95 {pct(times, 95) * 1000:.0f} ms, "
              f"max {max(times) * 1000:.0f} ms over {len(times)}", flush=True)
        k0 = rng.randrange(n - 200)
        steps = []
        for k in range(k0, k0 + 100):
            t = time.perf_counter()
            api.get(f"/api/sessions/{sid}/state", params={"batch": k})
            steps.append(time.perf_counter() - t)
        print(f"stepping forward one batch at a time: p50 {pct(steps, 50) * 1000:.1f} ms, "
              f"p95 {pct(steps, 95) * 1000:.1f} ms", flush=True)
        t = time.perf_counter()
        api.get(f"/api/sessions/{sid}/explain", params={"batch": n // 2, "port": f"in,{args.operators},0"})
        print(f"explain at batch {n // 2:,}: {(time.perf_counter() - t) * 1000:.0f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
