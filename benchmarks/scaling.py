"""Cost per batch as the graph grows: replay at 20, 200 and 2,000 operators.

The claim under test: the cost of applying a progress batch follows the frontier changes it causes, not the size
of the graph. The tracker propagates only frontier *changes*, through a heap, from the ports a batch touches. The
log is ``benchmarks/gen_pipeline.py``'s root-scope pipeline with a feedback loop (+1) and several epochs in
flight, each batch moving one record one operator on. What its batches do to frontiers, at any size:

* most (75-85%) change no frontier at all: any record of epoch ``e`` inside the loop holds every loop port at
  ``e + 1`` through the feedback, so only the oldest epoch's record is visible; moving any other costs the fixed
  per-batch work (validate, count, settle) only;
* about one in six moves the oldest record, and changes the frontier at the few ports it leaves (4 changes);
* once per epoch, when the oldest epoch's last record leaves the loop, the whole loop's frontier advances from
  ``e + 1`` to ``e + 2``: about ``3 x operators`` real changes in one batch, whose cost is proportional to them.

So the cost per batch should stay flat while the graph grows 100x, the cost per frontier change too, and only the
once-per-epoch global advance may (and must) cost in proportion to the graph. The second table shows the three
kinds of batch separately.

What it measures, per size, in-process:

* the log is generated into ``benchmarks/out/`` (reused when present) and parsed up front; parsing is not timed;
* ``build``: applying the structure records and building the scope's tracker (reachability summaries to the scope
  outputs), a one-off cost that does grow with the graph, reported for contrast;
* ``us/batch``: the wall-clock time of ``Replay.apply`` over every progress record (validation, propagation and
  settling the hierarchy, exactly what ``flowscope frontiers`` does per batch), divided by the number of batches;
  best of ``--repeat`` runs (default 5), each on a fresh ``Replay``, with the spread (max - min) and the median
  shown, and ``CPU``, the same from the process's CPU time (best of the runs), which other processes competing
  for the cores disturb much less than wall-clock time;
* the parsed records are hidden from the cyclic garbage collector (``gc.freeze``): ``flowscope frontiers`` streams
  them, and the full collections that the allocations of the rare large batches trigger would otherwise walk
  ~60k retained records and charge the replay for the benchmark's own memory (+1.5 us/batch at 2,000 operators);
* ``changes/batch`` and ``us/change``: the frontier changes each batch causes (every ``+1``/``-1`` of a port's
  frontier, counted in a separate run with ``Replay(observer=...)``, since observing costs time), and the timed
  cost (wall clock; ``CPU/change``: CPU time) divided by them;
* the breakdown: a further set of runs timing every batch on its own, grouped by the frontier changes it caused
  (0, 1-20, more than 20).

The sizes use the same number of *batches* (about ``--batches``, default 60,000; epochs = batches / (2 x
operators)), not the same number of epochs: the same epochs at 2,000 operators would be 1.2M batches, whose
pre-parsed records alone need gigabytes, and equal batch counts give every size the same amount of work to
average over, so the per-batch figures compare like with like (and the global advances, epochs x 3 x operators
changes, stay at ~1.5 changes per batch on average at every size). The number of epochs in flight (``--in-flight``,
default 4) is the same at every size, so each batch meets the same amount of concurrent progress and only the
graph's size changes. (At 2,000 operators that leaves 15 epochs, spread 500 steps apart, so part of the run is
ramp-up and drain with fewer records in flight: changes per batch are reported per size for that reason.)

Run::

    .venv/bin/python benchmarks/scaling.py                  # 20, 200, 2000 operators, ~60k batches each
    .venv/bin/python benchmarks/scaling.py --quick          # ~12k batches each, best of 3
    .venv/bin/python benchmarks/scaling.py --sizes 20 200 2000 20000 --batches 40000
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))

from gen_pipeline import default_path, write_pipeline  # noqa: E402

from tracker.progress_log.log_file import read_records  # noqa: E402
from tracker.progress_log.replay import Replay  # noqa: E402


def load(operators: int, epochs: int, in_flight: int) -> tuple[str, list[dict], list[dict]]:
    """Generate (or reuse) the log; return its structure records and its progress records, parsed."""
    path = default_path(operators, epochs, in_flight)
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_pipeline(path, operators, epochs, in_flight)
    structure, progress = [], []
    for _, rec in read_records(path):
        kind = rec.get("type")
        if kind == "progress":
            progress.append(rec)
        elif kind != "mark":
            structure.append(rec)
    return path, structure, progress


def timed_run(structure: list[dict], progress: list[dict]) -> tuple[float, float, float]:
    """(build seconds, progress wall-clock seconds, progress CPU seconds) for one fresh replay."""
    gc.collect()
    replay = Replay("<bench>")
    t0 = time.perf_counter()
    for rec in structure:
        replay.apply(rec)
    replay.root.schedule()  # build the tracker now, outside the timed batches
    t1 = time.perf_counter()
    c1 = time.process_time()
    apply = replay.apply
    for rec in progress:
        apply(rec)
    c2 = time.process_time()
    t2 = time.perf_counter()
    replay.finish()
    if replay.errors or replay.batches_applied != len(progress):
        raise SystemExit(f"replay rejected records: {replay.errors[:3]}")
    return t1 - t0, t2 - t1, c2 - c1


def count_changes(structure: list[dict], progress: list[dict]) -> tuple[int, int, list[int]]:
    """Frontier changes per batch (an untimed run with an observer); also those of the initial build."""
    per_batch: list[int] = []
    replay = Replay("<count>", observer=lambda info, scope, updates, pushed: per_batch.append(len(pushed)))
    for rec in structure:
        replay.apply(rec)
    replay.root.schedule()
    initial = len(replay._sink or [])  # changes of the initial build, before any batch (not counted below)
    if replay._sink:
        replay._sink.clear()
    for rec in progress:
        replay.apply(rec)
    return sum(per_batch), initial, per_batch


BUCKETS = (("0", 0, 0), ("1-20", 1, 20), (">20", 21, 1 << 62))


def breakdown(structure: list[dict], progress: list[dict], per_batch: list[int], repeat: int) -> dict:
    """Time every batch on its own (best total of ``repeat`` runs) and group by the frontier changes it caused."""
    best: list[float] | None = None
    for _ in range(repeat):
        gc.collect()
        replay = Replay("<breakdown>")
        for rec in structure:
            replay.apply(rec)
        replay.root.schedule()
        apply, clock, times = replay.apply, time.perf_counter, []
        for rec in progress:
            a = clock()
            apply(rec)
            times.append(clock() - a)
        if best is None or sum(times) < sum(best):
            best = times
    assert best is not None
    out = {}
    for name, lo, hi in BUCKETS:
        picked = [(c, t) for c, t in zip(per_batch, best, strict=True) if lo <= c <= hi]
        n, secs, changes = len(picked), sum(t for _, t in picked), sum(c for c, _ in picked)
        out[name] = (n, secs / n * 1e6 if n else 0.0, secs / changes * 1e6 if changes else float("nan"),
                     secs / sum(best) if best else 0.0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="replay cost per batch at 20, 200 and 2000 operators")
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 200, 2000])
    ap.add_argument("--batches", type=int, default=None,
                    help="about this many batches per size (default 60000; --quick 12000)")
    ap.add_argument("--in-flight", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per size (default 5; --quick 3)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    target = args.batches or (12_000 if args.quick else 60_000)
    repeat = args.repeat or (3 if args.quick else 5)

    print(f"python {sys.version.split()[0]}; {os.cpu_count()} cpus; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; ~{target} batches per size, "
          f"{args.in_flight} epochs in flight, best of {repeat}")
    print()
    header = (f"{'operators':>9} {'epochs':>6} {'batches':>8} {'build ms':>9} {'us/batch':>9} {'spread':>7} "
              f"{'median':>7} {'CPU':>7} {'changes/batch':>13} {'max':>5} {'us/change':>9} {'CPU/change':>10}")
    print(header)
    rows = []
    for n in args.sizes:
        epochs = max(1, round(target / (2 * n)))
        path, structure, progress = load(n, epochs, args.in_flight)
        # The pre-parsed records are a benchmark artifact (the CLI streams them): keep them out of the cyclic
        # GC's sight, or its full collections, triggered by the allocations of the large batches, walk them all.
        gc.collect()
        gc.freeze()
        total_changes, _, per_batch = count_changes(structure, progress)
        builds, runs, cpus = [], [], []
        for _ in range(repeat):
            b, p, c = timed_run(structure, progress)
            builds.append(b)
            runs.append(p)
            cpus.append(c)
        nb = len(progress)
        best = min(runs)
        us_batch = best / nb * 1e6
        row = {
            "operators": n, "epochs": epochs, "batches": nb, "build_ms": min(builds) * 1e3,
            "us_batch": us_batch, "spread_us": (max(runs) - best) / nb * 1e6,
            "median_us": statistics.median(runs) / nb * 1e6, "cpu_us": min(cpus) / nb * 1e6,
            "changes_batch": total_changes / nb, "max_changes": max(per_batch),
            "us_change": best / total_changes * 1e6 if total_changes else float("nan"),
            "cpu_change": min(cpus) / total_changes * 1e6 if total_changes else float("nan"),
        }
        row["breakdown"] = breakdown(structure, progress, per_batch, repeat)
        rows.append(row)
        print(f"{n:>9} {epochs:>6} {nb:>8} {row['build_ms']:>9.1f} {us_batch:>9.2f} {row['spread_us']:>7.2f} "
              f"{row['median_us']:>7.2f} {row['cpu_us']:>7.2f} {row['changes_batch']:>13.2f} {row['max_changes']:>5} "
              f"{row['us_change']:>9.2f} {row['cpu_change']:>10.2f}", flush=True)
        gc.unfreeze()
        del structure, progress
    print()
    print("by the frontier changes a batch causes (each batch timed on its own, so ~0.1 us of timer overhead each):")
    print(f"{'operators':>9} {'changes':>8} {'batches':>8} {'share':>6} {'us/batch':>9} {'us/change':>9} {'time':>6}")
    for row in rows:
        for name, (n, us, us_change, share) in row["breakdown"].items():
            print(f"{row['operators']:>9} {name:>8} {n:>8} {n / row['batches']:>6.1%} {us:>9.2f} {us_change:>9.2f} "
                  f"{share:>6.1%}")
    if len(rows) > 1:
        lo, hi = rows[0], rows[-1]
        print()
        print(f"graph {hi['operators'] / lo['operators']:.0f}x larger: "
              f"cost per batch x{hi['us_batch'] / lo['us_batch']:.2f} (CPU time x{hi['cpu_us'] / lo['cpu_us']:.2f}), "
              f"per frontier change x{hi['us_change'] / lo['us_change']:.2f}, "
              f"one-off build x{hi['build_ms'] / lo['build_ms']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
