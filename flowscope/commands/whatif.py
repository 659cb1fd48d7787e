"""``flowscope whatif LOG --cores 2,4,8``: how long each job or micro-batch, and the application, would have taken
with more or fewer cores (``backend/spark/diagnosis/cores_whatif.py``; not the server's release what-if).

``--json`` prints ``{"cores": [...], "times": [...], "application": {...}, "assumptions": [...]}``
(``docs/cores-whatif.md``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .arguments import positive_int

__all__ = ["register", "cores_arg"]


def cores_arg(text: str) -> Any:
    """``--cores``: ``2,4,8`` or ``2x4`` (executors x cores), as ``parse_cores`` reads it."""
    from backend.spark.diagnosis.cores_whatif import parse_cores

    try:
        return parse_cores(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("whatif", help="how long the application would take with more or fewer cores",
                              description="Simulate Spark's scheduling of the recorded tasks on other numbers of task "
                                          "slots: per job or micro-batch and for the application, the estimated "
                                          "latency at each core count, the critical path (unbounded cores) and the "
                                          "perfect-parallelism bound, with what the estimate cannot see.")
    p.add_argument("log", help="a Spark event log (or a flowscope progress log made from one)")
    p.add_argument("--cores", type=cores_arg, default=None, metavar="N,N,...",
                   help="task slots to simulate: 2,4,8,16 or executors x cores such as 2x4 (default: half, the "
                        "recorded count, twice and four times)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--top", type=positive_int, default=10, metavar="N",
                   help="times listed in the text, slowest first (10)")
    p.add_argument("--pipeline-bytes", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_whatif)


def cmd_whatif(args: argparse.Namespace) -> int:
    from backend.spark.diagnosis.cores_whatif import cores_whatif, default_cores
    from backend.spark.diagnosis.recorded_schedule import RecordedSchedule
    from backend.spark.diagnosis.task_timeline import TaskTimeline

    from .blame import read_blamed

    schedule, timeline = RecordedSchedule(), TaskTimeline()
    read = read_blamed(args.log, args.pipeline_bytes, also=(schedule.record, timeline.record))
    if isinstance(read, int):
        return read
    _, blamed, errors = read
    for err in errors:
        print(f"flowscope: {err}", file=sys.stderr)
    cores = args.cores or default_cores(schedule.peak_cores or None)
    answer = cores_whatif(schedule, timeline, cores, blamed)
    if args.json:
        sys.stdout.write(json.dumps(answer) + "\n")
        return 0
    print("\n".join(whatif_lines(answer, args.top)))
    return 0


def whatif_lines(answer: dict, top: int = 10) -> list[str]:
    """The answer as a terminal shows it: the application, the slowest times, then the assumptions."""
    app = answer["application"]
    labels = list(app["estimates_s"])
    head = "".join(f"{label + (' core' if label == '1' else ' cores'):>12}" for label in labels)
    lines = [f"{'':<44}{'recorded':>10}{head}{'unbounded':>12}"]
    rec = f"({app['recorded_cores']} cores)" if app.get("recorded_cores") else "(cores unknown)"
    lines.append(f"{'application ' + rec:<44}{app['wall_s']:>9.2f}s"
                 + "".join(f"{app['estimates_s'][k]:>11.2f}s" for k in labels) + f"{app['critical_path_s']:>11.2f}s")
    lines.append(f"{'  perfect parallelism (no skew, no waits)':<44}{'':>10}"
                 + "".join(f"{app['perfect_parallelism_s'][k]:>11.2f}s" for k in labels))
    slowest = sorted(answer["times"], key=lambda t: -t["latency_s"])[:max(0, top)]
    for t in slowest:
        what = f"batch {t['batch_id']}" if t.get("batch_id") is not None else f"time {json.dumps(t['time'])}"
        name = f"scope {t['scope']} {what}"
        if t["job_ids"]:
            name += f" (job{'s' if len(t['job_ids']) > 1 else ''} {', '.join(map(str, t['job_ids'][:3]))}"
            name += ", ...)" if len(t["job_ids"]) > 3 else ")"
        est = t["estimates_s"]
        cells = "".join(f"{est[k]:>11.2f}s" if est.get(k) is not None else f"{'-':>12}" for k in labels)
        cp = f"{t['critical_path_s']:>11.2f}s" if t.get("critical_path_s") is not None else f"{'-':>12}"
        lines.append(f"{name[:43]:<44}{t['latency_s']:>9.2f}s{cells}{cp}")
    if app.get("simulated_at_recorded_cores_s") is not None:
        lines.append(f"check: simulated on the recorded {app['recorded_cores']} cores the application takes "
                     f"{app['simulated_at_recorded_cores_s']:.2f} s (recorded {app['wall_s']:.2f} s)")
    lines.append("assumptions:")
    lines += [f"  - {a}" for a in answer["assumptions"]]
    return lines
