"""Where the microseconds per task that ``blame_overhead.py`` reports go, in one process.

``blame_overhead.py`` says how much task tracking and blame add in all; this says which part pays it, per task, so
that the next design change aims at the right one. On the ``--copies`` log (the same one ``blame_overhead.py``
builds), best of ``--repeat``, CPU time:

* model: converting the Spark log with the task ledger as shipped, minus with a ledger that records nothing (the
  ``detail`` records' values, the ``clears``, the aggregates);
* replay: replaying the shipped records, minus the silent ledger's (the replay's holder details);
* blame: replaying the shipped records with a ``BlameTracker`` fed every applied record, minus without it.

Records are converted to a list first, so the replay and blame parts leave out reading and decoding.

    FLOWSCOPE_SPARK_EVENTS=../shared/spark-events .venv/bin/python benchmarks/blame_cost_split.py --copies 10
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def silent_ledger() -> type:
    """A task ledger that records nothing: the Spark model as it was before task-level holders (no ``detail``
    records, no ``clears``, no aggregates). ``blame_overhead.py``'s base modes use it too."""
    from backend.spark import tasks

    class Silent(tasks.TaskLedger):
        def stage_submitted(self, *a: Any, **k: Any) -> list: return []
        def task_started(self, *a: Any, **k: Any) -> list: return []
        def task_ended(self, *a: Any, **k: Any) -> None: return None
        def stage_completed(self, *a: Any, **k: Any) -> list: return []
        def release_stage(self, *a: Any, **k: Any) -> list: return []

    return Silent


def convert(log: Path, silent: bool) -> tuple[list[dict], float]:
    """The log's records and the CPU seconds converting it took (``silent``: task ledger recording nothing)."""
    import backend.spark.event_handlers as model
    from backend.spark.convert import SparkLogConversion

    shipped = model.TaskLedger
    if silent:
        model.TaskLedger = silent_ledger()  # type: ignore[misc]
    try:
        started = time.process_time()
        records = list(SparkLogConversion(str(log)))
        return records, time.process_time() - started
    finally:
        model.TaskLedger = shipped  # type: ignore[misc]


def replay(log: Path, records: list[dict], blame: bool) -> float:
    """CPU seconds replaying ``records`` (with ``blame``: each applied one also fed to a BlameTracker)."""
    from backend.spark.blame import spark_blame
    from tracker.replay import Replay

    r = Replay(str(log), observer=None, checked_records=True)
    apply = r.apply
    started = time.process_time()
    if blame:
        b = spark_blame(r)
        feed = b.record
        for rec in records:
            if apply(rec):
                feed(rec)
        b.times()
    else:
        for rec in records:
            apply(rec)
    r.finish()
    return time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    from replay_vs_history_server import built_log, log_options

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    log_options(ap, copies=10, repeat=3)
    args = ap.parse_args(argv)
    log, meta = built_log(args)
    n = meta["tasks"]
    best: dict[str, float] = {}

    def keep(name: str, seconds: float) -> None:
        best[name] = min(seconds, best.get(name, seconds))

    for _ in range(args.repeat):
        base, s = convert(log, True)
        keep("convert base", s)
        shipped, s = convert(log, False)
        keep("convert tasks", s)
        keep("replay base", replay(log, base, False))
        keep("replay tasks", replay(log, shipped, False))
        keep("replay blame", replay(log, shipped, True))
        del base, shipped
    print(f"log: {meta['jobs']} jobs, {n:,} tasks; CPU seconds, best of {args.repeat}")
    for name, s in best.items():
        print(f"  {name:<14} {s:6.3f} s")
    parts = {"model (task ledger)": best["convert tasks"] - best["convert base"],
             "replay (holder details)": best["replay tasks"] - best["replay base"],
             "blame (BlameTracker)": best["replay blame"] - best["replay tasks"]}
    for name, s in parts.items():
        print(f"  {name:<24} {s * 1e6 / n:5.1f} us per task")
    print(f"  {'all':<24} {sum(parts.values()) * 1e6 / n:5.1f} us per task")
    return 0


if __name__ == "__main__":
    sys.exit(main())
