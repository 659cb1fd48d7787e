"""How workers reach each other: data messages to one worker, progress batches to all (the sender included).

The protocol asks only that progress batches arrive whole and at most once; neither their order nor their timing
across workers matters for safety, and data may arrive before or after the progress that counts it. The
in-process :class:`ThreadFabric` can therefore delay and reorder every message at random (``chaos``) to show it.
A :class:`GlobalView` optionally watches every batch at the moment it is broadcast: the true progress state,
against which tests check that no worker ever acts ahead of it.
"""

from __future__ import annotations

import random
import threading
import time as _time
from typing import Any

from ..reachability import Target
from ..subgraph import Subgraph

__all__ = ["ThreadFabric", "GlobalView", "Chaos"]


class Chaos:
    """Random delivery delays in ``[0, max_delay]`` seconds, so messages also overtake each other."""

    def __init__(self, seed: int = 0, max_delay: float = 0.003):
        self.rng = random.Random(seed)
        self.max_delay = max_delay


class GlobalView:
    """The true progress state: every batch applied the moment its worker broadcasts it."""

    def __init__(self) -> None:
        self.root = Subgraph((), "global", 0, 0, 1)
        self.lock = threading.Lock()
        self._installed: set[tuple] = set()
        self.violations: list[str] = []
        self.notifications = 0

    def install(self, install_fn: Any, path: tuple) -> None:
        with self.lock:
            if path not in self._installed:
                self._installed.add(path)
                install_fn(self.root)

    def apply(self, path: tuple, updates: list) -> None:
        with self.lock:
            self.root.find(path).receive(updates)
            self.root.schedule()

    def check_notification(self, path: tuple, node: int, inputs: int, time: Any, worker: int) -> None:
        """A notification may fire only once the true frontier at every input of the operator has passed it."""
        with self.lock:
            self.notifications += 1
            tracker = self.root.find(path).tracker
            for i in range(inputs):
                if tracker.implications_at(Target(node, i)).less_equal(time):
                    self.violations.append(
                        f"worker {worker}: notification at {time!r} for node {node} of scope {list(path)} fired while "
                        f"input {i} could still receive it (true frontier {tracker.frontier(Target(node, i))})")


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
            self.global_view.apply(msg[1], msg[4])
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
