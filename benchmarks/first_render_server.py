"""The server's share of a cold first render, part by part, in CPU time (no browser, no other threads).

A scope never shown before costs the server, before its first picture: a copy of its structure (``scope_graph``,
on the event loop), the layered layout and its compact encoding (a worker thread), building its trackers and
propagating the initial capabilities (``Subgraph.schedule``, on the loop), and the stream's snapshot rows (on
the loop). Measured for the benchmark's pipelines (``bench_browser.py``: a chain of N operators); medians of
``--repeat`` runs, each on a fresh replay.

Run: ``.venv/bin/python benchmarks/first_render_server.py [--sizes 200,2000,10000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import orjson  # noqa: E402

from backend.sessions.fanout import SharedRows  # noqa: E402
from backend.views.graph_layout import layout_columns, layout_graph, scope_graph  # noqa: E402
from tests.e2e.logs import pipeline_records  # noqa: E402
from tracker.progress_log.replay import Replay  # noqa: E402


def cpu(fn):
    c0 = time.process_time()
    out = fn()
    return out, time.process_time() - c0


def parts(n: int) -> dict[str, float]:
    replay = Replay()
    for r in pipeline_records(n, 2, header=True):
        if r["type"] in ("header", "operator", "edge"):
            replay.apply(r, None)
    root = replay.root
    g, copy = cpu(lambda: scope_graph(root))
    lay, layout = cpu(lambda: layout_graph(g))
    _, encode = cpu(lambda: orjson.dumps(layout_columns(lay)))
    _, trackers = cpu(root.schedule)
    _, rows = cpu(lambda: SharedRows((0, 0)).of(root))
    return {"structure copy": copy, "layout": layout, "encode": encode, "trackers": trackers, "snapshot rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="200,2000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    for n in (int(s) for s in args.sizes.split(",") if s):
        runs = [parts(n) for _ in range(args.repeat)]
        med = {k: sorted(r[k] for r in runs)[len(runs) // 2] for k in runs[0]}
        print(f"{n:>6} operators, CPU ms (median of {args.repeat}): "
              + ", ".join(f"{k} {1000 * v:.0f}" for k, v in med.items())
              + f"; total {1000 * sum(med.values()):.0f}; load {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
