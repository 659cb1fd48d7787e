"""The operators: what each does when scheduled, and the Stream methods that add them to a dataflow.

Each operator's logic is a small object with ``schedule(ctx)``; ``always`` asks to be scheduled every step
(sources), otherwise the worker schedules it only when it has input, pending notifications or a changed input
frontier. The generic :class:`Operator` takes a user function ``logic(ctx)`` and gives it everything: inputs,
outputs, input frontiers, capabilities (retain, downgrade, drop) and notifications.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .context import Capability, OperatorContext
from .graph import PIPELINE, Exchange, LoopHandle, OpSpec, ScopeBuilder, Stream

__all__ = [
    "Logic", "Input", "InputHandle", "Map", "Filter", "FlatMap", "Concat", "Branch", "Feedback", "Inspect",
    "Probe", "ProbeHandle", "Operator",
]


class Logic:
    always = False

    def attach(self, spec: OpSpec, scope: ScopeBuilder) -> None:
        self.spec = spec

    def bind(self, ctx: OperatorContext) -> None:
        """Called once the operator exists on a worker, before it is first scheduled."""

    def schedule(self, ctx: OperatorContext) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


# --- inputs and sources --------------------------------------------------------------------------------


class InputHandle:
    """Feeds records into a dataflow at the current epoch; ``advance_to`` promises no earlier records; ``close`` ends."""

    def __init__(self) -> None:
        self._pending: list[tuple[Any, list]] = []
        self.time: Any = None  # set when attached
        self.closed = False

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

    def attach(self, spec: OpSpec, scope: ScopeBuilder) -> None:
        super().attach(spec, scope)
        self.handle.time = scope.domain.minimum
        self.handle._le = scope.domain.le

    def bind(self, ctx: OperatorContext) -> None:
        self._cap = ctx.initial_capability

    def schedule(self, ctx: OperatorContext) -> None:
        cap = self._cap
        if not cap.valid:
            return
        handle = self.handle
        if handle._pending:
            pending, handle._pending = handle._pending, []
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
            a, b = [], []
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

    def frontier(self) -> list:
        return self._ctx.frontier(0) if self._ctx and self._ctx.scope is not None else []

    def less_than(self, time: Any) -> bool:
        ctx = self._ctx
        return ctx.scope.tracker.implications_at(_target0(ctx)).less_than(time)

    def less_equal(self, time: Any) -> bool:
        ctx = self._ctx
        return ctx.scope.tracker.implications_at(_target0(ctx)).less_equal(time)

    def done(self) -> bool:
        return not self.frontier()


def _target0(ctx: OperatorContext):
    from ..reachability import Target

    return Target(ctx.node, 0)


class Probe(Inspect):
    def __init__(self, handle: ProbeHandle):
        super().__init__(lambda t, r: None)
        self.handle = handle

    def bind(self, ctx: OperatorContext) -> None:
        self.handle._ctx = ctx

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


# --- Stream methods ----------------------------------------------------------------------------------


def _unary(stream: Stream, name: str, logic: Logic, pact: Any = PIPELINE, **kw: Any) -> Stream:
    return stream.scope.add_operator(name, [stream], 1, logic, pacts=[pact], **kw)[0]


def _map(self: Stream, f: Callable[[Any], Any], name: str = "map") -> Stream:
    return _unary(self, name, Map(f))


def _filter(self: Stream, pred: Callable[[Any], bool], name: str = "filter") -> Stream:
    return _unary(self, name, Filter(pred))


def _flat_map(self: Stream, f: Callable[[Any], Iterable[Any]], name: str = "flat_map") -> Stream:
    return _unary(self, name, FlatMap(f))


def _exchange(self: Stream, key: Callable[[Any], int], name: str = "exchange") -> Stream:
    """Repartition: each record goes to worker ``key(record) % peers``."""
    return _unary(self, name, Concat(), pact=Exchange(key))


def _concat(self: Stream, *others: Stream, name: str = "concat") -> Stream:
    streams = [self, *others]
    return self.scope.add_operator(name, streams, 1, Concat())[0]


def _branch(self: Stream, pred: Callable[[Any, Any], bool], name: str = "branch") -> tuple[Stream, Stream]:
    yes, no = self.scope.add_operator(name, [self], 2, Branch(pred))
    return yes, no


def _inspect(self: Stream, f: Callable[[Any, Any], None], name: str = "inspect") -> Stream:
    return _unary(self, name, Inspect(f))


def _probe(self: Stream, name: str = "probe") -> ProbeHandle:
    handle = ProbeHandle()
    _unary(self, name, Probe(handle))
    return handle


def _probe_with(self: Stream, name: str = "probe") -> tuple[ProbeHandle, Stream]:
    handle = ProbeHandle()
    return handle, _unary(self, name, Probe(handle))


def _unary_op(self: Stream, name: str, logic: Callable[[OperatorContext], None], pact: Any = PIPELINE,
              outputs: int = 1, summary: Any = None) -> Any:
    streams = self.scope.add_operator(name, [self], outputs, Operator(logic), pacts=[pact], summary=summary)
    return streams[0] if outputs == 1 else streams


def _binary_op(self: Stream, other: Stream, name: str, logic: Callable[[OperatorContext], None],
               pacts: tuple = (PIPELINE, PIPELINE), outputs: int = 1) -> Any:
    streams = self.scope.add_operator(name, [self, other], outputs, Operator(logic), pacts=list(pacts))
    return streams[0] if outputs == 1 else streams


def _sink(self: Stream, name: str, logic: Callable[[OperatorContext], None], pact: Any = PIPELINE) -> None:
    self.scope.add_operator(name, [self], 0, Operator(logic), pacts=[pact])


def _enter(self: Stream, scope: ScopeBuilder) -> Stream:
    return scope.enter(self)


def _leave(self: Stream) -> Stream:
    return self.scope.leave(self)


def _connect_loop(self: Stream, handle: LoopHandle) -> None:
    handle.connect(self)


for _name, _fn in {
    "map": _map, "filter": _filter, "flat_map": _flat_map, "exchange": _exchange, "concat": _concat,
    "branch": _branch, "inspect": _inspect, "probe": _probe, "probe_with": _probe_with, "unary": _unary_op,
    "binary": _binary_op, "sink": _sink, "enter": _enter, "leave": _leave, "connect_loop": _connect_loop,
}.items():
    setattr(Stream, _name, _fn)
