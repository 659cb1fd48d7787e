"""The demo behind ``flowscope demo``, the embedded default.

A real local PySpark pipeline, attached live, in the browser view.

It needs nothing but the install: a local SparkSession (``local[2]``), ``flowscope.attach`` starting the server
in the background of this driver, then a Structured Streaming query on the rate source with a stateful windowed
aggregation. One micro-batch is deliberately slow (a Python UDF sleeps on one row), so the view shows a stage
holding that batch id while the source has moved on, and "Why is this stuck?" names the stage, its task and its
executor. The page keeps serving after the query has run its batches, until Ctrl-C.

It is a client of :func:`flowscope.attach` like any user's driver; its command-line options are in
flowscope/commands/demo.py.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
import webbrowser
from collections.abc import Iterator
from typing import Any

SLOW_VALUE = 40  # the rate source's 41st row: past the first batches, so the stall stands out


def build_query(spark: Any, checkpoint: str, rows_per_second: int, stall_seconds: float) -> Any:
    """The streaming query: a rate source, one deliberately slow row, a windowed count into a memory sink."""
    from pyspark.sql import functions as F

    # Row at a time, said explicitly: Spark 4 makes Python UDFs Arrow-optimized by default, which needs pyarrow and
    # pandas (not flowscope's dependencies) and, without them, warns on every run before falling back to this.
    @F.udf("long", useArrow=False)
    def slow(value):
        import time as _time

        if value == SLOW_VALUE:
            _time.sleep(stall_seconds)
        return value

    spark.range(4).select(slow("id")).collect()  # start the Python workers first: the only stall is the deliberate one
    rate = (spark.readStream.format("rate").option("rowsPerSecond", rows_per_second).option("numPartitions", 2).load())
    counts = (rate.withColumn("value", slow("value"))
              .withWatermark("timestamp", "5 seconds")
              .groupBy(F.window("timestamp", "4 seconds"), (F.col("value") % 3).alias("bucket"))
              .count())
    return (counts.writeStream.queryName("demo_windows").outputMode("update").format("memory")
            .option("checkpointLocation", checkpoint).trigger(processingTime="1 second").start())


@contextlib.contextmanager
def output_of_children_to(path: str) -> Iterator[None]:
    """Processes started inside (Spark's JVM) write their stdout and stderr to ``path``.

    For their whole life; this process's own output is back on the terminal afterwards."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    log_fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, log_fd):
            os.close(fd)


def run(args: argparse.Namespace) -> int:
    """Run the demo with the options of ``flowscope demo`` (see flowscope/commands/demo.py)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # pragma: no cover - pyspark is a dependency
        print("flowscope demo: pyspark is not installed (pip install pyspark)", file=sys.stderr)
        return 2
    from flowscope import attach

    workdir = tempfile.mkdtemp(prefix="flowscope-demo-")
    spark_log = os.path.join(workdir, "spark.log")
    print(f"flowscope demo: starting a local Spark session (about 10 s; Spark's own output goes to {spark_log})...",
          flush=True)
    with output_of_children_to(spark_log):  # the JVM's start-up chatter: nothing a demo user can act on
        spark = (SparkSession.builder.master("local[2]").appName("flowscope demo")
                 .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
                 .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    attachment = attach(spark, args.url, name="flowscope demo")
    if args.open and attachment.url.startswith("http"):
        threading.Timer(1.0, webbrowser.open, args=(attachment.url,)).start()
    query = build_query(spark, os.path.join(workdir, "checkpoint"), args.rows_per_second, args.stall)
    print(f"flowscope demo: streaming query running ({args.batches} micro-batches; batch with row {SLOW_VALUE} "
          f"stalls {args.stall:.0f} s). Open {attachment.url}", flush=True)
    try:
        deadline = time.monotonic() + 60 + args.batches * 3 + args.stall
        while query.isActive and time.monotonic() < deadline:
            progress = query.lastProgress
            if progress and progress.get("batchId", -1) >= args.batches:
                break
            time.sleep(0.5)
        query.stop()
        attachment.flush()
        if args.exit:
            return 0
        print(f"flowscope demo: the query stopped after {args.batches} batches; the session stays at "
              f"{attachment.url} (Ctrl-C to quit)", flush=True)
        attachment.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if query.isActive:
            query.stop()
        attachment.detach()
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0
