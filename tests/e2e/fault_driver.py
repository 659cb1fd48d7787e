"""A PySpark driver the fault tests steer line by line on stdin, while they kill, stop and restart flowscope servers.

Usage: ``python -m tests.e2e.fault_driver JAR PORT QUEUE``. The application has flowscope's JVM listener by
configuration alone (``spark.extraListeners``, Spark's shared queue) and the Py4J listener (added as
``flowscope.attach`` adds it), both streaming to the Spark ingest port PORT, each with a queue of QUEUE events.
Commands (one a line):

* ``batch N``: a job of N tasks with a shuffle; prints ``RUNNING batch`` when it starts, ``DONE batch <sum>``.
* ``stream N``: a streaming query (rate source, 100 ms trigger, memory sink) for N micro-batches; ``RUNNING stream``
  once the first is done, then ``DONE stream <batches> <rows in the sink>``.
* ``stats``: ``STATS <json>``: each listener's counters.
* ``stop``: stops Spark and prints ``RESULT <json>``: the counters, the listener-bus queues' drop counters, and the
  slowest event each flowscope listener took (Spark's own per-listener timers), then exits.

Spark's own "Process of event ... by listener ... took" lines (at INFO, for events over 500 ms here) reach stderr.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def main() -> None:
    jar, port, queue = sys.argv[1], sys.argv[2], sys.argv[3]
    from pyspark.sql import SparkSession

    from backend.spark.live.listener import Py4JListener

    spark = (SparkSession.builder.master("local[2]").appName("flowscope-faults")
             .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.jars", jar).config("spark.extraListeners", "flowscope.FlowscopeListener")
             .config("spark.flowscope.port", port).config("spark.flowscope.queue", queue)
             .config("spark.scheduler.listenerbus.logSlowEvent.threshold", "500ms")
             .getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("WARN")
    jvm: Any = sc._jvm  # Py4J's view of the JVM (None only before the context starts)
    level = jvm.org.apache.logging.log4j.Level.INFO
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel("org.apache.spark.scheduler.AsyncEventQueue", level)
    # attach adds nothing to an application that has the listener by configuration: the Py4J one is added by hand
    py4j = Py4JListener(sc, "127.0.0.1", int(port), capacity=int(queue), app_name="flowscope-faults py4j")
    py4j.send(json.dumps({"Event": "SparkListenerApplicationStart", "App Name": "flowscope-faults py4j",
                          "App ID": sc.applicationId, "Timestamp": sc.startTime, "User": sc.sparkUser()}))
    sc._jsc.sc().addSparkListener(py4j)
    bus = sc._jsc.sc().listenerBus()
    config = next(lis for lis in bus.listeners() if lis.getClass().getName() == "flowscope.FlowscopeListener")
    listeners = {"jvm": config, "py4j": py4j}
    say("READY")
    for command in sys.stdin:
        words = command.split()
        if not words:
            continue
        if words[0] == "batch":
            say("RUNNING batch")
            n = int(words[1])
            total = (sc.parallelize(range(n * 10), n).map(lambda x: (x % 7, x))
                     .reduceByKey(lambda a, b: a + b, 2).values().sum())
            say(f"DONE batch {total}")
        elif words[0] == "stream":
            say(f"DONE stream {stream(spark, int(words[1]))}")
        elif words[0] == "stats":
            say("STATS " + json.dumps({k: counters(v) for k, v in listeners.items()}))
        elif words[0] == "stop":
            stats = {k: counters(v) for k, v in listeners.items()}
            slowest = slowest_events(bus)
            drops = {name: int(c.getCount()) for name, c in bus.metrics().metricRegistry().getCounters().items()
                     if name.endswith("numDroppedEvents")}
            spark.stop()
            py4j.close(1000)
            say("RESULT " + json.dumps({"stats": stats, "spark_dropped": drops, "slowest_ms": slowest}))
            return


def stream(spark, batches: int) -> str:
    """A streaming query that runs ``batches`` micro-batches (``RUNNING stream`` once the first is done)."""
    name = f"faults{time.monotonic_ns()}"
    q = (spark.readStream.format("rate").option("rowsPerSecond", 200).load()
         .selectExpr("value % 5 AS k").groupBy("k").count()
         .writeStream.outputMode("complete").format("memory").queryName(name)
         .trigger(processingTime="100 milliseconds").start())
    try:
        wait_for_batch(q, 1)
        say("RUNNING stream")
        wait_for_batch(q, batches)
    finally:
        q.stop()
    rows = spark.table(name).count()
    return f"{q.lastProgress['batchId'] + 1} {rows}"


def wait_for_batch(q, n: int) -> None:
    end = time.monotonic() + 120
    while (q.lastProgress is None or q.lastProgress["batchId"] < n) and time.monotonic() < end:
        if q.exception() is not None:
            raise RuntimeError(str(q.exception()))
        time.sleep(0.05)


def counters(listener) -> dict:
    return {"sent": int(listener.sent()), "dropped": int(listener.dropped()), "queued": int(listener.queued()),
            "queued_bytes": int(listener.queuedBytes()), "connected": bool(listener.connected()),
            "reconnects": int(listener.reconnects()), "connect_failures": int(listener.connectFailures())}


def slowest_events(bus) -> dict:
    """The slowest event (ms) each flowscope listener took, from Spark's per-listener timers (a sample)."""
    out = {}
    for name, timer in bus.metrics().metricRegistry().getTimers().items():
        if "listenerProcessingTime" in name and ("flowscope" in name.lower() or "Proxy" in name):
            out[name] = timer.getSnapshot().getMax() / 1e6
    return out


def say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    main()
