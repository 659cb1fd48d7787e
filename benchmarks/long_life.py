"""Long life on the live path: the server's and the listener's memory over a day of streaming (issue 25, item 6).

Two parts, each reporting memory at 10%, 50% and 100% of its run (warm-up is the first 10%):

* **server**: a real ``flowscope serve --spark-port`` process is fed, through its Spark ingest port and the listener
  protocol, a streaming query's events: the micro-batches of ``fixtures/spark/streaming_stall`` (a real pyspark
  streaming query) replicated with fresh job, stage, task, SQL and micro-batch ids and later times until at least
  ``--events`` events (default 1,000,000: 62,000 micro-batches of this query, 17 hours of a one-second trigger), as
  fast as the server takes them (TCP pushes back). Reported: the server process's RSS, the session's batches and
  status.
* **listener**: a real PySpark streaming query (rate source, ``--trigger-ms`` trigger, a memory sink) runs for
  ``--minutes`` with the JVM listener attached to the same server; reported: the driver JVM's heap in use after a
  full GC, the driver's and the JVM's RSS, the listener's queue and counters. (A real query at a 100 ms trigger
  makes about 100 events a second on this machine: minutes, not a day; the heap after GC is what would grow.)

Run: ``python benchmarks/long_life.py [--events 1000000] [--minutes 5] [--trigger-ms 100] [--parts server,listener]``;
writes ``benchmarks/out/long_life.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[1]
OUT = Path(__file__).resolve().parent / "out"
SOURCE = next((REPO / "fixtures" / "spark" / "streaming_stall").glob("eventlog_v2_*"))


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def start_server(data: Path) -> tuple[subprocess.Popen, str, int]:
    spark_port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "flowscope.cli", "serve", "--port", "0", "--spark-port",
                             str(spark_port), "--data-dir", str(data)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.stdout is not None  # piped above
    m = re.match(r"flowscope: serving (http://127\.0\.0\.1:\d+)/", proc.stdout.readline())
    if not m:
        proc.kill()
        raise SystemExit("the server did not start")
    return proc, m.group(1), spark_port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streaming_events(target_events: int):
    """The fixture's events, its body replicated with fresh ids (micro-batch ids too) until ``target_events``."""
    spec = importlib.util.spec_from_file_location("replicate", REPO / "benchmarks" / "replay_vs_history_server.py")
    assert spec is not None and spec.loader is not None
    replicate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(replicate)
    events = replicate.read_source(SOURCE)
    once = replicate.ONCE_BEFORE | replicate.ONCE_AFTER
    before = [e for e in events if e.get("Event") in replicate.ONCE_BEFORE]
    query = ("QueryStartedEvent", "QueryTerminatedEvent")  # one query, started once, running throughout
    started = [e for e in events if e.get("Event", "").endswith(query[0])]
    body = [e for e in events if e.get("Event") not in once and not e.get("Event", "").endswith(query)]
    renumber = replicate.Renumber(body)
    batches = 1 + max(int(e["Properties"].get("streaming.sql.batchId", -1)) for e in body
                      if e.get("Event") == "SparkListenerJobStart")
    yield from before + started
    sent, k = len(before) + len(started), 0
    while sent < target_events:
        for e in body:
            c = renumber.copy(e, k)
            if k and c.get("Event") == "SparkListenerJobStart" and "streaming.sql.batchId" in c.get("Properties", {}):
                props = dict(c["Properties"])
                props["streaming.sql.batchId"] = str(int(props["streaming.sql.batchId"]) + k * batches)
                c = dict(c, Properties=props)
            elif k and c.get("Event", "").endswith("QueryProgressEvent"):
                progress = dict(c["progress"])
                progress["batchId"] = progress["batchId"] + k * batches
                c = dict(c, progress=progress)
            yield c
            sent += 1
        k += 1


def server_part(events: int) -> dict:
    import httpx

    with tempfile.TemporaryDirectory(prefix="flowscope-long-life-") as tmp:
        proc, url, port = start_server(Path(tmp) / "data")
        try:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(orjson.dumps({"Event": "flowscope.Hello", "protocol": 1, "listener": "benchmark",
                                       "token": "", "app": "long-life", "appId": "local-long-life",
                                       "instance": "long-life"}) + b"\n")
            marks = {int(events * f): f"{int(f * 100)}%" for f in (0.1, 0.5, 1.0)}
            samples, chunk, n, start = [], [], 0, time.perf_counter()
            for e in streaming_events(events):
                chunk.append(orjson.dumps(e))
                n += 1
                if len(chunk) == 2000 or n in marks:
                    sock.sendall(b"\n".join(chunk) + b"\n")
                    chunk = []
                if n in marks:
                    samples.append({"at": marks[n], "events": n, "rss_mib": round(rss_mib(proc.pid), 1),
                                    "elapsed_s": round(time.perf_counter() - start, 1)})
                    print(f"server: {samples[-1]}", flush=True)
            sock.close()
            sessions = httpx.get(f"{url}/api/sessions", timeout=60).json()
            info = {k: sessions[0].get(k) for k in ("status", "batches", "records", "events_lost", "marks")}
            return {"events": n, "samples": samples, "session": info}
        finally:
            proc.kill()
            proc.wait(10)


LISTENER_DRIVER = textwrap.dedent('''
    import json, os, sys, time
    from pyspark.sql import SparkSession
    import flowscope

    url, minutes, trigger_ms = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    spark = (SparkSession.builder.master("local[2]").appName("long-life")
             .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    att = flowscope.attach(spark, url, quiet=True)
    jvm = spark.sparkContext._jvm

    def rss(pid):
        with open(f"/proc/{pid}/status") as f:
            return next(int(l.split()[1]) / 1024 for l in f if l.startswith("VmRSS:"))

    jvm_pid = int(jvm.ProcessHandle.current().pid())
    q = (spark.readStream.format("rate").option("rowsPerSecond", 50).load()
         .selectExpr("value % 10 AS k").groupBy("k").count()
         .writeStream.outputMode("complete").format("memory").queryName("longlife")
         .trigger(processingTime=f"{trigger_ms} milliseconds").start())
    start = time.monotonic()
    total = minutes * 60
    for frac in (0.1, 0.5, 1.0):
        while time.monotonic() - start < total * frac:
            time.sleep(0.5)
        jvm.System.gc()
        heap = jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed()
        stats = att.stats()
        print("SAMPLE " + json.dumps({"at": f"{int(frac * 100)}%", "elapsed_s": round(time.monotonic() - start),
                                      "micro_batches": (q.lastProgress or {}).get("batchId", -1) + 1,
                                      "heap_after_gc_mib": round(heap / 2**20, 1),
                                      "jvm_rss_mib": round(rss(jvm_pid), 1),
                                      "python_rss_mib": round(rss(os.getpid()), 1), "listener": stats}), flush=True)
    q.stop()
    spark.stop()
''')


def listener_part(minutes: float, trigger_ms: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="flowscope-long-life-") as tmp:
        proc, url, _ = start_server(Path(tmp) / "data")
        try:
            env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO))
            driver = subprocess.Popen([sys.executable, "-c", LISTENER_DRIVER, url, str(minutes), str(trigger_ms)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            samples = []
            assert driver.stdout is not None and driver.stderr is not None  # piped above
            for line in driver.stdout:
                if line.startswith("SAMPLE "):
                    samples.append(json.loads(line[7:]))
                    samples[-1]["server_rss_mib"] = round(rss_mib(proc.pid), 1)
                    print(f"listener: {samples[-1]}", flush=True)
            driver.wait(120)
            if driver.returncode != 0:
                raise SystemExit(f"the driver failed: {driver.stderr.read()[-3000:]}")
            return {"minutes": minutes, "trigger_ms": trigger_ms, "samples": samples}
        finally:
            proc.kill()
            proc.wait(10)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--minutes", type=float, default=5)
    p.add_argument("--trigger-ms", type=int, default=100)
    p.add_argument("--parts", default="server,listener")
    args = p.parse_args()
    sys.path.insert(0, str(REPO))
    report = {}
    parts = args.parts.split(",")
    if "server" in parts:
        report["server"] = server_part(args.events)
    if "listener" in parts:
        report["listener"] = listener_part(args.minutes, args.trigger_ms)
    OUT.mkdir(exist_ok=True)
    (OUT / "long_life.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
