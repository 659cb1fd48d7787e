"""The distributed progress protocol: every worker keeps a replica of a scope's tracker, fed by atomic batches.

Each worker reports what it did as one :class:`ProgressBatch` per action (messages produced and consumed,
capabilities acquired, downgraded or dropped), broadcast to every worker, the sender included. Replicas see the same
batches at different times and in different orders, and their frontiers are still never ahead of the truth
(the blog post's argument, mdbook chapter 5.2):

* A batch is applied whole: an action's increments arrive with the decrements they replace.
* A replica holds a *prefix* of each worker's batches. Across workers order does not matter (a count may go
  negative for a while, and a frontier counts only positive counts); within one it does, since a dropped capability
  applied before the message it sent would let the frontier pass that message. Timely's channels are FIFO; here
  :class:`SenderOrder` holds back a batch that overtook an earlier one of its worker, over one sequence that numbers
  all of a worker's scopes' batches.
* Initial capabilities are not exchanged: every replica counts every worker's copy (``peers`` of each), as timely.

Delivery is at most once (a repeated ``(worker, seq)`` is a ValueError). Nothing here does I/O or uses threads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from tracker.change_batch import ChangeBatch
from tracker.reachability import Builder, Location, Tracker

__all__ = ["ProgressBatch", "Outbox", "SenderOrder", "Replica", "consolidate"]

Update = tuple[Location, Any, int]


def consolidate(updates: Iterable[Update]) -> tuple[Update, ...]:
    """Merge equal ``(location, time)`` entries, drop zeros, sort: the compacted form of a batch (a ChangeBatch's)."""
    changes = ChangeBatch()
    for loc, t, d in updates:
        changes.update((loc, t), d)
    return tuple((loc, t, d) for (loc, t), d in changes.drain())


class _BatchFields(NamedTuple):
    worker: int
    seq: int
    updates: tuple[Update, ...]
    scope: tuple[int, ...] = ()


class ProgressBatch(_BatchFields):
    """One worker's atomic report of one action (or several actions, merged): ``(location, time, delta)`` entries.

    ``scope`` names the scope the locations belong to (a path of node indices, as in a progress log); a computation
    of one scope leaves it empty. Immutable (a tuple: cheap to build once per step and to pickle onto a socket).
    """

    __slots__ = ()

    def __new__(cls, worker: int, seq: int, updates: Iterable[Update], scope: tuple[int, ...] = ()) -> ProgressBatch:
        return tuple.__new__(cls, (worker, seq, updates if type(updates) is tuple else tuple(updates), scope))


class Outbox:
    """The sending side of one worker: numbers its batches 0, 1, 2, ... in the order the actions happened."""

    def __init__(self, worker: int):
        self.worker = worker
        self.seq = 0

    def batch(self, updates: Iterable[Update], scope: tuple[int, ...] = ()) -> ProgressBatch | None:
        """The consolidated batch for these updates, or ``None`` if they cancel out (no sequence number used)."""
        return self.drain(ChangeBatch(((loc, t), d) for loc, t, d in updates), scope)

    def drain(self, changes: ChangeBatch, scope: tuple[int, ...] = ()) -> ProgressBatch | None:
        """The batch of what ``changes`` accumulated (keys ``(location, time)``), which is left empty; or ``None``.

        A ChangeBatch is already in compacted form, so a worker that counts its actions into one sends it as is.
        """
        compact = tuple((loc, t, d) for (loc, t), d in changes.drain())
        if not compact:
            return None
        b = ProgressBatch(self.worker, self.seq, compact, scope)
        self.seq += 1
        return b


class SenderOrder:
    """The receiving side's per-worker prefix: releases each worker's batches in the order that worker sent them.

    A batch that overtakes an earlier one from the same worker is held back until the gap closes; the order across
    workers is whatever arrival gives. Refuses (ValueError) a worker outside ``0..peers-1``, a sequence number that
    is not an integer >= 0, and a second delivery of the same ``(worker, seq)``.
    """

    def __init__(self, peers: int):
        if peers < 1:
            raise ValueError(f"a computation has at least one worker, not {peers}")
        self.peers = peers
        self._next = [0] * peers  # per worker: the next sequence number to release
        self._held: list[dict[int, ProgressBatch]] = [{} for _ in range(peers)]
        self._held_count = 0  # batches in self._held, kept so that held_back() is O(1) (workers ask every step)

    def check(self, batch: ProgressBatch) -> None:
        """Raise ValueError if ``batch`` names no worker of this computation, or was already received."""
        w, seq = batch.worker, batch.seq
        if not (type(w) is int and 0 <= w < self.peers):
            raise ValueError(f"progress batch from worker {w!r}, but this computation has workers 0..{self.peers - 1}")
        if type(seq) is not int or seq < 0:
            raise ValueError(f"progress batch from worker {w} has sequence number {seq!r}; expected an integer >= 0")
        if seq < self._next[w] or seq in self._held[w]:
            raise ValueError(
                f"duplicate progress batch (worker {w}, seq {seq}): it was already received; "
                "each batch must be delivered at most once"
            )

    def admit(self, batch: ProgressBatch) -> list[ProgressBatch]:
        """The batches ``batch`` makes ready, in their sender's order: itself and any it unblocks, or none.

        Raises ValueError as :meth:`check` does, before anything changes.
        """
        self.check(batch)
        w, seq = batch.worker, batch.seq
        if seq != self._next[w]:
            self._held[w][seq] = batch
            self._held_count += 1
            return []
        ready = [batch]
        held = self._held[w]
        seq += 1
        while held and seq in held:
            ready.append(held.pop(seq))
            seq += 1
        self._held_count -= len(ready) - 1
        self._next[w] = seq
        return ready

    def held_back(self) -> int:
        """How many received batches wait for an earlier batch from the same worker."""
        return self._held_count

    def released_through(self, worker: int) -> int:
        """How many of ``worker``'s batches have been released (its next expected sequence number)."""
        return self._next[worker]


class Replica:
    """One worker's view of a scope: a tracker that applies every worker's batches, each exactly once."""

    def __init__(
        self, builder: Builder, peers: int, initial: Iterable[tuple[Location, Any]] = (), worker: int | None = None
    ):
        self.order = SenderOrder(peers)
        self.peers = peers
        self.worker = worker
        self.tracker: Tracker
        self.tracker, self.scope_summary = builder.build()
        # Every worker holds each initial capability, so every replica counts `peers` copies of it.
        for loc, t in initial:
            self._check_location(loc, "an initial capability")
            self.tracker.update(loc, t, peers)
        self.tracker.propagate_all()
        self.tracker.discard_pushed()  # the initial frontiers: nothing moved yet, so nothing to report
        self.applied = 0

    def _check_location(self, loc: Location, what: str) -> None:
        if loc not in self.tracker.index:
            raise ValueError(f"{what} names {loc}, which is not a port of scope {self.tracker.name or '(unnamed)'}")

    def receive(self, batch: ProgressBatch) -> list[tuple[Location, Any, int]]:
        """Apply ``batch`` whole, and then any held-back batches it unblocks. Then propagate.

        Returns the frontier changes this caused, as sorted ``(location, time, ±1)``. The list is empty if the
        batch is held back because an earlier batch from the same worker is still missing.
        """
        self.order.check(batch)  # a duplicate or unknown sender is reported before a wrong location
        for loc, _, _ in batch.updates:
            self._check_location(loc, f"progress batch (worker {batch.worker}, seq {batch.seq})")
        ready = self.order.admit(batch)
        if not ready:
            return []
        for b in ready:
            for loc, t, d in b.updates:
                self.tracker.update(loc, t, d)
            self.applied += 1
        self.tracker.propagate_all()
        return self.tracker.drain_pushed()

    # --- reading ---------------------------------------------------------------------------------------

    def held_back(self) -> int:
        """How many received batches wait for an earlier batch from the same worker."""
        return self.order.held_back()

    def received_through(self, worker: int) -> int:
        """How many of ``worker``'s batches have been applied (its next expected sequence number)."""
        return self.order.released_through(worker)

    def frontier(self, location: Location) -> list[Any]:
        return self.tracker.frontier(location)

    def is_global(self, location: Location, time: Any) -> bool:
        return self.tracker.is_global(location, time)

    def pointstamps(self, location: Location) -> list[tuple[Any, int]]:
        """The accumulated counts at a port (possibly negative), sorted by time."""
        return self.tracker.pointstamps_at(location).updates()

    def tracking_anything(self) -> bool:
        return self.tracker.tracking_anything()
