"""``flowscope explain LOG --port P``: who holds a port's frontier, the minimal blocking pointstamps."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .arguments import add_thresholds_option, json_time, non_negative_int, port, scope_path
from .offline import dump_json, fmt_time, listed, no_scope, replay_log, report_errors

if TYPE_CHECKING:
    from tracker.subgraph import Subgraph

__all__ = ["register", "cmd_explain"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("explain", help="who holds a port's frontier: the minimal blocking pointstamps")
    p.add_argument("log", help="a flowscope progress log or a Spark event log")
    add_thresholds_option(p)
    p.add_argument("--scope", type=scope_path, default=[],
                   help="scope path: 2, 2,1 or JSON [2,1] (default: the root)")
    p.add_argument("--port", type=port, required=True, help="in,NODE,PORT or out,NODE,PORT")
    p.add_argument("--time", type=json_time, help="timestamp as JSON (default: the least time in the port's frontier)")
    p.add_argument("--at", type=non_negative_int, metavar="N", help="stop after the first N progress records")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_explain)


def cmd_explain(args: argparse.Namespace) -> int:
    from tracker.analysis.details import late_json
    from tracker.analysis.explain import explain

    from ..holders import late_lines

    replay = replay_log(args, False)
    if replay is None:
        return 2
    report_errors(replay)
    loc = args.port
    try:
        scope = replay.root.find(args.scope)
    except KeyError:
        print(no_scope(args.log, args.scope, replay.root), file=sys.stderr)
        return 2
    if loc not in scope.built_tracker().index:
        print(f"flowscope: {args.log}: scope {args.scope} has no port {loc} ({_ports_of(scope)})", file=sys.stderr)
        return 2
    try:
        time = scope.domain.parse(args.time) if args.time is not None else None
    except (ValueError, TypeError) as e:
        print(f"flowscope: --time {fmt_time(args.time)}: {e} (give a time such as 5 or [5,0])", file=sys.stderr)
        return 2
    if time is None:
        frontier = scope.tracker.frontier(loc)
        if not frontier:
            print(f"{loc} in scope {list(scope.path)} is complete: nothing can arrive there any more")
            return 0
        time = frontier[0]
    answer = explain(scope, loc, time)
    late = late_json(answer, scope, replay.details, replay.state_until)
    if args.json:
        sys.stdout.write(dump_json({**answer.to_json(), "late": late}) + "\n")
        return 0
    frontier_text = ", ".join(fmt_time(t) for t in answer.frontier)
    print(f"scope {list(scope.path)} port {loc} time {fmt_time(time)}: frontier [{frontier_text}]")
    if not answer.held:
        print("  not held: no pointstamp could result in this time here")
    for text in late_lines(late):
        print(text)
    for h in answer.holders:
        who = "parent scope's frontier" if h.from_parent else scope.children[h.location.node].name
        print(f"  held by {h.location} ({who}) at {fmt_time(h.time)} x{h.count} "
              f"via summary {fmt_time(h.summary)} -> {fmt_time(h.results_in)}")
    if answer.implied:
        print(f"  ({len(answer.implied)} more pointstamps qualify, each implied by a holder above)")
    return 0


def _ports_of(scope: Subgraph) -> str:
    """What the user can ask about in ``scope`` instead.

    Its ports, or, for a scope without (a Spark log's root), the scopes inside it."""
    ports = [str(loc) for loc in scope.built_tracker().locations]
    if ports:
        return "its " + listed("ports", ports)
    inside = [str(list(s.path)) for s in scope.scopes()][1:]
    return f"it has no ports; --scope picks one inside it, {listed('scopes', inside)}"
