"""Graph layout: layered by topological order, feedback edges set aside, long pipelines wrapped into bands."""

from __future__ import annotations

import time

import httpx
import networkx as nx

from backend.feeds.progress_feeds import PushFeed
from backend.views.graph_layout import NODE_W, feedback_edges, layered_layout, layout_scope, scope_graph
from backend.web.app import Settings
from tests.conftest import LOOP_LOG
from tests.e2e.logs import pipeline_records
from tests.e2e.server import running_server
from tracker.progress_log.replay import Replay, replay_file


def _replay(records) -> Replay:
    r = Replay("t")
    for rec in records:
        r.apply(rec)
    r.root.schedule()
    return r


def _overlaps(nodes) -> bool:
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            across = a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
            down = a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]
            if across and down:
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
    assert sorted(n["kind"] for n in inner["nodes"]) == ["enter", "leave", "operator", "operator", "operator"]
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


def test_a_live_session_is_laid_out_as_soon_as_its_feed_goes_quiet(monkeypatch):
    """The structure of a live session arrives, then nothing for a while: the session lays the root out then, in
    the background, and the browser's first graph request is answered from that layout, not made to wait for one
    of its own."""
    import backend.sessions.session as session_module

    made = []
    real = session_module.layout_graph

    def counted_layout(g):
        made.append(len(g))
        return real(g)

    monkeypatch.setattr(session_module, "layout_graph", counted_layout)
    structure = [r for r in pipeline_records(50, 1, header=False) if r["type"] in ("operator", "edge")]
    with running_server(Settings(check_contracts=False)) as srv, httpx.Client(base_url=srv.url) as api:
        feed = PushFeed("quiet")
        feed.push_many(structure)
        session = srv.call(srv.manager.add, feed, "quiet", False)
        deadline = time.monotonic() + 30
        while not srv.call(session.graph_ready, ()):
            assert time.monotonic() < deadline, "the quiet session was not laid out"
            time.sleep(0.02)
        assert made == [50] and session.records == len(structure)  # no request asked for it
        while srv.call(lambda: session.replay.root.needs_build):  # and the trackers are built after it, unasked
            assert time.monotonic() < deadline, "the quiet session's trackers were not built"
            time.sleep(0.02)
        graph = api.get(f"/api/sessions/{session.id}/graph", params={"scope": "", "compact": 1})
        assert graph.status_code == 200 and len(graph.json()["nodes"]["id"]) == 50
        assert made == [50], "the request laid the scope out again"
        feed.push_many([{"type": "operator", "scope": [], "node": 51, "name": "late", "inputs": 1, "outputs": 0},
                        {"type": "edge", "scope": [], "from": ["out", 50, 0], "to": ["in", 51, 0]}])
        while session.records < len(structure) + 2 or not srv.call(session.graph_ready, ()):
            # a new structure version: laid out again, unasked
            assert time.monotonic() < deadline, "the grown session was not laid out"
            time.sleep(0.02)
        assert made == [50, 51]


def test_random_scopes_keep_the_layouts_properties():
    """Scopes of random shape (cycles, self-loops, boundary boxes, long channels): feedback edges leave a DAG,
    every other channel goes to a later layer, spanning channels are routed through one point per layer crossed,
    boxes do not overlap, and every box is laid out once."""
    import random

    from backend.views.graph_layout import layout_graph

    for seed in range(60):
        rnd = random.Random(seed)
        n = rnd.randint(1, 80)
        g = nx.DiGraph(scope=[], name="random", depth=1)
        if rnd.random() < 0.5:
            g.add_node("enter", kind="enter", name="scope inputs", inputs=0, outputs=2, attrs={})
        ids = list(range(1, n + 1))
        rnd.shuffle(ids)
        for v in ids:
            g.add_node(v, kind="operator", name=str(v), inputs=rnd.randint(0, 4), outputs=rnd.randint(0, 4), attrs={})
        if rnd.random() < 0.5:
            g.add_node("leave", kind="leave", name="scope outputs", inputs=2, outputs=0, attrs={})
        boxes = list(g.nodes)
        for _ in range(rnd.randint(0, 3 * n)):
            u, v = rnd.choice(boxes), rnd.choice(boxes)
            if u != "leave" and v != "enter":
                g.add_edge(u, v, channels=[(["out", u if isinstance(u, int) else 0, 0],
                                            ["in", v if isinstance(v, int) else 0, 0])])
        back = feedback_edges(g)
        assert nx.is_directed_acyclic_graph(nx.DiGraph([e for e in g.edges if e not in back and e[0] != e[1]]))
        lay = layered_layout(g)
        layer = {v: b[4] for v, b in lay["boxes"].items()}
        assert set(layer) == set(g.nodes)
        for u, v in g.edges:
            if (u, v) not in back and u != v:
                assert layer[u] < layer[v], (seed, u, v)
                assert len(lay["routes"].get((u, v), ())) == layer[v] - layer[u] - 1, (seed, u, v)
        out = layout_graph(g)
        assert len(out["nodes"]) == g.number_of_nodes() and not _overlaps(out["nodes"]), seed
