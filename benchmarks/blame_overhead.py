"""What task-level tracking and blame add to the replay of a large Spark event log.

The log is the one ``replay_vs_history_server.py`` builds: the shared 1,000-task shuffle job copied ``--copies``
times into one application (100 by default: 100 jobs, 100,400 tasks, ~520 MB of JSON; written once to
``benchmarks/out/``). Each configuration runs in a fresh process, best of ``--repeat``:

* ``base``: the Spark model without task details (its ``TaskLedger`` replaced by one that records nothing) into a
  replay that settles in bulk: the replay as it was before task-level holders;
* ``tasks``: the model as shipped (``detail`` records, aggregates, findings), same replay;
* ``blame``: the model as shipped, same replay, every record also fed to a ``BlameTracker``;
* ``base-observed`` / ``blame-observed``: ``base`` and ``blame`` with a replay that propagates after every batch,
  as a session's does.

``--commands`` measures instead what a user pays: ``flowscope frontiers LOG --json`` against ``flowscope blame LOG
--json`` (output to /dev/null), each a fresh process, best of ``--repeat`` by wall time; wall seconds and CPU
seconds of the command and its children (the conversion processes), and blame's wall overhead over frontiers.
``--log`` takes any Spark event log (a file or a rolling directory) instead of the built one, in either mode.

Reported: CPU seconds of each process (imports, reading, replay; CPU rather than wall time since the machine may
be shared), the overheads over ``base`` (and of ``blame-observed`` over ``base-observed``: what a session pays),
and the peak RSS. Each process tunes the collector as every flowscope process does (``flowscope.cli``'s
``tune_collector``). ``benchmarks/blame_answers.py`` checks that a change to what is measured here changed no
answer; ``benchmarks/blame_cost_split.py`` says which part (the model's task ledger, the replay's holder details,
blame) pays the microseconds per task.

    .venv/bin/python benchmarks/blame_overhead.py --copies 20 --repeat 1
    .venv/bin/python benchmarks/blame_overhead.py --commands --copies 100 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

RUN = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from flowscope.cli import tune_collector
tune_collector()  # as every flowscope process does (the blame command, the server)
from backend.spark.recording.convert import SparkLogConversion
from tracker.progress_log.replay import Replay
mode = sys.argv[2]
if mode.startswith("base"):
    sys.path.insert(0, "benchmarks")
    from blame_cost_split import silent_ledger
    import backend.spark.model.event_handlers as model
    model.TaskLedger = silent_ledger()
conversion = SparkLogConversion(sys.argv[1])
observed = mode.endswith("observed")
replay = Replay(sys.argv[1], observer=(lambda *a: None) if observed else None, checked_records=True)
apply = replay.apply
if mode.startswith("blame"):
    from backend.spark.diagnosis.blame import spark_blame
    blame = spark_blame(replay)
    record = blame.record
    for rec in conversion:
        if apply(rec):
            record(rec)
    times = len(blame.times())
else:
    for rec in conversion:
        apply(rec)
    times = None
replay.finish()
print(json.dumps({"seconds": time.process_time(), "wall": time.perf_counter() - t0,
                  "records": conversion.summary().records, "times": times,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(log: Path, mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", RUN, str(log), mode], capture_output=True, text=True, cwd=REPO,
                          check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_command(log: Path, command: str) -> dict:
    """``flowscope COMMAND LOG --json`` as a user runs it: wall and CPU seconds (its children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.run([sys.executable, "-c", "import sys; from flowscope.cli import main; sys.exit(main())",
                               command, str(log), "--json"], stdout=devnull, stderr=subprocess.PIPE, cwd=REPO,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"flowscope {command} failed:\n{proc.stderr.decode(errors='replace')}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu}


def compare_commands(log: Path, repeat: int) -> None:
    """Each round runs frontiers then blame; the ratio of each round is paired (a load change between rounds
    moves both), reported as its median and range beside each command's best and median wall time."""
    import statistics

    runs: dict[str, list[dict]] = {"frontiers": [], "blame": []}
    ratios: list[float] = []
    for _ in range(repeat):
        for command in ("frontiers", "blame"):
            runs[command].append(run_command(log, command))
        ratios.append(runs["blame"][-1]["wall"] / runs["frontiers"][-1]["wall"])
    for command, rs in runs.items():
        walls = [r["wall"] for r in rs]
        cpu = min(r["cpu"] for r in rs)
        print(f"  flowscope {command:<9} --json  best {min(walls):6.2f} s wall, median {statistics.median(walls):6.2f},"
              f" max {max(walls):6.2f}; best {cpu:6.2f} s CPU (children included)")
    best = {command: min(rs, key=lambda r: r["wall"]) for command, rs in runs.items()}
    w = best["blame"]["wall"] / best["frontiers"]["wall"]
    c = min(r["cpu"] for r in runs["blame"]) / min(r["cpu"] for r in runs["frontiers"])
    print(f"blame / frontiers: best walls {w:.2f}x, best CPU {c:.2f}x; paired rounds {statistics.median(ratios):.2f}x"
          f" (range {min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} rounds)")


def main(argv: list[str] | None = None) -> int:
    from replay_vs_history_server import DEFAULT_SOURCE, ensure_log

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--log", type=Path, help="this Spark event log instead of the one built from --source")
    ap.add_argument("--commands", action="store_true",
                    help="flowscope frontiers against flowscope blame, wall and CPU, as a user runs them")
    args = ap.parse_args(argv)
    if args.log is not None:
        log = args.log
        size = sum(p.stat().st_size for p in log.iterdir()) if log.is_dir() else log.stat().st_size
        print(f"log: {log} ({size / 1e6:.0f} MB)", flush=True)
    else:
        log, meta = ensure_log(args.source, args.copies, False)
        print(f"log: {meta['jobs']} jobs, {meta['tasks']:,} tasks, {meta['bytes'] / 1e6:.0f} MB", flush=True)
    if args.commands:
        compare_commands(log, args.repeat)
        return 0
    best: dict[str, dict] = {}
    for _ in range(args.repeat):
        for mode in ("base", "tasks", "blame", "base-observed", "blame-observed"):
            r = run(log, mode)
            if mode not in best or r["seconds"] < best[mode]["seconds"]:
                best[mode] = r
    for mode, r in best.items():
        extra = f", {r['times']} times blamed" if r["times"] is not None else ""
        print(f"  {mode:<14} {r['seconds']:7.2f} s CPU ({r['wall']:.2f} s wall)  {r['records']:,} records  "
              f"peak RSS {r['rss_mb']:.0f} MB{extra}")
    t = best["tasks"]["seconds"] / best["base"]["seconds"] - 1
    b = best["blame"]["seconds"] / best["base"]["seconds"] - 1
    o = best["blame-observed"]["seconds"] / best["base-observed"]["seconds"] - 1
    print(f"over the replay: task details {t:+.1%}, task details + blame {b:+.1%}; "
          f"over the observed replay (a session's): task details + blame {o:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
