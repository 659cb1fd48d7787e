"""Paths between ports of one scope, for highlighting what connects a holder to the port it holds.

The could-result-in relation of a scope, as a ``networkx.DiGraph`` over its ports: a channel goes from an output
to an input; an operator connects input ``i`` to output ``o`` when its summary between them is not empty (every
input to every output for the default identity summary; a nested scope's derived summary for a folded scope).
:func:`holder_path` is the shortest chain of ports from a holder to the asked port.
"""

from __future__ import annotations

import networkx as nx

from tracker.reachability import IN, OUT, Location
from tracker.subgraph import Subgraph

__all__ = ["port_graph", "holder_path"]


def port_graph(scope: Subgraph) -> nx.DiGraph:
    scope.ensure_built()
    g = nx.DiGraph()
    for src, tgt in scope.edges:
        g.add_edge(src, tgt)
    for node, op in scope.children.items():
        if op.scope is not None:
            summary = op.scope.internal_summary  # built with the parent just above
            for i, row in enumerate(summary):
                for o, ac in enumerate(row):
                    if len(ac):
                        g.add_edge(Location(node, IN, i), Location(node, OUT, o))
        else:
            for i in range(op.inputs):
                for o in range(op.outputs):
                    if op.summary is None or len(op.summary[i][o]):
                        g.add_edge(Location(node, IN, i), Location(node, OUT, o))
    return g


def holder_path(graph: nx.DiGraph, holder: Location, port: Location) -> list[Location]:
    if holder == port:
        return [port]
    try:
        return nx.shortest_path(graph, holder, port)
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        return [holder, port]
