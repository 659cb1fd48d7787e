"""Where the microseconds per task that ``blame_overhead.py`` reports go, in one process.

``blame_overhead.py`` says how much task tracking and blame add in all; this says which part pays it, per task, so
that the next design change aims at the right one. On the ``--copies`` log (the same one ``blame_overhead.py``
builds), best of ``--repeat``, CPU time:

* model: converting the Spark log with the task ledger as shipped, minus with a ledger that records nothing (the
  ``detail`` records' values, the ``clears``, the aggregates);
* replay: replaying the shipped records, minus the silent ledger's (the replay's holder details);
* blame: replaying the shipped records with a ``BlameTracker`` fed every applied record, minus without it.

Records are converted to a list first, so the replay and blame parts leave out reading and decoding. ``--steps``
splits blame's own part by step instead: the pointstamp bookkeeping of each progress batch (with the completion
checks inside it), the walks (with the Spark naming inside them), the task index and marks, structure records.

    FLOWSCOPE_SPARK_EVENTS=../shared/spark-events .venv/bin/python benchmarks/blame_cost_split.py --copies 10
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from backend.spark.diagnosis.tasks import TaskLedger

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def silent_ledger() -> type[TaskLedger]:
    """A task ledger that records nothing: the Spark model as it was before task-level holders (no ``detail``
    records, no ``clears``, no aggregates). ``blame_overhead.py``'s base modes use it too."""
    from backend.spark.diagnosis import tasks
    class Silent(tasks.TaskLedger):
        def stage_submitted(self, *a: Any, **k: Any) -> list: return []
        def task_started(self, *a: Any, **k: Any) -> None: return None
        def task_ended(self, *a: Any, **k: Any) -> None: return None
        def stage_completed(self, *a: Any, **k: Any) -> list: return []
        def release_stage(self, *a: Any, **k: Any) -> list: return []

    return Silent


def convert(log: Path, silent: bool) -> tuple[list[dict], float]:
    """The log's records and the CPU seconds converting it took (``silent``: task ledger recording nothing)."""
    import backend.spark.model.event_handlers as model
    from backend.spark.recording.convert import SparkLogConversion

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
    from backend.spark.diagnosis.blame import spark_blame
    from tracker.progress_log.replay import Replay

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


STEPS = [  # (label, class path, method): blame's steps; an indented label is a part of the one above it
    ("progress batches", "tracker.analysis.blame.BlameTracker", "_progress"),
    ("  completion checks", "tracker.analysis.blame.BlameTracker", "_completed"),
    ("walks", "tracker.analysis.blame.BlameTracker", "_blame"),
    ("  Spark naming", "backend.spark.diagnosis.blame.SparkVocabulary", "segments"),
    ("  driver naming, jobs", "backend.spark.diagnosis.blame.SparkVocabulary", "describe"),
    ("prunes", "tracker.analysis.blame.BlameTracker", "_prune"),
    ("details and marks", "backend.spark.diagnosis.blame.SparkVocabulary", "record"),
    ("structure records", "tracker.analysis.blame.BlameTracker", "_structure_changed"),
]


def blame_steps(log: Path, records: list[dict]) -> dict[str, float]:
    """CPU seconds of each of blame's STEPS over one replay of ``records`` (each call timed: a little added)."""
    import importlib

    spent = dict.fromkeys([label for label, _, _ in STEPS], 0.0)
    originals = []
    for label, owner, name in STEPS:
        module, cls_name = owner.rsplit(".", 1)
        cls = getattr(importlib.import_module(module), cls_name)
        method = getattr(cls, name)
        originals.append((cls, name, method))

        def timed(*a: Any, _method: Any = method, _label: str = label, **k: Any) -> Any:
            started = time.process_time()
            try:
                return _method(*a, **k)
            finally:
                spent[_label] += time.process_time() - started
        setattr(cls, name, timed)
    try:
        spent["all (replay and blame)"] = replay(log, records, True)
    finally:
        for cls, name, method in originals:
            setattr(cls, name, method)
    return spent


def main(argv: list[str] | None = None) -> int:
    from replay_vs_history_server import built_log, log_options

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    log_options(ap, copies=10, repeat=3)
    ap.add_argument("--log", type=Path, help="this Spark event log instead of the built one")
    ap.add_argument("--steps", action="store_true", help="split blame's own part by step")
    args = ap.parse_args(argv)
    if args.log is not None:
        from flowscope.cli import tune_collector

        tune_collector()  # as built_log does: as every flowscope process does
        log, meta = args.log, {"jobs": "?"}
        n = 1  # per-task figures are per log then
    else:
        log, built_meta = built_log(args)
        meta, n = built_meta, int(built_meta["tasks"])
    if args.steps:
        records, _ = convert(log, False)
        rounds = [blame_steps(log, records) for _ in range(args.repeat)]
        print(f"log: {log}; blame's steps, CPU seconds, the round with the least in all of {args.repeat}")
        for label, s in min(rounds, key=lambda r: r["all (replay and blame)"]).items():
            print(f"  {label:<24} {s:6.3f} s")
        replay_alone = min(replay(log, records, False) for _ in range(args.repeat))
        print(f"  {'replay without blame':<24} {replay_alone:6.3f} s")
        return 0
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
