"""Per streaming query: its micro-batches against the trigger interval, its watermark against processing time.

Both come from the Spark model's "batch N done" marks (``trigger_start``, the trigger's execution in ``phases_ms``
(else ``duration_ms``), ``watermark``; see docs/spark-model.md). Spark's events do not state a query's trigger
interval, so unless the user gives it, it is inferred as Spark's processing-time trigger runs (the next batch on the
next tick after the current one's start, or at once when that tick has passed): the start-to-start differences of
the batches that *waited* (started at least ``WAIT_S`` after their predecessor ended), rounded to ``ROUND_S``, are
candidates (a tick without data runs no batch, so a difference may be a multiple), and the smallest one that at
least ``MIN_VOTES`` waited batches show is the interval; otherwise it is unknown, and the answer says so.

A batch is *late* when it ran longer than the interval (Spark's own "falling behind" test). Watermarks are epoch
seconds; Spark's initial watermark (the epoch itself) means no watermark yet and is given as null.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from backend.spark.model.iso_time import iso_seconds

__all__ = ["streaming_queries", "infer_trigger_interval", "WAIT_S", "ROUND_S", "MIN_VOTES"]

WAIT_S = 0.1
ROUND_S = 0.01
MIN_VOTES = 2


def _seconds(iso: Any) -> float | None:
    """An ISO-8601 timestamp as epoch seconds.

    Spark writes ``2026-11-21T19:49:33.989Z``. None if absent, the epoch itself (no watermark yet) or unreadable."""
    t = iso_seconds(iso)
    return t if t is not None and t > 0 else None


def infer_trigger_interval(batches: list[dict]) -> tuple[float | None, str]:
    """The trigger interval (seconds) from batches in order, and how it was obtained.

    Each batch has ``start`` and ``duration_s``; the rule is the module docstring's, and the sentence returned says how
    it applied."""
    votes: dict[float, int] = {}
    for prev, cur in zip(batches, batches[1:], strict=False):
        if prev["start"] is None or cur["start"] is None or prev["duration_s"] is None:
            continue
        if cur["start"] - (prev["start"] + prev["duration_s"]) < WAIT_S:
            continue
        diff = round(round((cur["start"] - prev["start"]) / ROUND_S) * ROUND_S, 6)
        if diff > 0:
            votes[diff] = votes.get(diff, 0) + 1
    for diff in sorted(votes):
        if votes[diff] >= MIN_VOTES:
            waited = sum(votes.values())
            return diff, (f"inferred: {votes[diff]} of the {waited} batches that waited for their trigger started "
                          f"{diff:g} s after the previous one")
    waited = sum(votes.values())
    return None, ("unknown: " + ("no batch waited for its trigger (the default trigger, or a query always behind)"
                                 if not waited else
                                 f"only {waited} batch{'es' if waited > 1 else ''} waited for a trigger, with no "
                                 f"interval shown twice") + "; set it to mark late batches")


def streaming_queries(marks: Iterable[dict], scope_names: dict[tuple, str] | None = None,
                      trigger_s: float | None = None, triggers: dict[str, float] | None = None) -> list[dict]:
    """Every streaming query with batch marks, in order of first appearance.

    ``{query, scope, name, trigger: {interval_s, source, how}, batches: [{batch, start, end, duration_s, late,
    watermark, input_rows}]}``. The user's settings replace the inferred interval: ``triggers`` per query id (queries of
    one application may run on different triggers), ``trigger_s`` for every query ``triggers`` does not name."""
    queries: dict[str, dict] = {}
    for m in marks:
        qid = m.get("query")
        if not isinstance(qid, str) or "trigger_start" not in m:
            continue
        q = queries.get(qid)
        if q is None:
            scope = m.get("scope")
            scope = scope if isinstance(scope, list) else []
            name = (scope_names or {}).get(tuple(scope)) or f"query {qid[:8]}"
            q = queries[qid] = {"query": qid, "scope": scope, "name": name, "batches": []}
        start = m.get("trigger_start")
        start = float(start) if isinstance(start, (int, float)) else None
        # the trigger's execution: the interval blame splits (the batch's time ends when it does) and the one
        # Spark's own "falling behind" test measures; Spark's batchDuration (a little longer: until the progress
        # event was made) only where the phases are missing
        dur = (m.get("phases_ms") or {}).get("triggerExecution", m.get("duration_ms"))
        dur_s = dur / 1000.0 if isinstance(dur, (int, float)) else None
        q["batches"].append({"batch": m.get("batch"), "start": start,
                             "end": start + dur_s if start is not None and dur_s is not None else m.get("at"),
                             "duration_s": dur_s, "watermark": _seconds(m.get("watermark")),
                             "input_rows": m.get("input_rows")})
    out = []
    for q in queries.values():
        batches = sorted(q["batches"], key=lambda b: (b["start"] is None, b["start"] or 0.0))
        setting = (triggers or {}).get(q["query"], trigger_s)
        if setting is not None:
            interval: float | None = setting
            source, how = "setting", f"set by the user: {setting:g} s"
        else:
            interval, how = infer_trigger_interval(batches)
            source = "inferred" if interval is not None else "unknown"
        for b in batches:
            b["late"] = bool(interval is not None and b["duration_s"] is not None and b["duration_s"] > interval)
        out.append({**q, "batches": batches, "trigger": {"interval_s": interval, "source": source, "how": how}})
    return out
