"""Time to full state on a large Spark event log: flowscope's replay against Spark's own History Server.

The log: a real one replicated until it is large. By default the pyspark 4.3 log of a 1,000-task shuffle job
(`pyspark-4.3/spark430_1000tasks_shuffle.jsonl.gz` in `$FLOWSCOPE_SPARK_EVENTS`, default `../shared/spark-events`;
one SQL execution, 1,004 tasks, 5 MB) copied 100 times into one application: every copy's jobs, stages, tasks, RDDs
and SQL executions renumbered past the previous copy's and its times shifted after them, the application's start and
end events once. That is 100 jobs, 200 stages, 100,400 tasks and ~520 MB of JSON, a log Spark itself would have
written for a driver that ran the same query 100 times (`--copies`, `--source` to change it). It is written once to
`benchmarks/out/`.

What is measured, each as a fresh process (start-up included, as a user meets it):

* **flowscope**: read the log (`backend.eventlog`), run it through the Spark model and apply every progress batch
  to the tracker (`tracker.progress_log.replay.Replay`), until every frontier of the finished application is known: what
  `flowscope frontiers EVENTLOG` does (`backend.spark.recording.convert_process.replay_event_log`: reading and
  decoding in one process, the model in another, the tracker in the first, pipelined). Reported: wall time of the
  process, and events/s and MB/s of the replay itself; CPU time of all processes and their peak RSS beside it. Then the
  users' commands themselves: `flowscope frontiers EVENTLOG --json` and `flowscope report EVENTLOG --json`
  `--repeat` times each, interleaved, with the CPU of all their processes and the peak RSS of the largest one, and
  `flowscope record EVENTLOG -o OUT` once (`--no-commands` skips them).
* **History Server**: Spark's own, started from the installed pyspark (`$SPARK_HOME/bin/spark-class
  org.apache.spark.deploy.history.HistoryServer`, on 127.0.0.1, a fresh port, a directory holding only this log,
  `SPARK_DAEMON_MEMORY=4g` so it does not starve, `spark.ui.retained*` raised so its store keeps every job, stage,
  task and SQL execution: by default it keeps 1,000 jobs and the wait below never ends), timed from its start until
  `GET /api/v1/applications/<id>/jobs` answers with every job (the first request makes it replay the whole log);
  also when the application was first listed. Then it is stopped.

Both report peak memory: flowscope's processes their `getrusage` maximum RSS, the History Server's JVM its VmHWM.

At the end it prints issue 33's goals against the History Server, by CPU (best of each) and by wall: `report` at
least 3x faster than the History Server lists every job, `frontiers` at least 5x.

Run::

    .venv/bin/python benchmarks/replay_vs_history_server.py              # generate if needed, best of 3 / 1
    .venv/bin/python benchmarks/replay_vs_history_server.py --repeat 1 --copies 40
    .venv/bin/python benchmarks/replay_vs_history_server.py --copies 2000 \
        --source $FLOWSCOPE_SPARK_EVENTS/pyspark-4.3/spark430_batch_rdd_sql.jsonl.gz   # 8,000 small SQL jobs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SPARK_EVENTS = Path(os.environ.get("FLOWSCOPE_SPARK_EVENTS") or REPO.parent / "shared" / "spark-events")
DEFAULT_SOURCE = SPARK_EVENTS / "pyspark-4.3" / "spark430_1000tasks_shuffle.jsonl.gz"
OUT = HERE / "out"

sys.path.insert(0, str(REPO))

import orjson  # noqa: E402

# --- the log ----------------------------------------------------------------------------------------------------------

ONCE_BEFORE = {"SparkListenerLogStart", "SparkListenerResourceProfileAdded", "SparkListenerExecutorAdded",
               "SparkListenerBlockManagerAdded", "SparkListenerEnvironmentUpdate", "SparkListenerApplicationStart"}
ONCE_AFTER = {"SparkListenerApplicationEnd"}
TIME_KEYS = ("Submission Time", "Completion Time", "Launch Time", "Finish Time", "time", "Timestamp")


def read_source(path: Path) -> list[dict]:
    from backend.eventlog import EventLogReader

    return [ev.event for ev in EventLogReader(path)]


class Renumber:
    """Shifts one copy's ids and times past the previous copies'."""

    def __init__(self, events: list[dict]) -> None:
        self.job = self.stage = self.task = self.rdd = self.sql = 0
        times: list[int] = []
        for e in events:
            self._scan(e, times)
        self.job, self.stage, self.task, self.rdd, self.sql = (x + 1 for x in (
            self.job, self.stage, self.task, self.rdd, self.sql))
        body = [t for t in times if t > 0]
        self.span = (max(body) - min(body) + 1000) if body else 1000

    def _scan(self, obj, times):
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k == "Job ID" and isinstance(v, int):
                    self.job = max(self.job, v)
                elif k in ("Stage ID", "stageId") and isinstance(v, int):
                    self.stage = max(self.stage, v)
                elif k == "Task ID" and isinstance(v, int):
                    self.task = max(self.task, v)
                elif k == "RDD ID" and isinstance(v, int):
                    self.rdd = max(self.rdd, v)
                elif k in ("executionId", "rootExecutionId") and isinstance(v, int):
                    self.sql = max(self.sql, v)
                elif k in TIME_KEYS and isinstance(v, int):
                    times.append(v)
                else:
                    self._scan(v, times)
        elif isinstance(obj, list):
            for v in obj:
                self._scan(v, times)

    def copy(self, event: dict, k: int) -> dict:
        if k == 0:
            return event
        off = {"job": k * self.job, "stage": k * self.stage, "task": k * self.task, "rdd": k * self.rdd,
               "sql": k * self.sql, "time": k * self.span}
        return self._shift(event, off, None)

    def _shift(self, obj, off, parent_key):
        if isinstance(obj, dict):
            out = {}
            for key, v in obj.items():
                if isinstance(v, int) and not isinstance(v, bool):
                    if key == "Job ID":
                        v += off["job"]
                    elif key in ("Stage ID", "stageId"):
                        v += off["stage"]
                    elif key == "Task ID":
                        v += off["task"]
                    elif key == "RDD ID":
                        v += off["rdd"]
                    elif key in ("executionId", "rootExecutionId"):
                        v += off["sql"]
                    elif key in TIME_KEYS and v > 0:
                        v += off["time"]
                    out[key] = v
                elif key == "Parent IDs" and isinstance(v, list):  # stage parents, or RDD parents in RDD Info
                    shift = off["rdd"] if parent_key == "RDD Info" else off["stage"]
                    out[key] = [p + shift for p in v]
                elif key == "Stage IDs" and isinstance(v, list):
                    out[key] = [s + off["stage"] for s in v]
                elif key == "Properties" and isinstance(v, dict):
                    props = dict(v)
                    for p in ("spark.sql.execution.id", "spark.sql.execution.root.id"):
                        if p in props and str(props[p]).isdigit():
                            props[p] = str(int(props[p]) + off["sql"])
                    out[key] = props
                else:
                    out[key] = self._shift(v, off, key)
            return out
        if isinstance(obj, list):
            return [self._shift(v, off, parent_key) for v in obj]
        return obj


def generate(source: Path, copies: int, target: Path) -> dict:
    """Write the replicated log to `target` (plain JSON lines, one file: the layout every Spark reads)."""
    events = read_source(source)
    before = [e for e in events if e.get("Event") in ONCE_BEFORE]
    after = [e for e in events if e.get("Event") in ONCE_AFTER]
    body = [e for e in events if e.get("Event") not in ONCE_BEFORE | ONCE_AFTER]
    r = Renumber(body)
    app_id = next(e["App ID"] for e in before if e.get("Event") == "SparkListenerApplicationStart")
    tasks = jobs = n = 0
    tmp = target.with_suffix(".partial")
    with open(tmp, "wb", buffering=1 << 22) as fh:
        for e in before:
            fh.write(orjson.dumps(e) + b"\n")
            n += 1
        for k in range(copies):
            for e in body:
                fh.write(orjson.dumps(r.copy(e, k)) + b"\n")
                n += 1
                kind = e.get("Event")
                tasks += kind == "SparkListenerTaskEnd"
                jobs += kind == "SparkListenerJobStart"
        for e in after:
            fh.write(orjson.dumps(r.copy(e, copies - 1)) + b"\n")
            n += 1
    tmp.rename(target)
    meta = {"source": source.name, "copies": copies, "app_id": app_id, "events": n, "tasks": tasks, "jobs": jobs,
            "bytes": target.stat().st_size}
    target.with_name(target.name + ".json").write_text(json.dumps(meta))
    return meta


def log_options(ap: argparse.ArgumentParser, copies: int, repeat: int) -> None:
    """A benchmark on the built log: ``--copies`` of ``--source`` (see :func:`built_log`), measured ``--repeat``
    times."""
    ap.add_argument("--copies", type=int, default=copies)
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE)


def built_log(args: argparse.Namespace) -> tuple[Path, dict]:
    """The log :func:`log_options` chose (built once, see :func:`ensure_log`), in a process whose collector is
    tuned as every flowscope process's is."""
    from flowscope.cli import tune_collector

    tune_collector()
    return ensure_log(args.source, args.copies, False)


def ensure_log(source: Path, copies: int, regen: bool) -> tuple[Path, dict]:
    events = read_source(source)
    app_id = next(e["App ID"] for e in events if e.get("Event") == "SparkListenerApplicationStart")
    directory = OUT / f"history-{source.name.split('.')[0]}-x{copies}"
    target = directory / app_id  # the History Server wants the file named like the application
    meta_path = target.with_name(target.name + ".json")
    if target.exists() and meta_path.exists() and not regen:
        return target, json.loads(meta_path.read_text())
    directory.mkdir(parents=True, exist_ok=True)
    for p in directory.iterdir():
        p.unlink()
    print(f"generating {copies} copies of {source.name} into {target} ...", flush=True)
    started = time.perf_counter()
    meta = generate(source, copies, target)
    print(f"  {meta['events']:,} events, {meta['tasks']:,} tasks, {meta['jobs']} jobs, {meta['bytes'] / 1e6:.0f} MB "
          f"in {time.perf_counter() - started:.0f} s", flush=True)
    return target, meta


# --- flowscope --------------------------------------------------------------------------------------------------------

FLOWSCOPE = r"""
import sys, time, json, resource
t0 = time.perf_counter()
c0 = time.process_time()
from flowscope.cli import tune_collector
tune_collector()  # as the flowscope command does
from backend.spark.recording.convert_process import replay_event_log
# what `flowscope frontiers EVENTLOG` does: reading, the Spark model and the replay in three processes
replay, conversion = replay_event_log(sys.argv[1])
state = replay.state()
t1 = time.perf_counter()
cpu = time.process_time() - c0
child = resource.getrusage(resource.RUSAGE_CHILDREN)
s = conversion.summary()
open_ports = sum(1 for sc in state["scopes"] for p in sc["ports"] if p["frontier"])
m = conversion.model_summary()
model_cpu, reader_cpu = getattr(conversion, "cpu_seconds", None) or (0.0, 0.0)
print(json.dumps({"seconds": t1 - t0, "cpu": cpu, "child_cpu": child.ru_utime + child.ru_stime,
                  "model_cpu": model_cpu, "reader_cpu": reader_cpu,
                  "job_status": {str(k): v for k, v in m.jobs.items()},
                  "stage_status": {f"{k[0]}.{k[1]}": v for k, v in m.stages.items()}, "events": s.events,
                  "bytes": s.bytes_uncompressed, "batches": s.batches, "jobs": len(m.jobs), "tasks": m.tasks,
                  "errors": len(replay.errors), "open_ports": open_ports,
                  "scopes": len(state["scopes"]),
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "child_max_rss_mb": child.ru_maxrss / 1024}))
"""


def run_flowscope(log: Path) -> dict:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", FLOWSCOPE, str(log)], capture_output=True, text=True, cwd=REPO,
                          check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"flowscope replay failed:\n{proc.stderr}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall"] = wall
    return result


# runs a command and prints its processes' CPU seconds and the peak RSS (KB) of the largest of them: the rusage of
# a fresh parent's children is that command's alone
MEASURED = r"""
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime + r.ru_stime, r.ru_maxrss, code)
"""


def run_command(args: list[str]) -> tuple[float, float, float]:
    """A `flowscope` command as a user runs it: its wall time, CPU time (with its child processes') and the peak
    RSS of its largest process, in MB."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", MEASURED, sys.executable, "-m", "flowscope.cli", *args],
                          capture_output=True, text=True, cwd=REPO, check=False)
    wall = time.perf_counter() - started
    cpu, rss, code = proc.stdout.split()
    if proc.returncode != 0 or code != "0":
        raise SystemExit(f"flowscope {args[0]} failed:\n{proc.stderr}")
    return wall, float(cpu), int(rss) / 1024


# --- the History Server -----------------------------------------------------------------------------------------------


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str, timeout: float):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.load(resp)


RETAIN = 10_000_000

# issue 33, goal 4: `flowscope report`'s peak memory (its largest process) on the 8,000-job log no more than it was
# when the goal was set (main at 6be91ae, 2026-12-06: 324 and 332 MB in two runs)
REPORT_RSS_MB = {("spark430_batch_rdd_sql.jsonl.gz", 2000): 332.0}


def peak_rss_mb(pid: int) -> float | None:
    """The process's peak resident set (VmHWM), in MB; None where /proc does not say."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (/proc/PID/stat), None where /proc does not say."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


@contextlib.contextmanager
def history_server(log_dir: Path, memory: str = "2g") -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """Spark's History Server over ``log_dir``, started from the installed pyspark on a fresh loopback port (its
    store keeps every job, stage, task and SQL execution); yields its ``/api/v1/applications`` URL, its process and
    its output file, and stops it on the way out. Tests share it (tests/test_sql_plan_history_server.py)."""
    home = spark_home()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="flowscope-hs-") as tmp:
        conf = Path(tmp) / "history.conf"
        conf.write_text("\n".join([
            f"spark.history.fs.logDirectory {log_dir.resolve().as_uri()}",
            f"spark.history.ui.port {port}",
            "spark.history.fs.update.interval 1s",
            "spark.history.fs.cleaner.enabled false",
            "spark.ui.enabled true",
            # keep every job, stage, task and SQL execution (by default the store keeps 1,000 jobs and stages and
            # the jobs list never reaches the log's count)
            f"spark.ui.retainedJobs {RETAIN}",
            f"spark.ui.retainedStages {RETAIN}",
            f"spark.ui.retainedTasks {RETAIN}",
            f"spark.ui.retainedDeadExecutors {RETAIN}",
            f"spark.sql.ui.retainedExecutions {RETAIN}",
            f"spark.streaming.ui.retainedBatches {RETAIN}",
        ]) + "\n")
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_DAEMON_MEMORY": memory, "SPARK_LOG_DIR": tmp, "SPARK_PID_DIR": tmp}
        out = Path(tmp) / "history-server.out"
        with open(out, "wb") as log_file:
            proc = subprocess.Popen([str(home / "bin" / "spark-class"),
                                     "org.apache.spark.deploy.history.HistoryServer", "--properties-file", str(conf)],
                                    env=env, stdout=log_file, stderr=subprocess.STDOUT)
            try:
                yield f"http://127.0.0.1:{port}/api/v1/applications", proc, out
            finally:
                stop_process(proc)


def stop_process(proc: subprocess.Popen) -> None:
    """Ask a server process to end; kill it after 20 s."""
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_history_server(log: Path, meta: dict, memory: str, timeout: float = 900.0) -> dict:
    up = listed = None
    jobs: list = []
    with history_server(log.parent, memory) as (base, proc, out):
        started = time.perf_counter()
        while time.perf_counter() - started < timeout:
            if proc.poll() is not None:
                raise SystemExit(f"the History Server exited ({proc.returncode}); see its output:\n"
                                 + out.read_text()[-3000:])
            try:
                apps = get_json(base, 5)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                time.sleep(0.05)
                continue
            up = up or time.perf_counter() - started
            if not any(a.get("id") == meta["app_id"] for a in apps):
                time.sleep(0.05)
                continue
            listed = listed or time.perf_counter() - started
            try:
                jobs = get_json(f"{base}/{meta['app_id']}/jobs", timeout)
            except urllib.error.HTTPError:
                time.sleep(0.05)
                continue
            if len(jobs) >= meta["jobs"]:
                break
            time.sleep(0.05)
        done = time.perf_counter() - started
        stages = get_json(f"{base}/{meta['app_id']}/stages", timeout) if len(jobs) >= meta["jobs"] else []
        rss = peak_rss_mb(proc.pid)  # spark-class execs the JVM: this pid is the History Server's
        cpu = cpu_seconds(proc.pid)  # (every thread's: the JVM's compilers and collector work beside the replay)
    if len(jobs) < meta["jobs"]:
        raise SystemExit(f"the History Server did not list the application's {meta['jobs']} jobs in {timeout} s")
    return {"wall": done, "up": up, "listed": listed, "jobs": len(jobs), "max_rss_mb": rss, "cpu": cpu,
            "succeeded": sum(j.get("status") == "SUCCEEDED" for j in jobs),
            "stages": {f"{s['stageId']}.{s['attemptId']}": s["status"] for s in stages},
            "tasks": sum(s["numCompleteTasks"] + s["numFailedTasks"] + s["numKilledTasks"] for s in stages)}


# --- report -----------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="the event log to replicate")
    parser.add_argument("--copies", type=int, default=100, help="copies of its jobs in the generated log (100)")
    parser.add_argument("--repeat", type=int, default=3, help="flowscope runs (best and median are shown; 3)")
    parser.add_argument("--hs-repeat", type=int, default=1,
                        help="History Server runs (1; 0 measures flowscope alone, with no ratio)")
    parser.add_argument("--hs-memory", default="4g", help="the History Server's heap (SPARK_DAEMON_MEMORY, 4g)")
    parser.add_argument("--regen", action="store_true", help="regenerate the log even if it exists")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--no-commands", action="store_true",
                        help="do not time the users' commands (flowscope frontiers, flowscope record)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.hs_repeat < 0:
        parser.error("--repeat must be at least 1 and --hs-repeat at least 0")
    if args.hs_repeat and not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        parser.error("the History Server needs Java on the PATH (or JAVA_HOME)")

    log, meta = ensure_log(args.source, args.copies, args.regen)
    mb = meta["bytes"] / 1e6
    print(f"log: {log} ({mb:.0f} MB, {meta['events']:,} events, {meta['tasks']:,} tasks, {meta['jobs']} jobs)")

    runs = []
    for i in range(args.repeat):
        r = run_flowscope(log)
        assert r["errors"] == 0 and r["open_ports"] == 0, r
        assert r["jobs"] == meta["jobs"] and r["tasks"] == meta["tasks"], r
        runs.append(r)
        print(f"  flowscope run {i + 1}: {r['wall']:.2f} s wall ({r['seconds']:.2f} s replay; CPU {r['cpu']:.2f} s "
              f"replay + {r['model_cpu']:.2f} s model + {r['reader_cpu']:.2f} s reading), peak RSS "
              f"{r['max_rss_mb']:.0f} MB + {r['child_max_rss_mb']:.0f} MB (largest child), load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
    commands: dict[str, dict] = {}
    if not args.no_commands:
        with tempfile.TemporaryDirectory(prefix="flowscope-bench-") as tmp:
            timed = {"frontiers": ["frontiers", str(log), "--json"], "report": ["report", str(log), "--json"]}
            rounds = [timed] * args.repeat + [{"record": ["record", "-q", str(log), "-o", str(Path(tmp) / "o.jsonl")]}]
            for each in rounds:  # interleaved: the load of a moment hits every command alike
                for name, cmd in each.items():
                    wall, cpu, rss = run_command(cmd)
                    c = commands.setdefault(name, {"walls": [], "cpus": [], "rss_mb": 0.0})
                    c["walls"].append(wall)
                    c["cpus"].append(cpu)
                    c["rss_mb"] = max(c["rss_mb"], rss)
                    print(f"  flowscope {name}: {wall:.2f} s wall, CPU {cpu:.2f} s (all its processes), peak RSS "
                          f"{rss:.0f} MB (its largest process), load {os.getloadavg()[0]:.1f}", flush=True)
        for c in commands.values():
            c["wall"], c["cpu"] = min(c["walls"]), min(c["cpus"])
    hs_runs = []
    for i in range(args.hs_repeat):
        h = run_history_server(log, meta, args.hs_memory)
        hs_runs.append(h)
        print(f"  History Server run {i + 1}: up {h['up']:.1f} s, app listed {h['listed']:.1f} s, "
              f"{h['jobs']} jobs at {h['wall']:.1f} s, CPU {h['cpu'] or 0:.1f} s, "
              f"peak RSS {h['max_rss_mb'] or 0:.0f} MB, load {os.getloadavg()[0]:.1f}", flush=True)

    best = min(runs, key=lambda r: r["wall"])
    if not hs_runs:
        print(f"flowscope alone: best {best['wall']:.2f} s wall, CPU {best['cpu']:.2f} s + {best['child_cpu']:.2f} s, "
              f"peak RSS {best['max_rss_mb'] + best['child_max_rss_mb']:.0f} MB (this process + its largest child)")
        return 0
    agree = all(h["stages"] == runs[0]["stage_status"] and h["tasks"] == runs[0]["tasks"]
                and h["succeeded"] == sum(v == "SUCCEEDED" for v in runs[0]["job_status"].values()) for h in hs_runs)
    print(f"  the History Server and flowscope agree on every job, stage attempt and task count: {agree}")
    med_wall = statistics.median(r["wall"] for r in runs)
    replay_best = min(r["seconds"] for r in runs)
    hs_best = min(hs_runs, key=lambda h: h["wall"])
    figures: dict[str, Any] = {
        "log": {k: meta[k] for k in ("source", "copies", "events", "tasks", "jobs", "bytes")},
        "flowscope": {"wall_best": best["wall"], "wall_median": med_wall, "replay_best": replay_best,
                      "events_per_s": meta["events"] / replay_best, "mb_per_s": mb / replay_best,
                      "batches": best["batches"],
                      "max_rss_mb": max(r["max_rss_mb"] + r["child_max_rss_mb"] for r in runs)},
        "history_server": {"wall_best": hs_best["wall"], "up": hs_best["up"], "listed": hs_best["listed"],
                           "replay_after_listed": hs_best["wall"] - hs_best["listed"],
                           "events_per_s": meta["events"] / hs_best["wall"], "mb_per_s": mb / hs_best["wall"],
                           "max_rss_mb": max((h["max_rss_mb"] or 0) for h in hs_runs)},
    }
    figures["ratio_wall"] = hs_best["wall"] / best["wall"]
    # CPU seconds to full state (every process of flowscope's, every thread of the JVM's): what a shared machine's
    # load moves least; best of the runs each
    fs_cpu = min(r["cpu"] + r["child_cpu"] for r in runs)
    hs_cpu = min((h["cpu"] for h in hs_runs if h["cpu"] is not None), default=None)
    figures["cpu"] = {"flowscope": fs_cpu, "history_server": hs_cpu,
                      "ratio": hs_cpu / fs_cpu if hs_cpu is not None else None}
    figures["commands"] = {name: {**c, "ratio_wall": hs_best["wall"] / c["wall"]} for name, c in commands.items()}
    figures["agree"] = agree
    print()
    print(f"{'':28}{'time to full state':>20}{'events/s':>14}{'MB/s':>10}{'peak RSS':>12}")
    print(f"{'flowscope (process)':28}{best['wall']:>18.2f} s{meta['events'] / best['wall']:>14,.0f}"
          f"{mb / best['wall']:>10.1f}{figures['flowscope']['max_rss_mb']:>9.0f} MB")
    print(f"{'flowscope (replay only)':28}{replay_best:>18.2f} s{meta['events'] / replay_best:>14,.0f}"
          f"{mb / replay_best:>10.1f}")
    print(f"{'History Server (from start)':28}{hs_best['wall']:>18.2f} s{meta['events'] / hs_best['wall']:>14,.0f}"
          f"{mb / hs_best['wall']:>10.1f}{figures['history_server']['max_rss_mb']:>9.0f} MB")
    print(f"{'  of which: app listed at':28}{hs_best['listed']:>18.2f} s")
    for name, c in commands.items():
        print(f"{'flowscope ' + name + ' (command)':28}{c['wall']:>18.2f} s{meta['events'] / c['wall']:>14,.0f}"
              f"{mb / c['wall']:>10.1f}   {hs_best['wall'] / c['wall']:.1f}x")
    if hs_cpu is not None:
        print(f"{'CPU to full state':28}{fs_cpu:>18.2f} s flowscope (all processes), {hs_cpu:.2f} s the History Server "
              f"(all threads): {hs_cpu / fs_cpu:.1f}x")
    print()
    print(f"flowscope reaches full state {figures['ratio_wall']:.1f}x faster than the History Server lists the jobs "
          f"(goal: >= 5x, issue 26); {best['batches']:,} progress batches applied")
    for name, goal in (("report", 3.0), ("frontiers", 5.0)):  # issue 33, goal 1
        if name not in commands:
            continue
        run = commands[name]
        by_cpu = hs_cpu / run["cpu"] if hs_cpu is not None else None
        by_wall = hs_best["wall"] / run["wall"]
        figures["commands"][name].update({"ratio_cpu": by_cpu, "goal": goal})
        cpu_text = (f"{by_cpu:.2f}x by CPU ({hs_cpu:.1f} s / {run['cpu']:.2f} s)" if by_cpu is not None
                    else "CPU unknown")
        verdict = "met" if by_cpu is not None and by_cpu >= goal else "NOT met"
        print(f"goal: `flowscope {name}` >= {goal:.0f}x faster than the History Server: {cpu_text}, "
              f"{by_wall:.2f}x by wall; {verdict} by CPU; its peak RSS {run['rss_mb']:.0f} MB (largest process)")
    recorded = REPORT_RSS_MB.get((meta["source"], meta["copies"]))
    if recorded is not None and "report" in commands:
        rss = commands["report"]["rss_mb"]
        print(f"goal: `flowscope report`'s peak RSS no more than before: {rss:.0f} MB against {recorded:.0f} MB; "
              f"{'met' if rss <= recorded else 'NOT met'}")
    print(f"load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
