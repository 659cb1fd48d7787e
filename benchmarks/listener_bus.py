"""The flowscope listener's time on Spark's listener bus, on a job of 100,000 tasks (issue 25, item 5).

A PySpark driver (local[2], in a process of its own) runs one job of ``--tasks`` tasks (``spark.range`` with a
partition per task, summed: all in the JVM) with flowscope's listener
streaming to a Spark ingest port in this process, where a thread models every event (the Spark model, as a live
session would). Variants:

* ``config``: the JVM listener by configuration alone (``spark.extraListeners``); it moves itself to its own
  listener-bus queue (``flowscope``) at the first event;
* ``attach``: the JVM listener put in by ``flowscope.attach`` (registered on the ``flowscope`` queue directly);
* ``py4j``: the Py4J fallback (``attach(listener="py4j")``), on Spark's shared queue.

Reported per variant, from Spark's own metrics (``LiveListenerBus.metrics``): the listener's time per event
(``listenerProcessingTime.<listener class>``: count, mean, p50, p99, max over Spark's sample of the latest events,
in microseconds), every queue's ``numDroppedEvents`` (which must stay 0), Spark's "Process of event ... took" log
lines for the listener (logged here for events over 500 ms: none expected), the listener's own counters (sent,
dropped), the events the ingest side modelled, and the job's wall time.

Run: ``python benchmarks/listener_bus.py [--tasks 100000] [--variants config,attach,py4j]``; writes
``benchmarks/out/listener_bus.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "out"

DRIVER = textwrap.dedent('''
    import json, sys, time
    from pyspark.sql import SparkSession

    variant, tasks, jar, port = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    builder = (SparkSession.builder.master("local[2]").appName(f"listener-bus-{variant}")
               .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
               .config("spark.scheduler.listenerbus.logSlowEvent.threshold", "500ms")
               .config("spark.driver.memory", "2g"))
    if variant == "config":
        builder = (builder.config("spark.jars", jar).config("spark.extraListeners", "flowscope.FlowscopeListener")
                   .config("spark.flowscope.port", port))
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("WARN")
    jvm = sc._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        "org.apache.spark.scheduler.AsyncEventQueue", jvm.org.apache.logging.log4j.Level.INFO)
    bus = sc._jsc.sc().listenerBus()
    if variant == "config":
        listener = next(x for x in bus.listeners() if x.getClass().getName() == "flowscope.FlowscopeListener")
    else:
        import flowscope
        att = flowscope.attach(spark, f"tcp://127.0.0.1:{port}", listener="jvm" if variant == "attach" else "py4j",
                               quiet=True)
        listener = att.listener
    start = time.perf_counter()
    # one task per partition, all in the JVM (no Python worker): the listener bus sees Spark's own event rate
    total = spark.range(0, tasks, 1, tasks).selectExpr("sum(id) AS s").collect()[0]["s"]
    wall = time.perf_counter() - start
    assert total == tasks * (tasks - 1) // 2
    bus.waitUntilEmpty(600000)
    registry = bus.metrics().metricRegistry()
    timers = {}
    for name, timer in registry.getTimers().items():
        if "listenerProcessingTime" not in name:
            continue
        snap = timer.getSnapshot()
        timers[name] = {"count": int(timer.getCount()), "mean_us": snap.getMean() / 1e3,
                        "p50_us": snap.getMedian() / 1e3, "p99_us": snap.get99thPercentile() / 1e3,
                        "max_us": snap.getMax() / 1e3}
    drops = {name: int(c.getCount()) for name, c in registry.getCounters().items()
             if name.endswith("numDroppedEvents")}
    stats = {"sent": int(listener.sent()), "dropped": int(listener.dropped())}
    spark.stop()
    print("RESULT " + json.dumps({"wall_s": wall, "timers": timers, "spark_dropped": drops, "listener": stats}),
          flush=True)
''')


def run(variant: str, tasks: int, jar: str) -> dict:
    from backend.spark.live.socket_feed import SparkIngestServer

    modelled = {"events": 0, "lost": 0}

    def on_feed(feed) -> None:
        def drain() -> None:
            while feed.take(4096, 0.5) is not None:
                pass
            modelled["events"] += feed.events
            modelled["lost"] += feed.events_lost

        threading.Thread(target=drain, daemon=True).start()

    ingest = SparkIngestServer(on_feed, "127.0.0.1", 0)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO))
    try:
        proc = subprocess.run([sys.executable, "-c", DRIVER, variant, str(tasks), jar, str(ingest.address[1])],
                              capture_output=True, text=True, env=env, timeout=3600)
        time.sleep(2)  # the drain thread finishes modelling what arrived
    finally:
        ingest.close()
    results = [line[7:] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not results:
        raise SystemExit(f"{variant}: the driver failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    out = json.loads(results[-1])
    out["slow_event_lines"] = [line for line in proc.stderr.splitlines()
                               if "Process of event" in line and ("Flowscope" in line or "Proxy" in line)]
    out["modelled_events"] = modelled["events"]
    out["events_lost"] = modelled["lost"]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=100_000)
    p.add_argument("--variants", default="config,attach")
    args = p.parse_args()
    sys.path.insert(0, str(REPO))
    from backend.spark.live.listener import listener_jar

    jar = str(listener_jar())
    report = {}
    for variant in args.variants.split(","):
        r = run(variant, args.tasks, jar)
        report[variant] = r
        ours = {k: v for k, v in r["timers"].items() if "Flowscope" in k or "Proxy" in k}
        print(f"{variant}: {args.tasks} tasks in {r['wall_s']:.1f} s; listener {r['listener']}; modelled "
              f"{r['modelled_events']} events, {r['events_lost']} lost", flush=True)
        for name, t in ours.items():
            print(f"  {name}: {t['count']} events, mean {t['mean_us']:.1f} us, p50 {t['p50_us']:.1f} us, "
                  f"p99 {t['p99_us']:.1f} us, max {t['max_us']:.1f} us", flush=True)
        print(f"  Spark's dropped events per queue: {r['spark_dropped']}; slow-event log lines: "
              f"{len(r['slow_event_lines'])}", flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "listener_bus.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
