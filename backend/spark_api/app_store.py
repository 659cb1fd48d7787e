"""One application attempt's REST state, read from its event log when first asked for and kept up with the log
as it grows (an application still running, a followed directory).

The History Server replays a log when a request first needs it, and so does this: the session that shows the same
log runs the Spark model on events narrowed to what the tracker reads, while the REST documents need each task's
every metric, accumulator and error, each executor's and RDD's storage; decoding all that for every session would
slow every replay for answers most sessions are never asked. One :class:`AppStore` reads its log once, through the
project's readers (:class:`~backend.eventlog.EventLogFollower`: codecs, rolling directories, a log still written),
with a decoder that skips every event :class:`~backend.spark_api.listener.StatusListener` does not read; the SQL
plans (``/sql``) are read apart, when asked for (:meth:`AppStore.sql`).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from backend.eventlog import EventLogFollower, LineError
from backend.eventlog.eventlog_layout import describe_log
from backend.spark.sql_plan.plans import SqlPlans
from backend.spark.sql_plan.read import read_plans
from backend.spark_api.app_state import AppState
from backend.spark_api.listener import StatusListener, status_decoder
from backend.stores import PathOrUrl, StoreUrl, locate, stat

__all__ = ["AppStore"]

_BATCH = 20_000


class AppStore:
    """The REST state of the application attempt logged at ``log`` (a file or a rolling directory)."""

    def __init__(self, log: PathOrUrl) -> None:
        self.log = locate(log)
        self.errors: list[LineError] = []
        self.listener = StatusListener()
        self._sql: tuple[tuple, SqlPlans] | None = None
        self._follower = EventLogFollower(self.log, on_error=self.errors.append, decode=status_decoder())
        self._lock = threading.Lock()

    def catch_up(self) -> AppState:
        """The state after every event the log holds now (reading only what was added since the last call)."""
        with self._lock:
            follower, feed = self._follower, self.listener.feed
            while not follower.finalized:
                events = follower.poll(_BATCH)
                if not events:
                    break
                for ev in events:
                    feed(ev.event)
        return self.listener.state

    def sql(self) -> SqlPlans:
        """The SQL executions' plans and metrics (``backend.spark.sql_plan``), read when first asked for and again
        when the log has changed: a second pass, since most requests never ask for them and their metrics are a
        third of the work of reading a SQL application's tasks."""
        with self._lock:
            stamp = tuple((str(p), (e := stat(p)).size, e.mtime) for p in self.files())
            if self._sql is None or self._sql[0] != stamp:
                plans, _problems = read_plans(self.log)
                self._sql = (stamp, plans)
            return self._sql[1]

    @property
    def finalized(self) -> bool:
        return self._follower.finalized

    def files(self) -> list[Path | StoreUrl]:
        """The log's files now, in order: what ``/logs`` sends."""
        return list(describe_log(self.log).files)

    def last_updated(self) -> int:
        """When the log last changed (epoch ms): Spark's ``lastUpdated``, and the time a running task runs to."""
        try:
            return max(int((stat(p).mtime or 0) * 1000) for p in self.files())
        except (OSError, ValueError):
            return int(time.time() * 1000)
