"""``flowscope frontiers LOG``: replay a progress log and print every scope's ports (frontier, counts)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .arguments import add_thresholds_option, non_negative_int
from .offline import dump_json, fmt_counts, fmt_time, replay_log, report_errors

__all__ = ["register", "cmd_frontiers"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("frontiers", help="replay a progress log and print every scope's ports")
    p.add_argument("log", help="a flowscope progress log (.jsonl, .jsonl.gz, .jsonl.zst) or a Spark event log")
    add_thresholds_option(p)
    p.add_argument("--at", type=non_negative_int, metavar="N", help="stop after the first N progress records")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--check", action="store_true", help="check every batch against the progress contract")
    p.set_defaults(func=cmd_frontiers)


def cmd_frontiers(args: argparse.Namespace) -> int:
    replay = replay_log(args, args.check)
    if replay is None:
        return 2
    report_errors(replay)
    state = replay.state()
    if args.json:
        if args.check:
            state["findings"] = [f.to_json() for f in replay.findings]
        sys.stdout.write(dump_json(state) + "\n")
        return 0
    out = []
    for scope in state["scopes"]:
        sub = replay.root.find(scope["path"])
        name = f" {scope['name']!r}" if scope["name"] else ""
        out.append(f"scope {scope['path']}{name} (depth {scope['depth']})")
        for port in scope["ports"]:
            kind, node, p = port["port"]
            who = "boundary" if node == 0 else sub.children[node].name
            label = f"{kind}({node},{p})"
            frontier = "[" + ", ".join(fmt_time(t) for t in port["frontier"]) + "]"
            out.append(
                f"  {label:<12} {who[:28]:<28} frontier {frontier:<16} "
                f"pointstamps {fmt_counts(port['pointstamps'])}  implications {fmt_counts(port['implications'])}"
            )
    out.append(f"{replay.batches_applied} batches applied, {len(replay.errors)} rejected or corrupt lines")
    if args.check:
        for f in replay.findings:
            out.append(f"finding: {f}")
        out.append(f"{len(replay.findings)} contract findings")
    sys.stdout.write("\n".join(out) + "\n")
    return 0
