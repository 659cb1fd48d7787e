"""Describing a dataflow: scopes, streams and operators, before any worker runs them.

Every worker runs the same build function (as in timely), so every worker holds an identical description; the
worker then instantiates operators from it and a tracker replica per scope. A :class:`ScopeBuilder` allocates child
indices from 1 (child 0 is the boundary); :meth:`ScopeBuilder.enter` and :meth:`ScopeBuilder.leave` allocate the
nested scope's inputs and outputs as streams cross its boundary. A :class:`Stream` is an output port plus the scope
it lives in; its methods (``map``, ``exchange``, ``unary``, ...) add operators and edges, with the logic of
``operators``. The description knows the worker only as a :class:`Peers`: which worker builds it, of how many.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from tracker.reachability import Location, Source, Target
from tracker.runtime.context import OperatorContext
from tracker.runtime.operators import (
    Branch,
    Concat,
    Feedback,
    Filter,
    FlatMap,
    Input,
    InputHandle,
    Inspect,
    Logic,
    Map,
    Operator,
    Probe,
    ProbeHandle,
)
from tracker.timestamp import TimeDomain, domain

__all__ = ["Pipeline", "Exchange", "OpSpec", "Peers", "ScopeBuilder", "Stream", "LoopHandle", "loop_summary"]


class Peers(Protocol):
    """Which worker builds a dataflow description, of how many (a build function may partition by it)."""

    @property
    def index(self) -> int: ...

    @property
    def peers(self) -> int: ...


@dataclass(frozen=True)
class Pipeline:
    """Records stay on the worker that produced them."""


@dataclass(frozen=True)
class Exchange:
    """Records go to worker ``key(record) % peers``."""

    key: Callable[[Any], int]


PIPELINE = Pipeline()


def loop_summary(depth: int) -> Any:
    """The summary that advances the innermost coordinate by one (a loop's feedback)."""
    return 1 if depth == 1 else (domain(depth - 1).identity, 1)


@dataclass
class OpSpec:
    """One child of a scope as described: an operator (with its ``logic``) or a nested scope (with its ``scope``)."""

    node: int
    name: str
    inputs: int
    outputs: int
    logic: Logic | None  # None for a nested scope
    summary: list | None = None  # summary[i][o] list of summaries; None: identity
    initial_capability: bool = False
    pacts: list = field(default_factory=list)  # per input
    attrs: dict = field(default_factory=dict)
    scope: ScopeBuilder | None = None

    def operator_logic(self) -> Logic:
        """The operator's logic; a nested scope has none (the operators inside it run instead)."""
        if self.logic is None:
            raise TypeError(f"{self.name!r} is a nested scope, not an operator")
        return self.logic


class ScopeBuilder:
    """One scope of a dataflow under construction."""

    def __init__(self, worker: Peers, path: tuple, name: str, depth: int, parent: ScopeBuilder | None = None):
        self.worker = worker
        self.path = path
        self.name = name
        self.depth = depth
        self.parent = parent
        self.ops: dict[int, OpSpec] = {}
        self.edges: list[tuple[Location, Location]] = []
        self.inputs = 0
        self.outputs = 0
        self._next = 1

    @property
    def index(self) -> int:
        return self.worker.index

    @property
    def peers(self) -> int:
        return self.worker.peers

    @property
    def domain(self) -> TimeDomain:
        return domain(self.depth)

    def add_operator(self, name: str, inputs: list[Stream], outputs: int, logic: Logic, *, summary: Any = None,
                     initial_capability: bool = False, pacts: list | None = None,
                     attrs: dict | None = None) -> list[Stream]:
        """Add an operator reading ``inputs`` (one input port each); returns its output streams."""
        node = self._next
        self._next += 1
        pacts = list(pacts) if pacts is not None else [PIPELINE] * len(inputs)
        spec = OpSpec(node, name, len(inputs), outputs, logic, summary, initial_capability, pacts, dict(attrs or {}))
        self.ops[node] = spec
        for i, stream in enumerate(inputs):
            self.connect(stream, Target(node, i))
        logic.attach(self.domain)
        return [Stream(self, Source(node, o)) for o in range(outputs)]

    def connect(self, stream: Stream, target: Location) -> None:
        if stream.scope is not self:
            raise ValueError(
                f"stream of scope {list(stream.scope.path)} used in scope {list(self.path)}: enter or leave it first"
            )
        self.edges.append((stream.source, target))

    # --- nesting ---------------------------------------------------------------------------------------

    def scoped(self, name: str, build: Callable[[ScopeBuilder], Any], iterative: bool = True) -> Any:
        """Build a nested scope: iterative (times gain a loop coordinate) or a region (same times)."""
        node = self._next
        self._next += 1
        child = ScopeBuilder(self.worker, self.path + (node,), name, self.depth + 1 if iterative else self.depth, self)
        spec = OpSpec(node, name, 0, 0, None, scope=child)
        self.ops[node] = spec
        result = build(child)
        spec.inputs, spec.outputs = child.inputs, child.outputs
        spec.pacts = [PIPELINE] * child.inputs
        return result

    def iterative(self, name: str, build: Callable[[ScopeBuilder], Any]) -> Any:
        return self.scoped(name, build, iterative=True)

    def region(self, name: str, build: Callable[[ScopeBuilder], Any]) -> Any:
        return self.scoped(name, build, iterative=False)

    def enter(self, stream: Stream) -> Stream:
        """Bring a stream of the parent scope into this scope (times gain a coordinate 0 if iterative)."""
        parent = self.parent
        if parent is None or stream.scope is not parent:
            raise ValueError("enter takes a stream of the parent scope")
        i = self.inputs
        self.inputs += 1
        parent.edges.append((stream.source, Target(self.path[-1], i)))
        return Stream(self, Source(0, i))

    def leave(self, stream: Stream) -> Stream:
        """Send a stream of this scope out to the parent (times lose their loop coordinate)."""
        if stream.scope is not self or self.parent is None:
            raise ValueError("leave takes a stream of this (nested) scope")
        j = self.outputs
        self.outputs += 1
        self.edges.append((stream.source, Target(0, j)))
        return Stream(self.parent, Source(self.path[-1], j))

    def feedback(self, summary: Any = None, name: str = "feedback") -> tuple[LoopHandle, Stream]:
        """A loop variable: a stream carrying what is later connected to the handle, times advanced by ``summary``."""
        summary = loop_summary(self.depth) if summary is None else summary
        logic = Feedback(summary)
        node = self._next
        self._next += 1
        spec = OpSpec(node, name, 1, 1, logic, [[[summary]]], False, [PIPELINE])
        self.ops[node] = spec
        logic.attach(self.domain)
        return LoopHandle(self, node), Stream(self, Source(node, 0))

    # --- inputs --------------------------------------------------------------------------------------

    def new_input(self, name: str = "input") -> tuple[InputHandle, Stream]:
        logic = Input()
        (stream,) = self.add_operator(name, [], 1, logic, initial_capability=True)
        return logic.handle, stream

    def source(self, name: str, logic: Logic, outputs: int = 1) -> list[Stream]:
        """An operator with no inputs that starts with a capability at the minimum time."""
        return self.add_operator(name, [], outputs, logic, initial_capability=True)


@dataclass
class LoopHandle:
    """The far end of a loop variable (:meth:`ScopeBuilder.feedback`): connect the stream that feeds the loop."""

    scope: ScopeBuilder
    node: int

    def connect(self, stream: Stream) -> None:
        self.scope.connect(stream, Target(self.node, 0))


@dataclass(eq=False)
class Stream:
    """An output port of an operator (or a scope input) in a scope: where operators attach."""

    scope: ScopeBuilder
    source: Location

    def _unary(self, name: str, logic: Logic, pact: Any = PIPELINE) -> Stream:
        return self.scope.add_operator(name, [self], 1, logic, pacts=[pact])[0]

    # --- record-at-a-time ----------------------------------------------------------------------------------

    def map(self, f: Callable[[Any], Any], name: str = "map") -> Stream:
        return self._unary(name, Map(f))

    def filter(self, pred: Callable[[Any], bool], name: str = "filter") -> Stream:
        return self._unary(name, Filter(pred))

    def flat_map(self, f: Callable[[Any], Iterable[Any]], name: str = "flat_map") -> Stream:
        return self._unary(name, FlatMap(f))

    def inspect(self, f: Callable[[Any, Any], None], name: str = "inspect") -> Stream:
        """Call ``f(time, record)`` for every record passing by."""
        return self._unary(name, Inspect(f))

    def exchange(self, key: Callable[[Any], int], name: str = "exchange") -> Stream:
        """Repartition: each record goes to worker ``key(record) % peers``."""
        return self._unary(name, Concat(), pact=Exchange(key))

    def concat(self, *others: Stream, name: str = "concat") -> Stream:
        return self.scope.add_operator(name, [self, *others], 1, Concat())[0]

    def branch(self, pred: Callable[[Any, Any], bool], name: str = "branch") -> tuple[Stream, Stream]:
        """Records for which ``pred(time, record)`` holds, and the others."""
        yes, no = self.scope.add_operator(name, [self], 2, Branch(pred))
        return yes, no

    # --- observing progress ------------------------------------------------------------------------------

    def probe(self, name: str = "probe") -> ProbeHandle:
        handle = ProbeHandle()
        self._unary(name, Probe(handle))
        return handle

    # --- generic operators -------------------------------------------------------------------------------

    def unary(self, name: str, logic: Callable[[OperatorContext], None], pact: Any = PIPELINE,
              outputs: int = 1, summary: Any = None) -> Any:
        """An operator running ``logic(ctx)`` on this stream; one stream back, or a list if ``outputs != 1``."""
        streams = self.scope.add_operator(name, [self], outputs, Operator(logic), pacts=[pact], summary=summary)
        return streams[0] if outputs == 1 else streams

    def binary(self, other: Stream, name: str, logic: Callable[[OperatorContext], None],
               pacts: tuple = (PIPELINE, PIPELINE), outputs: int = 1) -> Any:
        """An operator running ``logic(ctx)`` on two streams (inputs 0 and 1)."""
        streams = self.scope.add_operator(name, [self, other], outputs, Operator(logic), pacts=list(pacts))
        return streams[0] if outputs == 1 else streams

    def sink(self, name: str, logic: Callable[[OperatorContext], None], pact: Any = PIPELINE) -> None:
        """An operator with no outputs running ``logic(ctx)`` on this stream."""
        self.scope.add_operator(name, [self], 0, Operator(logic), pacts=[pact])

    # --- scopes and loops --------------------------------------------------------------------------------

    def enter(self, scope: ScopeBuilder) -> Stream:
        return scope.enter(self)

    def leave(self) -> Stream:
        return self.scope.leave(self)
