"""``flowscope blame LOG``: where the seconds of each completed time went (``tracker/analysis/blame.py``), printed.

LOG is anything the server can open (a Spark event log, a progress log made by ``flowscope record``); ``--json``
prints the answer of ``docs/blame.md``: ``{"times": [...]}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .arguments import add_thresholds_option, json_time, positive_int, scope_path
from .offline import no_scope

if TYPE_CHECKING:
    from backend.spark.diagnosis.task_timeline import TaskTimeline

__all__ = ["register", "segment_text", "failure_line"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("blame", help="where the seconds of each completed job or micro-batch went",
                              description="For every time that completed at a region's sink (a Spark job, a "
                                          "micro-batch), split its latency along the critical path of holders: "
                                          "tasks, waiting for slots, scheduler, recompute, driver.")
    p.add_argument("log", help="a Spark event log or a flowscope progress log")
    add_thresholds_option(p)
    p.add_argument("--json", action="store_true", help="print one JSON object (the blame contract)")
    p.add_argument("--scope", type=scope_path, help="only this scope: 2, 2,1 or JSON [2,1] ([] is the root)")
    p.add_argument("--time", type=json_time, help="only this time, as JSON (a job's epoch, a micro-batch id)")
    p.add_argument("--top", type=positive_int, metavar="N", help="only the N slowest times")
    p.add_argument("--nested", action="store_true",
                   help="also the times of the scopes inside --scope (a region's loop iterations); without "
                        "--scope every scope's times are listed, nested ones included")
    # tests: the size from which a Spark log is converted in other processes (event_log_conversion's threshold)
    p.add_argument("--pipeline-bytes", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_blame)


def failure_line(f: dict) -> str:
    """A recompute segment's ``failure`` as a person reads it: Spark's reason, the executor it names (the lost
    block manager's for a fetch failure), the message, and why that executor was removed if the log says."""
    ex = f.get("executor")
    where = f" (executor {ex}" + (f", {f['host']})" if f.get("host") else ")") if ex is not None else ""
    text = f"{f.get('reason') or 'failed'}{where}" + (f": {f['message']}" if f.get("message") else "")
    if f.get("executor_removed"):
        text += f"; executor {ex} removed: {f['executor_removed']}"
    return text


def segment_text(seg: dict, latency: float) -> str:
    h = seg["holder"]
    share = f"{100 * seg['seconds'] / latency:3.0f}%" if latency > 0 else "   -"
    kind = seg["kind"]
    failure = h.get("failure") if kind == "recompute" else None
    if kind == "recompute" and "task" not in h:
        what = "failed" if "failed_attempt" in h else "re-ran"
        text = f"stage {h.get('stage')}.{h.get('attempt')} ({h.get('operator')}) {what}"
        if failure:
            text += f": {failure_line(failure)}" if what == "failed" else (
                f" after stage {failure.get('stage')}.{failure.get('attempt')} failed: {failure_line(failure)}")
    elif kind in ("task", "recompute") and "task" in h:
        partition = h.get("partition", h.get("index"))
        op = h.get("plan_operator")
        named = f" · {op['name']} #{op['id']}" if op else ""
        text = (f"task {h['task']} (stage {h.get('stage')}.{h.get('attempt')}{named}, partition {partition}) "
                f"on executor {h.get('executor')}")
        med = h.get("median_task_s")
        if med:
            text += f", {h.get('duration_s') or 0:.2f} s against a median of {med:.2f} s"
        what_if = h.get("what_if") or {}
        gain = what_if.get("ends_earlier_s")
        if gain and gain >= 0.01:
            text += f"; at the median this time would have ended {gain:.2f} s earlier"
            then = what_if.get("then_held_by")
            if then:  # the walk again: who would have held on instead
                who = f"task {then['task']} of stage {then.get('stage')}" if then.get("task") is not None else ""
                if then.get("operator"):
                    who = f"{who} ({then['operator']})" if who else str(then["operator"])
                text += f", then held by {who}"
        if failure:
            text += (f"; re-run after stage {failure.get('stage')}.{failure.get('attempt')} failed: "
                     f"{failure_line(failure)}")
    elif kind == "waiting-for-slots":
        # the stage's own earlier tasks held the slots: its tasks queued behind one another (the same pointstamp,
        # so the walk does not go on to them: blame.md's holders are pointstamps)
        own = ", its own earlier tasks"
        held = ", ".join(f"stage {x['stage']} (job {x['job']}{own if x['stage'] == h.get('stage') else ''}) "
                         f"x{x['tasks']}" for x in h.get("held_by", []))
        text = f"task {h.get('task')} of stage {h.get('stage')} waited for a slot ({h.get('slots')} slots: {held})"
    elif kind == "scheduler":
        text = f"{h.get('operator')}: " + (h.get("doing") or f"task {h.get('task')} pending with free slots")
    elif kind == "driver":
        text = f"{h.get('operator')}: {h.get('doing', 'driver')}"
    else:
        text = f"{h.get('operator')} {h.get('port')} at {json.dumps(h.get('time'))}"
    line = f"    {seg['seconds']:8.3f} s {share}  {kind:<17} {text}"
    split = h.get("breakdown") if kind in ("task", "recompute") else None
    if isinstance(split, dict):  # the task's time as Spark measured it, on a line of its own
        from backend.spark.diagnosis.task_metrics import describe

        line += f"\n{'':31}{describe(split)}"
    return line


def cmd_blame(args: argparse.Namespace) -> int:
    read = read_blamed(args.log, args.pipeline_bytes, name_plans=True)
    if isinstance(read, int):
        return read
    replay, blamed, errors = read
    return _report(args, replay, blamed, errors)


def read_blamed(log: str, pipeline_bytes: int | None = None, also: Iterable[Callable[[dict], None]] = (),
                check_contracts: bool = False, name_plans: bool = False,
                timeline: TaskTimeline | None = None) -> tuple[Any, list, list] | int:
    """LOG replayed and blamed: ``(replay, blamed times, the log's problems)``, or the exit code after saying on
    stderr why it could not be read. Each of ``also`` is handed every record too (the cores what-if's schedule, the
    executor timeline); ``check_contracts``: the replay lists the progress contract's findings; ``name_plans``: a
    segment held by a SQL stage names its plan operator (the Spark model's ``plan_operators`` marks; without it a
    Spark event log's model is spared the plans); ``timeline``: an executor timeline filled from blame's own task
    index (``blame_replay``'s). A Spark event log
    is converted as ``flowscope frontiers`` converts it (``event_log_conversion``: a large log in two more
    processes), the records replayed and blamed here."""
    from backend.eventlog import MissingCodecError
    from backend.feeds.progress_feeds import FeedError, default_registry
    from backend.spark.diagnosis.blame import blame_replay
    from backend.spark.live.follow_feed import SPARK_EVENT_LOG
    from backend.spark.recording.convert import EventLogError
    from backend.spark.recording.convert_process import event_log_conversion
    from backend.stores import StoreError
    from backend.web.security import PathNotAllowed

    consumers = list(also)
    registry = default_registry()
    try:
        if registry.identify(log).name == SPARK_EVENT_LOG.name:
            corrupt: list = []  # the log's corrupt lines and damaged events, reported before blame's own problems
            conversion = event_log_conversion(log, on_error=corrupt.append, threshold=pipeline_bytes,
                                              name_plans=name_plans)
        else:
            feed = registry.open(log)
            conversion = None
    except StoreError as e:  # one line naming the path or URL and the cause (no such bucket, unreachable, ...)
        print(f"flowscope: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError:
        print(f"flowscope: {log}: no such file", file=sys.stderr)
        return 2
    except (FeedError, PathNotAllowed, EventLogError, MissingCodecError) as e:
        print(f"flowscope: {e}", file=sys.stderr)
        return 2

    def handed(rec: dict) -> dict:
        for consume in consumers:
            consume(rec)
        return rec

    problems: list = []  # the log's rejected records and the fields blame left out, after the reader's own
    if conversion is not None:
        def spark_records():
            for rec in conversion:
                yield conversion.line, handed(rec)

        try:
            replay, blamed = blame_replay(spark_records(), problems.append, str(log), checked_records=True,
                                          check_contracts=check_contracts, name_plans=name_plans, timeline=timeline)
        finally:
            conversion.close()
        return replay, blamed, corrupt + problems

    def records():
        while True:
            chunk = feed.poll(4096)
            if not chunk:
                return
            for line, rec in chunk:
                yield line, handed(rec)

    replay, blamed = blame_replay(records(), problems.append, str(log), check_contracts=check_contracts,
                                  name_plans=name_plans, timeline=timeline)
    return replay, blamed, feed.errors + problems


def _report(args: argparse.Namespace, replay: Any, blamed: list, errors: list) -> int:
    """The log's problems on stderr, then the times the query selects; a ``--scope`` the log does not have is a
    mistake said as one (exit code 2), not an empty answer."""
    from backend.spark.diagnosis.blame import select

    for err in errors:
        print(f"flowscope: {err}", file=sys.stderr)
    if args.scope is not None:
        try:
            replay.root.find(args.scope)
        except KeyError:
            print(no_scope(args.log, args.scope, replay.root), file=sys.stderr)
            return 2
    times = select(blamed, args.scope, args.time, args.top, args.nested)
    if args.json:
        sys.stdout.write(json.dumps({"times": [b.to_json() for b in times]}) + "\n")
        return 0
    for b in times:
        what = f"batch {b.batch_id}" if b.batch_id is not None else f"time {json.dumps(b.time)}"
        jobs = f"job{'s' if len(b.job_ids) > 1 else ''} {', '.join(map(str, b.job_ids))}" if b.job_ids else ""
        jobs = ", ".join(x for x in (jobs, f"iteration {b.iteration}" if b.iteration is not None else "") if x)
        jobs = f" ({jobs})" if jobs else ""
        took = f"took {b.latency_s:.3f} s" if b.failure is None else f"failed after {b.latency_s:.3f} s: {b.failure}"
        print(f"scope {b.scope} {b.name}: {what}{jobs} {took}")
        for seg in b.blame:
            print(segment_text(seg, b.latency_s))
    if not times:
        print("no completed time matches")
    return 0
