"""Spark event logs as feeds: an application's log replayed or followed, and a directory of logs followed.

:class:`SparkLogFeed` runs one application's log (a file, ``.inprogress`` or not, any codec, or a rolling
``eventlog_v2_`` directory) through :class:`~backend.eventlog.EventLogFollower` and the Spark model: each ``poll``
returns the progress records of the events Spark has flushed since the previous one. Followed, it stays live until
Spark finalizes the log, then ends, so the session turns complete; gaps in the events (:mod:`backend.spark.model.gaps`)
mark the session uncertain. :class:`SparkDirectoryFollower` gives a followed feed for each application that appears
in a directory (``flowscope serve --follow DIR``); ``register(registry)`` adds Spark event logs to a server's feeds.

A log in an object store (``s3://...``) is followed by listing and reading it every
``backend.stores.STORE_POLL_SECONDS`` (2 s): Spark writes each object whole, so a rolling application's new
``events_N`` part is read once it appears.

Spark flushes task events only with job, stage and SQL events (and at its buffer size), so a followed session sees
a task's end a few seconds late unless the log is written uncompressed with a small buffer
(``spark.eventLog.compress=false``, ``spark.eventLog.buffer.kb=1k``); ``flowscope.attach`` has no such delay.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from backend.eventlog import EventLogFollower, LogDirectoryScanner
from backend.eventlog.decode import WholeEvent
from backend.eventlog.eventlog_layout import ROLLING_PREFIX, looks_like_event_log, rolling_parts
from backend.feeds.followed_file import REPLACED, TRUNCATED
from backend.feeds.progress_feeds import Feed, FeedKind, FeedRegistry
from backend.spark.model.event_fields import model_decoder
from backend.spark.model.gaps import GapDetector
from backend.spark.model.retention import SESSION_RETAINED_JOBS
from backend.spark.model.spark_model import SparkModel
from backend.stores import STORE_POLL_SECONDS, PathOrUrl, StoreUrl, is_dir, locate
from tracker.progress_log.jsonl import DAMAGED_EVENT, LineError

__all__ = ["SPARK_EVENT_LOG", "SparkDirectoryFollower", "SparkLogFeed", "check_spark_log", "open_spark_log",
           "register"]

Record = tuple[int | None, dict]

LOCAL_POLL_SECONDS = 0.25  # a local log is read again this often while followed (a store's: STORE_POLL_SECONDS)


class SparkLogFeed(Feed):
    """One application's Spark event log as progress records (see the module docstring)."""

    kind = "spark-event-log"
    checked_records = True  # the Spark model's records, from events event_shape checked

    def __init__(self, path: PathOrUrl, follow: bool = True, label: str | None = None,
                 poll_interval: float | None = None) -> None:
        super().__init__()
        self.path = locate(path)
        self.live = follow
        self.label = label or self.path.name.removesuffix(".inprogress").removeprefix(ROLLING_PREFIX)
        if follow:
            self.label += " (followed)"
        if poll_interval is None:
            poll_interval = STORE_POLL_SECONDS if isinstance(self.path, StoreUrl) else LOCAL_POLL_SECONDS
        self.poll_interval = poll_interval
        self.model = SparkModel(retain_jobs=SESSION_RETAINED_JOBS)  # a session: Spark's job list stays bounded
        self.gaps = GapDetector()
        self.events = 0
        # only the fields the model and the gap detector read, their types checked as they are decoded
        self.follower = EventLogFollower(self.path, on_error=self.errors.append, decode=model_decoder())
        self.model.on_damaged = self._damaged
        self._event_path = str(self.path)
        self._done = False
        self._more = False

    @property
    def finalized(self) -> bool:
        """Spark finished the log and every event in it has been returned."""
        return self.follower.finalized

    def poll(self, limit: int) -> list[Record] | None:
        if self._done:
            return None
        out: list[Record] = []
        model, gaps = self.model, self.gaps
        self._more = False
        for _ in range(16):  # read on while events make no records (bounded: the caller's slice is short)
            if out:
                break
            events = self.follower.poll(limit)
            for ev in events:
                self.events += 1
                self._event_path = ev.path
                reason = gaps.check(ev.event)
                if reason is not None:
                    out.extend((ev.line, r) for r in model.note_gap(reason))
                for record in model.feed(ev.event, ev.line, type(ev.event) is not WholeEvent):
                    out.append((ev.line, record))
            if not events:
                if self.follower.finalized or not self.live or self.follower.ended:
                    self._done = True
                    self.live = False
                    self.ended_early = self.follower.ended  # truncated, replaced or deleted while followed
                    for reason in gaps.finish():
                        out.extend((None, r) for r in model.note_gap(reason))
                    return out or None
                break
        else:
            self._more = not out  # more may be there: do not wait before the next poll
        return out

    def _damaged(self, line: int | None, kind: str, problem: str) -> None:
        self.errors.append(LineError(self._event_path, line or 0, DAMAGED_EVENT, f"{kind} skipped: {problem}"))

    def successor(self) -> Feed | None:
        """The log file was replaced or truncated while followed: follow the new content afresh."""
        if self.ended_early in (REPLACED, TRUNCATED):
            return SparkLogFeed(self.path, follow=True, poll_interval=self.poll_interval)
        return None

    async def wait(self, timeout: float) -> None:
        await asyncio.sleep(0 if self._more else min(timeout, self.poll_interval))


class SparkDirectoryFollower:
    """The applications that appear in a Spark event-log directory, each as a followed :class:`SparkLogFeed`."""

    def __init__(self, directory: PathOrUrl, recursive: bool = False) -> None:
        self.scanner = LogDirectoryScanner(directory, recursive=recursive)

    def scan(self) -> list[SparkLogFeed]:
        """Feeds for the applications not seen before (finished ones too: they end as soon as they are read)."""
        return [SparkLogFeed(app.path, follow=True, label=app.name) for app in self.scanner.scan()]


def check_spark_log(path: Path | StoreUrl) -> str | None:
    """None if ``path`` is one application's Spark event log (a file or a rolling directory), else why not."""
    if is_dir(path):
        if path.name.startswith(ROLLING_PREFIX) or rolling_parts(path):
            return None
        return "a directory that is not a rolling event log (eventlog_v2_<app>/events_<N>_<app>)"
    if looks_like_event_log(path):
        return None
    return 'it does not start like a Spark event log ({"Event": ... or a Spark codec)'


def open_spark_log(path: Path | StoreUrl, follow: bool) -> Feed:
    return SparkLogFeed(path, follow=follow)


SPARK_EVENT_LOG = FeedKind("spark-event-log", "Spark event log", check_spark_log, open_spark_log)


def register(registry: FeedRegistry) -> None:
    registry.register(SPARK_EVENT_LOG)
