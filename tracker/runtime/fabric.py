"""How workers reach each other: data messages to one worker, progress batches to all (the sender included).

The protocol asks that progress batches arrive whole and at most once, and that each worker applies one sender's
batches in the order they were sent (workers restore that order themselves from the batches' ``seq``, with
``tracker.broadcast.SenderOrder``); the order
*across* senders, the timing, and whether data arrives before or after the progress that counts it do not matter
for safety. The in-process :class:`ThreadFabric` can therefore delay and reorder every message at random
(``chaos``) to show it.
Workers know a fabric only as a :class:`Fabric` (this module's threads, ``tcp``'s sockets, or a wrapper).
A :class:`GlobalView` optionally watches every batch at the moment it is broadcast: the true progress state,
against which tests check that no worker ever acts ahead of it.
"""

from __future__ import annotations

import random
import threading
import time as _time
from collections.abc import Callable
from typing import Any, Protocol

from tracker.broadcast import ProgressBatch
from tracker.reachability import Target
from tracker.subgraph import Subgraph

__all__ = ["Fabric", "ThreadFabric", "GlobalView", "Chaos"]


class Fabric(Protocol):
    """How a worker reaches the others.

    Messages are ``("data", path, target, time, records)`` for one worker and ``("progress", ProgressBatch)`` for
    all."""

    @property
    def global_view(self) -> GlobalView | None:
        """The true progress state, if this fabric keeps one (threads of one process only)."""
        ...

    def send(self, src: int, dst: int, msg: tuple) -> None:
        """Deliver ``msg`` to worker ``dst`` (eventually, whole, at most once)."""
        ...

    def broadcast(self, src: int, msg: tuple) -> None:
        """Deliver ``msg`` to every worker, ``src`` included."""
        ...

    def recv(self, index: int, timeout: float = 0.0) -> list[tuple]:
        """What has arrived for worker ``index``, waiting up to ``timeout`` seconds if nothing has."""
        ...


class Chaos:
    """Random delivery delays in ``[0, max_delay]`` seconds, so messages also overtake each other."""

    def __init__(self, seed: int = 0, max_delay: float = 0.003):
        self.rng = random.Random(seed)
        self.max_delay = max_delay


class GlobalView:
    """The true progress state: every batch applied the moment its worker broadcasts it."""

    def __init__(self, check_replicas: bool = False) -> None:
        self.check_replicas = check_replicas  # after every step, compare the worker's replicas with the truth
        self.root = Subgraph((), "global", 0, 0, 1)
        self.lock = threading.Lock()
        self._installed: set[tuple] = set()
        self.violations: list[str] = []
        self.notifications = 0

    def install(self, install_fn: Callable[[Subgraph], None], path: tuple) -> None:
        """Build dataflow ``path`` into the truth once, however many workers build it."""
        with self.lock:
            if path not in self._installed:
                self._installed.add(path)
                install_fn(self.root)

    def apply(self, batch: ProgressBatch) -> None:
        """Apply a batch the moment it is broadcast (the truth does not wait for delivery)."""
        with self.lock:
            self.root.find(batch.scope).receive(batch.updates)
            self.root.schedule()

    def check_notification(self, path: tuple, node: int, inputs: int, time: Any, worker: int) -> None:
        """A notification may fire only once the true frontier at every input of the operator has passed it."""
        with self.lock:
            self.notifications += 1
            tracker = self.root.find(path).tracker
            if tracker is None:
                raise RuntimeError(f"the global view has not built scope {list(path)}, where a notification fired")
            for i in range(inputs):
                if tracker.implications_at(Target(node, i)).less_equal(time):
                    self.violations.append(
                        f"worker {worker}: notification at {time!r} for node {node} of scope {list(path)} fired while "
                        f"input {i} could still receive it (true frontier {tracker.frontier(Target(node, i))})")

    def check_replica(self, worker: int, replica: Subgraph) -> None:
        """No port of worker ``worker``'s replicas may be ahead of the truth.

        ``replica`` is its root. This is the safety of the protocol."""
        with self.lock:
            for scope in replica.scopes():
                if scope.tracker is None or not scope.path or scope.path[:1] not in {p[:1] for p in self._installed}:
                    continue
                truth = self.root.find(scope.path).tracker
                if truth is None:
                    continue
                le = scope.domain.le
                for k, loc in enumerate(scope.tracker.locations):
                    mine = scope.tracker.implications[k].frontier()
                    for t in truth.frontier(loc):
                        if not any(le(m, t) for m in mine):
                            self.violations.append(
                                f"worker {worker}: scope {list(scope.path)} {loc} frontier {mine} is ahead of "
                                f"the true frontier {truth.frontier(loc)}")
                            break


class ThreadFabric:
    """Mailboxes for workers that are threads of one process."""

    def __init__(self, peers: int, chaos: Chaos | None = None, global_view: GlobalView | None = None):
        self.peers = peers
        self.chaos = chaos
        self.global_view = global_view
        self._boxes: list[list] = [[] for _ in range(peers)]
        self._conds = [threading.Condition() for _ in range(peers)]
        self._chaos_lock = threading.Lock()

    def send(self, src: int, dst: int, msg: tuple) -> None:
        due = 0.0
        if self.chaos is not None:
            with self._chaos_lock:
                due = _time.monotonic() + self.chaos.rng.uniform(0.0, self.chaos.max_delay)
        cond = self._conds[dst]
        with cond:
            self._boxes[dst].append((due, msg))
            cond.notify()

    def broadcast(self, src: int, msg: tuple) -> None:
        if self.global_view is not None and msg[0] == "progress":
            self.global_view.apply(msg[1])
        for dst in range(self.peers):
            self.send(src, dst, msg)

    def recv(self, index: int, timeout: float = 0.0) -> list[tuple]:
        cond = self._conds[index]
        with cond:
            box = self._boxes[index]
            if not box and timeout > 0:
                cond.wait(timeout)
            if not box:
                return []
            if self.chaos is None:
                self._boxes[index] = []
                return [m for _, m in box]
            now = _time.monotonic()
            ready = [m for due, m in box if due <= now]
            if not ready:
                return []
            self._boxes[index] = [(due, m) for due, m in box if due > now]
        with self._chaos_lock:
            self.chaos.rng.shuffle(ready)
        return ready
