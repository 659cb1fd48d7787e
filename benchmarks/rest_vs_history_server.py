"""Spark's REST API (``/api/v1``) from a cold start: flowscope's server against Spark's own History Server.

The logs are replay_vs_history_server.py's (built once into ``benchmarks/out/``): 100 copies of the 1,000-task
shuffle job (100 jobs, 100,400 tasks, ~514 MB) and 2,000 copies of the small SQL job (8,000 jobs, 32,000 tasks),
``--shape big|small|both``. Each server is started fresh over the one log (flowscope: ``flowscope serve LOG`` as a
user starts it, its session replaying the log beside the REST store; the History Server: started from the installed
pyspark, keeping every job, stage and task), and timed from its start:

* **jobs**: until ``GET /api/v1/applications/<id>/jobs`` answers with every job (the first request makes each
  replay the log);
* **taskList**: until the largest stage's ``taskList?length=100000`` answers, right after.

Then, on a third log (``--summary``, on by default): one stage of 100,000 tasks (the shuffle job's map stage, its
tasks copied 100 times under new ids), flowscope's ``taskSummary`` answer time once the application is loaded: the
first request (which sorts each column) and the median of the next five (sorted columns kept).

Each figure is printed with the load average (``os.getloadavg``) at that moment: the machine may be shared.

Run::

    .venv/bin/python benchmarks/rest_vs_history_server.py                 # both shapes, the summary, once each
    .venv/bin/python benchmarks/rest_vs_history_server.py --shape big --no-hs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402
import replay_vs_history_server as hs  # noqa: E402  (its log replicator and History Server, one for every benchmark)

SHAPES = {"big": ("spark430_1000tasks_shuffle.jsonl.gz", 100), "small": ("spark430_batch_rdd_sql.jsonl.gz", 2000)}
SUMMARY_TASKS = 100_000


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f}"


def fetch(url: str, timeout: float = 600.0) -> object:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.load(resp)


def wait_for_jobs(api: str, app_id: str, jobs: int, started: float, proc: subprocess.Popen,
                  timeout: float = 1800.0) -> float:
    """Seconds from ``started`` until ``/jobs`` lists every job."""
    while time.perf_counter() - started < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited ({proc.returncode})")
        try:
            got = fetch(f"{api}/applications/{app_id}/jobs")
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError):
            time.sleep(0.05)
            continue
        if isinstance(got, list) and len(got) >= jobs:
            return time.perf_counter() - started
        time.sleep(0.05)
    raise SystemExit(f"{api}: the jobs list never reached {jobs}")


def largest_stage(api: str, app_id: str) -> tuple[int, int]:
    stages = fetch(f"{api}/applications/{app_id}/stages")
    assert isinstance(stages, list) and stages
    s = max(stages, key=lambda s: s["numCompleteTasks"])
    return s["stageId"], s["attemptId"]


@contextlib.contextmanager
def flowscope_server(log: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    port = hs.free_port()
    proc = subprocess.Popen([sys.executable, "-m", "flowscope.cli", "serve", "--port", str(port), "--allow",
                             str(log.parent), str(log)], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        yield f"http://127.0.0.1:{port}/api/v1", proc
    finally:
        hs.stop_process(proc)


@contextlib.contextmanager
def spark_history_server(log: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    with hs.history_server(log.parent, "4g") as (base, proc, _out):
        yield base.removesuffix("/applications"), proc


def cold_start(server, log: Path, meta: dict) -> dict:
    started = time.perf_counter()
    with server(log) as (api, proc):
        jobs = wait_for_jobs(api, meta["app_id"], meta["jobs"], started, proc)
        jobs_load = load()
        stage = largest_stage(api, meta["app_id"])
        tasks = fetch(f"{api}/applications/{meta['app_id']}/stages/{stage[0]}/{stage[1]}/taskList?length=100000")
        task_list = time.perf_counter() - started
        assert isinstance(tasks, list) and tasks
        return {"jobs_s": round(jobs, 2), "jobs_load": jobs_load, "task_list_s": round(task_list, 2),
                "task_list_load": load(), "stage": stage, "tasks": len(tasks)}


def summary_log(source: Path) -> tuple[Path, dict]:
    """The shuffle job with its largest stage's tasks copied until it has ``SUMMARY_TASKS`` (written once)."""
    target_dir = hs.OUT / "rest-summary-100k"
    events = hs.read_source(source)
    app_id = next(e["App ID"] for e in events if e.get("Event") == "SparkListenerApplicationStart")
    target = target_dir / app_id
    meta_path = target.with_name(target.name + ".json")
    if target.exists() and meta_path.exists():
        return target, json.loads(meta_path.read_text())
    target_dir.mkdir(parents=True, exist_ok=True)
    counts: dict[int, int] = {}
    for e in events:
        if e.get("Event") == "SparkListenerTaskEnd":
            counts[e["Stage ID"]] = counts.get(e["Stage ID"], 0) + 1
    stage = max(counts, key=counts.__getitem__)
    per = counts[stage]
    copies = -(-SUMMARY_TASKS // per)
    top = max(e["Task Info"]["Task ID"] for e in events if e.get("Event") == "SparkListenerTaskStart") + 1
    jobs = 0

    def with_tasks(info: dict) -> dict:
        return {**info, "Number of Tasks": per * copies} if info.get("Stage ID") == stage else info

    with open(target, "wb") as fh:
        for e in events:
            kind = e.get("Event")
            jobs += kind == "SparkListenerJobStart"
            if kind == "SparkListenerJobStart":
                e = {**e, "Stage Infos": [with_tasks(i) for i in e.get("Stage Infos", [])]}
            elif kind in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted"):
                e = {**e, "Stage Info": with_tasks(e["Stage Info"])}
            if kind in ("SparkListenerTaskStart", "SparkListenerTaskEnd") and e.get("Stage ID") == stage:
                for k in range(copies):
                    info = e["Task Info"]
                    copy = {**e, "Task Info": {**info, "Task ID": info["Task ID"] + k * top,
                                               "Index": info["Index"] + k * per,
                                               "Partition ID": info.get("Partition ID", 0) + k * per}}
                    fh.write(orjson.dumps(copy) + b"\n")
                continue
            fh.write(orjson.dumps(e) + b"\n")
    meta = {"app_id": app_id, "jobs": jobs, "stage": stage, "tasks": per * copies}
    meta_path.write_text(json.dumps(meta))
    return target, meta


def summary_times(log: Path, meta: dict) -> dict:
    started = time.perf_counter()
    with flowscope_server(log) as (api, proc):
        wait_for_jobs(api, meta["app_id"], meta["jobs"], started, proc)
        url = f"{api}/applications/{meta['app_id']}/stages/{meta['stage']}/0/taskSummary"
        t0 = time.perf_counter()
        fetch(url)
        first = time.perf_counter() - t0
        first_load = load()
        again = []
        for _ in range(5):
            t0 = time.perf_counter()
            fetch(url)
            again.append(time.perf_counter() - t0)
        return {"tasks": meta["tasks"], "first_ms": round(first * 1000, 1), "first_load": first_load,
                "repeat_median_ms": round(statistics.median(again) * 1000, 1), "repeat_load": load()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=["big", "small", "both", "none"], default="both")
    ap.add_argument("--no-hs", action="store_true", help="time flowscope alone")
    ap.add_argument("--no-summary", action="store_true", help="skip the 100,000-task taskSummary")
    args = ap.parse_args(argv)
    results: dict = {}
    for shape in {"both": ["big", "small"], "none": []}.get(args.shape, [args.shape]):
        source, copies = SHAPES[shape]
        log, meta = hs.ensure_log(hs.SPARK_EVENTS / "pyspark-4.3" / source, copies, False)
        row = {"jobs": meta["jobs"], "tasks": meta["tasks"], "flowscope": cold_start(flowscope_server, log, meta)}
        print(shape, "flowscope", row["flowscope"], flush=True)
        if not args.no_hs:
            row["history_server"] = cold_start(spark_history_server, log, meta)
            print(shape, "History Server", row["history_server"], flush=True)
            for k in ("jobs_s", "task_list_s"):
                row[f"{k}_ratio"] = round(row["history_server"][k] / row["flowscope"][k], 1)
        results[shape] = row
    if not args.no_summary:
        log, meta = summary_log(hs.DEFAULT_SOURCE)
        results["task_summary"] = summary_times(log, meta)
        print("taskSummary", results["task_summary"], flush=True)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
