"""Cost per event as an application ages: does the 100,000th job cost what the 1,000th did, and does memory stay put?

Long-running applications (a notebook with 100,000 jobs, a streaming query running for days) are where people
need a debugger, and where a per-event cost that grows with the number of jobs so far turns a post-mortem into a
wait. This script replicates a real, small, many-job application (`fixtures/spark/batch_shuffle` by default: 7 jobs,
three lone jobs and one SQL execution, a reused shuffle) into 1,000 / 10,000 / 100,000 jobs (ids renumbered, times
shifted, as `replay_vs_history_server.py` does) and measures, in a fresh process each:

* **record**: the event log through the reader and the Spark model into progress records;
* **frontiers**: the same, and every record applied to a one-shot tracker (`Replay`, as `flowscope frontiers`:
  it keeps every region, so its memory grows with the application);
* **live**: the same into a tracker that folds finished regions (`Replay(keep_finished=64)`, a session's, and
  the model folding ended jobs past the latest 1,000, a session's): the live tracker alone, without the session's
  history;
* **serve**: a server session (`backend.sessions.session.Session`, the feed `flowscope serve LOG` opens) run until
done on
  an event loop: model, folding tracker, history with checkpoints, charts, blame bookkeeping.

Each reports events per CPU second (user+sys of the process: on a loaded machine wall time mostly measures the
other processes) over the whole log and over its first and last tenth (the slope is the point: flat means the
cost follows the event, not the application's age), wall seconds beside it, peak RSS, and for
``serve`` the regions still live at the end and the history's size (records, checkpoints, the batch index).

Run::

    .venv/bin/python benchmarks/app_age.py                      # 1,000 / 10,000 / 100,000 jobs, every mode
    .venv/bin/python benchmarks/app_age.py --jobs 1000 10000    # a quicker look
    .venv/bin/python benchmarks/app_age.py --modes serve live
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from replay_vs_history_server import ensure_log  # noqa: E402  (one log replicator for every benchmark)

DEFAULT_SOURCE = next((REPO / "fixtures" / "spark" / "batch_shuffle").glob("eventlog_v2_*"))
MODES = ["record", "frontiers", "live", "serve"]

# One run in a fresh process: CPU time every 500 events, so the first and last tenth can be compared.
MEASURE = r"""
import json, resource, sys, time
path, mode, total_events = sys.argv[1], sys.argv[2], int(sys.argv[3])
marks = []  # (events read so far, CPU seconds of the process: a loaded machine's waits are left out)
extra = {}
from flowscope.cli import tune_collector
tune_collector()  # as every flowscope process does (the commands, the server)
t0 = time.perf_counter()
c0 = time.process_time()
if mode == "serve":
    import asyncio
    from backend.sessions.session import Session
    from backend.spark.live.follow_feed import SparkLogFeed
    feed = SparkLogFeed(path, follow=False)
    session = Session(feed)
    session.listeners.append(lambda s: marks.append((s.records, time.process_time() - c0)))  # records applied

    async def run():
        session.start()
        while session.status not in ("done", "failed"):
            await asyncio.sleep(0.05)

    asyncio.run(run())
    assert session.status == "done", session.error
    events = feed.events
    marks = [(round(r * events / max(1, session.records)), t) for r, t in marks]  # records -> events, pro rata
    h = session.history
    extra = {"live_regions": sum(1 for _ in session.replay.root.scopes()) - 1, "folded": session.replay.folded,
             "errors": len(session.errors()),
             "history_mb": h.scratch.size / 1e6,  # compressed pages in the scratch file, on disk
             "index_mb": (8 * len(h.died_at) + 8 * len(h.segment_max)) / 1e6,  # per structure record, segment
             "checkpoints": len(h.segments)}
else:
    from backend.spark.recording.convert import SparkLogConversion
    from tracker.progress_log.replay import Replay
    conversion = SparkLogConversion(path)
    replay = None
    if mode == "frontiers":
        replay = Replay(path, checked_records=True)
    elif mode == "live":
        from backend.spark.model.retention import SESSION_RETAINED_JOBS
        conversion.model.retain_jobs = SESSION_RETAINED_JOBS  # as a session's model: Spark's job list folds
        replay = Replay(path, keep_finished=64, checked_records=True)
    next_mark = 0
    for rec in conversion:
        if replay is not None:
            replay.apply(rec)
        events = conversion.reader.stats.events
        if events >= next_mark:
            marks.append((events, time.process_time() - c0))
            next_mark = events + 500
    if replay is not None:
        replay.finish()
        extra = {"live_regions": sum(1 for _ in replay.root.scopes()) - 1, "folded": replay.folded,
                 "errors": len(replay.errors)}
    events = conversion.summary().events
total = time.perf_counter() - t0
marks.append((events, time.process_time() - c0))
print(json.dumps({"seconds": total, "cpu": time.process_time() - c0, "events": events, "marks": marks,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **extra}))
"""


def window_rate(marks: list[list[float]], lo: float, hi: float) -> float:
    """Events per CPU second between the fractions lo and hi of the log (by events)."""
    if len(marks) < 4:
        return float("nan")
    n = marks[-1][0]
    inside = [m for m in marks if lo * n <= m[0] <= hi * n]
    if len(inside) < 2:
        return float("nan")
    (e0, t0), (e1, t1) = inside[0], inside[-1]
    return (e1 - e0) / (t1 - t0) if t1 > t0 else float("nan")


def measure(log: Path, mode: str, events: int) -> dict:
    started = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(log), mode, str(events)], capture_output=True,
                          text=True, cwd=REPO, check=False, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed on {log}:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall"] = time.perf_counter() - started
    result["first_tenth"] = window_rate(result["marks"], 0.0, 0.1)
    result["last_tenth"] = window_rate(result["marks"], 0.9, 1.0)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--modes", nargs="+", default=MODES, choices=MODES)
    args = ap.parse_args()
    from backend.eventlog import EventLogReader

    per_copy = sum(1 for ev in EventLogReader(args.source) if ev.event.get("Event") == "SparkListenerJobStart")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1 and 5 min), {os.cpu_count()} cores", flush=True)
    rows = []
    for jobs in args.jobs:
        copies = max(1, round(jobs / per_copy))
        log, meta = ensure_log(args.source, copies, regen=False)
        for mode in args.modes:
            r = measure(log, mode, meta["events"])
            rate = r["events"] / r["cpu"]
            rows.append((meta["jobs"], mode, r, rate))
            more = ""
            if "live_regions" in r:
                more = f", {r['live_regions']} regions live, {r['folded']:,} folded, {r['errors']} errors"
            if "history_mb" in r:
                more += (f", history {r['history_mb']:.1f} MB on disk ({r['history_mb'] * 1e3 / meta['jobs']:.2f} "
                         f"kB/job), its index {r['index_mb'] * 1e3 / meta['jobs']:.2f} kB/job in memory")
            print(f"{meta['jobs']:>7,} jobs {mode:>9}: {r['events']:>9,} events in {r['seconds']:7.1f} s "
                  f"(cpu {r['cpu']:.1f} s) = {rate:>8,.0f} events/cpu-s (first tenth {r['first_tenth']:,.0f}, "
                  f"last tenth {r['last_tenth']:,.0f}), peak RSS {r['rss_mb']:,.0f} MB{more}", flush=True)
    print("\njobs | mode | events | wall s | cpu s | events/cpu-s | first 10% | last 10% | peak RSS MB")
    for jobs, mode, r, rate in rows:
        print(f"{jobs:,} | {mode} | {r['events']:,} | {r['seconds']:.1f} | {r['cpu']:.1f} | {rate:,.0f} | "
              f"{r['first_tenth']:,.0f} | {r['last_tenth']:,.0f} | {r['rss_mb']:,.0f}")
    for mode in args.modes:
        rates = [rate for _, m, _, rate in rows if m == mode]
        rss = [r["rss_mb"] for _, m, r, _ in rows if m == mode]
        if len(rates) > 1:
            print(f"{mode}: events/cpu-s smallest / largest application = {rates[0] / rates[-1]:.2f}x (goal <= 1.3x); "
                  f"peak RSS largest / smallest = {rss[-1] / rss[0]:.2f}x")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1 and 5 min)")


if __name__ == "__main__":
    main()
