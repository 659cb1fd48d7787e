"""Reachability: which times may still arrive at which ports of one scope.

A scope is a graph of nodes with input ports (*targets*) and output ports (*sources*); node 0 is its boundary (its
outputs are the scope's inputs and the other way round). Each node declares an antichain of path summaries per
(input, output) pair; edges connect a source to a target and never change times.

The :class:`Builder` collects that structure, rejects a cycle along which no summary advances times (it could
never make progress), and computes every port's minimal summaries to the scope outputs. The :class:`Tracker` holds
**pointstamps** (messages outstanding at targets, capabilities held at sources) and **implications** (per port, how
many upstream pointstamp-frontier elements could result in each time there; only discrete ``+1``/``-1`` frontier
changes enter, so transient negative counts never leak). ``propagate_all`` pushes frontier changes through the
graph in time order with a heap, so its cost follows the frontier changes, not the graph size.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from heapq import heappop, heappush
from typing import Any

from tracker.change_batch import ChangeBatch
from tracker.frontier import Antichain, MutableAntichain
from tracker.identity_cycles import CycleError, find_identity_cycle, identity_path, rotated_cycle
from tracker.location import IN, KIND_NAMES, OUT, Location, Source, Target, new_location
from tracker.timestamp import TimeDomain

# Location, Target, Source, IN, OUT (location.py) and CycleError (identity_cycles.py) are named here too: the
# tracker's callers meet them with its Builder and Tracker.
__all__ = ["Location", "Target", "Source", "Builder", "Tracker", "CycleError", "IN", "OUT"]

Connectivity = list  # per input: dict output -> Antichain of summaries
# A node with no inputs (outputs) keeps this one empty tuple, not a list of its own: a long application's root
# scope declares a port-less node per region ever (node numbers only grow), and only a pointer each should stay.
_NO_PORTS: tuple = ()
_PORTLESS = (0, 0)  # likewise, such a node's shape


class Builder:
    """Collects a scope's nodes and edges, checks them, and builds a :class:`Tracker`."""

    def __init__(self, domain: TimeDomain, name: str = ""):
        self.domain = domain
        self.name = name
        self.shape: list[tuple[int, int]] = []
        self.nodes: list[Connectivity | tuple] = []  # per node (_NO_PORTS when it has no inputs)
        self.edges: list[list[list[Location]] | tuple] = []  # per node, per output (_NO_PORTS when none)
        # Predecessors, kept as nodes and edges are added: the backward searches start from them.
        self.edges_into: dict[Location, list[Location]] = {}  # target -> the sources with an edge to it
        self.internal_into: dict[Location, list[tuple[Location, Antichain]]] = {}  # source -> (own input, summaries)

    def add_node(
        self, index: int, inputs: int, outputs: int, summary: Iterable[Iterable[Iterable[Any]]] | None = None
    ) -> None:
        """Declare node ``index``; ``summary[i][o]`` lists the summaries from input i to output o.

        ``None`` connects every input to every output with the identity; an empty list means not connected.
        """
        shape = self.shape
        while len(shape) <= index:
            shape.append(_PORTLESS)
            self.nodes.append(_NO_PORTS)
            self.edges.append(_NO_PORTS)
        le = self.domain.le
        conn: Connectivity = []
        if summary is None:
            identity, single = self.domain.identity, Antichain.single
            conn = [{o: single(identity, le) for o in range(outputs)} for _ in range(inputs)]
        else:
            rows = list(summary)
            if len(rows) != inputs:
                raise ValueError(f"node {index}: summary has {len(rows)} rows for {inputs} inputs")
            for i, row in enumerate(rows):
                row = list(row)
                if len(row) != outputs:
                    raise ValueError(f"node {index}: summary row {i} has {len(row)} entries for {outputs} outputs")
                ports = {}
                for o, summaries in enumerate(row):
                    ac = summaries if isinstance(summaries, Antichain) else Antichain(summaries, le)
                    if len(ac):
                        ports[o] = ac
                conn.append(ports)
        old_outputs = shape[index][1]
        if old_outputs != outputs:
            for o, targets in enumerate(self.edges[index]):
                for t in targets:
                    self.edges_into[t].remove(Source(index, o))
            self.edges[index] = [[] for _ in range(outputs)] if outputs else _NO_PORTS
        internal_into = self.internal_into
        for o in range(old_outputs):
            internal_into.pop(Source(index, o), None)
        shape[index] = (inputs, outputs) if inputs or outputs else _PORTLESS
        self.nodes[index] = conn or _NO_PORTS
        if conn:
            sources = [new_location(Location, (index, OUT, o)) for o in range(outputs)]
            for i, ports in enumerate(conn):
                target = new_location(Location, (index, IN, i))
                for o, ac in ports.items():
                    into = internal_into.get(sources[o])
                    if into is None:
                        internal_into[sources[o]] = [(target, ac)]
                    else:
                        into.append((target, ac))

    def add_edge(self, source: Location, target: Location) -> None:
        snode, skind, sport = source
        tnode, tkind, tport = target
        shape = self.shape
        if not (skind == OUT and tkind == IN and snode < len(shape) and tnode < len(shape)
                and sport < shape[snode][1] and tport < shape[tnode][0]):
            self._check_edge(source, target)  # says what is wrong
        self.edges[snode][sport].append(target)
        into = self.edges_into.get(target)
        if into is None:
            self.edges_into[target] = [source]
        else:
            into.append(source)

    def _check_edge(self, source: Location, target: Location) -> None:
        if source.kind != OUT or target.kind != IN:
            raise ValueError(f"an edge goes from an output to an input, not {source} -> {target}")
        self._check_port(source)
        self._check_port(target)

    def _check_port(self, loc: Location) -> None:
        if loc.node >= len(self.shape):
            raise ValueError(f"edge names {loc}, but node {loc.node} is not declared{self._where()}")
        inputs, outputs = self.shape[loc.node]
        count = inputs if loc.kind == IN else outputs
        if loc.port >= count:
            what = f"{count} {KIND_NAMES[loc.kind]}put port(s)"
            raise ValueError(f"edge names {loc}, but node {loc.node} has only {what}{self._where()}")

    def _where(self) -> str:
        return f" in scope {self.name}" if self.name else ""

    # --- checks and summaries --------------------------------------------------------------------------

    def find_identity_cycle(self) -> list[Location] | None:
        """A cycle whose every hop keeps times unchanged, or ``None`` (see ``identity_cycles``)."""
        return find_identity_cycle(self.shape, self.nodes, self.edges, self.domain.identity)

    def identity_path(self, start: Location, goal: Location) -> list[Location] | None:
        """A path from ``start`` to ``goal`` on which every hop keeps times unchanged, or ``None``.

        Growth asks this of the new part only: an edge ``s -> t`` closes an identity cycle exactly when such a
        path leads from ``t`` back to ``s``.
        """
        return identity_path(self.nodes, self.edges, self.domain.identity, start, goal)

    def check_acyclic(self) -> None:
        cycle = self.find_identity_cycle()
        if cycle is not None:
            raise CycleError(cycle, self.name)

    def path_summaries_to(self, location: Location) -> dict[Location, Antichain]:
        """For every port, the minimal summaries of paths from it to ``location`` (itself: the identity)."""
        return self.summaries_to([location])[location]

    def summaries_to(self, seeds: list[Location]) -> dict[Location, dict[Location, Antichain]]:
        """For each seed port, every port that reaches it with its minimal path summaries: seed -> {port: summaries}.

        A backward breadth-first search from each seed (explain asks which pointstamps could reach a port with it).

        A summary is re-enqueued only when it is not dominated, so going around a strictly advancing cycle stops.
        """
        domain = self.domain
        le, then = domain.le, domain.followed_by
        reverse_edges, reverse_internal = self.edges_into, self.internal_into
        out: dict[Location, dict[Location, Antichain]] = {}
        for seed in seeds:
            results = {seed: Antichain([domain.identity], le)}
            queue = deque([(seed, domain.identity)])
            while queue:
                loc, s = queue.popleft()
                if loc.kind == IN:
                    for src in reverse_edges.get(loc, ()):
                        ac = results.get(src)
                        if ac is None:
                            ac = results[src] = Antichain((), le)
                        if ac.insert(s):
                            queue.append((src, s))
                else:
                    for tgt, summaries in reverse_internal.get(loc, ()):
                        for op in summaries:
                            c = then(op, s)
                            ac = results.get(tgt)
                            if ac is None:
                                ac = results[tgt] = Antichain((), le)
                            if ac.insert(c):
                                queue.append((tgt, c))
            out[seed] = results
        return out

    def upstream(self, seeds: Iterable[Location]) -> set[Location]:
        """Every port with a path to one of ``seeds`` (the seeds included)."""
        seen = set(seeds)
        stack = list(seen)
        while stack:
            loc = stack.pop()
            if loc.kind == IN:
                before: Iterable[Location] = self.edges_into.get(loc, ())
            else:
                before = (tgt for tgt, _ in self.internal_into.get(loc, ()))
            for prev in before:
                if prev not in seen:
                    seen.add(prev)
                    stack.append(prev)
        return seen

    def build(self, check_cycles: bool = True) -> tuple[Tracker, list[dict[int, Antichain]]]:
        """Check the graph and allocate a tracker; also returns the scope summary (scope input -> output).

        ``check_cycles=False`` skips the whole-graph search for an identity cycle: only for a caller that already
        refused every edge closing one as it was added (a scope whose edges all passed ``cycle_closed_by``), where
        the search would find nothing and cost a third of the build.
        """
        if check_cycles:
            self.check_acyclic()
        tracker = Tracker(self)
        return tracker, tracker.scope_summary


class Tracker:
    """Pointstamps and implications at every port of one scope, kept up to date by ``propagate_all``."""

    def __init__(self, builder: Builder):
        domain = builder.domain
        self.domain = domain
        self.name = builder.name
        self.structure = builder  # the scope's nodes and edges, for path-summary questions (explain, contracts)
        le, total = domain.le, domain.total
        self.shape = builder.shape  # grows with the structure
        locations: list[Location] = []
        first_output: list[int] = []  # per node, the index of its output 0 (its ports are contiguous)
        for n, (inputs, outputs) in enumerate(self.shape):
            locations.extend([new_location(Location, (n, IN, i)) for i in range(inputs)])
            first_output.append(len(locations))
            locations.extend([new_location(Location, (n, OUT, o)) for o in range(outputs)])
        self.locations = locations  # sorted: index order == Location order (growth adds nodes after the last)
        self.index = dict(zip(locations, range(len(locations)), strict=True))
        index = self.index
        self._is_target = [loc[1] == IN for loc in locations]
        self.pointstamps = [MutableAntichain(le, total) for _ in locations]
        self.implications = [MutableAntichain(le, total) for _ in locations]
        # Fan-out per location: a target's internal paths (source index, summary); a source's edge targets.
        fanout: list[list] = []
        for n, (inputs, outputs) in enumerate(self.shape):
            conn, out0 = builder.nodes[n], first_output[n]
            for i in range(inputs):
                ports = conn[i] if i < len(conn) else {}
                fanout.append([(out0 + o, s) for o, ac in sorted(ports.items()) for s in ac])
            for targets in builder.edges[n][:outputs]:
                fanout.append([index[t] for t in targets])
        self._fanout = fanout
        # Summaries from every port to every scope output (node 0's inputs), flattened to (output, summary).
        self._out_summaries, self.scope_summary = self._output_summaries()
        scope_outputs = self.shape[0][0] if self.shape else 0
        self.output_changes = [ChangeBatch() for _ in range(scope_outputs)]
        self.total_counts = 0
        # per port, the net change per time since the last propagate_all (changes that cancel never propagate)
        self._pending: dict[int, dict[Any, int]] = {}
        self._worklist: list[tuple[Any, int, int]] = []
        self._pushed: dict[tuple[int, Any], int] = {}

    def _output_summaries(self) -> tuple[list[list[tuple[int, Any]]], list[dict[int, Antichain]]]:
        """Per port, the minimal summaries to each scope output; and the scope summary (scope input -> output)."""
        scope_outputs, scope_inputs = self.shape[0] if self.shape else (0, 0)
        per_output = self.structure.summaries_to([Target(0, j) for j in range(scope_outputs)])
        out_summaries: list[list[tuple[int, Any]]] = [[] for _ in self.locations]
        scope_summary: list[dict[int, Antichain]] = [dict() for _ in range(scope_inputs)]
        index = self.index
        for j in range(scope_outputs):
            for loc, ac in per_output[Target(0, j)].items():
                if loc.node == 0:
                    if loc.kind == OUT:
                        scope_summary[loc.port][j] = ac
                    continue
                out_summaries[index[loc]].extend((j, s) for s in ac)
        return out_summaries, scope_summary

    # --- growth ----------------------------------------------------------------------------------------
    #
    # A scope may grow after progress started. Each addition updates only what the new part can change: the new
    # ports themselves; the implications downstream of a new link (the upstream port's frontier pushed along it,
    # then propagated like any change); and the summaries to the scope outputs of the ports that reach the new
    # link, when the link reaches an output. Growth only adds paths, so summaries only gain smaller elements and
    # the new minimal ones are inserted into the antichains. Frontier changes are reported as after any batch
    # (``drain_pushed``, ``output_changes``); ``propagate_all`` moves them.

    def add_node(
        self, index: int, inputs: int, outputs: int, summary: Iterable[Iterable[Iterable[Any]]] | None = None
    ) -> None:
        """Declare node ``index`` (beyond every node so far, so ports stay in Location order), with no edges yet."""
        structure = self.structure
        if index < len(structure.shape):
            last = len(self.shape) - 1
            raise ValueError(f"node {index}{structure._where()}: a built tracker grows after its last node ({last})")
        structure.add_node(index, inputs, outputs, summary)
        le, total = self.domain.le, self.domain.total
        for loc in [*(Target(index, i) for i in range(inputs)), *(Source(index, o) for o in range(outputs))]:
            self.index[loc] = len(self.locations)
            self.locations.append(loc)
            self._is_target.append(loc.kind == IN)
            self.pointstamps.append(MutableAntichain(le, total))
            self.implications.append(MutableAntichain(le, total))
            self._fanout.append([])
            self._out_summaries.append([])
        for i, ports in enumerate(structure.nodes[index]):
            self._fanout[self.index[Target(index, i)]] = self._links(index, ports)

    def add_edge(self, source: Location, target: Location) -> None:
        """Connect ``source`` to ``target``; a :class:`CycleError` (nothing changed) if it closes an identity cycle."""
        structure = self.structure
        structure._check_edge(source, target)
        back = structure.identity_path(target, source)
        if back is not None:
            raise CycleError(rotated_cycle([source, *back[:-1]]), self.name)
        structure.add_edge(source, target)
        ks, kt = self.index[source], self.index[target]
        self._fanout[ks].append(kt)
        for t in self.implications[ks].frontier():
            heappush(self._worklist, (t, kt, 1))
        self._extend_output_summaries(source, self._summaries_to_outputs(target))

    def set_node_summary(self, index: int, summary: Iterable[Iterable[Iterable[Any]]]) -> None:
        """Node ``index``'s internal summaries changed (a nested scope grew); ports and edges stay.

        A :class:`CycleError` (nothing changed) if a new identity summary closes an identity cycle.
        """
        structure = self.structure
        inputs, outputs = self.shape[index]
        old = structure.nodes[index]
        structure.add_node(index, inputs, outputs, summary)
        new = structure.nodes[index]
        identity = self.domain.identity
        for i, ports in enumerate(new):
            for o, ac in ports.items():
                if identity in ac and not (o in old[i] and identity in old[i][o]):
                    back = structure.identity_path(Source(index, o), Target(index, i))
                    if back is not None:
                        rows = [[row.get(o, ()) for o in range(outputs)] for row in old]
                        structure.add_node(index, inputs, outputs, rows)
                        raise CycleError(rotated_cycle([Target(index, i), *back[:-1]]), self.name)
        results_in, worklist = self.domain.results_in, self._worklist
        for i, ports in enumerate(new):
            k = self.index[Target(index, i)]
            before, after = self._fanout[k], self._links(index, ports)
            if before == after:
                continue
            frontier = self.implications[k].frontier()
            for src, s in before:
                if (src, s) not in after:
                    for t in frontier:
                        heappush(worklist, (results_in(s, t), src, -1))
            for src, s in after:
                if (src, s) not in before:
                    for t in frontier:
                        heappush(worklist, (results_in(s, t), src, 1))
            self._fanout[k] = after
        if not all(o in new[i] and new[i][o].dominates(ac) for i, ports in enumerate(old) for o, ac in ports.items()):
            # Some path got slower (not growth): recompute every summary to the outputs.
            out_summaries, self.scope_summary = self._output_summaries()
            for k, flat in enumerate(out_summaries):
                self._replace_output_summaries(k, flat)
            return
        then = self.domain.followed_by
        for i, ports in enumerate(new):
            for o, ac in ports.items():
                added = [s for s in ac if o not in old[i] or s not in old[i][o]]
                downstream = self._summaries_to_outputs(Source(index, o)) if added else {}
                if downstream:
                    through = {j: [then(s, c) for s in added for c in cs] for j, cs in downstream.items()}
                    self._extend_output_summaries(Target(index, i), through)

    def _links(self, node: int, ports: dict[int, Antichain]) -> list[tuple[int, Any]]:
        """A target's fan-out: (source index, summary) along the node's internal paths from it."""
        index = self.index
        return [(index[Source(node, o)], s) for o, ac in sorted(ports.items()) for s in ac]

    def _summaries_to_outputs(self, location: Location) -> dict[int, list[Any]]:
        """Scope output -> the minimal summaries from ``location`` to it."""
        if location.node == 0:  # the boundary: its summaries to the outputs are the scope summary's
            if location.kind == OUT:
                return {j: list(ac) for j, ac in self.scope_summary[location.port].items()}
            le, then = self.domain.le, self.domain.followed_by
            reach = {location.port: Antichain([self.domain.identity], le)}
            for i, ac in self.structure.nodes[0][location.port].items():  # back in through a scope input
                for j, cs in self.scope_summary[i].items():
                    reach.setdefault(j, Antichain((), le)).extend(then(a, c) for a in ac for c in cs)
            return {j: list(ac) for j, ac in reach.items()}
        out: dict[int, list[Any]] = {}
        for j, s in self._out_summaries[self.index[location]]:
            out.setdefault(j, []).append(s)
        return out

    def _extend_output_summaries(self, start: Location, downstream: dict[int, list[Any]]) -> None:
        """New paths leave ``start`` with these summaries to the outputs: every port reaching ``start`` gains them."""
        if not downstream:
            return
        le, then = self.domain.le, self.domain.followed_by
        for loc, ac in self.structure.summaries_to([start])[start].items():
            if loc.node == 0:
                if loc.kind == OUT:
                    row = self.scope_summary[loc.port]
                    for j, cs in downstream.items():
                        into = row.setdefault(j, Antichain((), le))
                        into.extend(then(a, c) for a in ac for c in cs)
                continue
            k = self.index[loc]
            per_output: dict[int, Antichain] = {}
            for j, s in self._out_summaries[k]:
                per_output.setdefault(j, Antichain((), le)).insert(s)
            changed = False
            for j, cs in downstream.items():
                changed |= per_output.setdefault(j, Antichain((), le)).extend(then(a, c) for a in ac for c in cs)
            if changed:
                self._replace_output_summaries(k, [(j, s) for j in sorted(per_output) for s in per_output[j]])

    def _replace_output_summaries(self, k: int, new: list[tuple[int, Any]]) -> None:
        """Port ``k``'s summaries to the outputs become ``new``: move its pointstamp frontier's output counts."""
        old = self._out_summaries[k]
        frontier = self.pointstamps[k].frontier()
        if frontier and old != new:
            results_in, changes = self.domain.results_in, self.output_changes
            for j, s in old:
                if (j, s) not in new:
                    for t in frontier:
                        changes[j].update(results_in(s, t), -1)
            for j, s in new:
                if (j, s) not in old:
                    for t in frontier:
                        changes[j].update(results_in(s, t), 1)
        self._out_summaries[k] = new

    # --- input -----------------------------------------------------------------------------------------

    def update(self, location: Location, time: Any, delta: int) -> None:
        """Buffer a pointstamp change; nothing moves until ``propagate_all``."""
        k = self.index[location]
        pending = self._pending.get(k)
        if pending is None:
            self._pending[k] = {time: delta}
        else:
            pending[time] = pending.get(time, 0) + delta

    def update_index(self, k: int, time: Any, delta: int) -> None:
        """Like :meth:`update`, by location index (the hot path of replay)."""
        pending = self._pending.get(k)
        if pending is None:
            self._pending[k] = {time: delta}
        else:
            pending[time] = pending.get(time, 0) + delta

    def update_inside(self, updates: Iterable[tuple[Location, Any, int]]) -> list[tuple[Location, Any, int]]:
        """:meth:`update` for every change of ``updates`` at a node's port, in one loop (a bulk replay's hot path);
        the changes at the scope's boundary (node 0), which the scope itself handles, are returned."""
        index, pending = self.index, self._pending
        boundary = []
        for update in updates:
            loc, time, delta = update
            if loc.node == 0:
                boundary.append(update)
                continue
            k = index.get(loc)
            if k is None:
                raise ValueError(f"scope {self.name} has no port {loc}")
            at = pending.get(k)
            if at is None:
                pending[k] = {time: delta}
            else:
                at[time] = at.get(time, 0) + delta
        return boundary

    # --- propagation -----------------------------------------------------------------------------------

    def propagate_all(self, note_pushed: bool = True) -> None:
        """Apply pending pointstamp changes and push every resulting frontier change through the graph.

        ``note_pushed=False``: the frontier changes are not noted for :meth:`drain_pushed` (a caller that would
        discard them: a bulk replay's scope that nobody watches)."""
        worklist = self._worklist
        results_in = self.domain.results_in
        if self._pending:
            pending, self._pending = self._pending, {}
            pointstamps = self.pointstamps
            out_summaries = self._out_summaries
            output_changes = self.output_changes
            total = 0
            for k, updates in pending.items():
                ps = pointstamps[k]
                if len(updates) == 1:
                    ((t, d),) = updates.items()
                    changes = ps.update(t, d)
                else:
                    changes = ps.update_iter(updates.items())
                if changes:
                    summaries = out_summaries[k]
                    for t, d in changes:
                        total += d
                        if summaries:
                            for j, s in summaries:
                                output_changes[j].update(results_in(s, t), d)
                        heappush(worklist, (t, k, d))
            self.total_counts += total
        if not worklist:
            return
        implications = self.implications
        is_target = self._is_target
        fanout = self._fanout
        pushed = self._pushed
        while worklist:
            t, k, d = heappop(worklist)
            while worklist and worklist[0][1] == k and worklist[0][0] == t:
                d += heappop(worklist)[2]
            if not d:
                continue
            changes = implications[k].update(t, d)
            if not changes:
                continue
            targets = fanout[k]
            from_target = is_target[k]
            for t2, d2 in changes:
                if note_pushed:
                    key = (k, t2)
                    v = pushed.get(key, 0) + d2
                    if v:
                        pushed[key] = v
                    else:
                        del pushed[key]
                if from_target:  # along the operator's internal summaries, to its outputs
                    for src, s in targets:
                        heappush(worklist, (results_in(s, t2), src, d2))
                else:  # along the edges, times unchanged
                    for tgt in targets:
                        heappush(worklist, (t2, tgt, d2))

    # --- output ----------------------------------------------------------------------------------------

    def drain_pushed(self) -> list[tuple[Location, Any, int]]:
        """What every port's implications frontier did since the last drain: sorted ``(location, time, ±1)``."""
        if not self._pushed:
            return []
        pushed, self._pushed = self._pushed, {}
        locations = self.locations
        return [(locations[k], t, d) for (k, t), d in sorted(pushed.items())]

    def drain_pushed_indexed(self) -> list[tuple[int, Any, int]]:
        """Like :meth:`drain_pushed`, with location indices and in no particular order (cheaper)."""
        if not self._pushed:
            return []
        pushed, self._pushed = self._pushed, {}
        return [(k, t, d) for (k, t), d in pushed.items()]

    def has_pushed(self) -> bool:
        """Some port's frontier changed since the last drain."""
        return bool(self._pushed)

    def discard_pushed(self) -> None:
        """Forget the frontier changes since the last drain (when nobody looks at them)."""
        self._pushed = {}

    def is_global(self, location: Location, time: Any) -> bool:
        """Would removing the pointstamps at exactly ``(location, time)`` change the frontier there?"""
        imp = self.implications[self.index[location]]
        return not imp.less_than(time) and imp.count_for(time) <= 1

    def tracking_anything(self) -> bool:
        return bool(self._pending) or bool(self._worklist) or self.total_counts > 0

    def pointstamps_at(self, location: Location) -> MutableAntichain:
        return self.pointstamps[self.index[location]]

    def implications_at(self, location: Location) -> MutableAntichain:
        return self.implications[self.index[location]]

    def frontier(self, location: Location) -> list[Any]:
        """The implications frontier at a port: the least times that may still arrive or be produced there."""
        return self.implications[self.index[location]].frontier()
