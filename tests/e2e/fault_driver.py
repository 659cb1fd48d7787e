"""A PySpark driver the fault tests steer line by line on stdin, while they kill, stop and restart flowscope servers.

Usage: ``python -m tests.e2e.fault_driver JAR PORT QUEUE``. The application has flowscope's JVM listener by
configuration alone (``spark.extraListeners``, Spark's shared queue) and the Py4J listener (added as
``flowscope.attach`` adds it), both streaming to the Spark ingest port PORT, each with a queue of QUEUE events.
Commands (one a line):

* ``batch N``: a job of N tasks with a shuffle; prints ``RUNNING batch`` when it starts, ``PROGRESS batch <done>
  <tasks>`` once while it runs (a task done, at least a quarter of its submitted stages' tasks to go: a sign it is
  still running), ``DONE batch <sum>``.
* ``stream N``: a streaming query (rate source, 100 ms trigger, memory sink) for N micro-batches; ``RUNNING stream``
  once the first is done, ``PROGRESS stream <batch id>`` at each later one it sees, then ``DONE stream <batches>
  <rows in the sink>``.
* ``drain``: ``DRAINED true`` once Spark's listener bus is empty (every listener has returned from every event
  posted so far), ``DRAINED false`` if it is not within ``DRAIN_MS``.
* ``stats``: ``STATS <json>``: each listener's counters.
* ``stop``: stops Spark and prints ``RESULT <json>``: the counters and the listener-bus queues' drop counters, then
  exits.
"""

from __future__ import annotations

import json
import sys
import threading
import time

DRAIN_MS = 30_000  # far beyond what a few hundred events take: a bus not empty by then waits on something


def main() -> None:
    jar, port, queue = sys.argv[1], sys.argv[2], sys.argv[3]
    from pyspark.sql import SparkSession

    from backend.spark.live.listener import Py4JListener

    spark = (SparkSession.builder.master("local[2]").appName("flowscope-faults")
             .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.jars", jar).config("spark.extraListeners", "flowscope.FlowscopeListener")
             .config("spark.flowscope.port", port).config("spark.flowscope.queue", queue)
             .getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("WARN")
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
            say(f"DONE batch {batch(sc, int(words[1]))}")
        elif words[0] == "stream":
            say(f"DONE stream {stream(spark, int(words[1]))}")
        elif words[0] == "drain":
            say(f"DRAINED {str(drained(bus)).lower()}")
        elif words[0] == "stats":
            say("STATS " + json.dumps({k: counters(v) for k, v in listeners.items()}))
        elif words[0] == "stop":
            stats = {k: counters(v) for k, v in listeners.items()}
            drops = {name: int(c.getCount()) for name, c in bus.metrics().metricRegistry().getCounters().items()
                     if name.endswith("numDroppedEvents")}
            spark.stop()
            py4j.close(1000)
            say("RESULT " + json.dumps({"stats": stats, "spark_dropped": drops}))
            return


def batch(sc, n: int) -> int:
    """The sum of a job of ``n`` tasks and a shuffle, watched (``PROGRESS batch``) while it runs."""
    group = f"batch{time.monotonic_ns()}"
    sc.setJobGroup(group, f"batch {n}")
    done = threading.Event()
    watcher = threading.Thread(target=watch, args=(sc, group, done), daemon=True)
    watcher.start()
    try:
        return (sc.parallelize(range(n * 10), n).map(lambda x: (x % 7, x))
                .reduceByKey(lambda a, b: a + b, 2).values().sum())
    finally:
        done.set()
        watcher.join()


def watch(sc, group: str, done: threading.Event) -> None:
    """Say ``PROGRESS batch`` once, when the group's running job has a task done and a quarter of its tasks to go."""
    tracker = sc.statusTracker()
    while not done.wait(0.02):
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            if info is None or info.status != "RUNNING":
                continue
            stages = [s for s in map(tracker.getStageInfo, info.stageIds) if s is not None]
            finished, tasks = sum(s.numCompletedTasks for s in stages), sum(s.numTasks for s in stages)
            if 0 < finished <= tasks * 3 // 4:
                say(f"PROGRESS batch {finished} {tasks}")
                return


def drained(bus) -> bool:
    """Whether every listener-bus queue empties within DRAIN_MS (Spark's ``waitUntilEmpty``)."""
    from py4j.protocol import Py4JJavaError

    try:
        bus.waitUntilEmpty(DRAIN_MS)
    except Py4JJavaError:  # java.util.concurrent.TimeoutException
        return False
    return True


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
        wait_for_batch(q, batches, progress=True)
    finally:
        q.stop()
    rows = spark.table(name).count()
    return f"{q.lastProgress['batchId'] + 1} {rows}"


def wait_for_batch(q, n: int, progress: bool = False) -> None:
    """Until micro-batch ``n`` is done; with ``progress``, ``PROGRESS stream <id>`` at each new one seen."""
    end = time.monotonic() + 120
    said = q.lastProgress["batchId"] if q.lastProgress is not None else None
    while (q.lastProgress is None or q.lastProgress["batchId"] < n) and time.monotonic() < end:
        if q.exception() is not None:
            raise RuntimeError(str(q.exception()))
        if progress and q.lastProgress is not None and q.lastProgress["batchId"] != said:
            said = q.lastProgress["batchId"]
            say(f"PROGRESS stream {said}")
        time.sleep(0.05)


def counters(listener) -> dict:
    return {"sent": int(listener.sent()), "dropped": int(listener.dropped()), "queued": int(listener.queued()),
            "queued_bytes": int(listener.queuedBytes()), "connected": bool(listener.connected()),
            "reconnects": int(listener.reconnects()), "connect_failures": int(listener.connectFailures())}


def say(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    main()
