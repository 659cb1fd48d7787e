"""What an operator sees when it runs: its inputs, outputs, capabilities and notifications on one worker.

Every action is also a progress statement, recorded into the worker's local batch for the operator's scope:
consuming a message subtracts its records at the input; holding a capability counts at every output; producing
records counts them at every input the output connects to. The worker broadcasts each step's local batch as one
atomic batch, so an action and the capability that justified it always travel together.

Sending needs a capability ``<= t``: one the operator holds, or the time of a message it consumed in this very
call (taken through the operator's summary). Capabilities cover all of the operator's outputs.

A context reaches the worker that runs it only through :class:`OperatorHost`, three methods the worker implements:
the local batch to count into, where produced records go, and a notification's delivery.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any, Protocol

from tracker.change_batch import ChangeBatch
from tracker.frontier import MutableAntichain
from tracker.reachability import Location, Source, Target, Tracker
from tracker.subgraph import Subgraph
from tracker.timestamp import TimeDomain

__all__ = ["Capability", "OperatorContext", "OperatorHost", "OperatorLogic", "OperatorSpec", "ContractViolation"]


class OperatorHost(Protocol):
    """What an operator's context needs from the worker running it (the worker implements it)."""

    @property
    def index(self) -> int: ...

    @property
    def peers(self) -> int: ...

    def local_progress(self, path: tuple) -> ChangeBatch:
        """This step's progress batch for scope ``path``: what operators did, counted ``((location, time), delta)``."""
        ...

    def send_produced(self, path: tuple, source: Location, time: Any, records: list) -> None:
        """Deliver (and count) records an operator produced at ``source`` of scope ``path``, at ``time``."""
        ...

    def notification_delivered(self, ctx: OperatorContext, time: Any) -> None:
        """``ctx``'s operator is being told that its inputs have passed ``time``."""
        ...


class OperatorLogic(Protocol):
    """What a context and its worker ask of an operator's logic (``operators.Logic`` is the base of every one)."""

    always: bool

    def bind(self, ctx: OperatorContext) -> None: ...

    def schedule(self, ctx: OperatorContext) -> None: ...


class OperatorSpec(Protocol):
    """What a context reads of its operator's description (``graph.OpSpec``).

    Said here so that a context needs nothing from the module describing dataflows, which builds on this one."""

    node: int
    name: str
    inputs: int
    outputs: int
    summary: list | None
    initial_capability: bool
    attrs: dict

    def operator_logic(self) -> OperatorLogic: ...


class ContractViolation(RuntimeError):
    """An operator tried to do something the progress contract forbids (e.g. send without a capability)."""


class Capability:
    """The right to send (at any output) records at ``time`` or later; counted by every worker's tracker."""

    __slots__ = ("_ctx", "time", "_live", "_keep")

    def __init__(self, ctx: OperatorContext, time: Any, counted: bool = True):
        self._ctx = ctx
        self.time = time
        self._live = True
        self._keep = False
        if counted:
            ctx.count_capability(time, 1)

    @property
    def valid(self) -> bool:
        return self._live

    def delayed(self, time: Any) -> Capability:
        """A new capability at a later (or equal) time."""
        self._check(time)
        return Capability(self._ctx, time)

    def downgrade(self, time: Any) -> None:
        """Move this capability to a later (or equal) time."""
        self._check(time)
        if time != self.time:
            self._ctx.count_capability(time, 1)
            self._ctx.count_capability(self.time, -1)
            self.time = time

    def drop(self) -> None:
        if self._live:
            self._live = False
            self._ctx.count_capability(self.time, -1)

    def retain(self) -> Capability:
        """Keep a capability handed out by a notification beyond the call that received it."""
        self._keep = True
        return self

    def end_notification(self) -> None:
        """The notification that handed this capability out is over: drop it unless the operator retained it."""
        if not self._keep:
            self.drop()
        self._keep = False

    def _check(self, time: Any) -> None:
        if not self._live:
            raise ContractViolation(f"{self._ctx.name}: capability at {self.time!r} was already dropped")
        if not self._ctx.domain.le(self.time, time):
            raise ContractViolation(f"{self._ctx.name}: cannot move a capability from {self.time!r} back to {time!r}")

    def __repr__(self) -> str:
        return f"Capability({self.time!r}{'' if self._live else ', dropped'})"


class OutputHandle:
    """One output of an operator: records given here are sent when the operator's call returns."""

    __slots__ = ("_ctx", "port")

    def __init__(self, ctx: OperatorContext, port: int):
        self._ctx = ctx
        self.port = port

    def give(self, time: Any, record: Any) -> None:
        self._ctx.send_buffer(self.port, time).append(record)

    def give_all(self, time: Any, records: Any) -> None:
        self._ctx.send_buffer(self.port, time).extend(records)


class OperatorContext:
    """One operator instance on one worker, in ``scope`` (the worker's replica of the operator's scope).

    An operator declared with an initial capability starts holding one at the domain's minimum time.
    """

    def __init__(self, host: OperatorHost, path: tuple, spec: OperatorSpec, domain: TimeDomain, scope: Subgraph):
        self.host = host
        self.path = path
        self.spec = spec
        self.logic = spec.operator_logic()
        self.node = spec.node
        self.name = spec.name
        self.domain = domain
        self.queues: list[deque] = [deque() for _ in range(spec.inputs)]
        self.outputs = [OutputHandle(self, o) for o in range(spec.outputs)]
        self._held: dict[Any, int] = {}
        self._consumed_now: list[tuple[int, Any]] = []
        self._out_buffers: dict[tuple[int, Any], list] = {}
        self._notify: list[tuple[Any, Capability]] = []
        self._summaries = self._summary_table()
        self.scope = scope
        self._last_frontiers: list | None = None
        self._initial: Capability | None = None
        if spec.initial_capability:
            # Every worker's replica already counts every worker's initial capability: not counted again here.
            self._held[domain.minimum] = 1
            self._initial = Capability(self, domain.minimum, counted=False)

    @property
    def index(self) -> int:
        return self.host.index

    @property
    def peers(self) -> int:
        return self.host.peers

    @property
    def initial_capability(self) -> Capability:
        """The capability a source starts with (declared with ``initial_capability=True``), at the least time."""
        if self._initial is None:
            raise ContractViolation(f"{self.name}: declared without an initial capability")
        return self._initial

    @property
    def tracker(self) -> Tracker:
        """This worker's tracker of the operator's scope (rebuilt when the scope's structure changes)."""
        tracker = self.scope.tracker
        if tracker is None:
            raise RuntimeError(f"{self.name}: the scope {list(self.path)} is not built yet")
        return tracker

    def _summary_table(self) -> list[list[list]]:
        spec = self.spec
        if spec.summary is None:
            return [[[self.domain.identity] for _ in range(spec.outputs)] for _ in range(spec.inputs)]
        return spec.summary

    # --- inputs --------------------------------------------------------------------------------------

    def input(self, port: int = 0) -> Iterator[tuple[Any, list]]:
        """Consume the messages waiting at an input: ``(time, records)``; each grants sending at ``time``."""
        queue = self.queues[port]
        batch = self.host.local_progress(self.path)
        target = Target(self.node, port)
        while queue:
            time, records = queue.popleft()
            batch.update((target, time), -len(records))
            self._consumed_now.append((port, time))
            yield time, records

    def has_input(self) -> bool:
        return any(self.queues)

    def frontier(self, port: int = 0) -> list:
        """The input frontier: the least times that may still arrive at this input (this worker's view)."""
        return self.tracker.frontier(Target(self.node, port))

    def input_implications(self, port: int = 0) -> MutableAntichain:
        """The input frontier with its counts: ``less_than(t)`` / ``less_equal(t)``: may such times still come?"""
        return self.tracker.implications_at(Target(self.node, port))

    def frontier_passed(self, time: Any) -> bool:
        """No input can still receive ``time``."""
        tracker = self.tracker
        for i in range(self.spec.inputs):
            if tracker.implications_at(Target(self.node, i)).less_equal(time):
                return False
        return True

    # --- capabilities ----------------------------------------------------------------------------------

    def count_capability(self, time: Any, delta: int) -> None:
        """Count ``delta`` more capabilities held at ``time``, here and (at every output) in the step's batch.

        :class:`Capability` calls this; an operator acquires and releases capabilities through it, never directly.
        """
        count = self._held.get(time, 0) + delta
        if count:
            self._held[time] = count
        else:
            del self._held[time]
        if self.spec.outputs:
            batch = self.host.local_progress(self.path)
            for o in range(self.spec.outputs):
                batch.update((Source(self.node, o), time), delta)

    def can_send(self, port: int, time: Any) -> bool:
        """May the operator send at ``time`` on ``port`` now (a held capability or a message consumed in this call)?"""
        le, add = self.domain.le, self.domain.results_in
        if any(le(h, time) for h in self._held):
            return True
        table = self._summaries
        for i, t0 in self._consumed_now:
            if any(le(add(s, t0), time) for s in table[i][port]):
                return True
        return False

    def retain(self, time: Any) -> Capability:
        """A capability at ``time``, backed by a held capability or a message consumed in this call."""
        if not any(self.can_send(o, time) for o in range(max(1, self.spec.outputs))) and not (
            self.spec.outputs == 0 and any(self.domain.le(t0, time) for _, t0 in self._consumed_now)
        ):
            raise ContractViolation(f"{self.name}: no capability or consumed message <= {time!r} to retain")
        return Capability(self, time)

    def held_times(self) -> list:
        return sorted(self._held)

    # --- notifications -------------------------------------------------------------------------------

    def notify_at(self, capability: Capability) -> None:
        """Ask to be told once no input can receive ``capability.time`` any more; the capability is held until then."""
        self._notify.append((capability.time, capability))

    def notifications(self) -> Iterator[tuple[Any, Capability]]:
        """Deliver, in time order, the requested times that every input frontier has passed."""
        if not self._notify:
            return
        ready = [(t, c) for t, c in self._notify if self.frontier_passed(t)]
        if not ready:
            return
        ready_ids = {id(c) for _, c in ready}
        self._notify = [(t, c) for t, c in self._notify if id(c) not in ready_ids]
        ready.sort(key=lambda tc: tc[0])
        for t, cap in ready:
            self.host.notification_delivered(self, t)
            yield t, cap
            cap.end_notification()

    # --- outputs -------------------------------------------------------------------------------------

    def output(self, port: int = 0) -> OutputHandle:
        return self.outputs[port]

    def send_buffer(self, port: int, time: Any) -> list:
        """The records to send at ``time`` on ``port`` when this call returns; raises if there is no capability."""
        key = (port, time)
        buf = self._out_buffers.get(key)
        if buf is None:
            if not self.can_send(port, time):
                raise ContractViolation(
                    f"{self.name}: sending at {time!r} needs a capability <= {time!r} (held: {self.held_times()})"
                )
            buf = self._out_buffers[key] = []
        return buf

    # --- run -----------------------------------------------------------------------------------------

    def run(self) -> bool:
        """Schedule the operator once, if it has something to do; returns whether it did anything visible."""
        if not (self.logic.always or self._notify or self.has_input() or self._frontiers_moved()):
            return False
        self.logic.schedule(self)
        self._consumed_now.clear()
        return bool(self._out_buffers) and self._send_outputs()

    def _frontiers_moved(self) -> bool:
        """Has any input frontier changed since the last time this was asked?"""
        tracker = self.tracker
        frontiers = [tracker.frontier(Target(self.node, i)) for i in range(self.spec.inputs)]
        if frontiers == self._last_frontiers:
            return False
        self._last_frontiers = frontiers
        return True

    def _send_outputs(self) -> bool:
        """Hand what the call gave to the worker (it opened at least one output buffer, perhaps left empty)."""
        buffers, self._out_buffers = self._out_buffers, {}
        for (port, time), records in buffers.items():
            if records:
                self.host.send_produced(self.path, Source(self.node, port), time, records)
        return True
