"""What reading each task's metrics (time split, sizes, findings) adds to the replay of a large Spark event log.

The log is the one ``replay_vs_history_server.py`` builds (as ``blame_overhead.py`` uses it): the shared 1,000-task
shuffle job copied ``--copies`` times into one application (100 by default: 100 jobs, 100,400 tasks, ~514 MB of
JSON; written once to ``benchmarks/out/``). Two trees replay it the same way, each in a fresh process, best of
``--repeat``, alternating:

* ``without``: the code at ``--base`` (default: the commit before the Spark model read task metrics), extracted
  with ``git archive`` into a temporary directory;
* ``with``: this checkout.

Each process does what ``blame_overhead.py``'s ``tasks`` mode does, in one process: the Spark model's conversion
(reading the lines, the typed decode of each event, the model and its task ledger) into a replay that settles in
bulk (``checked_records``). Reported: CPU seconds (imports, reading, decoding, model, replay; CPU rather than wall
time since the machine may be shared), wall seconds, records made, peak RSS, and the added CPU in percent (the
goal: at most +10%), from the best run of each tree and as the median and range of each round's ratio.

    .venv/bin/python benchmarks/task_metrics_cost.py --copies 100 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

BASE = "c727dcc"  # backend: group modules into packages (the last commit before task metrics were read)

RUN = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from flowscope.cli import tune_collector
tune_collector()
from backend.spark.recording.convert import SparkLogConversion
from tracker.progress_log.replay import Replay
conversion = SparkLogConversion(sys.argv[1])
replay = Replay(sys.argv[1], checked_records=True)
apply = replay.apply
for rec in conversion:
    apply(rec)
replay.finish()
print(json.dumps({"seconds": time.process_time(), "wall": time.perf_counter() - t0,
                  "records": conversion.summary().records,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def extract(rev: str, into: Path) -> Path:
    """The tree at ``rev`` (its backend/, tracker/, flowscope/), as files under ``into``."""
    archive = subprocess.run(["git", "archive", rev, "backend", "tracker", "flowscope"], cwd=REPO,
                             capture_output=True, check=True).stdout
    tar = into / "base.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(into, filter="data")
    return into


def run(tree: Path, log: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", RUN, str(log)], capture_output=True, text=True, cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"replay in {tree} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    from replay_vs_history_server import DEFAULT_SOURCE, ensure_log

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    ap.add_argument("--base", default=BASE, help=f"the commit without task metrics (default {BASE})")
    args = ap.parse_args(argv)
    log, meta = ensure_log(args.source, args.copies, False)
    print(f"log: {meta['jobs']} jobs, {meta['tasks']:,} tasks, {meta['bytes'] / 1e6:.0f} MB", flush=True)
    best: dict[str, dict] = {}
    ratios: list[float] = []  # each round's with / without: the load hits both runs of a round alike
    with tempfile.TemporaryDirectory(prefix="flowscope-base-") as tmp:
        trees = {"without": extract(args.base, Path(tmp)), "with": REPO}
        for _ in range(args.repeat):
            seconds = {}
            for mode, tree in trees.items():
                r = run(tree, log)
                seconds[mode] = r["seconds"]
                print(f"  {mode:<8} {r['seconds']:7.2f} s CPU", flush=True)
                if mode not in best or r["seconds"] < best[mode]["seconds"]:
                    best[mode] = r
            ratios.append(seconds["with"] / seconds["without"])
    for mode, r in best.items():
        print(f"best {mode:<8} {r['seconds']:7.2f} s CPU ({r['wall']:.2f} s wall)  {r['records']:,} records  "
              f"peak RSS {r['rss_mb']:.0f} MB")
    w, o = best["with"], best["without"]
    print(f"reading task metrics adds {w['seconds'] / o['seconds'] - 1:+.1%} CPU to the replay (goal: at most "
          f"+10%), {1e6 * (w['seconds'] - o['seconds']) / meta['tasks']:.1f} us per task")
    ratios.sort()
    print(f"per round: median {ratios[len(ratios) // 2] - 1:+.1%}, from {ratios[0] - 1:+.1%} to {ratios[-1] - 1:+.1%} "
          f"({len(ratios)} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
