"""The applications of the followed directories: listed lazily, kept in the index, replayed when someone opens one.

:class:`Applications` is what ``flowscope serve --follow DIR`` serves for Spark event logs, as Spark's History Server
does: every log in a followed directory is listed from its first events and its end (:mod:`backend.history.app_listing`)
without replaying it; the list lives in the SQLite index (:mod:`backend.history.index_db`), so a restart lists every
known application at once and a scan reads only the logs whose listing changed (a new file, an in-progress log that
grew, a new rolled ``events_N`` file, a log finalized). Each directory is scanned every ``poll`` seconds.

An application becomes a session (replayed, or followed while in progress) when it is opened: its page, any REST route
under ``/api/sessions/{key}``, or :meth:`Applications.replayed` for other APIs. At most ``retain`` such sessions stay
in memory; opening one more closes the least recently used (one a browser is watching is kept while others can go).
A session that read its log to the end leaves its answer summary (:mod:`backend.history.answer_summary`) in the index,
so the list shows it without replaying again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from backend.eventlog.eventlog_layout import ROLLING_PREFIX
from backend.feeds.progress_feeds import FeedError
from backend.history import storage
from backend.history.answer_summary import answer_summary
from backend.history.app_listing import AppListing, read_listing
from backend.history.index_db import IndexDB
from backend.history.storage import Entry
from backend.sessions.manager import SessionManager
from backend.sessions.session import Session
from backend.spark.live.follow_feed import SparkLogFeed
from backend.stores import StoreUrl
from backend.web.security import PathNotAllowed

__all__ = ["Applications", "UnknownApplication", "DEFAULT_RETAIN", "DEFAULT_POLL"]

log = logging.getLogger("flowscope.history")

DEFAULT_RETAIN = 50  # replayed applications kept in memory, as spark.history.retainedApplications
DEFAULT_POLL = 2.0  # seconds between two scans of a followed directory
_BATCH = 256  # logs read between two updates of the list (a first scan of thousands shows them as they come)
_QUIET_NS = 2_000_000_000  # a directory unchanged this long since its last change may be scanned lightly
_WHOLE_EVERY = 30  # light scans in a row at most (file systems whose times are coarse, a log rewritten in place)


class UnknownApplication(KeyError):
    """No followed directory holds an application of this id."""


class Applications:
    """The listed applications of the followed ``roots`` and the sessions opened from them (module docstring)."""

    def __init__(self, manager: SessionManager, db: IndexDB, roots: list[str], retain: int = DEFAULT_RETAIN,
                 poll: float = DEFAULT_POLL, readers: int = 4) -> None:
        if retain < 1:
            raise ValueError("retain must be at least 1")
        self.manager = manager
        self.db = db
        self.roots = [str(r) for r in roots]
        self.retain = retain
        self.poll = poll
        self.by_location: dict[str, AppListing] = {}
        self.by_key: dict[str, str] = {}  # key -> location
        self.opened: OrderedDict[str, None] = OrderedDict()  # keys of sessions opened here, least recently used first
        self.version = 0  # moves whenever the list changes (the page's ETag)
        self.logs_read = 0  # logs whose start or end was read since this server started
        self.scans: dict[str, int] = {r: 0 for r in self.roots}  # scans finished, per root
        self.light_scans = 0  # scans that looked only at the running applications (the directory was quiet)
        self._passed_over: dict[str, str] = {}  # location -> stamp of entries that are no event log
        self._pool = ThreadPoolExecutor(readers, thread_name_prefix="flowscope-listing")
        self._tasks: list[asyncio.Task] = []
        self._evicting: set[asyncio.Task] = set()
        self._rows: tuple[int, list[dict[str, Any]]] = (-1, [])
        self._root_stamps: dict[str, int] = {}  # each root's modification time at its last whole scan
        self._skipped: dict[str, int] = {}  # whole scans skipped in a row, per root

    # --- the list --------------------------------------------------------------------------------------------

    def load(self) -> int:
        """Every application the index kept from an earlier run, listed at once; how many."""
        for listing in self.db.load():
            if listing.root in self.scans:
                self._put(listing)
        self.version += 1
        return len(self.by_location)

    def _put(self, listing: AppListing) -> None:
        old = self.by_location.get(listing.location)
        if old is not None and old.key != listing.key and self.by_key.get(old.key) == listing.location:
            del self.by_key[old.key]
        self.by_location[listing.location] = listing
        self.by_key[listing.key] = listing.location

    def _drop(self, location: str) -> None:
        listing = self.by_location.pop(location, None)
        if listing is not None and self.by_key.get(listing.key) == location:
            del self.by_key[listing.key]

    def get(self, key: str) -> AppListing | None:
        location = self.by_key.get(key)
        return None if location is None else self.by_location.get(location)

    def listings(self) -> list[AppListing]:
        """Every listed application, in no particular order."""
        return list(self.by_location.values())

    def lists(self, path: Path | StoreUrl) -> bool:
        """Whether a followed directory's entry is known, without reading it, to be an application listed here."""
        return path.name.startswith(ROLLING_PREFIX) or str(path) in self.by_location

    # --- scanning ----------------------------------------------------------------------------------------------

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._watch(root), name=f"listing {root}") for root in self.roots]

    async def _watch(self, root: str) -> None:
        while True:
            try:
                await self.scan(root)
            except OSError as e:
                log.warning("cannot scan %s: %s", root, e)
            except Exception:  # the next scan tries again; the list stays as it is
                log.exception("scanning %s failed", root)
            self.scans[root] += 1
            await asyncio.sleep(self.poll)

    async def scan(self, root: str) -> None:
        """One pass over ``root``: what changed since the last is read, what vanished is dropped.

        While the directory's own time stays where the last whole pass saw it (nothing was added, removed or
        renamed; a finished log is not rewritten), only the running applications are looked at again, and a whole
        pass is made at least every ``_WHOLE_EVERY`` scans."""
        root_entry = await asyncio.to_thread(storage.entry, root)
        stamp = root_entry.mtime_ns if root_entry is not None and root_entry.mtime_ns else None  # 0: none kept
        if (stamp is not None and self._root_stamps.get(root) == stamp and self._skipped.get(root, 0) < _WHOLE_EVERY
                and time.time_ns() - stamp > _QUIET_NS):
            self._skipped[root] = self._skipped.get(root, 0) + 1
            self.light_scans += 1
            await self._read_changed(root, await asyncio.to_thread(self._running, root))
            return
        self._skipped[root] = 0
        entries = await asyncio.to_thread(storage.list_entries, root)
        if stamp is not None:
            self._root_stamps[root] = stamp
        changed: list[tuple[Entry, AppListing | None]] = []
        for entry in entries:
            if entry.name.startswith("_") or (entry.is_dir and not entry.name.startswith(ROLLING_PREFIX)):
                continue
            previous = self.by_location.get(entry.location)
            if previous is not None and previous.stamp == entry.stamp and not previous.in_progress:
                continue
            if self._passed_over.get(entry.location) == entry.stamp:
                continue
            changed.append((entry, previous))
        present = {e.location for e in entries}
        gone = [x.location for x in self.by_location.values() if x.root == root and x.location not in present]
        for location in gone:
            self._drop(location)
        if gone:
            self.version += 1
            await asyncio.to_thread(self.db.remove, gone)
        await self._read_changed(root, changed)

    def _running(self, root: str) -> list[tuple[Entry, AppListing | None]]:
        """The running applications of ``root`` as they are now (what a quiet directory can still change in)."""
        out: list[tuple[Entry, AppListing | None]] = []
        for listing in list(self.by_location.values()):
            if listing.root == root and listing.in_progress:
                entry = storage.entry(listing.location)
                if entry is not None:
                    out.append((entry, listing))
        return out

    async def _read_changed(self, root: str, changed: list[tuple[Entry, AppListing | None]]) -> None:
        """Read these entries (a batch at a time, on the readers' threads) and put what changed in the list."""
        loop = asyncio.get_running_loop()
        for i in range(0, len(changed), _BATCH):
            batch = changed[i : i + _BATCH]
            results = await asyncio.gather(*(loop.run_in_executor(self._pool, self._read, entry, root, previous)
                                             for entry, previous in batch))
            put = []
            for (entry, previous), (listing, differs) in zip(batch, results, strict=True):
                if listing is None:
                    self._passed_over[entry.location] = entry.stamp
                    continue
                if listing is not previous:
                    self.logs_read += 1
                if differs:
                    self._put(listing)
                    put.append(listing)
            if put:
                self.version += 1
                await asyncio.to_thread(self.db.put, put)

    def _read(self, entry: Entry, root: str, previous: AppListing | None) -> tuple[AppListing | None, bool]:
        """The entry's listing, and whether it differs from ``previous``."""
        before = (previous.stamp, previous.signature) if previous is not None else None
        try:
            listing = read_listing(entry, root, previous)
        except OSError as e:  # vanished or unreadable between the listing and the read: the next scan sees
            log.debug("cannot read %s: %s", entry.location, e)
            return previous, False
        except Exception:  # a log no reader expected: said once, read again only when it changes
            log.exception("cannot list %s", entry.location)
            self._passed_over[entry.location] = entry.stamp
            return previous, False
        return listing, listing is not None and (listing is not previous
                                                 or (listing.stamp, listing.signature) != before)

    # --- opening -----------------------------------------------------------------------------------------------

    def open(self, key: str) -> Session:
        """The session of the application ``key``, replaying (or following) its log if it is not open yet.

        UnknownApplication if no followed directory holds it. Opening one more than ``retain`` closes the least
        recently used."""
        session = self.manager.get(key)
        if session is not None:
            self.touch(key)
            return session
        listing = self.get(key)
        if listing is None:
            raise UnknownApplication(key)
        try:  # every part inside the followed directory, no FIFO: as any log the server opens
            path = self.manager.openable(storage.log_path(listing.location))
        except (PathNotAllowed, FeedError, OSError) as e:
            raise UnknownApplication(f"{key}: {e}") from None
        # a store's log is polled as its directory is (its objects appear whole: a rolled part within one poll)
        feed = SparkLogFeed(path, follow=listing.in_progress, label=listing.name or key,
                            poll_interval=self.poll if isinstance(path, StoreUrl) else None)
        session = self.manager.add(feed, listing.name or key, sid=key)
        session.on_finish.append(self._replayed)
        self.opened[key] = None
        self._evict()
        return session

    async def replayed(self, app_id: str, attempt: str | None = None) -> Session:
        """The application with this id (and attempt), replayed on demand: its session once its log has been read
        to the end (an in-progress one: to what Spark has written so far). UnknownApplication if none is listed."""
        session = self.open(f"{app_id}_{attempt}" if attempt else app_id)
        while session.status == "loading":
            await asyncio.sleep(0.02)
        return session

    def touch(self, key: str) -> None:
        """The session ``key`` was used: it is the last to be closed."""
        if key in self.opened:
            self.opened.move_to_end(key)

    def _evict(self) -> None:
        for key in [k for k in self.opened if self.manager.get(k) is None]:
            del self.opened[key]  # deleted by other means
        while len(self.opened) > self.retain:
            watched = {k for k in self.opened if self.manager.sessions[k].subscribers}
            victim = next((k for k in self.opened if k not in watched), next(iter(self.opened)))
            del self.opened[victim]
            task = asyncio.get_running_loop().create_task(self.manager.delete(victim))
            self._evicting.add(task)
            task.add_done_callback(self._evicting.discard)

    def _replayed(self, session: Session) -> None:
        """A session read its log to the end: keep its answer's summary in the list and the index."""
        listing = self.get(session.id)
        if listing is None or session.status != "done":
            return
        try:
            listing.summary = answer_summary(session)
        except Exception:  # a summary is a convenience: the session itself still answers
            log.exception("cannot summarise %s", session.id)
            return
        self.version += 1
        self._pool.submit(self.db.put_summary, listing.location, listing.summary)

    # --- what the API shows ----------------------------------------------------------------------------------

    def rows(self) -> list[dict[str, Any]]:
        """Every application as ``GET /api/sessions`` lists one before it is opened (made again only when the list
        changed: a page asks every few seconds)."""
        if self._rows[0] != self.version:
            self._rows = (self.version, [
                {"id": x.key, "name": x.name or x.key, "kind": SparkLogFeed.kind, "source": x.location,
                 "live": x.in_progress, "status": "listed", "application": application_json(x)}
                for x in self.by_location.values()])
        return self._rows[1]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in list(self._evicting):
            await task
        self._pool.shutdown(wait=True, cancel_futures=True)
        self.db.close()


def application_json(listing: AppListing) -> dict[str, Any]:
    """What the list says of an application: its listing, its answer summary once replayed, and where Spark's REST
    documents of it are."""
    rest = f"/api/v1/applications/{listing.app_id}" + (f"/{listing.attempt}" if listing.attempt else "")
    return {"key": listing.key, "app_id": listing.app_id, "attempt": listing.attempt, "name": listing.name,
            "user": listing.user, "spark_version": listing.spark_version, "start": listing.start,
            "end": listing.end, "duration_s": listing.duration, "status": listing.status, "size": listing.size,
            "updated": listing.updated, "error": listing.error, "summary": listing.summary, "rest": rest}
