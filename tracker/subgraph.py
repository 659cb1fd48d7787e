"""Scopes: a subgraph of children with its own :class:`~tracker.reachability.Tracker`, one operator to its parent.

Child 0 is the scope's boundary. The parent's frontier at the scope's inputs is accepted as pointstamps at child 0's
outputs (the one place a pointstamp is derived from propagated information rather than an event). Batches that
mention child 0 are reported to the parent as *consumed* (at a scope input) or *produced* (at an output), not
recorded in the tracker. The scope's *internal capabilities*, reported at each output, are the discrete changes to
what its pointstamps could still produce there.

Unlike timely, a scope grows after progress started (a Spark application submits new stages as it runs): added
operators, nested scopes and edges are queued, and at its next schedule its tracker grows by exactly them, so
growth costs what was added, not the scope's size. Only a node declared below the last one makes the scope build
afresh (carrying every count over). A finished nested scope can be retired: its state leaves the live hierarchy,
its summary stays in its parent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from tracker.change_batch import ChangeBatch
from tracker.frontier import Antichain, MutableAntichain
from tracker.gc_pause import gc_paused
from tracker.operate import Operate
from tracker.reachability import IN, OUT, Builder, Location, Source, Target, Tracker
from tracker.timestamp import Refinement, TimeDomain, domain

__all__ = ["Subgraph", "OperatorNode"]

PAUSE_GC_FROM = 256  # children from which a scope's build runs with the cyclic collector paused


@dataclass
class OperatorNode:
    """A child of a scope: a leaf operator (its progress arrives as batches) or a nested scope."""

    node: int
    name: str
    inputs: int
    outputs: int
    summary: list | None = None  # summary[i][o]: summaries from input i to output o; None: identity everywhere
    attrs: dict = field(default_factory=dict)
    scope: Subgraph | None = None
    retired: bool = False  # a nested scope that finished and left the live hierarchy (its summary stays)


class Subgraph(Operate):
    """One scope of the hierarchy: its children, edges, tracker and the boundary bookkeeping with its parent."""

    def __init__(
        self,
        path: Sequence[int] = (),
        name: str = "",
        inputs: int = 0,
        outputs: int = 0,
        depth: int = 1,
        parent: Subgraph | None = None,
    ):
        self.path = tuple(path)
        self.name = name
        self._inputs = inputs
        self._outputs = outputs
        self.domain: TimeDomain = domain(depth)
        self.parent = parent
        self.refinement: Refinement | None = Refinement(parent.domain, self.domain) if parent else None
        identity = lambda t: t  # noqa: E731  (the root has no parent: nothing crosses its boundary)
        self._to_inner = self.refinement.to_inner if self.refinement else identity
        self._to_outer = self.refinement.to_outer if self.refinement else identity
        outer = parent.domain if parent else self.domain
        self.outer_domain = outer
        self.children: dict[int, OperatorNode] = {}
        self.edges: list[tuple[Location, Location]] = []
        self._out_edges: dict[Location, list[Location]] = {}
        self.in_edges: dict[Location, list[Location]] = {}  # target -> the sources that feed it
        self.tracker: Tracker | None = None
        self._internal_summary: list[list[Antichain]] | None = None
        self._dirty = True
        self._child_dirty: set[int] = set()  # nested scopes (by node) with structure added since the last build
        self._new_nodes: list[int] = []  # children declared since the tracker was built, not yet in it
        self._new_edges: list[tuple[Location, Location]] = []  # likewise, edges
        self._changed_summaries: set[int] = set()  # nested scopes whose summary changed since the tracker saw it
        self._build_afresh = False  # a child was declared below the last node: grow cannot keep the ports' order
        # An edge here or in a nested scope was added without the per-edge identity-cycle check (add_edge): the
        # next build searches the whole graph for one.
        self._cycles_unchecked = False
        self._summary_unread = False  # the internal summary changed since the parent last read it
        self._initial: list[tuple[Location, Any, int]] = []
        self._incoming: list[tuple[Location, Any, int]] = []
        self._external = [ChangeBatch() for _ in range(inputs)]
        self._has_external = False
        self._consumed = [ChangeBatch() for _ in range(inputs)]
        self._internal = [ChangeBatch() for _ in range(outputs)]
        self._produced = [ChangeBatch() for _ in range(outputs)]
        self._output_capabilities = [MutableAntichain(outer.le, outer.total) for _ in range(outputs)]
        self._active_children: set[int] = set()
        self.dropped = 0  # retired nested scopes forgotten altogether (drop_retired): nothing connected them
        self._scope_inputs: dict[int, tuple[OperatorNode, int]] = {}  # target index -> (child scope, input)
        self._through: set[int] = set()  # nested scopes with inputs and outputs: they get external summaries
        # When set (a list shared by the whole hierarchy), every frontier change is appended as
        # (scope, location, time, ±1): how the replay observes what each batch did.
        self.pushed_sink: list | None = parent.pushed_sink if parent else None

    # --- naming ----------------------------------------------------------------------------------------

    @property
    def label(self) -> str:
        p = list(self.path)
        return f"{p} ({self.name})" if self.name else str(p)

    @property
    def node(self) -> int:
        return self.path[-1] if self.path else 0

    # --- structure -------------------------------------------------------------------------------------

    def add_operator(
        self,
        node: int,
        name: str = "",
        inputs: int = 1,
        outputs: int = 1,
        summary: list | None = None,
        capabilities: Iterable[Iterable[Any]] | None = None,
        attrs: dict | None = None,
    ) -> OperatorNode:
        """Declare leaf operator ``node`` (>= 1); ``capabilities[o]`` lists times output o holds initially."""
        self._check_new_node(node)
        if summary is not None:
            le = self.domain.le
            summary = [[Antichain(s, le) for s in row] for row in summary]
        op = OperatorNode(node, name, inputs, outputs, summary, dict(attrs or {}))
        self.children[node] = op
        self._declared(node)
        if capabilities is not None:
            caps = list(capabilities)
            if len(caps) > outputs:
                raise ValueError(
                    f"operator {node} in scope {self.label}: {len(caps)} capability lists for {outputs} outputs"
                )
            for o, times in enumerate(caps):
                for t in times:
                    self._initial.append((Source(node, o), t, 1))
        return op

    def add_scope(self, node: int, name: str = "", inputs: int = 0, outputs: int = 0, depth: int | None = None,
                  attrs: dict | None = None) -> Subgraph:
        """Declare nested scope ``node``: a region (same depth) or an iterative scope (one level deeper)."""
        self._check_new_node(node)
        child = Subgraph(self.path + (node,), name, inputs, outputs, depth or self.domain.depth, parent=self)
        self.children[node] = OperatorNode(node, name, inputs, outputs, None, dict(attrs or {}), child)
        self._declared(node)
        return child

    def add_edge(self, source: Location, target: Location, cycle_checked: bool = False) -> None:
        """Connect ``source`` to ``target``.

        ``cycle_checked``: the caller has just asked :func:`~tracker.identity_cycles.cycle_closed_by` about this edge on
        the structure as it is and got None. While every edge of a scope (and of the scopes it nests) came that way,
        building its tracker skips the whole-graph search for an identity cycle; one edge without it brings the search
        back for the scope and every scope around it."""
        if source.kind != OUT or target.kind != IN:
            raise ValueError(f"an edge goes from an output to an input, not {source} -> {target}")
        for loc in (source, target):
            if loc.node == 0:
                count = self._inputs if loc.kind == OUT else self._outputs
                what = "input" if loc.kind == OUT else "output"
                if loc.port >= count:
                    raise ValueError(f"edge names {loc}, but scope {self.label} has {count} {what}(s)")
                continue
            child = self.children.get(loc.node)
            if child is None:
                raise ValueError(f"edge names {loc}, but scope {self.label} has no node {loc.node}")
            count = child.inputs if loc.kind == IN else child.outputs
            if loc.port >= count:
                direction = "in" if loc.kind == IN else "out"
                raise ValueError(f"edge names {loc}, but node {loc.node} ({child.name}) has {count} {direction}put(s)")
        if not cycle_checked:
            s: Subgraph | None = self
            while s is not None:
                s._cycles_unchecked = True
                s = s.parent
        self.edges.append((source, target))
        self._out_edges.setdefault(source, []).append(target)
        self.in_edges.setdefault(target, []).append(source)
        if self.tracker is not None:
            self._new_edges.append((source, target))
        self._mark_dirty()

    def _check_new_node(self, node: int) -> None:
        if type(node) is not int or node < 1:
            raise ValueError(f"scope {self.label}: child indices start at 1 (child 0 is the boundary), not {node!r}")
        if node in self.children:
            raise ValueError(f"scope {self.label}: node {node} is declared twice")

    def _declared(self, node: int) -> None:
        tracker = self.tracker
        if tracker is not None:
            if node < len(tracker.shape):
                self._build_afresh = True
            else:
                self._new_nodes.append(node)
        self._mark_dirty()

    def _mark_dirty(self) -> None:
        self._dirty = True
        s = self
        while s.parent is not None and s.node not in s.parent._child_dirty:
            s.parent._child_dirty.add(s.node)
            s = s.parent
        self._activate()

    def _activate(self) -> None:
        s = self
        while s.parent is not None:
            p = s.parent
            if s.node in p._active_children:
                return
            p._active_children.add(s.node)
            s = p

    def retire_problem(self, node: int) -> str | None:
        """Why nested scope ``node`` cannot be retired now (see :meth:`retire`), or None when it can."""
        op = self.children.get(node)
        if op is None:
            return f"scope {self.label} has no node {node}"
        if op.retired:
            return f"scope {self.label}: node {node} ({op.name}) is already retired"
        child = op.scope
        if child is None:
            return f"scope {self.label}: node {node} ({op.name}) is an operator, not a nested scope"
        self.schedule()
        busy = [s.label for s in child.scopes() if s.tracker is None or s.tracker.tracking_anything()]
        if busy:
            return f"scope {child.label} still tracks progress (in {', '.join(busy)}): it is not finished"
        tracker = self._current_tracker()
        for i in range(op.inputs):
            if tracker.frontier(Target(node, i)) or tracker.pointstamps_at(Target(node, i)).updates():
                return f"scope {child.label} may still receive messages at input {i}: it is not finished"
        return None

    def retire(self, node: int) -> None:
        """Take finished nested scope ``node`` out of the live hierarchy: a long application's memory stays bounded.

        Finished means nothing is tracked inside it and nothing more can reach its inputs (their frontier here is
        empty). Its tracker, children and state go; the node stays here as an operator with the scope's last
        summary, so this scope's structure, and every summary through it, is unchanged. Costs O(the retired scope).
        """
        problem = self.retire_problem(node)
        if problem is not None:
            raise (KeyError if problem.endswith(f"has no node {node}") else ValueError)(problem)
        op = self.children[node]
        child = op.scope
        assert child is not None  # checked by retire_problem
        tracker = self._current_tracker()
        summary, _ = child.get_internal_summary()
        op.summary = summary
        op.scope = None
        op.retired = True
        self._through.discard(node)
        for i in range(op.inputs):
            self._scope_inputs.pop(tracker.index[Target(node, i)], None)
        self._active_children.discard(node)
        self._child_dirty.discard(node)
        self._changed_summaries.discard(node)

    def drop_retired(self, node: int) -> None:
        """Forget retired nested scope ``node`` altogether if nothing connects it here (no inputs, no outputs).

        Its node had no ports, so no summary, frontier or edge changes; only the count ``dropped`` remembers it. Then a
        long application's scope holds what is running, not one node per region it ever had."""
        op = self.children.get(node)
        if op is None or not op.retired:
            raise ValueError(f"scope {self.label}: node {node} is not a retired scope")
        if op.inputs or op.outputs:
            return
        del self.children[node]
        self.dropped += 1

    def find(self, path: Sequence[int]) -> Subgraph:
        """The nested scope at ``path`` (absolute, from the root)."""
        scope = self
        for k in tuple(path)[len(self.path):]:
            child = scope.children.get(k)
            if child is None or child.scope is None:
                raise KeyError(f"no scope {list(path)}")
            scope = child.scope
        return scope

    def scopes(self) -> Iterable[Subgraph]:
        """This scope and every nested scope, parents before children."""
        yield self
        for node in sorted(self.children):
            child = self.children[node].scope
            if child is not None:
                yield from child.scopes()

    def builder(self) -> Builder:
        """The reachability builder for the current structure (node 0 is the boundary, with no connectivity)."""
        b = Builder(self.domain, self.label)
        b.add_node(0, self._outputs, self._inputs, [[[] for _ in range(self._inputs)] for _ in range(self._outputs)])
        for node in sorted(self.children):
            op = self.children[node]
            if op.scope is not None:
                summary, caps = op.scope.get_internal_summary()
                for o, batch in enumerate(caps):
                    for t, d in batch.drain():
                        self._initial.append((Source(node, o), t, d))
                b.add_node(node, op.inputs, op.outputs, summary)
            else:
                b.add_node(node, op.inputs, op.outputs, op.summary)
        for s, t in self.edges:
            b.add_edge(s, t)
        return b

    @property
    def needs_build(self) -> bool:
        """Structure was added here or in a nested scope since the tracker was last brought up to date."""
        return self._dirty or bool(self._child_dirty)

    def ensure_built(self) -> None:
        """Bring the tracker up to date with every operator, nested scope and edge added so far.

        The first time, the tracker is built from the whole structure; afterwards it grows by what was added. A
        :class:`~tracker.reachability.CycleError` leaves the offending part queued: the scope stays unbuilt.
        """
        if self._child_dirty:
            dirty = sorted(self._child_dirty)
            self._child_dirty = set()
            for k, node in enumerate(dirty):
                child = self.children[node].scope
                if child is None:
                    continue
                try:
                    child.ensure_built()
                except Exception:
                    self._child_dirty.update(dirty[k:])
                    raise
                if child._summary_unread:
                    self._changed_summaries.add(node)
                    self._dirty = True
        if not self._dirty:
            return
        if self.tracker is None or self._build_afresh:
            # a big build's objects all stay alive: no collection can free anything meanwhile (a small one's few
            # objects cost less than pausing and resuming the collector)
            with gc_paused() if len(self.children) >= PAUSE_GC_FROM else nullcontext():
                self._build()
        else:
            self._grow()
        self._dirty = False
        self._activate()

    def _build(self) -> None:
        """Build the tracker from the whole structure (carrying the old one's pointstamps over, if any)."""
        builder = self.builder()
        # raises CycleError, and stays dirty, until the structure is fixed
        tracker, _ = builder.build(check_cycles=self._cycles_unchecked)
        self._cycles_unchecked = False
        self._build_afresh = False
        self._new_nodes, self._new_edges, self._changed_summaries = [], [], set()
        old = self.tracker
        old_frontiers: dict[Location, list] = {}
        if old is not None:
            for k, loc in enumerate(old.locations):
                for t, c in old.pointstamps[k].updates():
                    tracker.update(loc, t, c)
                f = old.implications[k].frontier()
                if f:
                    old_frontiers[loc] = f
        for loc, t, d in self._initial:
            tracker.update(loc, t, d)
        self._initial = []
        tracker.propagate_all()
        self.tracker = tracker
        self._scope_inputs, self._through = {}, set()
        for op in self.children.values():
            if op.scope is not None:
                self._register_nested(op)
        self._update_internal_summary()
        for node in sorted(self._through):
            self._set_external_summary_of(node)
        if old is None:
            self._dispatch_pushed(tracker.drain_pushed_indexed())
            self._dispatch_output_changes()
        else:
            tracker.drain_pushed_indexed()
            diff: list[tuple[int, Any, int]] = []
            for k, loc in enumerate(tracker.locations):
                new_f = tracker.implications[k].frontier()
                old_f = old_frontiers.get(loc, [])
                if new_f != old_f:
                    diff.extend((k, t, -1) for t in old_f if t not in new_f)
                    diff.extend((k, t, 1) for t in new_f if t not in old_f)
            self._dispatch_pushed(diff)
            self._replace_output_capabilities()

    def _grow(self) -> None:
        """Add the queued children, changed nested summaries and edges to the tracker, and report what changed."""
        tracker = self._current_tracker()
        starts: list[Location] = []  # where the new paths begin (for the nested scopes' external summaries)
        fresh: list[int] = []
        self._new_nodes.sort()
        added = 0
        try:
            for node in self._new_nodes:
                op = self.children[node]
                if op.scope is None:
                    tracker.add_node(node, op.inputs, op.outputs, op.summary)
                else:
                    summary, caps = op.scope.get_internal_summary()
                    tracker.add_node(node, op.inputs, op.outputs, summary)
                    self._take_capabilities(node, caps)
                    self._register_nested(op)
                    fresh.append(node)
                self._changed_summaries.discard(node)
                added += 1
        finally:
            del self._new_nodes[:added]
        for node in sorted(self._changed_summaries):
            child = self.children[node].scope
            if child is not None:
                summary, caps = child.get_internal_summary()
                self._take_capabilities(node, caps)
                tracker.set_node_summary(node, summary)
                starts.extend(Target(node, i) for i in range(child.inputs))
            self._changed_summaries.discard(node)
        added = 0
        try:
            for source, target in self._new_edges:
                tracker.add_edge(source, target)
                starts.append(source)
                added += 1
        finally:
            del self._new_edges[:added]
        for loc, t, d in self._initial:
            tracker.update(loc, t, d)
        self._initial = []
        tracker.propagate_all()
        self._dispatch_pushed(tracker.drain_pushed_indexed())
        self._dispatch_output_changes()
        self._update_internal_summary()
        if self._through:
            reached = tracker.structure.upstream(starts) if starts else set()
            for node in sorted(self._through):
                if node in fresh or any(Source(node, o) in reached for o in range(self.children[node].outputs)):
                    self._set_external_summary_of(node)

    def _take_capabilities(self, node: int, caps: list[ChangeBatch]) -> None:
        """A nested scope's reported capabilities become pointstamps at its outputs here."""
        tracker = self._current_tracker()
        for o, batch in enumerate(caps):
            for t, d in batch.drain():
                tracker.update(Source(node, o), t, d)

    def _register_nested(self, op: OperatorNode) -> None:
        """Route frontier changes at a nested scope's inputs to it; note whether paths can leave and re-enter it."""
        index = self._current_tracker().index
        for i in range(op.inputs):
            self._scope_inputs[index[Target(op.node, i)]] = (op, i)
        if op.inputs and op.outputs:
            self._through.add(op.node)

    def _update_internal_summary(self) -> None:
        """The summary the parent sees (the scope summary through ``summarize``); flag it when it changed."""
        if self.refinement is None:
            self._internal_summary = []
            return
        scope_summary = self._current_tracker().scope_summary
        summarize, ole = self.refinement.summarize, self.outer_domain.le
        summary = [
            [Antichain((summarize(s) for s in scope_summary[i].get(j, ())), ole) for j in range(self._outputs)]
            for i in range(self._inputs)
        ]
        if summary != self._internal_summary:
            self._internal_summary = summary
            self._summary_unread = True

    def _set_external_summary_of(self, node: int) -> None:
        """Tell nested scope ``node`` the summaries from its outputs back to its inputs, outside it."""
        op = self.children[node]
        assert op.scope is not None
        le = self.domain.le
        back = self._current_tracker().structure.summaries_to([Target(node, i) for i in range(op.inputs)])
        summary = [
            [Antichain(back[Target(node, i)].get(Source(node, o), ()), le) for i in range(op.inputs)]
            for o in range(op.outputs)
        ]
        op.scope.set_external_summary(summary, [ChangeBatch() for _ in range(op.inputs)])

    def _replace_output_capabilities(self) -> None:
        """After a rebuild: report the difference between the old and the new internal capabilities."""
        tracker = self._current_tracker()
        to_outer = self._to_outer
        ole, total = self.outer_domain.le, self.outer_domain.total
        for j, batch in enumerate(tracker.output_changes):
            fresh = MutableAntichain(ole, total)
            fresh.update_iter([(to_outer(t), d) for t, d in batch.drain()])
            old_f, new_f = self._output_capabilities[j].frontier(), fresh.frontier()
            for t in old_f:
                if t not in new_f:
                    self._internal[j].update(t, -1)
            for t in new_f:
                if t not in old_f:
                    self._internal[j].update(t, 1)
            self._output_capabilities[j] = fresh

    # --- receiving progress ----------------------------------------------------------------------------

    def receive(self, updates: Iterable[tuple[Location, Any, int]]) -> None:
        """Accept one atomic batch of pointstamp updates (inner times) for this scope; applied on ``schedule``."""
        self._incoming.extend(updates)
        self._activate()

    # --- scheduling ------------------------------------------------------------------------------------

    def schedule(self) -> bool:
        """Bring this scope and its nested scopes up to date with everything received; True if still tracking."""
        if self.needs_build:
            self.ensure_built()
        while True:
            tracker = self._current_tracker()
            if self._has_external:
                self._has_external = False
                to_inner = self._to_inner
                for i, batch in enumerate(self._external):
                    if batch:
                        k = tracker.index[Source(0, i)]
                        for t, d in batch.drain():
                            tracker.update_index(k, to_inner(t), d)
            if self._incoming:
                incoming, self._incoming = self._incoming, []
                for loc, t, d in tracker.update_inside(incoming):  # what is left: changes at the boundary
                    to_outer = self._to_outer
                    if loc.kind == OUT:
                        self._consumed[loc.port].update(to_outer(t), -d)
                    else:
                        self._produced[loc.port].update(to_outer(t), d)
            watched = self.pushed_sink is not None or bool(self._scope_inputs)
            tracker.propagate_all(note_pushed=watched)  # unwatched: nobody looks at these frontier changes
            if tracker.has_pushed():
                if not watched:
                    tracker.discard_pushed()  # (noted by an earlier propagate_all: _build's or _grow's)
                else:
                    self._dispatch_pushed(tracker.drain_pushed_indexed())
            if tracker.output_changes:
                self._dispatch_output_changes()
            if self._active_children:
                active = sorted(self._active_children)
                self._active_children.clear()
                for node in active:
                    child = self.children[node].scope
                    if child is not None:
                        child.schedule()
                        self._pull_from(node, child)
            if self.needs_build:
                self.ensure_built()
            if not (self._incoming or self._has_external or self._active_children):
                break
        return tracker.tracking_anything()

    def _dispatch_pushed(self, pushed: list[tuple[int, Any, int]]) -> None:
        if not pushed:
            return
        if self.pushed_sink is not None:
            locations = self._current_tracker().locations
            self.pushed_sink.extend((self, locations[k], t, d) for k, t, d in pushed)
        scope_inputs = self._scope_inputs
        if scope_inputs:
            for k, t, d in pushed:
                hit = scope_inputs.get(k)
                if hit is not None:
                    op, i = hit
                    child = op.scope
                    assert child is not None
                    child._external[i].update(t, d)
                    child._has_external = True
                    self._active_children.add(op.node)

    def _dispatch_output_changes(self) -> None:
        to_outer = self._to_outer
        for j, batch in enumerate(self._current_tracker().output_changes):
            if batch:
                changes = self._output_capabilities[j].update_iter([(to_outer(t), d) for t, d in batch.drain()])
                for t, d in changes:
                    self._internal[j].update(t, d)

    def _pull_from(self, node: int, child: Subgraph) -> None:
        """The parent half of extract_progress for a nested scope (its reports are already global)."""
        if not (any(child._consumed) or any(child._internal) or any(child._produced)):
            return  # nothing to report (most batches, watched one at a time, change nothing at the boundary)
        consumed = [ChangeBatch() for _ in range(child.inputs)]
        internal = [ChangeBatch() for _ in range(child.outputs)]
        produced = [ChangeBatch() for _ in range(child.outputs)]
        child.pull_internal_progress(consumed, internal, produced)
        incoming = self._incoming
        for i, batch in enumerate(consumed):
            for t, d in batch.drain():
                incoming.append((Target(node, i), t, -d))
        for o, batch in enumerate(internal):
            for t, d in batch.drain():
                incoming.append((Source(node, o), t, d))
        for o, batch in enumerate(produced):
            targets = self._out_edges.get(Source(node, o), ())
            for t, d in batch.drain():
                for tgt in targets:
                    incoming.append((tgt, t, d))

    # --- Operate ---------------------------------------------------------------------------------------

    @property
    def inputs(self) -> int:
        return self._inputs

    @property
    def outputs(self) -> int:
        return self._outputs

    def get_internal_summary(self) -> tuple[list[list[Antichain]], list[ChangeBatch]]:
        self.ensure_built()
        self._summary_unread = False
        caps = [ChangeBatch() for _ in range(self._outputs)]
        for j, batch in enumerate(self._internal):
            batch.drain_into(caps[j])
        return [list(row) for row in self._internal_summary or ()], caps

    def set_external_summary(self, summary: list[list[Antichain]], frontiers: Sequence[ChangeBatch]) -> None:
        self.push_external_progress(frontiers)  # a parent's summary to this scope's inputs changes nothing here

    def push_external_progress(self, frontier_changes: Sequence[ChangeBatch]) -> None:
        for i, batch in enumerate(frontier_changes):
            if batch:
                batch.drain_into(self._external[i])
                self._has_external = True
        if self._has_external:
            self._activate()

    def pull_internal_progress(
        self, consumed: Sequence[ChangeBatch], internal: Sequence[ChangeBatch], produced: Sequence[ChangeBatch]
    ) -> bool:
        for mine, theirs in zip(self._consumed, consumed, strict=False):
            mine.drain_into(theirs)
        for mine, theirs in zip(self._internal, internal, strict=False):
            mine.drain_into(theirs)
        for mine, theirs in zip(self._produced, produced, strict=False):
            mine.drain_into(theirs)
        return self.tracker is not None and self.tracker.tracking_anything()

    # --- reading ---------------------------------------------------------------------------------------

    def reported_outputs(self) -> list[list[Any]]:
        """What this scope reports to its parent at each output: the frontier of its internal capabilities."""
        return [m.frontier() for m in self._output_capabilities]

    @property
    def internal_summary(self) -> list[list[Antichain]]:
        """Summaries from each input to each output as the parent sees them.

        Mapped through ``summarize``; empty before the first build and for the root."""
        return self._internal_summary or []

    def targets_of(self, source: Location) -> list[Location]:
        """The targets that ``source``'s edges lead to, in this scope."""
        return list(self._out_edges.get(source, ()))

    def set_pushed_sink(self, sink: list | None) -> None:
        """Observe every frontier change of this scope and its nested scopes (present and future)."""
        for scope in self.scopes():
            scope.pushed_sink = sink

    def drop_initial_capabilities(self) -> None:
        """Forget the capabilities the operators declared and not yet counted.

        For a scope restored from counts that already include whatever is still held (the session history's
        checkpoints)."""
        self._initial = []

    @property
    def structure(self) -> Builder:
        """The scope's current nodes and edges as the tracker sees them (built first if structure was added)."""
        return self.built_tracker().structure

    def built_tracker(self) -> Tracker:
        """The tracker, brought up to date with every operator, scope and edge added so far."""
        self.ensure_built()
        assert self.tracker is not None
        return self.tracker

    def _current_tracker(self) -> Tracker:
        """The tracker as it is (inside building and scheduling, where it exists)."""
        tracker = self.tracker
        assert tracker is not None, f"scope {self.label} has no tracker yet"
        return tracker

    def path_summaries_to(self, location: Location) -> dict[Location, Antichain]:
        """For every port of this scope, the minimal path summaries from it to ``location``."""
        return self.structure.path_summaries_to(location)

    def port_state(self) -> list[dict]:
        """Every port's frontier, pointstamp counts and implication counts (the shape `frontiers --json` prints)."""
        tracker = self.built_tracker()
        return [
            {
                "port": loc.to_json(),
                "frontier": tracker.implications[k].frontier(),
                "pointstamps": [[t, c] for t, c in tracker.pointstamps[k].updates()],
                "implications": [[t, c] for t, c in tracker.implications[k].updates()],
            }
            for k, loc in enumerate(tracker.locations)
        ]
