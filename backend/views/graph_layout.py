"""Graph layout of one scope: layered left to right by topological order, feedback edges set aside.

Plain functions over a networkx graph, testable without a server. :func:`scope_graph` makes a graph of *boxes*
(every child, and a nested scope's boundary split into ``"enter"`` on the left and ``"leave"`` on the right; the
channels between two boxes are one edge). :func:`feedback_edges` sets aside the edges that close cycles (a loop's
feedback channel), :func:`strata` groups operators by layer, and :func:`layered_layout` layers boxes by longest
path, orders each layer by barycenter sweeps (fewer crossings) and wraps long pipelines into bands, like lines of
text, to keep the picture near a browser window's aspect.

The passes run over plain adjacency lists read from the graph once, so the cost is linear in boxes and channels
(plus the sorts within layers). Coordinates are pixels for the browser's SVG: each box has ``x, y, w, h``; the
browser places its ports on its left (inputs) and right (outputs) edges, ``PORT_GAP`` apart.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import networkx as nx

from tracker.gc_pause import gc_paused
from tracker.subgraph import Subgraph

__all__ = ["scope_graph", "feedback_edges", "layered_layout", "layout_graph", "layout_scope", "layout_columns",
           "strata", "NODE_W", "PORT_GAP"]

NODE_W = 150
PORT_GAP = 14
COL_GAP = 90
ROW_GAP = 22
BAND_GAP = 70
DUMMY_H = 8
ASPECT = 1.8  # width / height the wrapping aims for (a browser window, a bit wider than tall)
ENTER, LEAVE = "enter", "leave"


@gc_paused()  # a copy of a large scope: many objects, all kept
def scope_graph(scope: Subgraph) -> nx.DiGraph:
    """The scope as boxes and box-to-box edges.

    Everything the layout needs is copied into the graph, so :func:`layout_graph` can run without touching the scope
    (off the event loop). Reads the declared structure only: the scope's tracker need not be built (that is the stream's
    work, not the picture's)."""
    g = nx.DiGraph(scope=list(scope.path), name=scope.name, depth=scope.domain.depth)
    if scope.inputs:
        g.add_node(ENTER, kind="enter", name="scope inputs", inputs=0, outputs=scope.inputs, attrs={})
    if scope.outputs:
        g.add_node(LEAVE, kind="leave", name="scope outputs", inputs=scope.outputs, outputs=0, attrs={})
    folded = scope.dropped
    boxes = []
    for node in sorted(scope.children):
        op = scope.children[node]
        if op.retired and not (op.inputs or op.outputs):  # a folded scope nothing connects to: not drawn
            folded += 1
            continue
        data: dict[str, Any] = {"kind": "scope" if op.scope is not None else "operator", "name": op.name,
                                "inputs": op.inputs, "outputs": op.outputs, "attrs": dict(op.attrs)}
        if op.scope is not None:
            data["scope"] = list(op.scope.path)
            data["contains"] = sum(1 for s in op.scope.scopes() for c in s.children.values() if c.scope is None)
        boxes.append((node, data))
    g.add_nodes_from(boxes)
    g.graph["folded"] = folded
    # (box, box) -> its channels, in the scope's edge order; child 0's outputs are the scope's inputs (``enter``),
    # its inputs the scope's outputs (``leave``)
    channels: dict[tuple, list] = {}
    for (snode, _, sport), (tnode, _, tport) in scope.edges:
        key = (snode or ENTER, tnode or LEAVE)
        channel = (["out", snode, sport], ["in", tnode, tport])
        got = channels.get(key)
        if got is None:
            channels[key] = [channel]
        else:
            got.append(channel)
    g.add_edges_from((u, v, {"channels": c}) for (u, v), c in channels.items())
    return g


def _order_key(n: Any) -> tuple:
    return (0, 0) if n == ENTER else (2, 0) if n == LEAVE else (1, n)


def _adjacency(graph: nx.DiGraph) -> tuple[list, dict[Any, list]]:
    """The nodes in drawing order and each node's successors in that order.

    Drawing order is ``enter``, operators by number, ``leave``. Plain lists, read once: the layout's passes then cost
    O(V + E), not networkx's per-call views."""
    nodes = sorted(graph.nodes, key=_order_key)
    rank = {v: i for i, v in enumerate(nodes)}
    succ = {u: sorted(nbrs, key=rank.__getitem__) for u, nbrs in graph.adjacency()}
    return nodes, succ


def feedback_edges(graph: nx.DiGraph, adjacency: tuple[list, dict[Any, list]] | None = None) -> set[tuple]:
    """Edges closing a cycle in a DFS from the sources (in node order), then from any node not yet reached."""
    nodes, succ = adjacency or _adjacency(graph)
    has_pred = {v for vs in succ.values() for v in vs}
    starts = [n for n in nodes if n not in has_pred] + nodes
    state: dict[Any, int] = {}  # 1 on the stack, 2 done
    back: set[tuple] = set()
    for s in starts:
        if s in state:
            continue
        state[s] = 1
        stack = [(s, iter(succ[s]))]
        while stack:
            u, it = stack[-1]
            for v in it:
                st = state.get(v)
                if st is None:
                    state[v] = 1
                    stack.append((v, iter(succ[v])))
                    break
                if st == 1:
                    back.add((u, v))
            else:
                state[u] = 2
                stack.pop()
    return back


def _height(inputs: int, outputs: int) -> int:
    return max(34, 14 + PORT_GAP * max(inputs, outputs, 1))


def layered_layout(graph: nx.DiGraph, sweeps: int = 4) -> dict:
    """Positions for every box of ``graph`` (see the module docstring).

    Linear in boxes and channels but for the ordering's sorts within layers."""
    adjacency = _adjacency(graph)
    back = feedback_edges(graph, adjacency)
    # The DAG left once the feedback edges are set aside, in the graph's own edge order (the order the picture has
    # always been drawn in: the ordering below breaks ties by it).
    order_key = {v: _order_key(v) for v in graph.nodes}
    dag_succ: dict[Any, list] = {v: [] for v in graph.nodes}
    indegree: dict[Any, int] = dict.fromkeys(graph.nodes, 0)
    for u, v in graph.edges:
        if u != v and (u, v) not in back:
            dag_succ[u].append(v)
            indegree[v] += 1
    # Layers by longest path, visiting in lexicographic topological order (Kahn's algorithm, least key first).
    heap = [(order_key[v], v) for v, d in indegree.items() if d == 0]
    heapq.heapify(heap)
    order = []
    layer: dict[Any, int] = dict.fromkeys(graph.nodes, 0)
    while heap:
        _, u = heapq.heappop(heap)
        order.append(u)
        lu = layer[u] + 1
        for v in dag_succ[u]:
            if layer[v] < lu:
                layer[v] = lu
            indegree[v] -= 1
            if not indegree[v]:
                heapq.heappush(heap, (order_key[v], v))
    if ENTER in layer:
        layer[ENTER] = 0
    if LEAVE in layer:
        last = max((k for n, k in layer.items() if n != LEAVE), default=-1)
        layer[LEAVE] = last + 1
    nlayers = max(layer.values(), default=-1) + 1
    layers: list[list[Any]] = [[] for _ in range(nlayers)]
    for v in order:
        layers[layer[v]].append(v)
    # A channel spanning several layers gets a virtual box in each layer it crosses: the ordering then keeps
    # real boxes out of its way, and the browser draws the channel through those points.
    preds: dict[Any, list] = {v: [] for v in graph.nodes}  # neighbours one layer back / on, virtual boxes included
    succs: dict[Any, list] = {v: [] for v in graph.nodes}
    chains: dict[tuple, list[tuple]] = {}
    for u in graph.nodes:
        for v in dag_succ[u]:
            span = layer[v] - layer[u]
            if span <= 1:
                succs[u].append(v)
                preds[v].append(u)
                continue
            chain = [("~", u, v, i) for i in range(1, span)]
            chains[(u, v)] = chain
            prev = u
            for i, d in enumerate(chain):
                layers[layer[u] + i + 1].append(d)
                preds[d], succs[d] = [prev], []
                succs[prev].append(d)
                prev = d
            succs[prev].append(v)
            preds[v].append(prev)
    # Barycenter sweeps: down (by predecessors' positions), then up (by successors'). A layer of one box has
    # nothing to order.
    pos = {v: i for lay in layers for i, v in enumerate(lay)}
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        nbrs_of = preds if down else succs
        seq = layers[1:] if down else layers[-2::-1]
        for lay in seq:
            if len(lay) < 2:
                continue

            def bary(v: Any, nbrs_of: dict = nbrs_of) -> float:
                nbrs = nbrs_of[v]
                return sum(pos[u] for u in nbrs) / len(nbrs) if nbrs else pos[v]
            lay.sort(key=lambda v: (bary(v), pos[v]))
            for i, v in enumerate(lay):
                pos[v] = i
    # Sizes and columns.
    data = dict(graph.nodes(data=True))
    heights = {v: (DUMMY_H if isinstance(v, tuple) else _height(data[v]["inputs"], data[v]["outputs"]))
               for lay in layers for v in lay}
    col_h = [sum(heights[v] for v in lay) + ROW_GAP * max(0, len(lay) - 1) for lay in layers]
    col_w = NODE_W + COL_GAP
    max_h = max(col_h, default=0)
    per_band = nlayers
    band_h = max_h + BAND_GAP
    if nlayers > 10 and nlayers * col_w > 3.0 * band_h * ASPECT:
        # c columns per band, nlayers / c bands: width c * col_w over height (nlayers / c) * band_h ~ ASPECT
        per_band = max(4, int(math.ceil(math.sqrt(ASPECT * nlayers * band_h / col_w))))
    bands = max(1, math.ceil(nlayers / per_band)) if nlayers else 0
    boxes = {}
    virtual = {}
    band_y = []
    y0 = 0
    width = 0
    for b in range(bands):
        cols = range(b * per_band, min(nlayers, (b + 1) * per_band))
        band_h = max(col_h[c] for c in cols)
        band_y.append((y0, y0 + band_h))
        for j, c in enumerate(cols):
            x = j * col_w
            y = y0 + (band_h - col_h[c]) / 2
            for v in layers[c]:
                if isinstance(v, tuple):
                    virtual[v] = (x, y + DUMMY_H / 2)
                else:
                    boxes[v] = (x, y, NODE_W, heights[v], c, b)
                y += heights[v] + ROW_GAP
            width = max(width, x + NODE_W)
        y0 += band_h + BAND_GAP
    height = max(0, y0 - BAND_GAP)
    routes = {edge: [virtual[d] for d in chain] for edge, chain in chains.items()}
    return {"boxes": boxes, "feedback": back, "routes": routes, "layers": nlayers, "bands": bands, "width": width,
            "height": height, "band_y": band_y}


def strata(graph: nx.DiGraph) -> dict:
    """The scope's stratification.

    Boxes grouped by layer (longest path from the sources once the feedback edges are set aside), and those feedback
    edges. Boundary boxes are left out."""
    lay = layered_layout(graph, sweeps=0)
    layers: dict[int, list] = {}
    for v, box in lay["boxes"].items():
        if isinstance(v, int):
            layers.setdefault(box[4], []).append(v)
    return {
        "strata": [sorted(layers[k]) for k in sorted(layers)],
        "feedback": sorted([list(map(str, e)) for e in lay["feedback"]]),
    }


def layout_scope(scope: Subgraph) -> dict:
    """The JSON the browser draws for ``scope`` (see :func:`layout_graph`)."""
    return layout_graph(scope_graph(scope))


@gc_paused()  # likewise
def layout_graph(graph: nx.DiGraph) -> dict:
    """Boxes with their ports, channels (feedback marked), the canvas size: the JSON the browser draws."""
    lay = layered_layout(graph)
    nodes = []
    node_data = dict(graph.nodes(data=True))
    for v, (x, y, w, h, layer, band) in lay["boxes"].items():
        data = node_data[v]
        entry = {
            "id": v if isinstance(v, int) else 0,
            "box": v if isinstance(v, str) else str(v),
            "kind": data["kind"],
            "name": data["name"],
            "inputs": data["inputs"],
            "outputs": data["outputs"],
            "x": x, "y": y, "w": w, "h": h,
            "layer": layer, "band": band,
            "attrs": data.get("attrs", {}),
        }
        if "scope" in data:
            entry["scope"] = data["scope"]
            entry["contains"] = data["contains"]
        nodes.append(entry)
    nodes.sort(key=lambda n: (n["layer"], n["y"]))
    feedback = lay["feedback"]
    routes = lay["routes"]
    edges = []
    for u, v, data in graph.edges(data=True):
        fb = (u, v) in feedback or u == v
        via = [[x, y] for x, y in routes.get((u, v), ())]
        for src, tgt in data["channels"]:
            edge = {"from": src, "to": tgt, "feedback": fb}
            if via:
                edge["via"] = via
            edges.append(edge)
    return {
        "scope": graph.graph.get("scope", []),
        "name": graph.graph.get("name", ""),
        "depth": graph.graph.get("depth", 1),
        "folded": graph.graph.get("folded", 0),
        "nodes": nodes,
        "edges": edges,
        "width": lay["width"],
        "height": lay["height"],
        "layers": lay["layers"],
        "bands": lay["bands"],
        "band_y": [list(b) for b in lay["band_y"]],
        "band_gap": BAND_GAP,
        "node_width": NODE_W,
        "port_gap": PORT_GAP,
    }


_NODE_COLUMNS = ("id", "kind", "name", "inputs", "outputs", "x", "y", "w", "h", "layer", "band")


def layout_columns(layout: dict) -> dict:
    """The same layout as :func:`layout_graph`, column by column: what the browser fetches (``?compact=1``).

    A 10,000-operator scope is 2.1 MB as a list of objects, most of it the same keys repeated; as columns it is a
    third of that, and the browser rebuilds the objects in one pass (frontend/js/api.js ``expandGraph``). Nodes:
    one list per field; ``box`` as ``[row, box]`` only where it is not ``str(id)``, ``attrs`` as ``[row, attrs]``
    where there are any, ``scope`` as ``[row, path, contains]`` for folded nested scopes. Edges: channels always
    go from an output to an input, so ``from``/``to`` are ``[node, port]`` pairs flattened into one list each;
    ``feedback`` lists the rows of feedback channels and ``via`` is ``[row, route]`` for routed ones."""
    nodes = layout["nodes"]
    cols: dict[str, Any] = {k: [n[k] for n in nodes] for k in _NODE_COLUMNS}
    cols["box"] = [[i, n["box"]] for i, n in enumerate(nodes) if n["box"] != str(n["id"])]
    cols["attrs"] = [[i, n["attrs"]] for i, n in enumerate(nodes) if n["attrs"]]
    cols["scope"] = [[i, n["scope"], n["contains"]] for i, n in enumerate(nodes) if "scope" in n]
    edges = layout["edges"]
    if any(e["from"][0] != "out" or e["to"][0] != "in" for e in edges):
        raise ValueError("a channel that does not go from an output to an input")
    out = {k: v for k, v in layout.items() if k not in ("nodes", "edges")}
    out["columns"] = True
    out["nodes"] = cols
    out["edges"] = {
        "from": [x for e in edges for x in e["from"][1:]],
        "to": [x for e in edges for x in e["to"][1:]],
        "feedback": [i for i, e in enumerate(edges) if e["feedback"]],
        "via": [[i, e["via"]] for i, e in enumerate(edges) if "via" in e],
    }
    return out
