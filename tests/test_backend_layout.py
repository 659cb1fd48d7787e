"""Graph layout: layered by topological order, feedback edges set aside, long pipelines wrapped into bands."""

from __future__ import annotations

import networkx as nx

from backend.graph_layout import NODE_W, feedback_edges, layered_layout, layout_scope, scope_graph
from tests.conftest import LOOP_LOG
from tests.e2e.logs import pipeline_records
from tracker.replay import Replay, replay_file


def _replay(records) -> Replay:
    r = Replay("t")
    for rec in records:
        r.apply(rec)
    r.root.schedule()
    return r


def _overlaps(nodes) -> bool:
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            if a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]:
                return True
    return False


def test_feedback_edges_leave_a_dag_and_forward_edges_go_right():
    g = nx.DiGraph([(1, 2), (2, 3), (3, 4), (4, 2), (3, 5), (5, 6), (6, 3), (1, 6)])
    for n in g.nodes:
        g.nodes[n].update(inputs=1, outputs=1)
    back = feedback_edges(g)
    rest = nx.DiGraph([e for e in g.edges if e not in back])
    assert nx.is_directed_acyclic_graph(rest)
    assert back and len(back) <= 2
    lay = layered_layout(g)
    layer = {v: b[4] for v, b in lay["boxes"].items()}
    for u, v in g.edges:
        if (u, v) not in back:
            assert layer[u] < layer[v]


def test_nested_scope_is_folded_and_its_boundary_drawn():
    replay = replay_file(LOOP_LOG)
    root = layout_scope(replay.root)
    kinds = {n["name"]: n["kind"] for n in root["nodes"]}
    assert kinds == {"input": "operator", "map": "operator", "loop": "scope", "sink": "operator"}
    loop = next(n for n in root["nodes"] if n["kind"] == "scope")
    assert loop["scope"] == [3] and loop["contains"] == 3
    inner = layout_scope(replay.root.find([3]))
    kinds = sorted(n["kind"] for n in inner["nodes"])
    assert kinds == ["enter", "leave", "operator", "operator", "operator"]
    by = {n["box"]: n for n in inner["nodes"]}
    assert by["enter"]["x"] < min(n["x"] for n in inner["nodes"] if n["kind"] == "operator")
    assert by["leave"]["x"] > max(n["x"] for n in inner["nodes"] if n["kind"] == "operator")
    assert [e["feedback"] for e in inner["edges"]].count(True) == 1  # feedback -> concat
    assert not _overlaps(inner["nodes"])
    # a channel spanning layers is routed through points between the boxes it passes
    spanning = [e for e in inner["edges"] if e.get("via")]
    assert spanning and all(len(p) == 2 for e in spanning for p in e["via"])


def test_a_long_pipeline_wraps_into_bands_near_a_screen_aspect():
    replay = _replay(r for r in pipeline_records(300, 1) if r["type"] != "progress")
    lay = layout_scope(replay.root)
    assert len(lay["nodes"]) == 300
    assert lay["layers"] == 300
    assert lay["bands"] > 3
    assert 0.5 < lay["width"] / lay["height"] < 4
    assert not _overlaps(lay["nodes"])
    assert lay["width"] >= NODE_W


def test_scope_graph_is_a_copy_of_the_structure():
    replay = replay_file(LOOP_LOG)
    g = scope_graph(replay.root.find([3]))
    replay.root.find([3]).add_operator(9, "added later", 1, 1)
    assert 9 not in g.nodes and "enter" in g.nodes and "leave" in g.nodes
