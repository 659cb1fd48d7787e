"""Text for `flowscope explain`: the pointstamps that are actually late, with the tasks they are made of."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

__all__ = ["late_lines"]

MAX_TASKS = 5


def _time_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ""))


def _clock(at: Any) -> str:
    """Wall time as the "Why is this stuck?" panel shows it: UTC ``HH:MM:SS.mmm``."""
    if not isinstance(at, (int, float)) or isinstance(at, bool):
        return "?"
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S.%f")[:12]


def _iteration(holder: dict) -> str:
    """A loop's time as a person reads it: the job and the iteration its stage runs (from the stage's detail)."""
    stage = next((s for s in reversed(holder.get("stages") or []) if s.get("iteration") is not None), None)
    return f" (job {stage.get('job')}, iteration {stage['iteration']})" if stage else ""


def late_lines(late: list[dict]) -> list[str]:
    """One line per late pointstamp that has running or pending work, then its running tasks and finished time.

    A pointstamp's line says how many tasks are pending and since when (the latest stage attempt's submission); its
    running tasks come longest first, then what its finished tasks spent their time on (when the Spark model said
    so)."""
    out: list[str] = []
    for h in late:
        running, pending = h.get("running") or [], h.get("pending")
        if not running and not pending:
            continue
        kind, node, port = h["location"]
        why = " (implied by the driver's capability, but this is what the time waits for)" if h["implied"] else ""
        waiting = f", {pending['count']} pending since {_clock(pending.get('since'))}" if pending and pending[
            "count"] else ""
        out.append(f"  late: {kind}({node},{port}) ({h['operator']}) at {_time_text(h['time'])}{_iteration(h)}: "
                   f"{len(running)} running"
                   f"{waiting}{why}")
        for t in sorted(running, key=lambda t: -(t.get("running_s") or 0))[:MAX_TASKS]:
            spec = ", speculative" if t.get("speculative") else ""
            secs = f" for {t['running_s']:.2f} s" if t.get("running_s") is not None else ""
            partition = t.get("partition", t.get("index"))
            out.append(f"    task {t.get('task')} (stage {t.get('stage')}.{t.get('stage_attempt')}, partition "
                       f"{partition}, attempt {t.get('attempt')}) on executor {t.get('executor')} "
                       f"({t.get('host')}){secs}{spec}")
        if len(running) > MAX_TASKS:
            out.append(f"    ... {len(running) - MAX_TASKS} more running")
        done = next((st["finished"] for st in reversed(h.get("stages") or []) if isinstance(st.get("finished"), dict)),
                    None)
        if done and done.get("tasks"):  # what the stage's finished tasks spent their time on (task_metrics)
            from backend.spark.diagnosis.task_metrics import describe

            n = done["tasks"]
            out.append(f"    its {n} finished task{'s' if n > 1 else ''} spent: {describe(done)}")
    return out
