"""The few lines of an application's answer that the applications list shows, kept in the index once it was replayed.

Taken from the Overview (:func:`backend.views.overview.session_overview`), so the list and the Overview never
disagree: the duration, jobs, idle cores, the top findings with their impact, and the slowest times.
"""

from __future__ import annotations

from typing import Any

from backend.views.overview import session_overview

__all__ = ["TOP", "answer_summary"]

TOP = 3  # findings and slowest times kept per application


def answer_summary(session: Any) -> dict[str, Any]:
    """What the list keeps of a replayed session's Overview."""
    overview = session_overview(session)
    app = overview["application"]
    return {
        "duration_s": app["duration_s"],
        "jobs": app["jobs"],
        "tasks": app["tasks"],
        "idle_cores_pct": app["idle_cores_pct"],
        "findings": [{"kind": f["kind"], "text": f["text"], "impact_s": f.get("impact_s")}
                     for f in overview["findings"][:TOP]],
        "findings_total": overview["findings_total"],
        "slowest": [{"name": t.get("name"), "latency_s": t.get("latency_s")} for t in overview["slowest"][:TOP]],
    }
