"""``/applications``, ``/applications/{id}`` and ``/applications/{id}/{attempt}``: Spark's ``ApplicationInfo`` and
``ApplicationAttemptInfo``, and the list's filters as the History Server applies them."""

from __future__ import annotations

import time
from dataclasses import dataclass

from backend.spark_api.catalog import AppListing, AttemptListing
from backend.spark_api.times import parse_date_param, spark_time

__all__ = ["ListFilter", "app_doc", "app_list", "attempt_doc"]


def attempt_doc(a: AttemptListing) -> dict:
    doc: dict = {}
    if a.attempt_id is not None:
        doc["attemptId"] = a.attempt_id
    doc.update({"startTime": spark_time(a.start), "endTime": spark_time(a.end),
                "lastUpdated": spark_time(a.last_updated), "duration": a.duration, "sparkUser": a.spark_user,
                "completed": a.completed, "appSparkVersion": a.spark_version, "startTimeEpoch": a.start,
                "endTimeEpoch": a.end, "lastUpdatedEpoch": a.last_updated})
    if a.exit_code is not None:
        doc["exitCode"] = a.exit_code
    return doc


def app_doc(app: AppListing) -> dict:
    return {"id": app.app_id, "name": app.name, "attempts": [attempt_doc(a) for a in app.attempts]}


@dataclass
class ListFilter:
    """The list's parameters (``status``, ``minDate``, ``maxDate``, ``minEndDate``, ``maxEndDate``, ``limit``)."""

    statuses: list[str]
    min_date: int
    max_date: int
    min_end: int
    max_end: int
    limit: int | None

    @classmethod
    def parse(cls, statuses: list[str], min_date: str | None, max_date: str | None, min_end: str | None,
              max_end: str | None, limit: int | None) -> ListFilter:
        """ValueError with Spark's message for a date it cannot read."""
        low, high = "2010-01-01", "3000-01-01"
        return cls([s.upper() for s in statuses], parse_date_param(min_date or low),
                   parse_date_param(max_date or high), parse_date_param(min_end or low),
                   parse_date_param(max_end or high), limit)

    def _in_range(self, a: AttemptListing, running: bool) -> bool:
        if not self.min_date <= a.start <= self.max_date:
            return False
        if running:
            return self.max_end > time.time() * 1000
        return self.min_end <= a.end <= self.max_end

    def keeps(self, app: AppListing) -> bool:
        running = not app.attempts or not app.attempts[0].completed
        wanted = not self.statuses or ("RUNNING" if running else "COMPLETED") in self.statuses
        return wanted and any(self._in_range(a, running) for a in app.attempts)


def app_list(apps: list[AppListing], f: ListFilter) -> list[dict]:
    kept = [app_doc(a) for a in apps if f.keeps(a)]
    return kept if f.limit is None else kept[:max(f.limit, 0)]
