"""A one-shot replay without an observer settles in bulk: batches wait, across structure records too, until
``SETTLE_EVERY`` of them or an edge that would reroute them (one from a nested scope's output). Property: for logs
whose structure grows between batches, in nested scopes and their parents, the bulk replay ends in exactly the
state, errors and marks of a replay that settles every batch (an observed one)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracker.progress_log.replay as replay_module
from tracker.progress_log.replay import Replay

SETTINGS: dict[str, Any] = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _port(kind: str, node: int, port: int = 0) -> list:
    return [kind, node, port]


@st.composite
def growing_logs(draw) -> list[dict]:
    """A root with a source and a nested region (its own operator inside); then, in any order, batches in either
    scope (on any port there, any time, either sign: some leave counts negative or are rejected), operators added
    to either scope with edges from older outputs (the nested scope's output among them), new nested regions,
    marks. Edges only go from older nodes to newer ones (and inside to the region's output), so no cycle."""
    records: list[dict] = [
        {"type": "operator", "scope": [], "node": 1, "name": "source", "inputs": 0, "outputs": 1,
         "capabilities": [[0]]},
        {"type": "scope", "path": [2], "name": "region", "inputs": 1, "outputs": 1},
        {"type": "operator", "scope": [2], "node": 1, "name": "inner", "inputs": 1, "outputs": 1},
        {"type": "edge", "scope": [2], "from": _port("out", 0), "to": _port("in", 1)},
        {"type": "edge", "scope": [], "from": _port("out", 1), "to": _port("in", 2)},
    ]
    # per scope: its nodes' (inputs, outputs); node 0 is the boundary (outputs = scope inputs, inputs = outputs)
    nodes: dict[tuple, dict[int, tuple[int, int]]] = {(): {1: (0, 1), 2: (1, 1)}, (2,): {0: (1, 1), 1: (1, 1)}}
    ports = {(): [_port("out", 1), _port("in", 2), _port("out", 2)],
             (2,): [_port("out", 0), _port("in", 0), _port("in", 1), _port("out", 1)]}
    seq = 0
    for _ in range(draw(st.integers(1, 30))):
        step = draw(st.sampled_from(["progress", "progress", "progress", "operator", "operator", "scope", "mark",
                                     "bad"]))
        if step == "progress" or step == "bad":
            path = draw(st.sampled_from(sorted(ports)))
            update = st.tuples(st.sampled_from(ports[path]), st.integers(0, 3), st.sampled_from([-1, 1, 2]))
            updates = [list(u) for u in draw(st.lists(update, min_size=1, max_size=4))]
            if step == "bad":  # a port that does not exist: rejected whole
                updates.append([_port("out", 99), 0, 1])
            seq += 1
            records.append({"type": "progress", "scope": list(path), "worker": 0, "seq": seq, "updates": updates})
        elif step == "operator":
            path = draw(st.sampled_from(sorted(p for p in nodes if len(p) < 2)))
            node = max(nodes[path]) + 1
            records.append({"type": "operator", "scope": list(path), "node": node, "name": f"op{node}",
                            "inputs": 1, "outputs": 1})
            nodes[path][node] = (1, 1)
            ports[path] += [_port("in", node), _port("out", node)]
            senders = [k for k, (_, outs) in nodes[path].items() if outs and k != node]
            for k in draw(st.lists(st.sampled_from(senders), max_size=2, unique=True)):
                records.append({"type": "edge", "scope": list(path), "from": _port("out", k), "to": _port("in", node)})
            if path and draw(st.booleans()):  # out of the region: its summary changes in the parent
                records.append({"type": "edge", "scope": list(path), "from": _port("out", node),
                                "to": _port("in", 0)})
        elif step == "scope":
            node = max(nodes[()]) + 1
            records.append({"type": "scope", "path": [node], "name": f"region{node}", "inputs": 1, "outputs": 1})
            records.append({"type": "edge", "scope": [], "from": _port("out", draw(st.sampled_from([1, 2]))),
                            "to": _port("in", node)})
            nodes[()][node] = (1, 1)
            ports[()] += [_port("in", node), _port("out", node)]
        else:
            records.append({"type": "mark", "label": f"mark {len(records)}"})
    return records


def _replayed(records: list[dict], observed: bool) -> Replay:
    replay = Replay("prop", observer=(lambda *a: None) if observed else None)
    for line, record in enumerate(records, 1):
        replay.apply(record, line)
    replay.finish()
    return replay


@settings(max_examples=200, **SETTINGS)
@given(growing_logs(), st.sampled_from([1, 2, 3, 1024]))
def test_bulk_replay_of_a_growing_log_equals_one_settled_every_batch(records, settle_every):
    saved = replay_module.SETTLE_EVERY
    replay_module.SETTLE_EVERY = settle_every
    try:
        bulk = _replayed(records, observed=False)
    finally:
        replay_module.SETTLE_EVERY = saved
    watched = _replayed(records, observed=True)
    assert bulk.state() == watched.state()
    assert [(e.line, e.reason) for e in bulk.errors] == [(e.line, e.reason) for e in watched.errors]
    assert bulk.marks[:] == watched.marks[:]
    assert bulk.batches_applied == watched.batches_applied


def test_an_edge_from_a_nested_output_settles_what_came_before_it():
    """Messages the region produced before the sink's edge existed never reach the sink (the case a bulk replay
    must settle for): the sink's input holds nothing."""
    records: list[dict] = [
        {"type": "operator", "scope": [], "node": 1, "name": "source", "inputs": 0, "outputs": 1},
        {"type": "scope", "path": [2], "name": "region", "inputs": 1, "outputs": 1},
        {"type": "operator", "scope": [], "node": 3, "name": "sink", "inputs": 1, "outputs": 0},
        {"type": "progress", "scope": [2], "updates": [[_port("in", 0), 0, 1]]},  # produced at the region's output
        {"type": "edge", "scope": [], "from": _port("out", 2), "to": _port("in", 3)},
    ]
    for observed in (False, True):
        state = _replayed(records, observed).state()
        root = next(s for s in state["scopes"] if s["path"] == [])
        sink = next(p for p in root["ports"] if p["port"] == ["in", 3, 0])
        assert sink["pointstamps"] == [] and sink["frontier"] == [], observed
