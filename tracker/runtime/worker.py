"""A worker: runs its copy of every dataflow and keeps its own tracker replica of every scope.

Each step a worker (1) takes what has arrived: data into operator input queues (a message reaching a nested scope's
input is *harvested* into the operators inside), progress batches into its replicas; (2) schedules its operators,
which read their input frontiers from the replicas; (3) broadcasts what they did as one atomic batch per scope to
every worker, itself included. Its own actions reach its replicas only through that loopback, as in the seeds;
``tracker.broadcast``'s :class:`Outbox` and :class:`SenderOrder` keep each sender's batches in the order sent.

Counts are in records. Operators reach their worker only through :class:`~tracker.runtime.context.OperatorHost`;
the worker reaches its peers only through a :class:`~tracker.runtime.fabric.Fabric`. A worker can record its view
as a progress log, with ``worker`` naming each batch's sender: replaying it shows exactly what that worker knew.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from tracker.broadcast import Outbox, ProgressBatch, SenderOrder
from tracker.change_batch import ChangeBatch
from tracker.progress_log.log_file import ProgressLogWriter
from tracker.reachability import Location, Source
from tracker.runtime.context import OperatorContext
from tracker.runtime.fabric import Fabric
from tracker.runtime.graph import PIPELINE, Exchange, OpSpec, ScopeBuilder
from tracker.subgraph import Subgraph

__all__ = ["Worker"]

IDLE_WAIT = 0.002  # seconds to wait for messages after a step that did nothing


class Worker:
    """One worker of a computation of ``peers``: its operators, its replicas of every scope, its outbox."""

    def __init__(self, index: int, peers: int, fabric: Fabric, record: str | None = None):
        self.index = index
        self.peers = peers
        self.fabric = fabric
        self.replica = Subgraph((), f"worker {index}", 0, 0, 1)
        self.ops: list[OperatorContext] = []
        self._ops_at: dict[tuple[tuple, int], OperatorContext] = {}
        self._scopes: dict[tuple, ScopeBuilder] = {}
        self._edges: dict[tuple[tuple, Location], list[tuple[Location, Any]]] = {}
        self._local: dict[tuple, ChangeBatch] = {}  # scope path -> this step's progress, ((location, time), delta)
        self._outbox = Outbox(index)
        self._order = SenderOrder(peers)
        self._stash: list[tuple] = []  # messages for a dataflow this worker has not built yet
        self._dataflows = 0
        self._idle = False
        self.log: ProgressLogWriter | None = None
        if record:
            self.log = ProgressLogWriter(record, source=f"flowscope runtime, worker {index} of {peers}")
        self.steps = 0

    # --- building --------------------------------------------------------------------------------------

    def dataflow(self, build: Callable[[ScopeBuilder], Any], name: str | None = None) -> Any:
        """Build a dataflow (every worker must build the same dataflows in the same order)."""
        self._dataflows += 1
        df = self._dataflows
        scope = ScopeBuilder(self, (df,), name or f"dataflow {df}", 1)
        result = build(scope)
        self._install(scope, self.replica, record=True)
        view = self.fabric.global_view
        if view is not None:
            view.install(lambda root: self._install(scope, root, record=False, instantiate=False), (df,))
        stash, self._stash = self._stash, []
        for msg in stash:
            self._dispatch(msg)
        self.replica.schedule()
        return result

    def _install(self, scope: ScopeBuilder, parent: Subgraph, record: bool, instantiate: bool = True) -> None:
        """Add ``scope`` to ``parent`` (a replica), recording its structure and instantiating its operators."""
        replica = parent.add_scope(scope.path[-1], scope.name, scope.inputs, scope.outputs, scope.depth)
        log = self.log if record else None
        if log:
            log.scope(scope.path, scope.name, scope.inputs, scope.outputs, scope.depth)
        if instantiate:
            self._scopes[scope.path] = scope
        for node in sorted(scope.ops):
            spec = scope.ops[node]
            if spec.scope is not None:
                self._install(spec.scope, replica, record, instantiate)
            else:
                self._install_operator(scope, spec, replica, log, instantiate)
        for src, tgt in scope.edges:
            replica.add_edge(src, tgt)
            if log:
                log.edge(scope.path, src, tgt)
            if instantiate:
                self._edges.setdefault((scope.path, src), []).append((tgt, self._pact(scope, tgt)))

    def _install_operator(self, scope: ScopeBuilder, spec: OpSpec, replica: Subgraph, log: ProgressLogWriter | None,
                          instantiate: bool) -> None:
        caps = [[scope.domain.minimum] * self.peers for _ in range(spec.outputs)] if spec.initial_capability else None
        attrs = dict(spec.attrs)
        replica.add_operator(spec.node, spec.name, spec.inputs, spec.outputs, spec.summary, caps, attrs)
        if log:
            log.operator(scope.path, spec.node, spec.name, spec.inputs, spec.outputs, spec.summary, caps, attrs or None)
        if instantiate:
            ctx = OperatorContext(self, scope.path, spec, scope.domain, replica)
            ctx.logic.bind(ctx)
            self.ops.append(ctx)
            self._ops_at[(scope.path, spec.node)] = ctx

    @staticmethod
    def _pact(scope: ScopeBuilder, target: Location) -> Any:
        """How records reach ``target``: its operator's pact for that input, else pipelined."""
        spec = scope.ops.get(target.node)
        if target.node != 0 and spec is not None and spec.scope is None and target.port < len(spec.pacts):
            return spec.pacts[target.port]
        return PIPELINE

    # --- what operators reach (the OperatorHost interface) ---------------------------------------------

    def local_progress(self, path: tuple) -> ChangeBatch:
        """This step's progress batch for scope ``path``, broadcast at the end of the step."""
        batch = self._local.get(path)
        if batch is None:
            batch = self._local[path] = ChangeBatch()
        return batch

    def send_produced(self, path: tuple, source: Location, time: Any, records: list) -> None:
        """Deliver records an operator produced at ``source``, counting them at every input they reach."""
        self._send_from(path, source, time, records)

    def notification_delivered(self, ctx: OperatorContext, time: Any) -> None:
        """An operator is told its inputs passed ``time``: the global view (if any) checks that it really has."""
        view = self.fabric.global_view
        if view is not None:
            view.check_notification(ctx.path, ctx.node, ctx.spec.inputs, time, self.index)

    def mark(self, label: str, scope: tuple = (), **extra: Any) -> None:
        """Annotate this worker's progress log (e.g. a stratum completed)."""
        if self.log:
            self.log.mark(label, scope=list(scope), **extra)

    # --- data ----------------------------------------------------------------------------------------

    def _send_from(self, path: tuple, source: Location, time: Any, records: list, counted: bool = False) -> None:
        """Deliver records produced at ``source`` to every input it connects to, counting them unless counted."""
        n = len(records)
        for target, pact in self._edges.get((path, source), ()):
            if not counted:
                self.local_progress(path).update((target, time), n)
            if target.node == 0:
                # Leaving the scope: the replicas report it to the parent as produced there.
                sb = self._scopes[path]
                outer = time[0] if sb.parent is not None and sb.depth > sb.parent.depth else time
                self._send_from(path[:-1], Source(path[-1], target.port), outer, records, counted=True)
            elif isinstance(pact, Exchange):
                self._exchange(path, target, time, records, pact)
            else:
                self._deliver(path, target, time, records)

    def _exchange(self, path: tuple, target: Location, time: Any, records: list, pact: Exchange) -> None:
        """Partition records by ``pact.key``: this worker's share is delivered here, the others' sent to them."""
        peers, key_fn = self.peers, pact.key
        parts: dict[int, list] = {}
        for r in records:
            parts.setdefault(key_fn(r) % peers, []).append(r)
        for dst, part in parts.items():
            if dst == self.index:
                self._deliver(path, target, time, part)
            else:
                self.fabric.send(self.index, dst, ("data", path, target, time, part))

    def _deliver(self, path: tuple, target: Location, time: Any, records: list) -> None:
        """Queue records at an operator's input, or harvest them into a nested scope (its child 0 produced them)."""
        sb = self._scopes[path]
        spec = sb.ops.get(target.node)
        if spec is not None and spec.scope is not None:
            child = spec.scope
            inner = (time, 0) if child.depth > sb.depth else time
            self.local_progress(child.path).update((Source(0, target.port), inner), -len(records))
            self._send_from(child.path, Source(0, target.port), inner, records)
        else:
            self._ops_at[(path, target.node)].queues[target.port].append((time, records))

    # --- progress ------------------------------------------------------------------------------------

    def _dispatch(self, msg: tuple) -> bool:
        """Handle one message; True if it released progress batches (then the replicas have changed)."""
        kind = msg[0]
        path = msg[1].scope if kind == "progress" else msg[1]
        if path[:1] and path[0] > self._dataflows:
            self._stash.append(msg)  # a dataflow this worker has not built yet
            return False
        if kind == "data":
            _, _, target, time, records = msg
            self._deliver(path, target, time, records)
            return False
        ready = self._order.admit(msg[1])
        for batch in ready:
            self._apply(batch)
        return bool(ready)

    def _apply(self, batch: ProgressBatch) -> None:
        self.replica.find(batch.scope).receive(batch.updates)
        if self.log:
            self.log.progress(batch.scope, batch.updates, worker=batch.worker, seq=batch.seq)

    # --- one step, in order ------------------------------------------------------------------------------

    def step(self, wait: float = 0.0, operators: Iterable[OperatorContext] | None = None) -> bool:
        """One round: receive, schedule every operator that has something to do, broadcast. True while busy.

        ``operators`` limits which operators may run this step (default: all of them; see ``strata``).
        """
        self.steps += 1
        received = self._receive(wait)
        worked = self._schedule_operators(self.ops if operators is None else operators)
        sent = self._broadcast_progress()
        self._idle = not received and not worked and not sent
        view = self.fabric.global_view
        if view is not None and view.check_replicas:
            view.check_replica(self.index, self.replica)
        return self.tracking()

    def _receive(self, wait: float) -> bool:
        """Take every message that has arrived: data into input queues, progress into the replicas."""
        msgs = self.fabric.recv(self.index, wait)
        progress = False
        for msg in msgs:
            progress |= self._dispatch(msg)
        if progress:
            self.replica.schedule()
        return bool(msgs)

    @staticmethod
    def _schedule_operators(operators: Iterable[OperatorContext]) -> bool:
        """Run each operator that has something to do; True if any did something visible."""
        did = False
        for op in operators:
            did |= op.run()
        return did

    def _broadcast_progress(self) -> bool:
        """Send this step's progress, one atomic batch per scope, to every worker (this one included)."""
        if not self._local:
            return False
        sent = False
        local, self._local = self._local, {}
        for path, batch in local.items():
            progress = self._outbox.drain(batch, path)
            if progress is not None:
                self.fabric.broadcast(self.index, ("progress", progress))
                sent = True
        return sent

    # --- running -------------------------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """Did the last step neither receive, nor run an operator, nor send? (Then the next may wait a little.)"""
        return self._idle

    def idle_wait(self) -> float:
        """How long the next step should wait for messages: a little after an idle step, else not at all."""
        return IDLE_WAIT if self._idle else 0.0

    def tracking(self) -> bool:
        """Is anything still in flight or held, as far as this worker knows?"""
        if self._local or self._stash or self._order.held_back():
            return True
        if any(op.has_input() for op in self.ops):
            return True
        return any(scope.tracker is not None and scope.tracker.tracking_anything() for scope in self.replica.scopes())

    def step_while(self, condition: Callable[[], bool]) -> None:
        while condition():
            self.step(self.idle_wait())

    def run(self) -> None:
        """Step until every dataflow has completed."""
        while self.step(self.idle_wait()):
            pass
        if self.log:
            self.log.flush()

    def close(self) -> None:
        if self.log:
            self.log.close()
            self.log = None
