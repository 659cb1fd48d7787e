"""A worker: runs its copy of every dataflow and keeps its own tracker replica of every scope.

Each step a worker (1) takes what has arrived: data messages into operator input queues (a message reaching a
nested scope's input is *harvested*: the scope's batch says it entered at child 0, and its records move on to the
operators inside), progress batches from any worker into its replicas; (2) schedules its operators, which read their
input frontiers from the replicas; (3) broadcasts what its operators did as one atomic batch per scope, to every
worker including itself. Its own actions reach its replicas only through that loopback, exactly as in the seeds:
every replica applies the same multiset of batches, in its own order and at its own time, except that one
sender's batches are applied in the order it sent them: that is the per-worker prefix the safety argument needs.
The protocol's parts are ``tracker.broadcast``'s: an :class:`Outbox` numbers this worker's batches (one sequence
over all its scopes, each :class:`ProgressBatch` naming its scope) and a :class:`SenderOrder` releases each sender's
batches in that order, holding back one that overtook an earlier one.

Counts are in records: producing ``n`` records counts ``n`` at every input the output connects to, consuming them
subtracts ``n``. Each worker's replica counts every worker's initial capabilities (``peers`` copies).

A worker can record its view as a progress log (format v1): the structure, then every batch in the order its
replica applied it, with ``worker`` naming the sender: replaying it shows exactly what that worker knew.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..broadcast import Outbox, ProgressBatch, SenderOrder
from ..change_batch import ChangeBatch
from ..progress_log import ProgressLogWriter
from ..reachability import Location, Source
from ..subgraph import Subgraph
from .context import Capability, OperatorContext
from .graph import PIPELINE, Exchange, ScopeBuilder

__all__ = ["Worker"]


class Worker:
    def __init__(self, index: int, peers: int, fabric: Any, record: str | None = None):
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
        view = getattr(self.fabric, "global_view", None)
        if view is not None:
            view.install(lambda root: self._install(scope, root, record=False, instantiate=False), (df,))
        stash, self._stash = self._stash, []
        for msg in stash:
            self._dispatch(msg)
        self.replica.schedule()
        return result

    def _install(self, sb: ScopeBuilder, parent: Subgraph, record: bool, instantiate: bool = True) -> None:
        node = sb.path[-1]
        replica = parent.add_scope(node, sb.name, sb.inputs, sb.outputs, sb.depth)
        if record and self.log:
            self.log.scope(sb.path, sb.name, sb.inputs, sb.outputs, sb.depth)
        minimum = sb.domain.minimum
        if instantiate:
            self._scopes[sb.path] = sb
        for node_k in sorted(sb.ops):
            spec = sb.ops[node_k]
            if spec.scope is not None:
                self._install(spec.scope, replica, record, instantiate)
                continue
            caps = [[minimum] * self.peers for _ in range(spec.outputs)] if spec.initial_capability else None
            attrs = dict(spec.attrs)
            replica.add_operator(spec.node, spec.name, spec.inputs, spec.outputs, spec.summary, caps, attrs)
            if record and self.log:
                self.log.operator(sb.path, spec.node, spec.name, spec.inputs, spec.outputs, spec.summary, caps, attrs or None)
            if instantiate:
                ctx = OperatorContext(self, sb.path, spec, sb.domain)
                ctx.scope = replica
                if spec.initial_capability:
                    ctx._held[minimum] = 1
                    ctx.initial_capability = Capability(ctx, minimum, counted=False)
                spec.logic.bind(ctx)
                self.ops.append(ctx)
                self._ops_at[(sb.path, spec.node)] = ctx
        for src, tgt in sb.edges:
            replica.add_edge(src, tgt)
            if record and self.log:
                self.log.edge(sb.path, src, tgt)
            if instantiate:
                pact = PIPELINE
                spec = sb.ops.get(tgt.node)
                if tgt.node != 0 and spec is not None and spec.scope is None and tgt.port < len(spec.pacts):
                    pact = spec.pacts[tgt.port]
                self._edges.setdefault((sb.path, src), []).append((tgt, pact))

    # --- progress ------------------------------------------------------------------------------------

    def _local_batch(self, path: tuple) -> ChangeBatch:
        batch = self._local.get(path)
        if batch is None:
            batch = self._local[path] = ChangeBatch()
        return batch

    def _flush(self) -> bool:
        sent = False
        if self._local:
            local, self._local = self._local, {}
            for path, batch in local.items():
                progress = self._outbox.batch(((loc, t, d) for (loc, t), d in batch.drain()), path)
                if progress is not None:
                    self.fabric.broadcast(self.index, ("progress", progress))
                    sent = True
        return sent

    def _notified(self, ctx: OperatorContext, time: Any) -> None:
        view = getattr(self.fabric, "global_view", None)
        if view is not None:
            view.check_notification(ctx.path, ctx.node, ctx.spec.inputs, time, self.index)

    def mark(self, label: str, scope: tuple = (), **extra: Any) -> None:
        """Annotate this worker's progress log (e.g. a stratum completed)."""
        if self.log:
            self.log.mark(label, scope=list(scope), **extra)

    # --- data ----------------------------------------------------------------------------------------

    def _send_from(self, path: tuple, source: Location, time: Any, records: list, counted: bool = False) -> None:
        """Deliver records produced at ``source`` to every input it connects to, counting them unless already counted."""
        n = len(records)
        for target, pact in self._edges.get((path, source), ()):
            if not counted:
                self._local_batch(path).update((target, time), n)
            if target.node == 0:
                # Leaving the scope: the replicas report it to the parent as produced there.
                sb = self._scopes[path]
                outer = time[0] if sb.parent is not None and sb.depth > sb.parent.depth else time
                self._send_from(path[:-1], Source(path[-1], target.port), outer, records, counted=True)
            elif isinstance(pact, Exchange):
                peers = self.peers
                parts: dict[int, list] = {}
                key_fn = pact.key
                for r in records:
                    parts.setdefault(key_fn(r) % peers, []).append(r)
                for dst, part in parts.items():
                    if dst == self.index:
                        self._deliver(path, target, time, part)
                    else:
                        self.fabric.send(self.index, dst, ("data", path, target, time, part))
            else:
                self._deliver(path, target, time, records)

    def _deliver(self, path: tuple, target: Location, time: Any, records: list) -> None:
        sb = self._scopes[path]
        spec = sb.ops.get(target.node)
        if spec is not None and spec.scope is not None:
            child = spec.scope
            inner = (time, 0) if child.depth > sb.depth else time
            self._local_batch(child.path).update((Source(0, target.port), inner), -len(records))
            self._send_from(child.path, Source(0, target.port), inner, records)
        else:
            self._ops_at[(path, target.node)].queues[target.port].append((time, records))

    def _dispatch(self, msg: tuple) -> bool:
        """Handle one message; True if it was progress."""
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

    # --- running -------------------------------------------------------------------------------------

    def step(self, wait: float = 0.0) -> bool:
        """One round: receive, schedule every operator that has something to do, broadcast. True while busy."""
        self.steps += 1
        msgs = self.fabric.recv(self.index, wait)
        progress = False
        for msg in msgs:
            progress |= self._dispatch(msg)
        if progress:
            self.replica.schedule()
        did = False
        for op in self.ops:
            did |= op.run()
        sent = self._flush()
        self._idle = not msgs and not did and not sent
        view = getattr(self.fabric, "global_view", None)
        if view is not None and view.check_replicas:
            view.check_replica(self)
        return self.tracking()

    def tracking(self) -> bool:
        """Is anything still in flight or held, as far as this worker knows?"""
        if self._local or self._stash or self._order.held_back():
            return True
        if any(op.has_input() for op in self.ops):
            return True
        return any(scope.tracker is not None and scope.tracker.tracking_anything() for scope in self.replica.scopes())

    def step_while(self, condition: Callable[[], bool]) -> None:
        while condition():
            self.step(0.002 if self._idle else 0.0)

    def run(self) -> None:
        """Step until every dataflow has completed."""
        while self.step(0.002 if self._idle else 0.0):
            pass
        if self.log:
            self.log.flush()

    def close(self) -> None:
        if self.log:
            self.log.close()
            self.log = None
