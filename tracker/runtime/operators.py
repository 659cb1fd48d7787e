"""The operators: what each does when scheduled (the :class:`~tracker.runtime.graph.Stream` methods add them).

Each operator's logic is a small object with ``schedule(ctx)``; ``always`` asks to be scheduled every step
(sources), otherwise the worker schedules it only when it has input, pending notifications or a changed input
frontier. The generic :class:`Operator` takes a user function ``logic(ctx)`` and gives it everything: inputs,
outputs, input frontiers, capabilities (retain, downgrade, drop) and notifications. Logic knows only the context it
is scheduled with, never the graph that holds it, so this module imports nothing of ``graph``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tracker.runtime.context import Capability, OperatorContext
from tracker.timestamp import TimeDomain

__all__ = [
    "Logic", "Input", "InputHandle", "Map", "Filter", "FlatMap", "Concat", "Branch", "Feedback", "Inspect",
    "Probe", "ProbeHandle", "Operator",
]


class Logic:
    """What one operator does when scheduled; ``always``: schedule it every step, not only when something changed."""

    always = False

    def attach(self, domain: TimeDomain) -> None:
        """Called when the operator is added to a scope, with the scope's timestamps."""

    def bind(self, ctx: OperatorContext) -> None:
        """Called once the operator exists on a worker, before it is first scheduled."""

    def schedule(self, ctx: OperatorContext) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


# --- inputs and sources --------------------------------------------------------------------------------


class InputHandle:
    """Feeds records into a dataflow at the current time; ``advance_to`` promises no earlier ones; ``close`` ends."""

    def __init__(self) -> None:
        self._pending: list[tuple[Any, list]] = []
        self.time: Any = None  # set when attached
        self.closed = False
        self._le: Callable[[Any, Any], bool] | None = None

    def open_at(self, domain: TimeDomain) -> None:
        """Start at the least time of the scope the input was added to (its operator calls this when attached)."""
        self.time = domain.minimum
        self._le = domain.le

    def take_pending(self) -> list[tuple[Any, list]]:
        """The records sent since the last call, as ``(time, records)`` in the order sent; clears them."""
        pending, self._pending = self._pending, []
        return pending

    def send(self, record: Any) -> None:
        self.send_batch([record])

    def send_batch(self, records: Iterable[Any]) -> None:
        if self.closed:
            raise RuntimeError("input is closed")
        records = list(records)
        if self._pending and self._pending[-1][0] == self.time:
            self._pending[-1][1].extend(records)
        else:
            self._pending.append((self.time, records))

    def advance_to(self, time: Any) -> None:
        if self.closed:
            raise RuntimeError("input is closed")
        if self._le is None:
            raise RuntimeError("this input is not part of a dataflow yet")
        if not self._le(self.time, time):
            raise ValueError(f"cannot advance an input from {self.time!r} back to {time!r}")
        self.time = time

    def close(self) -> None:
        self.closed = True


class Input(Logic):
    always = True

    def __init__(self) -> None:
        self.handle = InputHandle()
        self._cap: Capability | None = None

    def attach(self, domain: TimeDomain) -> None:
        self.handle.open_at(domain)

    def bind(self, ctx: OperatorContext) -> None:
        self._cap = ctx.initial_capability

    def schedule(self, ctx: OperatorContext) -> None:
        cap = self._cap
        if cap is None or not cap.valid:
            return
        handle = self.handle
        pending = handle.take_pending()
        if pending:
            out = ctx.output(0)
            for time, records in pending:
                out.give_all(time, records)
        if handle.closed:
            cap.drop()
        elif handle.time != cap.time:
            cap.downgrade(handle.time)


# --- record-at-a-time operators ----------------------------------------------------------------------


class Map(Logic):
    def __init__(self, f: Callable[[Any], Any]):
        self.f = f

    def schedule(self, ctx: OperatorContext) -> None:
        f, out = self.f, ctx.output(0)
        for time, records in ctx.input(0):
            out.give_all(time, [f(r) for r in records])


class Filter(Logic):
    def __init__(self, pred: Callable[[Any], bool]):
        self.pred = pred

    def schedule(self, ctx: OperatorContext) -> None:
        pred, out = self.pred, ctx.output(0)
        for time, records in ctx.input(0):
            kept = [r for r in records if pred(r)]
            if kept:
                out.give_all(time, kept)


class FlatMap(Logic):
    def __init__(self, f: Callable[[Any], Iterable[Any]]):
        self.f = f

    def schedule(self, ctx: OperatorContext) -> None:
        f, out = self.f, ctx.output(0)
        for time, records in ctx.input(0):
            produced = [x for r in records for x in f(r)]
            if produced:
                out.give_all(time, produced)


class Concat(Logic):
    def schedule(self, ctx: OperatorContext) -> None:
        out = ctx.output(0)
        for i in range(ctx.spec.inputs):
            for time, records in ctx.input(i):
                out.give_all(time, records)


class Branch(Logic):
    """Output 0 gets the records for which ``pred(time, record)`` holds, output 1 the others."""

    def __init__(self, pred: Callable[[Any, Any], bool]):
        self.pred = pred

    def schedule(self, ctx: OperatorContext) -> None:
        pred = self.pred
        yes, no = ctx.output(0), ctx.output(1)
        for time, records in ctx.input(0):
            a: list[Any] = []
            b: list[Any] = []
            for r in records:
                (a if pred(time, r) else b).append(r)
            if a:
                yes.give_all(time, a)
            if b:
                no.give_all(time, b)


class Feedback(Logic):
    """Carries records around a loop, advancing their times by the loop summary."""

    def __init__(self, summary: Any):
        self.summary = summary

    def schedule(self, ctx: OperatorContext) -> None:
        add, s, out = ctx.domain.results_in, self.summary, ctx.output(0)
        for time, records in ctx.input(0):
            out.give_all(add(s, time), records)


class Inspect(Logic):
    def __init__(self, f: Callable[[Any, Any], None]):
        self.f = f

    def schedule(self, ctx: OperatorContext) -> None:
        f, out = self.f, ctx.output(0)
        for time, records in ctx.input(0):
            for r in records:
                f(time, r)
            out.give_all(time, records)


class ProbeHandle:
    """Reads the frontier at a probe's input on this worker: has the dataflow passed a time yet?"""

    def __init__(self) -> None:
        self._ctx: OperatorContext | None = None

    def watch(self, ctx: OperatorContext) -> None:
        """Read from this probe operator's context (its logic calls this when the operator exists on a worker)."""
        self._ctx = ctx

    def frontier(self) -> list:
        """The probe's input frontier; empty before the dataflow is built (and once it has completed)."""
        return self._ctx.frontier(0) if self._ctx is not None else []

    def less_than(self, time: Any) -> bool:
        """Could a time strictly less than ``time`` still arrive at the probe?"""
        return self._context().input_implications(0).less_than(time)

    def less_equal(self, time: Any) -> bool:
        """Could ``time``, or a time less than it, still arrive at the probe?"""
        return self._context().input_implications(0).less_equal(time)

    def _context(self) -> OperatorContext:
        if self._ctx is None:
            raise RuntimeError("this probe's dataflow is not built yet: build it with worker.dataflow first")
        return self._ctx

    def done(self) -> bool:
        return not self.frontier()


class Probe(Inspect):
    def __init__(self, handle: ProbeHandle):
        super().__init__(lambda t, r: None)
        self.handle = handle

    def bind(self, ctx: OperatorContext) -> None:
        self.handle.watch(ctx)

    def schedule(self, ctx: OperatorContext) -> None:
        out = ctx.output(0)
        for time, records in ctx.input(0):
            out.give_all(time, records)


class Operator(Logic):
    """A generic operator: ``logic(ctx)`` runs on every schedule; ``always`` schedules it every step."""

    def __init__(self, logic: Callable[[OperatorContext], None], always: bool = False):
        self.logic = logic
        self.always = always

    def schedule(self, ctx: OperatorContext) -> None:
        self.logic(ctx)
