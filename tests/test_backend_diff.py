"""Diff two moments: the pure comparison (backend/views/diff.py) on hand-made moments, and GET .../diff on a real server
checked against the states /state reports at the same two batches."""

from __future__ import annotations

import time

import httpx
import pytest

from backend.feeds.progress_feeds import PushFeed
from backend.views.diff import Moment, diff_moments, time_difference
from backend.web.app import Settings
from tests.conftest import LOOP_LOG
from tests.e2e.logs import pipeline_records
from tests.e2e.server import running_server


def test_time_difference_of_integers_and_product_times():
    assert time_difference(7, 4) == 3
    assert time_difference((2, 5), (2, 1)) == [0, 4]
    assert time_difference([1, [2, 3]], [0, [2, 0]]) == [1, [0, 3]]
    assert time_difference((1, 2), 1) is None


def test_diff_moments_advanced_stuck_counts_appeared():
    before = Moment(10, 1.0, [
        ["in", 1, 0, [3], [[3, 1]], [[3, 1]]],
        ["out", 1, 0, [[0, 2]], [], [[[0, 2], 1]]],
        ["in", 2, 0, [5], [[5, 2]], [[5, 2]]],
        ["out", 2, 0, [1], [], [[1, 1]]],
    ], {1: "a", 2: "b"})
    after = Moment(20, 2.0, [
        ["in", 1, 0, [5], [[5, 1]], [[5, 1]]],  # advanced by 2
        ["out", 1, 0, [[1, 0]], [], [[[1, 0], 1]]],  # a product time: by [1, -2]
        ["in", 2, 0, [5], [[5, 3]], [[5, 3]]],  # did not move, but a message more in flight
        ["out", 2, 0, [], [], []],  # done
        ["in", 3, 0, [0], [], [[0, 1]]],  # a new operator's port
    ], {1: "a", 2: "b", 3: "late"})
    d = diff_moments(before, after)
    by_port = {tuple(a["port"]): a for a in d["advanced"]}
    assert by_port[("in", 1, 0)]["by"] == 2 and by_port[("in", 1, 0)]["from"] == [3]
    assert by_port[("out", 1, 0)]["by"] == [1, -2]
    assert by_port[("out", 2, 0)]["by"] == "done" and by_port[("out", 2, 0)]["to"] == []
    assert d["stuck"] == [{"port": ["in", 2, 0], "frontier": [5]}]
    assert {"port": ["in", 2, 0], "pointstamps": [2, 3], "implications": [2, 3]} in d["counts"]
    assert d["appeared"] == [{"node": 3, "name": "late"}]
    # counts: in,1,0 (its pointstamp moved from 3 to 5), in,2,0 (one more), out,2,0 (its implication gone)
    assert {tuple(c["port"]) for c in d["counts"]} == {("in", 1, 0), ("in", 2, 0), ("out", 2, 0)}
    assert d["summary"] == {"ports": 5, "advanced": 3, "stuck": 1, "counts": 3, "appeared": 1}
    assert d["from"] == {"batch": 10, "at": 1.0} and d["to"] == {"batch": 20, "at": 2.0}


@pytest.fixture(scope="module")
def server():
    with running_server(Settings(allowed_dirs=[LOOP_LOG.parent], checkpoint_every=16)) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=20) as c:
        yield c


@pytest.fixture(scope="module")
def loop_sid(server, client):
    sid = client.post("/api/sessions", json={"path": str(LOOP_LOG)}).json()["id"]
    server.wait_for(sid, client=client)
    return sid


def rows(client, sid, batch, scope=""):
    st = client.get(f"/api/sessions/{sid}/state", params={"batch": batch, "scope": scope}).json()
    return {(r[0], r[1], r[2]): r for r in st["ports"]}


@pytest.mark.parametrize("scope", ["", "3"])
def test_rest_diff_agrees_with_the_states_at_both_batches(client, loop_sid, scope):
    d = client.get(f"/api/sessions/{loop_sid}/diff", params={"from": 12, "to": 30, "scope": scope}).json()
    a, b = rows(client, loop_sid, 12, scope), rows(client, loop_sid, 30, scope)
    moved = {k for k in b if k in a and a[k][3] != b[k][3]}
    still = {k for k in b if k in a and a[k][3] == b[k][3] and b[k][3]}
    assert {tuple(x["port"]) for x in d["advanced"]} == moved and moved
    assert {tuple(x["port"]) for x in d["stuck"]} == still
    for x in d["advanced"]:
        k = tuple(x["port"])
        assert x["from"] == a[k][3] and x["to"] == b[k][3]
    assert d["from"]["batch"] == 12 and d["to"]["batch"] == 30 and d["scope"] == ([3] if scope else [])


def test_rest_diff_moments_by_mark_time_and_head_and_errors(client, loop_sid):
    marks = client.get(f"/api/sessions/{loop_sid}/marks").json()["marks"]
    d = client.get(f"/api/sessions/{loop_sid}/diff", params={"from": "mark:1", "to": "mark:3"}).json()
    assert d["from"]["batch"] == marks[1]["after"] and d["to"]["batch"] == marks[3]["after"]
    t19 = client.get(f"/api/sessions/{loop_sid}/state", params={"batch": 19}).json()["at"]
    d = client.get(f"/api/sessions/{loop_sid}/diff", params={"from": f"at:{t19}"}).json()
    assert d["from"]["batch"] == 19 and d["to"]["batch"] == 91  # to: the head by default
    assert d["summary"]["stuck"] == 0  # everything completed by the head
    same = client.get(f"/api/sessions/{loop_sid}/diff", params={"from": 40, "to": 40}).json()
    assert same["advanced"] == [] and same["counts"] == [] and same["appeared"] == []
    r = client.get(f"/api/sessions/{loop_sid}/diff", params={"from": "yesterday"})
    assert r.status_code == 400 and "mark:N" in r.json()["detail"]
    r = client.get(f"/api/sessions/{loop_sid}/diff", params={"from": "mark:999"})
    assert r.status_code == 400 and "marks" in r.json()["detail"]
    r = client.get(f"/api/sessions/{loop_sid}/diff", params={"from": 1, "scope": "9"})
    assert r.status_code == 404


def test_rest_diff_reports_operators_that_appeared(server, client):
    feed = PushFeed("growing")
    sid = server.call(server.manager.add, feed, "growing", True).id
    feed.push_many(list(pipeline_records(4, 5, header=False)))
    deadline = time.monotonic() + 10
    while client.get(f"/api/sessions/{sid}").json()["batches"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    first = client.get(f"/api/sessions/{sid}").json()["batches"]
    feed.push_many([{"type": "operator", "scope": [], "node": 9, "name": "late", "inputs": 1, "outputs": 0},
                    {"type": "edge", "scope": [], "from": ["out", 1, 0], "to": ["in", 9, 0]},
                    {"type": "progress", "scope": [], "worker": 0, "seq": 10_000, "at": 1_767_225_700.0,
                     "updates": [], "cause": {"operator": "late"}}])
    while client.get(f"/api/sessions/{sid}").json()["operators"] < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    # the state after a batch includes the structure records that follow it before the next batch: compare
    # with one batch earlier
    d = client.get(f"/api/sessions/{sid}/diff", params={"from": first - 1}).json()
    assert d["appeared"] == [{"node": 9, "name": "late"}], (first, d["from"], d["to"])
    client.delete(f"/api/sessions/{sid}")
