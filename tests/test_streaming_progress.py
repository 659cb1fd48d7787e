"""The streaming charts' data (backend/spark/diagnosis/structured_streaming.py, GET .../streaming) on the real
streaming fixtures: the trigger interval inferred from the trigger starts (or the user's setting, or honestly unknown),
late batches, watermarks; and GET .../marks passing a finding's details on for the graph's badges."""

from __future__ import annotations

import json

import httpx
import pytest

from backend.spark.diagnosis.structured_streaming import infer_trigger_interval, streaming_queries
from tests.e2e.view_fixtures import SPARK_FIXTURES, open_spark_fixture


@pytest.fixture(scope="module")
def server(spark_server):
    return spark_server


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=20) as c:
        yield c


def spark_batches(name: str) -> dict[int, dict]:
    """What Spark itself reported per batch for the fixture while it ran (spark-status.json)."""
    status = json.loads((SPARK_FIXTURES / name / "spark-status.json").read_text())
    return {b["batchId"]: b for b in status["query"]["batches"]}


def test_streaming_stall_infers_the_one_second_trigger_and_marks_the_stalled_batch_late(server, client):
    sid = open_spark_fixture(server, "streaming_stall")
    (q,) = client.get(f"/api/sessions/{sid}/streaming").json()["queries"]
    assert q["name"] == "query slow_udf (streaming)" and q["scope"] == [2]
    assert q["trigger"]["interval_s"] == 1.0 and q["trigger"]["source"] == "inferred"  # make_fixtures: "1 second"
    assert q["trigger"]["how"].startswith("inferred: ")
    by = {b["batch"]: b for b in q["batches"]}
    assert sorted(by) == list(range(len(by))) and len(by) >= 8
    assert by[4]["late"] and by[4]["duration_s"] > 4  # the UDF's 4 s sleep
    for b in q["batches"]:
        assert b["late"] == (b["duration_s"] > 1.0)
        assert b["end"] == pytest.approx(b["start"] + b["duration_s"])
        assert b["watermark"] is None  # the query sets no watermark
    # the user's setting replaces the inference
    (q2,) = client.get(f"/api/sessions/{sid}/streaming", params={"trigger_s": 3}).json()["queries"]
    assert q2["trigger"] == {"interval_s": 3.0, "source": "setting", "how": "set by the user: 3 s"}
    assert [b["batch"] for b in q2["batches"] if b["late"]] == [4]
    assert client.get(f"/api/sessions/{sid}/streaming", params={"trigger_s": 0}).status_code == 422


def test_streaming_stateful_watermark_follows_the_progress_events(server, client):
    sid = open_spark_fixture(server, "streaming_stateful")
    (q,) = client.get(f"/api/sessions/{sid}/streaming").json()["queries"]
    assert q["name"] == "query rate_windows (streaming)"
    # every batch started right after its predecessor: no interval can be told, and none is invented
    assert q["trigger"]["interval_s"] is None and q["trigger"]["source"] == "unknown"
    assert "no batch waited" in q["trigger"]["how"] and not any(b["late"] for b in q["batches"])
    marks = [b for b in q["batches"] if b["watermark"] is not None]
    assert len(marks) >= 5
    ws = [b["watermark"] for b in marks]
    assert ws == sorted(ws)  # a watermark never goes back
    assert all(b["watermark"] < b["start"] for b in marks)  # event time trails processing time
    assert q["batches"][0]["watermark"] is None  # Spark's initial 1970 watermark means none yet
    spark = spark_batches("streaming_stateful")
    assert [b["batch"] for b in q["batches"]] == sorted(spark)
    for b in q["batches"]:
        assert b["input_rows"] == spark[b["batch"]]["numInputRows"]
        # the trigger's execution, as blame's latency of the batch (not Spark's slightly longer batchDuration)
        assert b["duration_s"] * 1000 == pytest.approx(spark[b["batch"]]["triggerMs"])


def test_driver_stall_batch_three_is_the_slow_one(server, client):
    sid = open_spark_fixture(server, "driver_stall")
    (q,) = client.get(f"/api/sessions/{sid}/streaming").json()["queries"]
    assert q["trigger"]["source"] == "unknown" and "only 1 batch waited" in q["trigger"]["how"]
    (q2,) = client.get(f"/api/sessions/{sid}/streaming", params={"trigger_s": 5}).json()["queries"]
    late = [b["batch"] for b in q2["batches"] if b["late"]]
    assert 3 in late  # the foreachBatch sleep of 4 s on the driver
    assert client.get(f"/api/sessions/{sid}/streaming").status_code == 200
    assert client.get("/api/sessions/nope/streaming").status_code == 404


def test_batch_logs_have_no_streaming_queries(server, client):
    sid = open_spark_fixture(server, "batch_shuffle")
    assert client.get(f"/api/sessions/{sid}/streaming").json() == {"queries": []}


def test_inference_rule_on_made_up_starts():
    def batches(starts, durations):
        return [{"start": s, "duration_s": d} for s, d in zip(starts, durations, strict=True)]
    # two waits of 2 s (one tick without data makes a 4 s gap): 2 s
    assert infer_trigger_interval(batches([0, 2, 6, 8], [0.5, 0.5, 0.5, 0.5]))[0] == 2.0
    # a single wait proves nothing
    assert infer_trigger_interval(batches([0, 2, 2.6], [0.5, 0.6, 0.5]))[0] is None
    # back to back: unknown
    interval, how = infer_trigger_interval(batches([0, 1, 2], [1.0, 1.0, 1.0]))
    assert interval is None and "no batch waited" in how
    # marks that are not batch marks are ignored; the name falls back to the query id
    (q,) = streaming_queries([{"query": "abcdef123456", "scope": [1], "trigger_start": 5.0, "duration_ms": 100,
                               "batch": 0, "watermark": "2026-01-01T00:00:00.000Z"},
                              {"query": "abcdef123456", "label": "query started"}])
    assert q["name"] == "query abcdef12" and q["batches"][0]["watermark"] == 1767225600.0


def test_finding_marks_carry_their_details(server, client):
    sid = open_spark_fixture(server, "skewed_straggler")
    marks = client.get(f"/api/sessions/{sid}/marks").json()["marks"]
    slow = [m for m in marks if m.get("finding") == "straggler"]
    skew = [m for m in marks if m.get("finding") == "skew"]
    assert len(slow) == 1 and len(skew) == 1
    s = slow[0]
    assert s["node"] == skew[0]["node"] and s["stage"] == skew[0]["stage"]
    assert s["duration_s"] > 5 * s["median_task_s"] and isinstance(s["task"], int) and s["executor"] == "driver"
    assert skew[0]["summary"]["skew"] >= 0.5 and skew[0]["summary"]["tasks"] >= 4
    plain = [m for m in marks if not m.get("finding")]
    assert plain and all(set(m) <= {"label", "at", "after", "scope", "completes"} for m in plain)
    assert any("completes" in m for m in plain)  # the finished jobs' marks name the time they complete


def test_mark_json_is_what_rest_and_the_stream_send():
    from backend.views.projections import mark_json

    plain = {"type": "mark", "label": "job 3 done", "at": 2.5, "after": 7, "scope": [3], "job": 3, "status": "ok"}
    assert mark_json(plain) == {"label": "job 3 done", "at": 2.5, "after": 7, "scope": [3]}
    found = {"type": "mark", "label": "straggler in stage 2", "at": 3.0, "after": 9, "scope": [2],
             "finding": "straggler",
             "node": 4, "time": 0, "stage": 2, "attempt": 0, "task": 6, "index": 0, "executor": "1",
             "duration_s": 3.6, "median_task_s": 0.26, "host": "secret"}
    out = mark_json(found)
    assert out["finding"] == "straggler" and out["node"] == 4 and out["median_task_s"] == 0.26
    assert "host" not in out and "type" not in out


def test_each_query_takes_its_own_trigger_setting(server, client):
    """Two queries on different triggers: a setting names its query (`triggers`); `trigger_s` covers the others.
    Over REST on a real log: the query's id in `triggers` sets it, another id leaves it inferred, bad input is 400."""
    def marks(query: str, durations: list[float]) -> list[dict]:
        return [{"query": query, "scope": [1 if query == "a" else 2], "batch": i, "trigger_start": 10.0 * i,
                 "duration_ms": d * 1000} for i, d in enumerate(durations)]
    both = marks("a", [1.0, 3.0, 1.0]) + marks("b", [1.0, 3.0, 6.0])
    qa, qb = streaming_queries(both, triggers={"a": 2.0})
    assert (qa["trigger"]["interval_s"], qa["trigger"]["source"]) == (2.0, "setting")
    assert [b["late"] for b in qa["batches"]] == [False, True, False]
    assert qb["trigger"]["source"] != "setting" and not any(b["late"] for b in qb["batches"])
    qa, qb = streaming_queries(both, trigger_s=5.0, triggers={"a": 2.0})
    assert (qa["trigger"]["interval_s"], qb["trigger"]["interval_s"]) == (2.0, 5.0)
    assert [b["late"] for b in qb["batches"]] == [False, False, True]

    sid = open_spark_fixture(server, "driver_stall")
    (q,) = client.get(f"/api/sessions/{sid}/streaming").json()["queries"]
    (mine,) = client.get(f"/api/sessions/{sid}/streaming",
                         params={"triggers": json.dumps({q["query"]: 5})}).json()["queries"]
    assert mine["trigger"]["how"] == "set by the user: 5 s" and 3 in [b["batch"] for b in mine["batches"] if b["late"]]
    (other,) = client.get(f"/api/sessions/{sid}/streaming",
                          params={"triggers": json.dumps({"another query": 5})}).json()["queries"]
    assert other["trigger"]["source"] == "unknown"
    for bad in ("{", "[5]", json.dumps({q["query"]: 0}), json.dumps({q["query"]: "5"})):
        r = client.get(f"/api/sessions/{sid}/streaming", params={"triggers": bad})
        assert r.status_code == 400 and "triggers" in r.json()["detail"], (bad, r.text)
