"""The stream: one subscriber per WebSocket client, fed by the session, drained at the client's own pace.

At the end of every ingest slice the session adds the ports the slice touched to each subscriber's *dirty set* of
its scope and wakes it; that is all the ingest does for a client. The client's sender (:func:`pump`) waits out
``min_interval``, then sends the *current* rows of its dirty ports with the new marks and findings; while a send is
blocked, changes coalesce in the dirty set, so a slow client costs the tracker and the others nothing. A port's row
is encoded once per slice for all clients (:class:`SharedRows`).

Messages (JSON text), rows being ``[kind, node, port, frontier, pointstamps, implications]``:

* ``snapshot`` (``scope``, ``batch``, ``at``, ``status``, ``version``, ``ports``, ``marks_total``,
  ``findings_total``): every port of the scope, first and after a scope switch;
* ``resume``, instead, for a client that connects with ``since=K``: the ports changed after batch ``K``;
* ``delta``: the dirty rows, new ``marks`` and ``findings``, ``t_first`` (when its oldest batch entered the tracker)
  and ``t_sent``.

The client sends ``{"type":"watch", "scope":[...], "since": K|null}`` to switch scope.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any
from weakref import WeakKeyDictionary

import orjson

from backend.sessions.session import Session
from backend.views.projections import mark_json, port_rows
from tracker.gc_pause import gc_paused
from tracker.reachability import Location
from tracker.subgraph import Subgraph

__all__ = ["Subscriber", "pump"]

MAX_ANNOTATIONS = 500  # marks or findings per message; the rest follow in later messages


class Subscriber:
    def __init__(self, session: Session, scope: tuple, since: int | None = None, min_interval: float = 0.03):
        self.session = session
        self.min_interval = min_interval
        self.event = asyncio.Event()
        self.closed: str | None = None
        self.sent = 0
        self.last_send = 0.0
        self.watch(scope, since)

    def watch(self, scope: tuple, since: int | None) -> None:
        s = self.session
        self.scope = tuple(scope)
        self.dirty: set[Location] = set()
        self.first_pending: float | None = None
        self.since = since
        self.initial = True
        if since is None:
            self.marks_sent = len(s.replay.marks)
            self.findings_sent = len(s.replay.findings)
        else:
            marks = s.replay.marks
            self.marks_sent = next((i for i, m in enumerate(marks) if m.get("after", 0) > since), len(marks))
            found = s.replay.findings
            self.findings_sent = next((i for i, f in enumerate(found)
                                       if (f.batch.index or 0) >= since), len(found))
        self.event.set()

    # called by the session (end of an ingest slice): cheap, never blocks
    def changed(self, locations: set[Location] | None, first: float | None) -> None:
        if locations:
            self.dirty |= locations
            if first is not None and self.first_pending is None:
                self.first_pending = first
        self.event.set()

    def close(self, reason: str) -> None:
        self.closed = reason
        self.event.set()

    def take(self) -> bytes:
        """The next message, encoded: built from the live state now (between ingest slices: consistent).

        Port rows come from the session's :class:`SharedRows`, so every client of a scope shares one encoding of
        each."""
        s = self.session
        replay = s.replay
        head = s.head
        base: dict[str, Any] = {"scope": list(self.scope), "batch": head, "at": s.history.time_of(head),
                                "status": s.status, "version": s.structure_version}
        try:
            scope = replay.root.find(self.scope)
        except KeyError:
            scope = None
        rows = shared_rows(s)
        if self.initial:
            self.initial = False
            self.dirty = set()
            self.first_pending = None
            if scope is None:
                return _encode(dict(base, type="snapshot", marks_total=self.marks_sent,
                                    findings_total=self.findings_sent, missing=True), b"[]")
            if self.since is None:
                return _encode(dict(base, type="snapshot", marks_total=self.marks_sent,
                                    findings_total=self.findings_sent), rows.of(scope))
            changed = rows.of(scope, s.changed_since(self.scope, self.since))
            return _encode(dict(base, type="resume", since=self.since, **self._annotations()), changed)
        dirty, self.dirty = self.dirty, set()
        first, self.first_pending = self.first_pending, None
        ports = rows.of(scope, dirty) if (scope is not None and dirty) else b"[]"
        return _encode(dict(base, type="delta", t_first=first, t_sent=time.time(), **self._annotations()), ports)

    def _annotations(self) -> dict:
        replay = self.session.replay
        marks = replay.marks[self.marks_sent:self.marks_sent + MAX_ANNOTATIONS]
        self.marks_sent += len(marks)
        found = replay.findings[self.findings_sent:self.findings_sent + MAX_ANNOTATIONS]
        self.findings_sent += len(found)
        return {
            "marks": [mark_json(m) for m in marks],
            "findings": [f.to_json() for f in found],
        }


def _encode(fields: dict[str, Any], ports: bytes) -> bytes:
    """A message: ``fields`` and the already encoded ``ports`` array, as one JSON object."""
    return orjson.dumps(fields)[:-1] + b',"ports":' + ports + b"}"


class SharedRows:
    """Encoded port rows of one session's live state, made once per ingest slice and shared by every client.

    A hundred clients watching a scope cost one encoding of each changed port per slice, not a hundred (a row depends
    only on the live state, which changes only inside an ingest slice: :func:`shared_rows` starts afresh after each)."""

    def __init__(self, epoch: tuple[int, int]) -> None:
        self.epoch = epoch  # (the session's ingest slices, its structure version) when these rows were read
        self._rows: dict[tuple, dict[Location, bytes]] = {}
        self._snapshots: dict[tuple, bytes] = {}

    def of(self, scope: Subgraph, locations: Iterable[Location] | None = None) -> bytes:
        """The rows of ``locations`` (default: every port) in port order, as the bytes of a JSON array."""
        scope.ensure_built()
        tracker = scope.tracker
        assert tracker is not None  # built just above
        if locations is None:
            # A snapshot: every row, encoded in one call (a 10,000-operator scope has 20,000; one encoding each
            # would cost twice as much), and kept whole for the other clients of this state.
            snapshot = self._snapshots.get(scope.path)
            if snapshot is None:
                with gc_paused():
                    snapshot = self._snapshots[scope.path] = orjson.dumps(port_rows(scope))
            return snapshot
        else:
            index = tracker.index
            wanted = sorted((loc for loc in locations if loc in index), key=index.__getitem__)
        cache = self._rows.setdefault(scope.path, {})
        missing = [loc for loc in wanted if loc not in cache]
        if missing:
            for loc, row in zip(missing, port_rows(scope, missing), strict=True):
                cache[loc] = orjson.dumps(row)
        return b"[" + b",".join([cache[loc] for loc in wanted]) + b"]"


_SHARED: WeakKeyDictionary[Session, SharedRows] = WeakKeyDictionary()


def shared_rows(session: Session) -> SharedRows:
    """The session's shared rows for its state now (new ones once an ingest slice has ended since the last)."""
    epoch = (session.slices, session.structure_version)
    rows = _SHARED.get(session)
    if rows is None or rows.epoch != epoch:
        rows = _SHARED[session] = SharedRows(epoch)
    return rows


async def pump(sub: Subscriber, send) -> None:
    """Send messages to one client until it goes away or the session ends.

    ``send`` is an async callable taking the encoded message."""
    while True:
        await sub.event.wait()
        sub.event.clear()
        if sub.closed:
            return
        wait = sub.min_interval - (time.monotonic() - sub.last_send)
        if wait > 0 and not sub.initial:
            await asyncio.sleep(wait)
            if sub.closed:
                return
        if sub.initial:  # a snapshot: after the session's settle, if one is under way (the layout comes first)
            await sub.session.settled()
            if sub.closed:
                return
        msg = sub.take()
        sub.last_send = time.monotonic()
        await send(msg)
        sub.sent += 1
