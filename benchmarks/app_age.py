"""Cost per event as an application ages: does the 100,000th job cost what the 1,000th did?

Long-running applications (a notebook with 100,000 jobs, a streaming query running for days) are where people
need a debugger, and where a per-event cost that grows with the number of jobs so far turns a post-mortem into a
wait. This script replicates a real, small, many-job application (`fixtures/spark/batch_shuffle` by default: 7 jobs,
one SQL execution, a reused shuffle) into 1,000 / 10,000 / 100,000 jobs (ids renumbered, times shifted, as
`replay_vs_history_server.py` does) and measures, in one process each:

* **record**: the event log through the reader and the Spark model into progress records;
* **frontiers**: the same, and every record applied to the tracker (`Replay`), to the full state;

reporting events/s over the whole log and over its first and last tenth (the slope is the point: flat means the
cost follows the event, not the application's age).

Run::

    .venv/bin/python benchmarks/app_age.py                      # 1,000 / 10,000 / 100,000 jobs
    .venv/bin/python benchmarks/app_age.py --jobs 1000 10000    # a quicker look
"""

from __future__ import annotations

import argparse
import json
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

# One run in a fresh process: times every WINDOW events, so the first and last tenth can be compared.
MEASURE = r"""
import json, sys, time
from backend.spark.convert import SparkLogConversion
from tracker.replay import Replay
path, mode = sys.argv[1], sys.argv[2]
conversion = SparkLogConversion(path)
replay = Replay(path) if mode == "frontiers" else None
marks = []  # (events read so far, seconds)
t0 = time.perf_counter()
next_mark = 0
for rec in conversion:
    if replay is not None:
        replay.apply(rec)
    events = conversion.reader.stats.events
    if events >= next_mark:
        marks.append((events, time.perf_counter() - t0))
        next_mark = events + 2000
if replay is not None:
    replay.finish()
total = time.perf_counter() - t0
events = conversion.summary().events
print(json.dumps({"seconds": total, "events": events, "marks": marks}))
"""


def window_rate(marks: list[list[float]], lo: float, hi: float) -> float:
    """Events/s between the fractions lo and hi of the log (by events)."""
    if len(marks) < 4:
        return float("nan")
    n = marks[-1][0]
    inside = [m for m in marks if lo * n <= m[0] <= hi * n]
    if len(inside) < 2:
        return float("nan")
    (e0, t0), (e1, t1) = inside[0], inside[-1]
    return (e1 - e0) / (t1 - t0) if t1 > t0 else float("nan")


def measure(log: Path, mode: str) -> dict:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(log), mode], capture_output=True, text=True, cwd=REPO,
                          check=False)
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
    ap.add_argument("--modes", nargs="+", default=["record", "frontiers"], choices=["record", "frontiers"])
    args = ap.parse_args()
    from backend.sources import EventLogReader

    per_copy = sum(1 for ev in EventLogReader(args.source) if ev.event.get("Event") == "SparkListenerJobStart")
    rows = []
    for jobs in args.jobs:
        copies = max(1, round(jobs / per_copy))
        log, meta = ensure_log(args.source, copies, regen=False)
        for mode in args.modes:
            r = measure(log, mode)
            rows.append((meta["jobs"], mode, r["events"], r["seconds"], r["events"] / r["seconds"], r["first_tenth"],
                         r["last_tenth"]))
            print(f"{meta['jobs']:>7,} jobs {mode:>9}: {r['events']:>9,} events in {r['seconds']:7.1f} s = "
                  f"{r['events'] / r['seconds']:>8,.0f} events/s (first tenth {r['first_tenth']:,.0f}, "
                  f"last tenth {r['last_tenth']:,.0f})", flush=True)
    print("\njobs | mode | events | s | events/s | first 10% | last 10%")
    for row in rows:
        print(f"{row[0]:,} | {row[1]} | {row[2]:,} | {row[3]:.1f} | {row[4]:,.0f} | {row[5]:,.0f} | {row[6]:,.0f}")
    for mode in args.modes:
        rates = [r[4] for r in rows if r[1] == mode]
        if len(rates) > 1:
            print(f"{mode}: events/s smallest / largest application = {rates[0] / rates[-1]:.2f}x (goal <= 1.3x)")


if __name__ == "__main__":
    main()
