"""The applications the REST API answers for, behind one seam: :class:`Applications`.

The routes ask only two things: every application's listing fields (``/applications``) and one application attempt's
state, replayed on demand (everything under ``/applications/{id}``). :class:`SessionApplications` answers both over
the server's Spark event logs: those its sessions read (opened, uploaded), whose listing fields come from their
replayed store, and those the index of the followed directories lists (``backend/history/``), whose listing fields
come from the index without replaying them; one :class:`~backend.spark_api.app_store.AppStore` per log, made when
first needed and replayed when first read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from backend.eventlog import EventLogReader
from backend.eventlog.decode import EventDecoder
from backend.spark_api.app_store import AppStore
from backend.stores import StoreUrl, locate

__all__ = ["AppListing", "Applications", "AttemptListing", "SessionApplications", "listings_of", "rest_path"]


@dataclass
class AttemptListing:
    """One attempt's fields in the applications list (Spark's ``ApplicationAttemptInfo``)."""

    attempt_id: str | None
    start: int
    end: int  # -1 while it runs
    last_updated: int
    duration: int
    spark_user: str
    completed: bool
    spark_version: str
    exit_code: int | None = None
    store: AppStore | None = None  # how to replay it; None where the lister has not made one yet


@dataclass
class AppListing:
    app_id: str
    name: str
    attempts: list[AttemptListing] = field(default_factory=list)  # the latest start first


class Applications(Protocol):
    def listings(self) -> list[AppListing]:
        """Every application's listing fields, the latest ended first (running ones last), as Spark lists them."""
        ...

    def attempt(self, app_id: str, attempt_id: str | None) -> AppStore | None:
        """The store of one application attempt (replayed when first read), or None if there is no such attempt."""
        ...


_START = "SparkListenerApplicationStart"
_rest_paths: dict[Path | StoreUrl, str | None] = {}


def rest_path(log: Path | StoreUrl) -> str | None:
    """The REST path of the application attempt logged at ``log`` (``/api/v1/applications/<id>[/<attempt>]``), read
    from its start event (the log read only that far, and once); None before the application has started."""
    got = _rest_paths.get(log)
    if got is None:
        for ev in EventLogReader(log, decode=EventDecoder({_START: None})):
            if ev.event.get("Event") == _START and isinstance(ev.event.get("App ID"), str):
                attempt = ev.event.get("App Attempt ID")
                got = _rest_paths[log] = f"/api/v1/applications/{ev.event['App ID']}" + \
                    (f"/{attempt}" if attempt is not None else "")
                break
    return got


def _listing(store: AppStore) -> tuple[str, str, AttemptListing] | None:
    state = store.catch_up()
    if state.app_id is None or state.start is None:
        return None
    end = state.end if state.completed and state.end is not None else -1
    return state.app_id, state.name, AttemptListing(
        state.attempt_id, state.start, end, store.last_updated(),
        end - state.start if end >= 0 else 0, state.spark_user, state.completed, state.spark_version,
        state.exit_code, store)


def listings_of(stores: list[AppStore], listed: Sequence[tuple[str, str, AttemptListing]] = ()) -> list[AppListing]:
    """The listing of these logs' attempts (replayed to read it) and of attempts ``listed`` already, grouped by
    application and ordered as Spark orders them."""
    apps: dict[str, AppListing] = {}
    for found in [*(f for store in stores if (f := _listing(store)) is not None), *listed]:
        app_id, name, attempt = found
        app = apps.setdefault(app_id, AppListing(app_id, name))
        app.attempts.append(attempt)
    for app in apps.values():
        app.attempts.sort(key=lambda a: a.start, reverse=True)
        app.name = app.name or app.app_id
    return sorted(apps.values(), key=lambda a: (a.attempts[0].end, a.app_id), reverse=True)


def _from_index(listing: Any, store: AppStore) -> tuple[str, str, AttemptListing] | None:
    """An attempt as the followed directories' index lists it (``backend.history``: its first events and its end,
    read without replaying it)."""
    if listing.start is None or not listing.app_id:
        return None
    start = round(listing.start * 1000)
    completed = not listing.in_progress
    end = round(listing.end * 1000) if completed and listing.end is not None else -1
    return listing.app_id, listing.name or listing.app_id, AttemptListing(
        listing.attempt, start, end, round(listing.updated * 1000), end - start if end >= 0 else 0,
        listing.user or "", completed, listing.spark_version or "", listing.exit_code, store)


class SessionApplications:
    """:class:`Applications` over the server's Spark event logs: those its sessions read, and those the index of its
    followed directories lists (``backend.history.applications.Applications``, when there is one), one store per
    log, made when first needed and replayed when first read."""

    def __init__(self, manager: Any, index: Any = None) -> None:
        self.manager = manager
        self.index = index
        self._stores: dict[Path | StoreUrl, AppStore] = {}

    def _store(self, log: Path | StoreUrl) -> AppStore:
        store = self._stores.get(log)
        if store is None:
            store = self._stores[log] = AppStore(log)
        return store

    def _session_logs(self) -> list[Path | StoreUrl]:
        out = []
        for session in list(self.manager.sessions.values()):
            path = getattr(session.feed, "path", None)
            if path is not None and getattr(session.feed, "kind", None) == "spark-event-log":
                out.append(locate(path))
        return out

    def stores(self) -> list[AppStore]:
        """The stores of the logs the sessions read."""
        return [self._store(log) for log in self._session_logs()]

    def listings(self) -> list[AppListing]:
        indexed = [] if self.index is None else self.index.listings()
        listed = {locate(x.location) for x in indexed}
        found = [f for x in indexed if (f := _from_index(x, self._store(locate(x.location)))) is not None]
        return listings_of([s for s in self.stores() if s.log not in listed], found)

    def attempt(self, app_id: str, attempt_id: str | None) -> AppStore | None:
        for app in self.listings():
            if app.app_id == app_id:
                for a in app.attempts:
                    if a.attempt_id == attempt_id:
                        return a.store
        return None
