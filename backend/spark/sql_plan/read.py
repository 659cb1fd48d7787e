"""Read a Spark event log into its SQL plans: what ``flowscope plan`` and the REST API's plan routes run.

Corrupt lines are reported (file and line) by the reader and skipped; the plans of the rest still count.
"""

from __future__ import annotations

import os

from backend.eventlog import EventLogReader
from backend.spark.sql_plan.plans import SqlPlans

__all__ = ["read_plans"]


def read_plans(path: str | os.PathLike[str]) -> tuple[SqlPlans, list[str]]:
    """The log's SQL plans and its problems (corrupt lines, bad plans), each as ``file:line: cause`` text.
    Raises ``FileNotFoundError`` or ``MissingCodecError`` as ``EventLogReader`` does."""
    plans = SqlPlans()
    reader = EventLogReader(path)
    for ev in reader:
        plans.feed(ev.event, ev.line)
    problems = [str(e) for e in reader.errors] + [f"{path}: {p}" for p in plans.problems]
    return plans, problems
