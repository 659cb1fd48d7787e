"""The blog post's shape, run for real: input -> op -> (enter -> op <-> feedback -> leave) -> op.

Connected components by label propagation inside an iterative scope (times ``(epoch, iteration)``): each node's
label is the least node id it has heard of; improvements travel to neighbours through the feedback, one
iteration per hop, until nothing improves. Outside the loop, a collector asks to be notified at each epoch: the
notification fires exactly once, when the loop has drained for that epoch, and then the labels are final.

Run: ``python examples/loops.py [workers]``; prints each epoch's components and checks them against networkx.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tracker.runtime import execute  # noqa: E402
from tracker.runtime.graph import Exchange  # noqa: E402


def components_dataflow(worker, notified: list):
    """Build the dataflow on ``worker``; returns (edge input handle, probe, per-epoch results dict)."""
    results: dict[int, dict[int, int]] = {}

    def build(scope):
        edges_in, edges = scope.new_input("edges")
        undirected = edges.flat_map(lambda e: [e, (e[1], e[0])], name="both directions")

        def loop(inner):
            entered = inner.enter(undirected)
            handle, improvements = inner.feedback(name="feedback")
            adjacency: dict = {}  # (epoch) -> node -> neighbours
            best: dict = {}  # (epoch) -> node -> label

            def propagate(ctx):
                out_next, out_final = ctx.output(0), ctx.output(1)
                for time, records in ctx.input(0):  # edges (u, v), partitioned by u
                    adj = adjacency.setdefault(time[0], {})
                    lab = best.setdefault(time[0], {})
                    sends: list = []
                    for u, v in records:
                        adj.setdefault(u, set()).add(v)
                        if u not in lab:
                            lab[u] = u
                            out_final.give(time, (u, u))
                            sends.extend((w, u) for w in adj[u])
                        else:
                            sends.append((v, lab[u]))
                    out_next.give_all(time, sends)
                for time, records in ctx.input(1):  # label offers (node, label), partitioned by node
                    adj = adjacency.setdefault(time[0], {})
                    lab = best.setdefault(time[0], {})
                    sends, finals = [], []
                    for node, label in records:
                        if label < lab.get(node, node + 1):
                            lab[node] = label
                            finals.append((node, label))
                            sends.extend((w, label) for w in adj.get(node, ()))
                    if sends:
                        out_next.give_all(time, sends)
                    if finals:
                        out_final.give_all(time, finals)

            nxt, final = inner.add_operator(
                "propagate", [entered, improvements], 2, _op(propagate),
                pacts=[Exchange(lambda e: e[0]), Exchange(lambda o: o[0])])
            handle.connect(nxt)
            return inner.leave(final)

        labels = scope.iterative("components", loop)
        pending: dict = {}

        def collect(ctx):
            for time, records in ctx.input(0):
                if time not in pending:
                    pending[time] = {}
                    ctx.notify_at(ctx.retain(time))
                for node, label in records:
                    cur = pending[time].get(node)
                    if cur is None or label < cur:
                        pending[time][node] = label
            for time, _cap in ctx.notifications():
                notified.append((worker.index, time))
                results[time] = pending.pop(time)

        probe = labels.unary("collect", collect, pact=Exchange(lambda r: r[0]), outputs=1).probe()
        return edges_in, probe

    edges_in, probe = worker.dataflow(build, "connected components")
    return edges_in, probe, results


def _op(fn):
    from tracker.runtime.operators import Operator

    return Operator(fn)


def graphs():
    """Two epochs of small undirected graphs (the same on every run)."""
    g0 = [(0, 1), (1, 2), (3, 4), (5, 6), (6, 7), (7, 5), (8, 9), (2, 10)]
    g1 = [(10, 11), (11, 12), (12, 13), (13, 10), (20, 21), (22, 23), (23, 21)]
    return [g0, g1]


def main(worker):
    """One worker's part: feed each epoch's graph (from worker 0), wait for it; returns (labels, notifications)."""
    notified: list = []
    edges_in, probe, results = components_dataflow(worker, notified)
    for epoch, graph in enumerate(graphs()):
        if worker.index == 0:
            edges_in.send_batch(graph)
        edges_in.advance_to(epoch + 1)
        worker.step_while(lambda: probe.less_than(edges_in.time))
    edges_in.close()
    worker.run()
    return results, notified


def combine(per_worker):
    """Merge the workers' results: (labels per epoch, all notifications)."""
    merged: dict[int, dict[int, int]] = {}
    notified: list = []
    for results, notes in per_worker:
        notified.extend(notes)
        for epoch, labels in results.items():
            merged.setdefault(epoch, {}).update(labels)
    return merged, notified


def run(workers: int = 2, chaos=None, global_view=None):
    return combine(execute(workers, main, chaos=chaos, global_view=global_view))


def expected():
    import networkx as nx

    out = {}
    for epoch, graph in enumerate(graphs()):
        g = nx.Graph(graph)
        out[epoch] = {n: min(c) for c in nx.connected_components(g) for n in c}
    return out


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    labels, notified = run(n)
    for epoch in sorted(labels):
        comps: dict = {}
        for node, label in sorted(labels[epoch].items()):
            comps.setdefault(label, []).append(node)
        print(f"epoch {epoch}: {sorted(comps.values())}")
    assert labels == expected(), "differs from networkx"
    print(f"matches networkx; {len(notified)} notifications on {n} workers")
