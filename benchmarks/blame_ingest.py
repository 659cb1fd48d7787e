"""What blame costs a live session's ingest: bench_browser's latency pipeline, without the browser.

The records are those ``bench_browser.py``'s latency part pushes (a chain of ``--operators`` operators, 40 epochs in
flight, epochs marching through the whole pipeline). They are pushed into a ``PushFeed`` up front and a real
``Session`` ingests them on an event loop, as the server does; no subscriber, so what is measured is the ingest
(replay, history, blame, task timeline), not the stream. Two runs, best of ``--repeat``: the session as shipped,
and the same with its blame tracker fed nothing. Reported: CPU seconds per run, batches per CPU second, and
blame's share of the ingest. ``--profile`` prints the top functions of one shipped run (cProfile).

    .venv/bin/python benchmarks/blame_ingest.py [--operators 200] [--batches 40000] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from backend.feeds.progress_feeds import PushFeed  # noqa: E402
from backend.sessions.session import Session  # noqa: E402
from tests.e2e.logs import pipeline_records  # noqa: E402


def records(operators: int, batches: int) -> list[dict]:
    out = []
    progress = 0
    for r in pipeline_records(operators, batches // operators + 20, in_flight=40, header=False):
        out.append(r)
        if r["type"] == "progress":
            progress += 1
            if progress >= batches:
                break
    return out


def ingest(recs: list[dict], with_blame: bool, profile: bool = False) -> tuple[float, int]:
    feed = PushFeed("blame-ingest")
    feed.push_many(recs)
    feed.end()
    session = Session(feed, "blame-ingest")
    if not with_blame:
        session.blame.record = lambda rec, line=None: None  # type: ignore[method-assign]
    prof = cProfile.Profile() if profile else None
    t0 = time.process_time()
    if prof is not None:
        prof.enable()
    asyncio.run(session.run())
    if prof is not None:
        prof.disable()
    cpu = time.process_time() - t0
    if prof is not None:
        st = pstats.Stats(prof)
        st.sort_stats("cumulative").print_stats(30)
        st.sort_stats("tottime").print_stats(25)
    assert session.status == "done", (session.status, session.error)
    return cpu, session.head


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--operators", type=int, default=200)
    ap.add_argument("--batches", type=int, default=40_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    recs = records(args.operators, args.batches)
    if args.profile:
        ingest(recs, True, profile=True)
        return 0
    best: dict[bool, float] = {}
    batches = 0
    for _ in range(args.repeat):
        for with_blame in (False, True):
            cpu, batches = ingest(recs, with_blame)
            best[with_blame] = min(cpu, best.get(with_blame, cpu))
    off, on = best[False], best[True]
    print(f"{args.operators} operators, {batches:,} batches (best of {args.repeat}, CPU seconds):")
    print(f"  session without blame {off:6.2f} s  {batches / off:8,.0f} batches/s")
    print(f"  session as shipped    {on:6.2f} s  {batches / on:8,.0f} batches/s")
    print(f"blame's share of ingest: {(on - off) / on:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
