"""``flowscope report LOG``: the Overview for a terminal (``backend/views/overview.py``): the application, its slowest
times with what held each longest, the findings with what to change, and the what-if for twice and half the cores.

Every line points at a time and a holder: a scope path and the time in it, the holder's stage, task and executor,
and a wall-clock moment that ``flowscope replay LOG --at MOMENT --scope PATH`` opens. ``--json`` prints the
Overview's answer (``GET /api/sessions/{sid}/overview``).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from .arguments import positive_int

__all__ = ["register", "report_lines"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("report", help="the answer first: slowest times and why, findings, the cores what-if",
                              description="The Overview the page opens with, for a terminal: the application's "
                                          "duration, jobs and idle cores, the slowest jobs or micro-batches with "
                                          "the holder that held each longest, the findings with what to change, "
                                          "and the estimated duration with twice and half the cores.")
    p.add_argument("log", help="a Spark event log or a flowscope progress log")
    p.add_argument("--json", action="store_true", help="print one JSON object (the Overview's answer)")
    p.add_argument("--top", type=positive_int, default=5, metavar="N", help="slowest times listed (5)")
    p.add_argument("--findings", type=positive_int, default=10, metavar="N",
                   help="groups of findings listed, largest impact first (10)")
    p.add_argument("--pipeline-bytes", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from backend.spark.diagnosis.recorded_schedule import RecordedSchedule
    from backend.spark.diagnosis.task_timeline import TaskTimeline
    from backend.views.overview import build_overview, execution_scopes, plan_operators_of

    from .blame import read_blamed

    schedule, timeline = RecordedSchedule(), TaskTimeline()
    read = read_blamed(args.log, args.pipeline_bytes, also=(schedule.record,), check_contracts=True,
                       name_plans=True, timeline=timeline)
    if isinstance(read, int):
        return read
    replay, blamed, errors = read
    for err in errors:
        print(f"flowscope: {err}", file=sys.stderr)
    named, findable = plan_operators_of(replay.marks)
    plan_found = _plan_findings(args.log, execution_scopes(replay.root)) if findable else []
    marks = (replay.marks[i] for i in replay.finding_marks)
    answer = build_overview(Path(args.log).name, blamed, marks, replay.findings, schedule, timeline,
                            slowest=args.top, plan_findings=plan_found, plan_operators=named)
    if args.json:
        sys.stdout.write(json.dumps(answer) + "\n")
        return 0
    print("\n".join(report_lines(answer, str(args.log), args.findings)))
    return 0


def _plan_findings(log: str, scopes: dict[int, list[int]]) -> list[dict]:
    """The SQL plan findings of a Spark event log (read again, as ``flowscope plan`` reads it: the model said some
    execution's plan could raise one), each in its execution's region; the read's problems are the log's, which the
    replay reported."""
    from backend.spark.sql_plan.read import read_plan_findings

    found, _ = read_plan_findings(log)
    for f in found:
        f["scope"] = scopes.get(f["execution"])
    return found


def _moment(at: Any) -> str | None:
    """A wall-clock time as ``flowscope replay --at`` reads it (ISO 8601, UTC)."""
    if not isinstance(at, (int, float)):
        return None
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _open(log: str, scope: list, at: Any = None, batch: Any = None) -> str:
    """The command that opens the view there: at a wall-clock moment, else after a batch."""
    where = _moment(at) if at is not None else (str(batch) if isinstance(batch, int) else None)
    cmd = f"flowscope replay {log}" + (f" --at {where}" if where else "")
    return cmd + (f" --scope {','.join(map(str, scope))}" if scope else "")


def _cores(n: int) -> str:
    return f"{n} core" if n == 1 else f"{n} cores"


def _what(t: dict) -> str:
    what = f"batch {t['batch_id']}" if t.get("batch_id") is not None else f"time {json.dumps(t['time'])}"
    jobs = t.get("job_ids") or []
    if jobs:
        more = ", ..." if len(jobs) > 3 else ""
        what += f" (job{'s' if len(jobs) > 1 else ''} {', '.join(map(str, jobs[:3]))}{more})"
    return f"scope {t['scope']} {what}"


def report_lines(answer: dict, log: str, top_groups: int = 10) -> list[str]:
    """The Overview as lines of text (``top_groups``: the groups of findings listed)."""
    from .blame import segment_text

    app = answer["application"]
    lines = [f"{app['name']}: {app['duration_s']:.2f} s, {app['jobs']} jobs, {app['times']} completed times"
             + (f" ({app['failed_times']} failed)" if app["failed_times"] else "")
             + (f", {app['streaming_queries']} streaming queries" if app["streaming_queries"] else "")]
    if app["engine"] == "spark":
        cores = _cores(app["recorded_cores"]) if app["recorded_cores"] else "cores unknown"
        idle = f", idle {app['idle_cores_pct']:.0f}% of the time" if app["idle_cores_pct"] is not None else ""
        lines.append(f"  {app['tasks']} tasks, {app['task_seconds']:.1f} task-seconds on {cores}{idle}")
        w = app.get("whatif")
        if w:
            double, half = w["2x"], w["0.5x"]
            lines.append(f"  what if: {_cores(double['cores'])} {double['wall_s']:.2f} s "
                         f"({double['change_pct']:+.0f}%), {_cores(half['cores'])} {half['wall_s']:.2f} s "
                         f"({half['change_pct']:+.0f}%); never below {w['critical_path_s']:.2f} s "
                         "(flowscope whatif: how, and what it cannot see)")
    lines.append("")
    lines.append("slowest:" if answer["slowest"] else "slowest: no completed time")
    for t in answer["slowest"]:
        took = f"took {t['latency_s']:.3f} s" if t.get("status") != "failed" else \
            f"failed after {t['latency_s']:.3f} s: {t.get('failure')}"
        lines.append(f"  {_what(t)} {took}")
        top = t.get("top")
        if top:
            lines.append(segment_text(top, t["latency_s"]))
            lines.append(f"      open: {_open(log, t['scope'], (top['from'] + top['to']) / 2)}")
    lines.append("")
    lines += _findings_lines(answer, log, top_groups)
    return lines


def _seconds(v: Any) -> str:
    return f"{v:,.2f} s" if isinstance(v, (int, float)) else "unknown"


def _findings_lines(answer: dict, log: str, top_groups: int) -> list[str]:
    """The groups of findings, largest impact first: each with its count and summed impact, its worst instance
    (what it says, what to do, the threshold that fired, how to open it)."""
    from backend.spark.diagnosis.thresholds import threshold_text

    total, groups = answer["findings_total"], answer["groups"]
    if not total:
        return ["findings: none"]
    shown = groups[:max(0, top_groups)]
    lines = [f"findings: {total:,} in {len(groups):,} group{'s' if len(groups) != 1 else ''}, largest impact first"
             + (f" (the first {len(shown)})" if len(shown) < len(groups) else "")]
    for g in shown:
        f = g["worst"]
        impact = f"{_seconds(g['impact_s'])}" + (" in all" if g["count"] > 1 else "")
        if g.get("core_hours") is not None:
            impact += f", {g['core_hours']:.3f} core-hours idle"
        jobs = f", in {g['scope_count']:,} scopes" if g["count"] > 1 and g["scope_count"] > 1 else ""
        lines.append(f"  [{g['kind']}] {g['label']}: {g['count']:,} finding{'s' if g['count'] > 1 else ''}{jobs}, "
                     f"impact {impact}")
        where = f"scope {f['scope']}" + (f", stage {f['stage']}" if f.get("stage") is not None else "")
        lines.append(f"      {'worst' if g['count'] > 1 else 'what'}: {where}: {f['text']} "
                     f"(impact {_seconds(f.get('impact_s'))})")
        if f.get("impact_note"):
            lines.append(f"      impact: {f['impact_note']}")
        if g.get("recommendation"):
            lines.append(f"      do: {g['recommendation']}")
        fired = threshold_text(f.get("threshold") or {}) if "name" in (f.get("threshold") or {}) else \
            ", ".join(f"{k} {v}" for k, v in (f.get("threshold") or {}).items())
        if fired:
            lines.append(f"      threshold: {fired}")
        at = f.get("ended_at") if f["kind"] == "straggler" else None
        lines.append(f"      open: {_open(log, f['scope'], at - 0.001 if at else None, f.get('batch'))}")
    return lines
