"""Synchronization built from progress tracking, as the synchronization post describes it.

* :class:`Barrier`: a dataflow with one input and a probe and never any data. ``wait`` advances this worker's input
  to the next round and steps the worker (so every other dataflow keeps running) until the probe's frontier reaches
  that round, which happens only once *every* worker has advanced its input: all have arrived.
* :class:`Sequencer`: each worker's items are stamped with the worker's elapsed time and sent to every worker; a
  worker releases an item only once its input frontier has passed the item's time, in (time, item) order. No
  earlier time can arrive later, so every worker releases the same items in the same order.
"""

from __future__ import annotations

import time as _time
from collections import deque
from typing import Any

from tracker.runtime.context import OperatorContext
from tracker.runtime.graph import Exchange, ScopeBuilder
from tracker.runtime.operators import InputHandle, Operator, ProbeHandle
from tracker.runtime.worker import Worker

__all__ = ["Barrier", "Sequencer"]


class Barrier:
    """A reusable barrier: ``wait()`` returns once all workers have called it as often."""

    def __init__(self, worker: Worker, name: str = "barrier"):
        self.worker = worker
        self.round = 0

        def build(scope: ScopeBuilder) -> tuple[InputHandle, ProbeHandle]:
            handle, stream = scope.new_input("barrier input")
            return handle, stream.probe("barrier probe")

        self._input, self._probe = worker.dataflow(build, name)

    def wait(self) -> None:
        self.round += 1
        self._input.advance_to(self.round)
        self.worker.step_while(lambda: self._probe.less_than(self.round))

    def close(self) -> None:
        self._input.close()


class Sequencer:
    """Orders the items every worker pushes, identically on every worker."""

    def __init__(self, worker: Worker, start_ns: int | None = None, name: str = "sequencer"):
        self.worker = worker
        self._send: deque = deque()  # pushed here, not yet stamped and sent
        self._staged: list[tuple[Any, Any]] = []  # (time, item) received, not yet passed by the frontier
        self._recv: deque = deque()  # released, in the shared order
        self._closed = False
        self._start = _time.monotonic_ns() if start_ns is None else start_ns

        def build(scope: ScopeBuilder) -> None:
            (stream,) = scope.add_operator("sequence input", [], 1, Operator(self._stamp, always=True),
                                           initial_capability=True)
            scope.add_operator("sequence output", [stream], 0, Operator(self._release, always=True),
                               pacts=[Exchange(lambda r: r[0])])

        worker.dataflow(build, name)

    def _stamp(self, ctx: OperatorContext) -> None:
        """The input operator: stamp pushed items with the elapsed time and send each to every worker."""
        cap = ctx.initial_capability
        if not cap.valid:
            return
        if self._closed and not self._send:
            cap.drop()
            return
        now = max(cap.time, _time.monotonic_ns() - self._start)
        cap.downgrade(now)
        out = ctx.output(0)
        while self._send:
            item = self._send.popleft()
            for w in range(ctx.peers):
                out.give(now, (w, item))

    def _release(self, ctx: OperatorContext) -> None:
        """The output operator: release, in (time, item) order, the items whose time the frontier has passed."""
        staged = self._staged
        for t, records in ctx.input(0):
            staged.extend((t, item) for _, item in records)
        if not staged:
            return
        staged.sort()
        frontier = ctx.frontier(0)
        ready = 0
        while ready < len(staged) and not any(f <= staged[ready][0] for f in frontier):
            ready += 1
        self._recv.extend(item for _, item in staged[:ready])
        del staged[:ready]

    def push(self, item: Any) -> None:
        self._send.append(item)

    def next(self) -> Any | None:
        """The next item in the shared order, or None if none is released yet."""
        return self._recv.popleft() if self._recv else None

    def close(self) -> None:
        """No more pushes from this worker; the sequencer's dataflow completes once all workers close."""
        self._closed = True
