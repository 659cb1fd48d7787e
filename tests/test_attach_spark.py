"""``flowscope.attach`` with real Spark.

* A PySpark driver in a subprocess (event logging on, attached with one line, recording what it received) runs a
  few jobs with shuffles, a reused (skipped) stage, SQL and a short stateful streaming query: the session built
  live equals the replay of the event log Spark wrote for the same application (structure, every batch, marks,
  final frontiers), and the listener received every event the log holds from the moment it attached.
* The configuration-only way (``spark.jars`` + ``spark.extraListeners``, nothing in the code) streams from the
  application's start to a flowscope ingest port.
* In the shared test session: the Py4J fallback (forced by a failing jar build) and the JVM listener attached side
  by side see the same jobs and make the same records.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import textwrap

import pytest

from backend.eventlog import EventLogReader, find_logs
from backend.spark.live.listener import ListenerBuildError, listener_jar
from backend.spark.live.socket_feed import SparkIngestServer
from backend.spark.model.spark_model import SparkModel
from tracker.progress_log.log_file import read_records
from tracker.progress_log.replay import Replay

LIVE_APP = textwrap.dedent('''
    import json, os, sys
    from pyspark.sql import SparkSession, functions as F
    import flowscope

    out = sys.argv[1]
    os.makedirs(out + "/eventlog")
    spark = (SparkSession.builder.master("local[2]").appName("flowscope-live-vs-replay")
             .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "3")
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", "file://" + out + "/eventlog")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    att = flowscope.attach(spark, out + "/live.jsonl", save_events=out + "/received.jsonl")
    sc = spark.sparkContext
    pairs = sc.parallelize(range(2000), 4).map(lambda x: (x % 10, x))
    summed = pairs.reduceByKey(lambda a, b: a + b, 3)
    summed.count()
    summed.count()  # the shuffle is reused: a skipped stage
    summed.join(pairs.distinct(2)).count()
    spark.range(5000).withColumn("k", F.col("id") % 7).groupBy("k").count().collect()
    src = out + "/stream-in"
    os.makedirs(src)
    for i in range(3):
        with open(f"{src}/part{i}.csv", "w") as f:
            f.write("".join(f"{(i * 10 + j) % 4},{j}\\n" for j in range(10)))
    q = (spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).csv(src)
         .groupBy("k").agg(F.sum("v").alias("s"))
         .writeStream.outputMode("complete").format("memory").queryName("agg")
         .option("checkpointLocation", out + "/ckpt").trigger(availableNow=True).start())
    q.awaitTermination()
    spark.stop()
    att.detach()
    print("RESULT " + json.dumps({"path": att.path, "reason": att.reason, "stats": att.stats(),
                                  "feed": att.feed.stats()}))
''')

CONFIG_APP = textwrap.dedent('''
    import json, sys
    from pyspark.sql import SparkSession
    import flowscope

    jar, port = sys.argv[1], sys.argv[2]
    spark = (SparkSession.builder.master("local[2]").appName("flowscope-config-only")
             .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
             .config("spark.jars", jar).config("spark.extraListeners", "flowscope.FlowscopeListener")
             .config("spark.flowscope.port", port).config("spark.flowscope.token", "t0k")
             .getOrCreate())
    att = flowscope.attach(spark)  # already attached by configuration: adds nothing
    spark.sparkContext.parallelize(range(100), 4).map(lambda x: (x % 3, x)).reduceByKey(lambda a, b: a + b).count()
    spark.stop()
    print("RESULT " + json.dumps({"path": att.path, "url": att.url}))
''')


def start_driver(script: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def result_of(proc: subprocess.Popen, timeout: float = 400) -> dict:
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    results = [line[7:] for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and results, f"driver failed ({proc.returncode}):\n{stdout}\n{stderr[-4000:]}"
    return json.loads(results[-1])


def replayed(records: list[dict]) -> Replay:
    replay = Replay("records", check_contracts=True)
    for r in records:
        replay.apply(r)
    replay.finish()
    return replay


def split(records: list[dict]) -> tuple[dict, list, list]:
    """Structure records, batches (updates sorted: ordering within a Spark event does not matter; the line of the
    cause is the log's line in a replay and the arrival order live) and mark labels."""
    structure: dict[str, list] = {"scope": [], "operator": [], "edge": []}
    batches, marks = [], []
    for r in records:
        kind = r.get("type")
        if kind in structure:
            structure[kind].append(r)
        elif kind == "progress":
            cause = {k: v for k, v in r["cause"].items() if k != "line"}
            batches.append((r["scope"], r["worker"], r["at"], sorted(r["updates"]), cause))
        elif kind == "mark" and "executor_event" not in r and "configured_cores" not in r:
            marks.append(r["label"])  # a listener attached at run time never sees the executors added before it,
            # and says the cores the configuration gives instead (a log has the executor before the configuration)
    return structure, batches, marks


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    """Both driver subprocesses, run at the same time (each spends most of its time starting Spark)."""
    out = tmp_path_factory.mktemp("live")
    feeds: list = []
    server = SparkIngestServer(feeds.append, "127.0.0.1", 0, token="t0k")
    try:
        live = start_driver(LIVE_APP, str(out))
        config = start_driver(CONFIG_APP, str(listener_jar()), str(server.address[1]))
        results = result_of(live), result_of(config)
    finally:
        server.close()
    return out, results[0], results[1], feeds


@pytest.fixture(scope="module")
def live_app(drivers):
    return drivers[0], drivers[1]


def test_live_session_equals_the_replay_of_the_applications_event_log(live_app):
    out, result = live_app
    assert result["path"] == "jvm", result  # the JVM listener: javac is on this machine
    live = [r for _, r in read_records(out / "live.jsonl")]
    model = SparkModel()
    logged = []
    for ev in EventLogReader(find_logs(out / "eventlog")[0]):
        logged += model.feed(ev.event, ev.line)
    (s1, b1, m1), (s2, b2, m2) = split(live), split(logged)
    assert s1 == s2
    assert len(s1["scope"]) >= 5 and any(sc["attrs"]["kind"] == "streaming query" for sc in s1["scope"])
    assert b1 == b2 and len(b1) > 50
    assert m1 == m2
    assert any(label.startswith("batch 2 done") for label in m1)  # streaming progress came along
    r1, r2 = replayed(live), replayed(logged)
    assert r1.errors == r2.errors == [] and r1.findings == r2.findings == []
    assert r1.state() == r2.state()
    for scope in r1.state()["scopes"]:
        for port in scope["ports"]:
            assert port["frontier"] == [], (scope["name"], port)


def test_the_listener_received_every_event_of_the_log_and_lost_none(live_app):
    out, result = live_app
    stats, feed = result["stats"], result["feed"]
    assert stats["dropped"] == 0 and stats["failed"] == 0 and stats["queued"] == 0
    assert feed["listener_dropped"] == 0 and feed["spark_dropped"] == {} and feed["uncertain"] == []
    received = collections.Counter(json.loads(line)["Event"] for line in open(out / "received.jsonl"))
    logged = collections.Counter(ev.event["Event"] for ev in EventLogReader(find_logs(out / "eventlog")[0]))
    # posted before attach ran: the log has them, the listener does not (the application start is re-created)
    before = {"SparkListenerLogStart", "SparkListenerEnvironmentUpdate", "SparkListenerResourceProfileAdded",
              "SparkListenerExecutorAdded", "SparkListenerBlockManagerAdded"}
    # re-created by attach: the properties that say the cores (the log's event has them all)
    assert received.pop("SparkListenerEnvironmentUpdate") == 1
    assert {k: v for k, v in logged.items() if k not in before} == received
    assert received["SparkListenerTaskEnd"] > 20


def test_configuration_alone_streams_from_the_application_start(drivers):
    _, _, result, feeds = drivers
    assert result["path"] == "config" and result["url"].startswith("tcp://127.0.0.1:")
    assert len(feeds) == 1
    feed = feeds[0]
    records = []
    while (chunk := feed.take(1000, 5)) is not None:  # the driver exited: the connection ended
        records += [r for _, r in chunk]
    assert feed.hello["listener"] == "jvm" and feed.label.startswith("flowscope-config-only (local-")
    assert feed.model.app_name == "flowscope-config-only" and feed.model.ended
    assert feed.listener_dropped == 0 and not feed.model.uncertain
    # from the start: the executor Spark adds before the application starts is seen too
    marks = [r["label"] for r in records if r.get("type") == "mark"]
    assert marks[0] == "executor driver added (2 cores)"
    assert [m for m in marks if not m.startswith("executor ")][0] == "application flowscope-config-only started"
    assert feed.model.summary().jobs == {0: "SUCCEEDED"}


def test_py4j_fallback_and_jvm_listener_side_by_side(spark, tmp_path, monkeypatch):
    import backend.spark.live.listener as listener_pkg
    import flowscope

    jvm = flowscope.attach(spark, tmp_path / "jvm.jsonl", quiet=True)

    def no_javac(**kw):
        raise ListenerBuildError("javac not found (install a JDK, or set JAVA_HOME)")

    monkeypatch.setattr(listener_pkg, "listener_jar", no_javac)
    py4j = flowscope.attach(spark, tmp_path / "py4j.jsonl", quiet=True)
    assert jvm.path == "jvm" and jvm.reason is None
    assert py4j.path == "py4j" and "javac not found" in (py4j.reason or "")
    sc = spark.sparkContext
    sc.parallelize(range(400), 8).map(lambda x: (x % 5, 1)).reduceByKey(lambda a, b: a + b, 2).collect()
    sc.parallelize(range(10), 2).count()
    for att in (jvm, py4j):
        assert att.flush(10)
        att.detach()
    assert jvm.stats()["dropped"] == py4j.stats()["dropped"] == 0
    a = [r for _, r in read_records(tmp_path / "jvm.jsonl")]
    b = [r for _, r in read_records(tmp_path / "py4j.jsonl")]
    assert split(a) == split(b)
    jobs = [r for r in a if r.get("type") == "mark" and r["label"].startswith("job ") and "succeeded" in r["label"]]
    assert len(jobs) == 2
    assert replayed(a).state() == replayed(b).state()


def test_attach_refuses_what_is_not_a_classic_driver():
    import flowscope
    from flowscope.attach import AttachError

    with pytest.raises(AttachError, match="running SparkSession"):
        flowscope.attach(object())
