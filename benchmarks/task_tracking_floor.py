"""Is "task tracking and blame add at most 20% to the replay" reachable in CPython? The floor, against the budget.

``blame_overhead.py`` measures what task-level tracking and blame add to the replay of the 100-job log (100,400
tasks). This asks how low that could go at all: it runs, per task, only the work the answers cannot do without,
written as straight-line Python with no function call, no check and no record dispatch, and compares it with the
budget (a fifth of the replay's own cost per task) and with what the shipped code costs.

The irreducible work per task, each step something an answer reads:

* the model: the task's fields read from its ``TaskStart`` into a ``detail`` value and record (explain names the
  task, its executor, host, launch); its id among the stage attempt's running tasks, removed at its end (the
  clear); its duration and input records and bytes kept for the stage's aggregate (skew, stragglers);
* the replay: the detail stored at its pointstamp and removed by the end's ``clears`` (explain at any batch);
* blame: the task's span (what held a slot from when to when, for waiting-for-slots), closed and indexed by its
  end; the end at the stage's interval (the holder, the what-if's siblings); the end batch's two count changes
  (blame follows each pointstamp's positive stretch itself: the replay settles in bulk).

The tasks are the log's own: the ``Task Info`` and ``Task Metrics`` of every task of ``--source``, decoded by the
model's decoder, repeated ``--copies`` times. The base, the shipped costs and the budget come from
``blame_overhead.py``'s own runs (fresh processes, CPU seconds, best of ``--repeat``) on the log it builds.

    .venv/bin/python benchmarks/task_tracking_floor.py --copies 100 --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

BUDGET = 0.20  # the goal: at most 20% over the replay


def task_events(source: Path) -> list[tuple[dict, dict, dict]]:
    """``(start info, end info, end metrics)`` of every task of ``source`` that started and ended, as the model's
    decoder gives them."""
    from backend.eventlog import EventLogReader
    from backend.spark.model.event_fields import model_decoder

    started: dict = {}
    out = []
    for ev in EventLogReader(source, decode=model_decoder()):
        e = ev.event
        kind = e.get("Event")
        if kind == "SparkListenerTaskStart":
            started[e["Task Info"]["Task ID"]] = e["Task Info"]
        elif kind == "SparkListenerTaskEnd":
            info = e["Task Info"]
            start = started.pop(info["Task ID"], None)
            if start is not None:
                out.append((start, info, e.get("Task Metrics") or {}))
    return out


def floor_seconds(tasks: list[tuple[dict, dict, dict]], copies: int) -> float:
    """CPU seconds of the irreducible per-task work (see the module docstring) over ``copies`` of ``tasks``."""
    scope, port, time_ = [1], ["out", 2, 0], 0
    running: set = set()
    durations: list[float] = []
    records_in: list[int] = []
    bytes_in: list[int] = []
    entries: dict = {}  # the replay's details of one pointstamp
    by_key: dict = {}  # blame's spans
    ended: list = []
    ends: list[float] = []
    task_ends: list = []  # blame: the ends while the stage's interval held
    counts = {("stage", 0): 1 << 40, ("child", 0): 1}  # blame: the end batch's pointstamps (always held)
    stage_out, child_in = ("stage", 0), ("child", 0)
    started = time.process_time()
    for k in range(copies):
        shift = k << 32
        for info, end, metrics in tasks:
            # the model, at the start: a detail record naming the task
            get = info.get
            tid = info["Task ID"] + shift
            launched = info["Launch Time"] / 1000.0
            running.add(tid)
            key = f"task {tid}"
            value = {"kind": "task", "task": tid, "index": get("Index"), "partition": get("Partition ID"),
                     "attempt": get("Attempt"), "executor": get("Executor ID"), "host": get("Host"),
                     "launched": launched, "speculative": bool(get("Speculative", False)), "stage": 3,
                     "stage_attempt": 0}
            rec = {"type": "detail", "scope": scope, "port": port, "time": time_, "key": key, "at": launched,
                   "value": value}
            # the replay: stored at its pointstamp
            entries[key] = (rec["value"], k, rec["at"])
            # blame: the task's span opens
            by_key[key] = [value["launched"], None, value["stage"], 5, value["host"], tid, key]
            # the model, at the end: the clear, the aggregate's values
            at = end["Finish Time"] / 1000.0
            running.discard(tid)
            inp = metrics.get("Input Metrics") or {}
            sh = metrics.get("Shuffle Read Metrics") or {}
            durations.append(at - launched)
            records_in.append((inp.get("Records Read") or 0) + (sh.get("Total Records Read") or 0))
            bytes_in.append((inp.get("Bytes Read") or 0) + (sh.get("Remote Bytes Read") or 0)
                            + (sh.get("Local Bytes Read") or 0))
            # the replay: the end's clears
            entries.pop(key, None)
            # blame: the span closes, the end joins the stage's interval, the end batch's counts move
            span = by_key[key]
            span[1] = at
            ended.append(span)
            ends.append(at)
            task_ends.append((at, tid, launched))
            counts[stage_out] -= 1
            counts[child_in] += 1
        # what a long application keeps bounded (aggregates replace the lists; spans are pruned)
        for kept in (durations, records_in, bytes_in, by_key, ended, ends, task_ends):
            kept.clear()
    return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    from blame_overhead import run
    from replay_vs_history_server import built_log, log_options

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    log_options(ap, copies=100, repeat=3)
    args = ap.parse_args(argv)
    log, meta = built_log(args)
    n = meta["tasks"]
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        for mode in ("base", "tasks", "blame"):
            best[mode] = min(best.get(mode, float("inf")), run(log, mode)["seconds"])
    tasks = task_events(args.source)
    floor = min(floor_seconds(tasks, args.copies) for _ in range(args.repeat))
    per = {k: v * 1e6 / n for k, v in best.items()}
    floor_per = floor * 1e6 / (len(tasks) * args.copies)
    budget = BUDGET * per["base"]
    print(f"log: {meta['jobs']} jobs, {n:,} tasks; microseconds of CPU per task, best of {args.repeat}")
    print(f"  the replay (no task details, no blame)   {per['base']:6.2f}")
    print(f"  budget: {BUDGET:.0%} of it                      {budget:6.2f}")
    print(f"  shipped: task details                    {per['tasks'] - per['base']:6.2f}")
    print(f"  shipped: task details + blame            {per['blame'] - per['base']:6.2f} "
          f"({per['blame'] / per['base'] - 1:+.1%})")
    print(f"  floor: the irreducible work, inlined     {floor_per:6.2f} ({floor_per / per['base']:+.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
