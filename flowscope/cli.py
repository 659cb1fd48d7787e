"""The ``flowscope`` command line: thin commands over the tracker and the backend."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _dump_json(obj: Any) -> str:
    try:
        import orjson

        return orjson.dumps(obj).decode()
    except ImportError:  # pragma: no cover
        return json.dumps(obj, default=_json_default, separators=(",", ":"))


def _fmt_time(t: Any) -> str:
    return json.dumps(t, default=_json_default, separators=(",", ""))


def _fmt_counts(pairs: list) -> str:
    return " ".join(f"{_fmt_time(t)}:{c:+d}" for t, c in pairs) or "-"


def _report_errors(replay: Any, stream: Any = sys.stderr) -> None:
    for err in replay.errors:
        print(f"flowscope: {err}", file=stream)


def _replay(args: argparse.Namespace, check: bool) -> Any:
    from tracker.progress_log import ProgressLogError
    from tracker.replay import replay_file

    try:
        return replay_file(args.log, at=args.at, check_contracts=check)
    except FileNotFoundError:
        print(f"flowscope: {args.log}: no such file", file=sys.stderr)
    except ProgressLogError as e:
        print(f"flowscope: {e}", file=sys.stderr)
    return None


def cmd_frontiers(args: argparse.Namespace) -> int:
    replay = _replay(args, args.check)
    if replay is None:
        return 2
    _report_errors(replay)
    state = replay.state()
    if args.json:
        if args.check:
            state["findings"] = [f.to_json() for f in replay.findings]
        sys.stdout.write(_dump_json(state) + "\n")
        return 0
    out = []
    for scope in state["scopes"]:
        sub = replay.root.find(scope["path"])
        title = f"scope {scope['path']}" + (f" {scope['name']!r}" if scope["name"] else "") + f" (depth {scope['depth']})"
        out.append(title)
        for port in scope["ports"]:
            kind, node, p = port["port"]
            name = "boundary" if node == 0 else sub.children[node].name
            label = f"{kind}({node},{p})"
            frontier = "[" + ", ".join(_fmt_time(t) for t in port["frontier"]) + "]"
            out.append(
                f"  {label:<12} {name[:28]:<28} frontier {frontier:<16} "
                f"pointstamps {_fmt_counts(port['pointstamps'])}  implications {_fmt_counts(port['implications'])}"
            )
    out.append(f"{replay.batches_applied} batches applied, {len(replay.errors)} rejected or corrupt lines")
    if args.check:
        for f in replay.findings:
            out.append(f"finding: {f}")
        out.append(f"{len(replay.findings)} contract findings")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from tracker.explain import explain
    from tracker.reachability import Location

    replay = _replay(args, False)
    if replay is None:
        return 2
    _report_errors(replay)
    try:
        scope = replay.root.find(json.loads(args.scope))
        kind, node, port = args.port.split(",")
        loc = Location.from_json([kind.strip(), int(node), int(port)])
        time = scope.domain.parse(json.loads(args.time)) if args.time is not None else None
    except (KeyError, ValueError) as e:
        print(f"flowscope: {e}", file=sys.stderr)
        return 2
    if time is None:
        frontier = scope.tracker.frontier(loc)
        if not frontier:
            print(f"{loc} in scope {list(scope.path)} is complete: nothing can arrive there any more")
            return 0
        time = frontier[0]
    answer = explain(scope, loc, time)
    from tracker.details import late_json

    late = late_json(answer, scope, replay.details, replay.last_at)
    if args.json:
        sys.stdout.write(_dump_json({**answer.to_json(), "late": late}) + "\n")
        return 0
    print(f"scope {list(scope.path)} port {loc} time {_fmt_time(time)}: frontier [{', '.join(_fmt_time(t) for t in answer.frontier)}]")
    if not answer.held:
        print("  not held: no pointstamp could result in this time here")
    from .holders import late_lines

    for text in late_lines(late):
        print(text)
    for h in answer.holders:
        who = "parent scope's frontier" if h.from_parent else scope.children[h.location.node].name
        print(f"  held by {h.location} ({who}) at {_fmt_time(h.time)} x{h.count} via summary {_fmt_time(h.summary)} -> {_fmt_time(h.results_in)}")
    if answer.implied:
        print(f"  ({len(answer.implied)} more pointstamps qualify, each implied by a holder above)")
    return 0


BUILTIN_COMMANDS = ("frontiers", "explain")
# command -> the module whose register(subparsers) adds it
EXTERNAL_COMMANDS = {
    "record": "backend.spark.record",
    "serve": "backend.cli_commands",
    "replay": "backend.cli_commands",
    "demo": "backend.demo",
    "listener-jar": "backend.spark.listener.cli",
    "blame": "backend.blame_command",
    "fleet": "backend.fleet.job",
}


def build_parser(argv_command: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="flowscope", description="A visual debugger for dataflow progress.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("frontiers", help="replay a progress log and print every scope's ports")
    p.add_argument("log", help="a flowscope progress log (.jsonl, .jsonl.gz, .jsonl.zst)")
    p.add_argument("--at", type=int, metavar="N", help="stop after the first N progress records")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--check", action="store_true", help="check every batch against the progress contract")
    p.set_defaults(func=cmd_frontiers)

    p = sub.add_parser("explain", help="who holds a port's frontier: the minimal blocking pointstamps")
    p.add_argument("log", help="a flowscope progress log")
    p.add_argument("--scope", default="[]", help="scope path as JSON, e.g. [2] (default: the root)")
    p.add_argument("--port", required=True, help="in,NODE,PORT or out,NODE,PORT")
    p.add_argument("--time", help="timestamp as JSON (default: the least time in the port's frontier)")
    p.add_argument("--at", type=int, metavar="N", help="stop after the first N progress records")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_explain)

    # Commands that live with their subsystem are imported only when asked for (or for --help), so that
    # `flowscope frontiers` starts without loading the Spark readers or the web server.
    import importlib

    wanted = argv_command if argv_command in EXTERNAL_COMMANDS else None
    for module in ([EXTERNAL_COMMANDS[wanted]] if wanted else dict.fromkeys(EXTERNAL_COMMANDS.values())):
        if wanted or argv_command not in BUILTIN_COMMANDS:
            importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(command).parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # e.g. `flowscope frontiers LOG | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
