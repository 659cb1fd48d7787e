"""`flowscope serve --spark-port`: live Spark applications attach to a running server by URL, and the
application becomes a live session there (the path config-only listeners take too)."""

from __future__ import annotations

import time

import httpx

from backend.web.app import Settings

from .e2e.server import running_server


def test_attach_to_a_running_server_by_url(spark):
    import flowscope

    with running_server(Settings(spark_port=0)) as srv:
        base = f"http://127.0.0.1:{srv.port}"
        health = httpx.get(f"{base}/api/health").json()
        assert health["spark_ingest"]["port"] > 0 and health["spark_ingest"]["host"] == "127.0.0.1"
        att = flowscope.attach(spark, base, name="attached by url", quiet=True)
        assert att.path == "jvm", att.reason  # the JVM listener builds here (a JDK is installed)
        rdd = spark.sparkContext.parallelize(range(200), 4)
        rdd.map(lambda x: (x % 3, 1)).reduceByKey(lambda a, b: a + b).collect()
        assert att.flush(20)
        deadline = time.monotonic() + 30
        session = None
        while time.monotonic() < deadline:
            sessions = httpx.get(f"{base}/api/sessions").json()  # a list
            session = next((s for s in sessions if "attached by url" in s["name"]), None)
            if session:
                marks = httpx.get(f"{base}/api/sessions/{session['id']}/marks").json()  # {"marks": [...], ...}
                labels = [m["label"] for m in marks["marks"]]
                if any(label.startswith("job ") and "succeeded" in label for label in labels):
                    break
            time.sleep(0.2)
        assert session, "the application became a session on the server"
        assert any(label.startswith("job ") and "succeeded" in label for label in labels)
        att.detach()
