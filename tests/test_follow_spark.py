"""Following real Spark applications while they run: a PySpark driver in a subprocess runs two applications one
after the other into one event-log directory (Spark 4's defaults: a rolling directory of zstd parts; then a plain
uncompressed ``.inprogress`` file). Each pauses after its first job until the test has seen that job end through
the follower, so the test proves the session is live before the application ends; then the application finishes,
its session completes, and its final state equals the replay of the finished log."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from backend.eventlog import EventLogReader, find_logs
from backend.spark.live.follow_feed import SparkDirectoryFollower
from backend.spark.model.spark_model import SparkModel
from tracker.progress_log.replay import Replay

DRIVER = textwrap.dedent('''
    import os, sys, time
    from pyspark.sql import SparkSession

    logs, ctl = sys.argv[1], sys.argv[2]

    def wait_for(name):
        end = time.time() + 180
        while not os.path.exists(os.path.join(ctl, name)):
            if time.time() > end:
                sys.exit("the test never said go: " + name)
            time.sleep(0.05)

    def app(name, extra):
        b = (SparkSession.builder.master("local[2]").appName(name)
             .config("spark.ui.showConsoleProgress", "false").config("spark.ui.enabled", "false")
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", "file://" + logs))
        for k, v in extra.items():
            b = b.config(k, v)
        spark = b.getOrCreate()
        sc = spark.sparkContext
        sc.parallelize(range(1000), 4).map(lambda x: (x % 5, x)).reduceByKey(lambda a, b: a + b, 2).count()
        wait_for(name)
        sc.parallelize(range(100), 2).count()
        spark.stop()

    app("follow-rolling", {})
    app("follow-plain", {"spark.eventLog.rolling.enabled": "false", "spark.eventLog.compress": "false"})
''')


def test_follow_a_directory_while_spark_writes_it(tmp_path):
    logs, ctl = tmp_path / "logs", tmp_path / "ctl"
    logs.mkdir()
    ctl.mkdir()
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.Popen([sys.executable, "-c", DRIVER, str(logs), str(ctl)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    follower = SparkDirectoryFollower(logs)
    apps: dict[str, dict] = {}  # feed label -> its feed, replay, and what the test saw
    deadline = time.monotonic() + 400
    try:
        while time.monotonic() < deadline:
            for feed in follower.scan():
                apps[feed.label] = {"feed": feed, "replay": Replay(feed.label, check_contracts=True),
                                    "live_job": False, "done": False}
            for entry in apps.values():
                if entry["done"]:
                    continue
                feed = entry["feed"]
                chunk = feed.poll(10_000)
                if chunk is None:
                    entry["done"] = True
                    continue
                for line, record in chunk:
                    entry["replay"].apply(record, line)
                    if record.get("type") == "mark" and record["label"].startswith("job 0 succeeded"):
                        # seen while the application still runs (it waits for this file)
                        assert not feed.finalized and not feed.model.ended
                        entry["live_job"] = True
                        (ctl / feed.model.app_name).touch()
            if len(apps) == 2 and all(e["done"] for e in apps.values()):
                break
            if proc.poll() not in (None, 0):
                break
            time.sleep(0.1)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-4000:]
    assert len(apps) == 2, list(apps)
    kinds = set()
    for entry in apps.values():
        feed, replay = entry["feed"], entry["replay"]
        assert entry["live_job"] and entry["done"] and feed.finalized
        assert feed.errors == [] and not feed.model.uncertain
        assert feed.model.summary().jobs == {0: "SUCCEEDED", 1: "SUCCEEDED"}
        replay.finish()
        assert replay.errors == [] and replay.findings == []
        log = find_logs(feed.follower.path)[0]  # the final name, renamed from .inprogress
        kinds.add((log.rolling, log.codec))
        model, reference = SparkModel(), Replay("reference")
        for ev in EventLogReader(log):
            for record in model.feed(ev.event, ev.line):
                reference.apply(record, ev.line)
        assert replay.state() == reference.state()
    assert kinds == {(True, "zstd"), (False, None)}
