"""Where the Plan tab draws a plan's operators: a layered tree layout, codegen stages as boxes around their members.

Data flows up, as in Spark's SQL tab: the plan's root (its output) on top, scans at the bottom. Each operator's
row is its depth below a root (first reached), its column the mean of its children's (leaves take the next free
column), so a plan of N operators lays out in O(N + edges). An operator that several parents read (a reused
exchange) is placed once, under the first. A codegen stage's box bounds its members; an edge between two boxes
(or into or out of one) is an exchange or broadcast between stages, marked ``between_stages``.
"""

from __future__ import annotations

__all__ = ["plan_layout", "NODE_W", "NODE_H"]

NODE_W = 200
NODE_H = 52
GAP_X = 30
GAP_Y = 44
PAD = 14  # a codegen box's margin around its members (its title in the top margin)


def plan_layout(execution: dict) -> dict:
    """``{"nodes": {id: {x, y, w, h}}, "clusters": {id: {x, y, w, h, members}}, "edges": [{from, to,
    between_stages}], "width", "height"}`` for one execution of ``SqlPlans.execution_json``."""
    nodes = {n["id"]: n for n in execution["nodes"] if "members" not in n}
    clusters = {n["id"]: n for n in execution["nodes"] if "members" in n}
    cluster_of = {m: c for c, n in clusters.items() for m in n["members"]}
    parents: dict[int, list[int]] = {i: [] for i in nodes}
    for n in nodes.values():
        for c in n["children"]:
            if c in parents:
                parents[c].append(n["id"])
    roots = [i for i, p in parents.items() if not p]
    depth: dict[int, int] = {}
    column: dict[int, float] = {}
    next_column = 0.0
    # iterative post-order walk: (node, depth, children visited?)
    for root in roots:
        stack: list[tuple[int, int, bool]] = [(root, 0, False)]
        while stack:
            nid, d, expanded = stack.pop()
            if expanded:
                kids = [c for c in nodes[nid]["children"] if c in nodes and depth.get(c, -1) == d + 1
                        and c in column and _first_parent(parents, c) == nid]
                if kids:
                    column[nid] = sum(column[c] for c in kids) / len(kids)
                else:
                    column[nid] = next_column
                    next_column += 1
                continue
            if nid in depth:
                continue
            depth[nid] = d
            stack.append((nid, d, True))
            for c in reversed(nodes[nid]["children"]):
                if c in nodes and c not in depth:
                    stack.append((c, d + 1, False))
    boxes = {i: {"x": round(column[i] * (NODE_W + GAP_X)) + PAD, "y": depth[i] * (NODE_H + GAP_Y) + PAD,
                 "w": NODE_W, "h": NODE_H} for i in nodes if i in depth}
    out_clusters = {}
    for cid, c in clusters.items():
        members = [m for m in c["members"] if m in boxes]
        if not members:
            continue
        x0 = min(boxes[m]["x"] for m in members) - PAD
        y0 = min(boxes[m]["y"] for m in members) - PAD
        x1 = max(boxes[m]["x"] + NODE_W for m in members) + PAD
        y1 = max(boxes[m]["y"] + NODE_H for m in members) + PAD // 2
        out_clusters[cid] = {"x": x0, "y": y0, "w": x1 - x0, "h": y1 - y0, "members": members}
    edges = [{"from": c, "to": n["id"], "between_stages": cluster_of.get(c) != cluster_of.get(n["id"])}
             for n in nodes.values() for c in n["children"] if c in boxes and n["id"] in boxes]
    width = max((b["x"] + b["w"] for b in boxes.values()), default=0) + PAD
    height = max((b["y"] + b["h"] for b in boxes.values()), default=0) + PAD
    return {"nodes": boxes, "clusters": out_clusters, "edges": edges, "width": width, "height": height}


def _first_parent(parents: dict[int, list[int]], child: int) -> int | None:
    p = parents.get(child)
    return p[0] if p else None
