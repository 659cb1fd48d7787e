"""``flowscope bundle LOG -o postmortem.html``.

One self-contained HTML file with the browser view and its answers precomputed (``backend/export/bundle.py``): it opens
offline, from file://, with no server."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .arguments import add_thresholds_option, non_negative_int

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("bundle", help="write a self-contained post-mortem HTML file of a log",
                              description="Replay LOG to the end and write one HTML file (data, JS, CSS and plotly "
                                          "inlined) that shows the graph, timeline, findings, blame and "
                                          "explanations offline. Moments stored: the head, every mark and finding, "
                                          "and --spaced evenly spaced batches; a seek elsewhere shows the nearest.")
    p.add_argument("log", help="a Spark event log or a flowscope progress log")
    add_thresholds_option(p)
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    p.add_argument("--spaced", type=non_negative_int, default=40, metavar="N",
                   help="evenly spaced batches stored besides marks (default 40)")
    p.add_argument("--max-explain", type=non_negative_int, default=4000, metavar="N",
                   help="most explanations stored (default 4000): each mark's and finding's scope at its "
                        "moment first, then the head, then the rest")
    p.set_defaults(func=cmd_bundle)


def cmd_bundle(args: argparse.Namespace) -> int:
    from backend.export.bundle import BundleError, build_bundle
    from backend.stores import StoreError, locate, stat

    log = locate(args.log)
    try:
        stat(log)
    except StoreError as e:  # no such file (or bucket), a store that cannot be reached: one line
        print(f"flowscope bundle: {e}", file=sys.stderr)
        return 2
    try:
        summary = build_bundle(log, Path(args.output), spaced=args.spaced, max_explain=args.max_explain)
    except BundleError as e:
        print(f"flowscope bundle: {log}: {e}", file=sys.stderr)
        return 1
    capped = " (capped: raise --max-explain for more)" if summary["explains_capped"] else ""
    print(f"wrote {args.output}: {summary['moments']} moments, {summary['answers']} answers, "
          f"{summary['explains']} explanations{capped}, {summary['bytes'] / 1e6:.1f} MB")
    return 0
