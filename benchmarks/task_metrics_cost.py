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

What reading the Python workers' metrics adds (``diagnosis/python_time.py``): ``--base`` at the commit before them,
on the same log (whose task ends name no Python worker: the substring search a task end costs), and with
``--python-metrics`` on a copy of it in which every task end carries the eight SQL metrics of a ``BatchEvalPython``
operator (written once beside the log: the decode of the accumulables and their reading)::

    .venv/bin/python benchmarks/task_metrics_cost.py --copies 100 --repeat 3 --base main
    .venv/bin/python benchmarks/task_metrics_cost.py --copies 100 --repeat 3 --base main --python-metrics
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
try:
    from backend.spark.recording.convert import SparkLogConversion
    from tracker.progress_log.replay import Replay
except ImportError:  # a tree from before the modules moved into packages (issue 29), as the base is
    from backend.spark.convert import SparkLogConversion
    from tracker.replay import Replay
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


_PYTHON_METRICS = (("data sent to Python workers", 163360), ("data returned from Python workers", 120685),
                   ("time to start Python workers", 12), ("time to initialize Python workers", 590),
                   ("time to run Python workers", 1245), ("time to execute Python code", 936),
                   ("number of output rows", 10000), ("peak pickled batch size in bytes", 4100))


def with_python_metrics(log: Path) -> Path:
    """A copy of ``log`` whose every task end carries a BatchEvalPython operator's SQL metrics (as Spark 4.3
    writes them: decimal strings), after a SQL execution's start declaring them (the model looks for Python
    metrics once a plan declared some), made once in ``benchmarks/out/``."""
    import orjson

    target = HERE / "out" / f"{log.parent.name}-python2" / log.name
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    extra = [{"ID": 900_000 + i, "Name": name, "Update": str(v), "Value": str(v), "Internal": True,
              "Count Failed Values": True, "Metadata": "sql"} for i, (name, v) in enumerate(_PYTHON_METRICS)]
    plan = {"nodeName": "BatchEvalPython", "simpleString": "BatchEvalPython [f(id)]", "children": [],
            "metadata": {}, "metrics": [{"name": name, "accumulatorId": 900_000 + i, "metricType": "timing"}
                                        for i, (name, _) in enumerate(_PYTHON_METRICS)]}
    start = {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", "executionId": 0,
             "description": "python metrics", "details": "", "physicalPlanDescription": "", "sparkPlanInfo": plan,
             "time": 0, "modifiedConfigs": {}}
    with log.open("rb") as src, (target.parent / (target.name + ".part")).open("wb") as out:
        for line in src:
            if line.startswith(b'{"Event":"SparkListenerApplicationStart"'):
                line += orjson.dumps(start) + b"\n"
            elif line.startswith(b'{"Event":"SparkListenerTaskEnd"'):
                e = orjson.loads(line)
                e["Task Info"]["Accumulables"] = extra + e["Task Info"].get("Accumulables", [])
                line = orjson.dumps(e) + b"\n"
            out.write(line)
    (target.parent / (target.name + ".part")).rename(target)
    return target


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
    ap.add_argument("--python-metrics", action="store_true",
                    help="replay a copy whose every task end carries a Python operator's SQL metrics")
    args = ap.parse_args(argv)
    log, meta = ensure_log(args.source, args.copies, False)
    if args.python_metrics:
        log = with_python_metrics(log)
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
    median = ratios[len(ratios) // 2] - 1
    print(f"per round: median {median:+.1%}, from {ratios[0] - 1:+.1%} to {ratios[-1] - 1:+.1%} "
          f"({len(ratios)} rounds)")
    added = w["seconds"] / o["seconds"] - 1
    print(f"goal: reading Task Metrics adds at most +10% CPU to the replay: {added:+.1%} (best of each), "
          f"{median:+.1%} (median of the rounds); {'met' if max(added, median) <= 0.10 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
