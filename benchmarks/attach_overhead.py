"""What ``flowscope.attach`` costs a busy Spark job, whether it loses events, and how late the session shows them.

A 20,000-task job (``sc.parallelize(range(20000), 20000).map(...).count()``, local[2]: Spark and flowscope share
this machine's cores) is timed in fresh driver processes, alternating runs without flowscope (``base``) and with
it attached (``jvm``: the JVM listener streaming to the in-driver flowscope server, where the live session runs
the Spark model and the tracker with contract checks; optionally ``py4j``: the fallback listener). Event logging
is on in every run, so both sides pay for it and the attached run can be checked against its own log:

* **lost events**: the events the listener sent and the session modelled equal the event log's (less the events
  Spark posted before attach ran), 20,000 task ends each; the listener's drop counter and Spark's listener-bus
  drop counters are zero; the session is not marked uncertain;
* **latency**: for each task, from its ``Finish Time`` (Spark's clock, in the driver) to the end of the session
  slice that applied its task end (after which the server's subscribers are told): p50, p95, p99, max.

Wall time depends on whatever else the machine runs; so the CPU time the driver's process tree (its JVM, Spark's
Python workers, flowscope's threads) spends on the job is reported too, which measures flowscope's cost whatever
the load.

Goals (issue 4): slowdown <= 10%, p95 <= 200 ms, no event lost.

Run: ``python benchmarks/attach_overhead.py [--tasks 20000] [--rounds 3] [--variants base,jvm,py4j]``; writes
``benchmarks/out/attach_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"

DRIVER = textwrap.dedent('''
    import json, os, sys, time
    from pyspark.sql import SparkSession

    variant, tasks, logdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]

    def cpu_seconds(root):
        """CPU time (user + system, reaped children included) of the driver process (flowscope's threads run
        there), its JVM, and Spark's Python workers below the JVM."""
        tick = os.sysconf("SC_CLK_TCK")
        stats = {}
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                stats[int(pid)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
        def tree(pid):
            return stats.get(pid, (0, 0))[1] + sum(tree(c) for c, (pp, _) in stats.items() if pp == pid)
        out = {"driver": stats[root][1] / tick, "jvm": 0.0, "workers": 0.0}
        for child, (ppid, cpu) in stats.items():
            if ppid == root:
                out["jvm"] += cpu / tick
                out["workers"] += (tree(child) - cpu) / tick
        return out

    spark = (SparkSession.builder.master("local[2]").appName(f"attach-overhead-{variant}")
             .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", "file://" + logdir)
             .getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    sc.parallelize(range(100), 4).map(lambda x: x + 1).count()  # warm up: Python workers, JIT
    result = {"variant": variant, "tasks": tasks, "load_before": os.getloadavg()[0]}
    att = None
    latencies = []
    if variant != "base":
        import flowscope
        from backend.views.projections import session_info
        att = flowscope.attach(spark, listener=variant, quiet=True)
        feed, session = att.feed, att.session
        feed.task_end_times = []

        def on_slice(s):
            now = time.time() * 1000
            times = feed.task_end_times
            if times:
                latencies.extend(now - t for t in times)
                times.clear()

        session.listeners.append(on_slice)
        result["attach_path"] = att.path
    cpu0, t0 = cpu_seconds(os.getpid()), time.perf_counter()
    sc.parallelize(range(tasks), tasks).map(lambda x: x * 2).count()
    result["job_seconds"] = time.perf_counter() - t0
    if att is not None:
        att.flush(30)
    cpu1 = cpu_seconds(os.getpid())
    result["job_cpu"] = {k: round(cpu1[k] - cpu0[k], 2) for k in cpu1}
    result["job_cpu_seconds"] = sum(result["job_cpu"].values())
    result["load_after"] = os.getloadavg()[0]
    if att is not None:
        end = time.time() + 30
        while feed.task_end_times is not None and feed.model.task_ends < tasks and time.time() < end:
            time.sleep(0.05)
        time.sleep(0.5)  # the session's last slice
        counters = sc._jsc.sc().listenerBus().metrics().metricRegistry().getCounters()
        result["spark_dropped"] = {str(k): int(counters.get(k).getCount()) for k in counters.keySet()
                                   if str(k).endswith("numDroppedEvents")}
        result["listener"] = att.stats()
        result["feed"] = {k: v for k, v in feed.stats().items() if k != "queued"}
        result["task_ends_modelled"] = feed.model.task_ends
        info = session_info(session)
        result["session"] = {k: info[k] for k in ("status", "records", "batches", "errors", "findings")}
        result["latency_ms"] = sorted(latencies)
    spark.stop()
    if att is not None:
        time.sleep(0.5)
        result["events_modelled"] = feed.events
    print("RESULT " + json.dumps(result))
''')



def run(variant: str, tasks: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from backend.eventlog import EventLogReader, find_logs

    with tempfile.TemporaryDirectory(prefix="flowscope-bench-") as logdir:
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", DRIVER, variant, str(tasks), logdir], capture_output=True,
                              text=True, env=env, timeout=1800)
        lines = [ln[7:] for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            raise SystemExit(f"{variant} run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        result = json.loads(lines[-1])
        result["process_seconds"] = time.perf_counter() - t0
        if variant != "base":
            counts: dict[str, int] = {}
            after = 0  # events after the warm-up job ended (attach ran then), plus the application start
            warm = True
            for ev in EventLogReader(find_logs(logdir)[0]):
                kind = ev.event["Event"]
                counts[kind] = counts.get(kind, 0) + 1
                if not warm or kind == "SparkListenerApplicationStart":
                    after += 1
                if kind == "SparkListenerJobEnd":
                    warm = False
            result["log_events"] = sum(counts.values())
            result["log_task_ends"] = counts.get("SparkListenerTaskEnd", 0) - 4  # less the warm-up job's
            result["log_events_after_attach"] = after
    return result


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, round(p / 100 * (len(values) - 1))))
    return values[k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default="base,jvm", help="comma-separated: base, jvm, py4j")
    ap.add_argument("--out", default=str(OUT / "attach_overhead.json"), help="where the JSON report goes")
    args = ap.parse_args()
    variants = args.variants.split(",")
    runs: dict[str, list[dict]] = {v: [] for v in variants}
    for r in range(args.rounds):
        for v in variants:  # alternate, so a slow spell of the machine hits both sides
            res = run(v, args.tasks)
            runs[v].append(res)
            extra = ""
            if v != "base":
                lat = res["latency_ms"]
                extra = (f" latency p50 {pct(lat, 50):.0f} ms p95 {pct(lat, 95):.0f} ms;"
                         f" sent {res['listener']['sent']} dropped {res['listener']['dropped']}")
            cpu = " + ".join(f"{k} {n:.1f}" for k, n in res["job_cpu"].items())
            print(f"round {r + 1} {v:5s} job {res['job_seconds']:6.1f} s, {res['job_cpu_seconds']:6.1f} cpu-s ({cpu})"
                  f" (load {res['load_before']:.1f}->"
                  f"{res['load_after']:.1f}){extra}", flush=True)
    summary: dict[str, dict] = {}
    base = statistics.median(x["job_seconds"] for x in runs["base"]) if "base" in runs else None
    base_cpu = statistics.median(x["job_cpu_seconds"] for x in runs["base"]) if "base" in runs else None
    for v, rs in runs.items():
        times = [x["job_seconds"] for x in rs]
        job_cpu = [x["job_cpu_seconds"] for x in rs]
        s: dict = {"job_seconds": times, "median_seconds": statistics.median(times), "job_cpu_seconds": job_cpu,
                   "median_cpu_seconds": statistics.median(job_cpu), "job_cpu": [x["job_cpu"] for x in rs]}
        if base and v != "base":
            s["slowdown_pct"] = 100 * (s["median_seconds"] / base - 1)
            s["extra_cpu_pct"] = 100 * (s["median_cpu_seconds"] / base_cpu - 1)
        if v != "base":
            lat = sorted(x for r in rs for x in r["latency_ms"])
            s["latency_ms"] = {"n": len(lat), "p50": pct(lat, 50), "p95": pct(lat, 95), "p99": pct(lat, 99),
                               "max": lat[-1] if lat else None}
            s["lost"] = [{
                "listener_sent": r["listener"]["sent"], "listener_dropped": r["listener"]["dropped"],
                "spark_dropped": {k: n for k, n in r["spark_dropped"].items() if n},
                "events_modelled": r["events_modelled"], "log_events_after_attach": r["log_events_after_attach"],
                "task_ends_modelled": r["task_ends_modelled"], "log_task_ends": r["log_task_ends"],
                "uncertain": r["feed"]["uncertain"], "session": r["session"],
            } for r in rs]
        summary[v] = s
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    report = {"tasks": args.tasks, "rounds": args.rounds, "cores": os.cpu_count(), "summary": summary,
              "runs": {v: [{k: val for k, val in r.items() if k != "latency_ms"} for r in rs]
                       for v, rs in runs.items()}}
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
