"""Scopes: a subgraph of children tracked by its own :class:`~tracker.reachability.Tracker`, presented to its
parent as one operator through the :class:`~tracker.operate.Operate` interface.

Child 0 is the scope's boundary. Inside, the parent's frontier at the scope's inputs is accepted as pointstamps at
child 0's outputs (converted with ``to_inner``: this is the one place a pointstamp is derived from propagated
information rather than an event). Batches that mention child 0 are not recorded in the tracker: messages that
entered at a scope input are reported to the parent as *consumed* there, messages that reached a scope output as
*produced*. The scope's *internal capabilities*, reported to the parent at each output, are the changes to what
its pointstamps could still produce there, computed from pointstamp frontiers and precomputed output summaries and
filtered through a :class:`~tracker.frontier.MutableAntichain` so the parent sees discrete changes. The summary
the parent sees is the scope summary mapped through ``summarize``.

Unlike timely, a scope may grow after progress started (a Spark application submits new stages as it runs):
adding operators, nested scopes or edges marks the scope dirty, and the next time it is scheduled it rebuilds its
tracker, carrying every pointstamp count over and reporting only the frontier changes the new structure causes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .change_batch import ChangeBatch
from .frontier import Antichain, MutableAntichain
from .operate import Operate
from .reachability import IN, OUT, Builder, Location, Source, Target, Tracker
from .timestamp import Refinement, TimeDomain, domain

__all__ = ["Subgraph", "OperatorNode"]


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
        self.external_summary: list[list[Antichain]] = []
        self._internal_summary: list[list[Antichain]] | None = None
        self._dirty = True
        self._child_dirty = False
        self._initial: list[tuple[Location, Any, int]] = []
        self._incoming: list[tuple[Location, Any, int]] = []
        self._external = [ChangeBatch() for _ in range(inputs)]
        self._has_external = False
        self._consumed = [ChangeBatch() for _ in range(inputs)]
        self._internal = [ChangeBatch() for _ in range(outputs)]
        self._produced = [ChangeBatch() for _ in range(outputs)]
        self._output_capabilities = [MutableAntichain(outer.le, outer.total) for _ in range(outputs)]
        self._active_children: set[int] = set()
        self._scope_inputs: dict[int, tuple[OperatorNode, int]] = {}  # target index -> (child scope, input)
        self._builder: Builder | None = None
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
        if capabilities is not None:
            caps = list(capabilities)
            if len(caps) > outputs:
                raise ValueError(
                    f"operator {node} in scope {self.label}: {len(caps)} capability lists for {outputs} outputs"
                )
            for o, times in enumerate(caps):
                for t in times:
                    self._initial.append((Source(node, o), t, 1))
        self._mark_dirty()
        return op

    def add_scope(self, node: int, name: str = "", inputs: int = 0, outputs: int = 0, depth: int | None = None,
                  attrs: dict | None = None) -> Subgraph:
        """Declare nested scope ``node``: a region (same depth) or an iterative scope (one level deeper)."""
        self._check_new_node(node)
        child = Subgraph(self.path + (node,), name, inputs, outputs, depth or self.domain.depth, parent=self)
        self.children[node] = OperatorNode(node, name, inputs, outputs, None, dict(attrs or {}), child)
        self._mark_dirty()
        return child

    def add_edge(self, source: Location, target: Location) -> None:
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
        self.edges.append((source, target))
        self._out_edges.setdefault(source, []).append(target)
        self.in_edges.setdefault(target, []).append(source)
        self._mark_dirty()

    def _check_new_node(self, node: int) -> None:
        if type(node) is not int or node < 1:
            raise ValueError(f"scope {self.label}: child indices start at 1 (child 0 is the boundary), not {node!r}")
        if node in self.children:
            raise ValueError(f"scope {self.label}: node {node} is declared twice")

    def _mark_dirty(self) -> None:
        self._dirty = True
        s = self.parent
        while s is not None and not s._child_dirty:
            s._child_dirty = True
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
        """Bring the tracker up to date with every operator, nested scope and edge added so far."""
        if self._child_dirty:
            self._child_dirty = False
            for op in self.children.values():
                child = op.scope
                if child is not None and (child._dirty or child._child_dirty):
                    before = child._internal_summary
                    child.ensure_built()
                    if child._internal_summary != before:
                        self._dirty = True
        if not self._dirty:
            return
        builder = self.builder()
        tracker, scope_summary = builder.build()  # raises CycleError, and stays dirty, until the structure is fixed
        self._dirty = False
        self._builder = builder
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
        self._scope_inputs = {
            tracker.index[Target(node, i)]: (op, i)
            for node, op in self.children.items() if op.scope is not None for i in range(op.inputs)
        }
        # The summary the parent sees, through summarize().
        if self.refinement is not None:
            summarize, ole = self.refinement.summarize, self.outer_domain.le
            self._internal_summary = [
                [Antichain((summarize(s) for s in scope_summary[i].get(j, ())), ole) for j in range(self._outputs)]
                for i in range(self._inputs)
            ]
        else:
            self._internal_summary = []
        self._set_children_external_summaries(builder)
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
        self._activate()

    def _set_children_external_summaries(self, builder: Builder) -> None:
        """Tell each nested scope the summaries from its outputs back to its inputs, outside it."""
        for node, op in self.children.items():
            if op.scope is None or not op.inputs or not op.outputs:
                continue
            le = self.domain.le
            back = builder.summaries_to([Target(node, i) for i in range(op.inputs)])
            summary = [
                [Antichain(back[Target(node, i)].get(Source(node, o), ()), le) for i in range(op.inputs)]
                for o in range(op.outputs)
            ]
            op.scope.set_external_summary(summary, [ChangeBatch() for _ in range(op.inputs)])

    def _replace_output_capabilities(self) -> None:
        """After a rebuild: report the difference between the old and the new internal capabilities."""
        tracker = self.built_tracker()
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

    def receive_one(self, location: Location, time: Any, delta: int) -> None:
        self._incoming.append((location, time, delta))
        self._activate()

    # --- scheduling ------------------------------------------------------------------------------------

    def schedule(self) -> bool:
        """Bring this scope and its nested scopes up to date with everything received; True if still tracking."""
        tracker = self.built_tracker()
        while True:
            tracker = self.built_tracker()
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
                index = tracker.index
                update_index = tracker.update_index
                for loc, t, d in incoming:
                    if loc.node == 0:
                        to_outer = self._to_outer
                        if loc.kind == OUT:
                            self._consumed[loc.port].update(to_outer(t), -d)
                        else:
                            self._produced[loc.port].update(to_outer(t), d)
                    else:
                        port = index.get(loc)
                        if port is None:
                            raise ValueError(f"scope {self.label} has no port {loc}")
                        update_index(port, t, d)
            tracker.propagate_all()
            if tracker.has_pushed():
                if self.pushed_sink is None and not self._scope_inputs:
                    tracker.discard_pushed()  # nobody looks at these frontier changes
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
            if self._dirty or self._child_dirty:
                self.ensure_built()
            if not (self._incoming or self._has_external or self._active_children):
                break
        return tracker.tracking_anything()

    def _dispatch_pushed(self, pushed: list[tuple[int, Any, int]]) -> None:
        if not pushed:
            return
        if self.pushed_sink is not None:
            locations = self.built_tracker().locations
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
        for j, batch in enumerate(self.built_tracker().output_changes):
            if batch:
                changes = self._output_capabilities[j].update_iter([(to_outer(t), d) for t, d in batch.drain()])
                for t, d in changes:
                    self._internal[j].update(t, d)

    def _pull_from(self, node: int, child: Subgraph) -> None:
        """The parent half of extract_progress for a nested scope (its reports are already global)."""
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
        caps = [ChangeBatch() for _ in range(self._outputs)]
        for j, batch in enumerate(self._internal):
            batch.drain_into(caps[j])
        return [list(row) for row in self._internal_summary or ()], caps

    def set_external_summary(self, summary: list[list[Antichain]], frontiers: Sequence[ChangeBatch]) -> None:
        self.external_summary = summary
        self.push_external_progress(frontiers)

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

    def set_pushed_sink(self, sink: list | None) -> None:
        """Observe every frontier change of this scope and its nested scopes (present and future)."""
        for scope in self.scopes():
            scope.pushed_sink = sink

    @property
    def structure(self) -> Builder:
        """The scope's current nodes and edges as the tracker sees them (built first if structure was added)."""
        return self.built_tracker().structure

    def built_tracker(self) -> Tracker:
        """The tracker, brought up to date with every operator, scope and edge added so far."""
        self.ensure_built()
        assert self.tracker is not None
        return self.tracker

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
