"""Cost per event as an application keeps adding regions: does it stay flat at 1,000, 10,000 and 100,000 regions?

A long application (a notebook running job after job, a streaming query for days) grows its root scope by one
region per job. The claim under test: adding a region, its operators and edges costs what was added, not the size
of the scope it joins, so the cost per event is the same for the application's 100,000th job as for its 1,000th.

The workload is built with the tracker's own API (``Subgraph``), shaped like the Spark model's jobs: per job a new
region under the root (no inputs or outputs), a driver source holding a capability at the job's epoch, a driver
sink, and a chain of ``--stages`` stage operators (input 0: work from the driver; input 1: the previous stage's
output), each stage taking ``--tasks`` capabilities when submitted. Its events, each one atomic batch followed by
``root.schedule()`` (what a session does per batch): job start (a token to every stage), each stage's submission
(consume tokens, take one capability per task), each task's end (drop one capability, send a token on), job end
(the sink consumes, the driver releases its capability). With ``--observe`` a frontier-change sink is attached, as
in an observed session.

Reported: for the window of ``--window`` jobs ending at each size, events (batches) per second of wall-clock time
and of the process's CPU time (which other processes competing for the cores disturb much less), with the growth
(structure records) counted in the window's time; and the ratio of the fastest to the slowest window (CPU). Jobs between
the windows are one-operator regions that start and end in one batch: the root grows by one region per job just
the same, and the application ages to 100,000 regions within the benchmark's time. With
``--retire`` each finished region is retired from the root (``Subgraph.retire``), which keeps the live tracker's
size bounded; the resident memory (RSS) at each size is shown either way.

Run::

    .venv/bin/python benchmarks/growth.py                          # 1,000 / 10,000 / 100,000 regions
    .venv/bin/python benchmarks/growth.py --sizes 1000 10000 --observe
    .venv/bin/python benchmarks/growth.py --retire
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tracker.reachability import Source, Target  # noqa: E402
from tracker.subgraph import Subgraph  # noqa: E402


def rss_mb() -> float:
    """Current resident set size (Linux /proc), else the peak."""
    try:
        with open(f"/proc/{os.getpid()}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_filler_job(root: Subgraph, node: int, retire: bool) -> None:
    """A one-operator region that starts and ends in one batch: ages the application between measured windows."""
    region = root.add_scope(node, f"job {node}")
    region.add_operator(1, "driver (new work)", 0, 1, capabilities=[[0]])
    region.receive([(Source(1, 0), 0, -1)])
    root.schedule()
    if retire:
        root.retire(node)


def run_job(root: Subgraph, node: int, stages: int, tasks: int, retire: bool) -> int:
    """Add one job's region and run it to completion; returns the number of events (batches) applied."""
    region = root.add_scope(node, f"job {node}")
    region.add_operator(1, "driver (new work)", 0, 1, capabilities=[[0]])
    region.add_operator(2, "driver (results)", 1, 0)
    first = 3
    for k in range(stages):
        op = first + k
        region.add_operator(op, f"stage {k}", 1 if k == 0 else 2, 1)
        region.add_edge(Source(1, 0), Target(op, 0))
        if k:
            region.add_edge(Source(op - 1, 0), Target(op, 1))
    region.add_edge(Source(first + stages - 1, 0), Target(2, 0))
    events = 0

    def batch(updates: list) -> None:
        nonlocal events
        region.receive(updates)
        root.schedule()
        events += 1

    batch([(Target(first + k, 0), 0, 1) for k in range(stages)])  # job start: work for every stage
    for k in range(stages):
        op = first + k
        submit = [(Target(op, 0), 0, -1), (Source(op, 0), 0, tasks)]
        if k:
            submit.append((Target(op, 1), 0, -tasks))  # the previous stage's output
        batch(submit)
        downstream = Target(op + 1, 1) if k + 1 < stages else Target(2, 0)
        for _ in range(tasks):
            batch([(Source(op, 0), 0, -1), (downstream, 0, 1)])
    batch([(Target(2, 0), 0, -tasks), (Source(1, 0), 0, -1)])  # job end
    if retire:
        root.retire(node)
    return events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000], help="regions at each report")
    ap.add_argument("--window", type=int, default=500, help="jobs per measured window (ending at each size)")
    ap.add_argument("--stages", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--observe", action="store_true", help="attach a frontier-change sink (an observed session)")
    ap.add_argument("--retire", action="store_true", help="retire each region once its job is done")
    ap.add_argument("--max-seconds", type=float, default=110.0, help="stop (and say so) after this long")
    args = ap.parse_args()
    sizes = sorted(args.sizes)
    root = Subgraph(name="application")
    sink: list | None = [] if args.observe else None
    root.set_pushed_sink(sink)
    root.schedule()
    windows = {n: max(1, n - args.window) for n in sizes}
    started = time.perf_counter()
    rows: list[tuple[int, float]] = []
    events = 0
    mark = None
    node = 0
    print(f"stages {args.stages}, tasks {args.tasks}, observe {args.observe}, retire {args.retire}")
    print(f"{'regions':>9} {'events/s':>10} {'per CPU s':>10} {'CPU us/ev':>9} {'RSS MB':>8}")
    for n in sizes:
        while node < n:
            node += 1
            if node == windows[n]:
                mark = (time.perf_counter(), time.process_time(), events)
            if node >= windows[n]:
                events += run_job(root, node, args.stages, args.tasks, args.retire)
            else:
                run_filler_job(root, node, args.retire)
            if sink:
                sink.clear()
            if time.perf_counter() - started > args.max_seconds:
                print(f"stopped at {node} regions after {args.max_seconds:.0f} s (--max-seconds)")
                return summarize(rows)
        assert mark is not None
        rate = (events - mark[2]) / (time.perf_counter() - mark[0])
        cpu_rate = (events - mark[2]) / (time.process_time() - mark[1])
        rows.append((n, cpu_rate))
        print(f"{n:>9} {rate:>10,.0f} {cpu_rate:>10,.0f} {1e6 / cpu_rate:>9.1f} {rss_mb():>8.0f}", flush=True)
    root.schedule()
    assert not any(s.tracker is not None and s.tracker.tracking_anything() for s in root.scopes()), "jobs still run"
    summarize(rows)


def summarize(rows: list[tuple[int, float]]) -> None:
    if len(rows) > 1:
        rates = [r for _, r in rows]
        print(f"fastest / slowest window (events per CPU second): {max(rates) / min(rates):.2f}x (goal: within 1.3x)")


if __name__ == "__main__":
    main()
