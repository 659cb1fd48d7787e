"""Contract checking: does a recorded execution keep the promises progress tracking relies on?

The tracker is only as right as the batches it is fed. The seeds' safety argument needs every batch that adds a
pointstamp to also hold or remove one strictly before it: a capability is taken only by an operator that holds a
capability ``<= t`` or consumes a message ``<= t`` in the same batch; a message is produced only under such a
capability. A frontier that moves backwards, or counts still negative once every batch is in, mean the recording
(or the system recorded) broke that contract. The checker flags, never raises: a debugger shows a broken log
rather than refusing it. Every finding names the batch (``seq``, worker, ``cause``) and the file line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .reachability import IN, OUT, Location
from .subgraph import Subgraph

__all__ = ["Finding", "BatchInfo", "ContractChecker"]


@dataclass(frozen=True)
class BatchInfo:
    """Where a batch came from: enough to find it again."""

    seq: Any = None
    worker: Any = None
    cause: Any = None
    line: int | None = None
    index: int | None = None  # position among the progress records applied

    def to_json(self) -> dict:
        return {"seq": self.seq, "worker": self.worker, "cause": self.cause, "line": self.line, "index": self.index}


@dataclass(frozen=True)
class Finding:
    kind: str  # capability-without-cause | message-without-capability | frontier-regression | negative-count
    scope: tuple
    location: Location
    time: Any
    message: str
    batch: BatchInfo = field(default_factory=BatchInfo)

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "scope": list(self.scope),
            "port": self.location.to_json(),
            "time": self.time,
            "message": self.message,
            "batch": self.batch.to_json(),
        }

    def __str__(self) -> str:
        b = self.batch
        where = f"line {b.line}, " if b.line is not None else ""
        return f"[{self.kind}] scope {list(self.scope)} {self.location} @ {self.time!r}: {self.message} ({where}worker {b.worker}, seq {b.seq}, cause {b.cause})"


class ContractChecker:
    """Checks batches before they are applied, frontier changes after, and counts at the end."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._seen_nonempty: set[tuple[tuple, Location]] = set()
        self._last_negative: dict[tuple[tuple, Location, Any], BatchInfo] = {}

    # --- before a batch --------------------------------------------------------------------------------

    def check_batch(self, scope: Subgraph, updates: list[tuple[Location, Any, int]], info: BatchInfo) -> list[Finding]:
        """Capabilities and messages this batch adds must be backed by a capability or a consumed message."""
        tracker = scope.tracker
        d = scope.domain
        le, results_in = d.le, d.results_in
        found: list[Finding] = []
        consumed: dict[int, list[tuple[int, Any]]] = {}  # node -> [(input, time)] consumed in this batch
        harvested: dict[int, list[Any]] = {}  # scope input -> times that entered in this batch
        new_caps: dict[Location, list[Any]] = {}
        for loc, t, delta in updates:
            if delta < 0:
                self._last_negative[(scope.path, loc, t)] = info
                if loc.kind == IN:
                    consumed.setdefault(loc.node, []).append((loc.port, t))
                elif loc.node == 0:
                    harvested.setdefault(loc.port, []).append(t)

        def held(source: Location, t: Any) -> bool:
            k = tracker.index.get(source)
            if k is None:
                return False
            return any(c > 0 and le(t0, t) for t0, c in tracker.pointstamps[k].updates())

        def by_consumption(source: Location, t: Any) -> bool:
            node = scope.children.get(source.node)
            for i, t0 in consumed.get(source.node, ()):
                if node is None or node.summary is None:
                    summaries = [d.identity]
                else:
                    row = node.summary[i] if i < len(node.summary) else []
                    summaries = row[source.port] if source.port < len(row) else []
                if any(le(results_in(s, t0), t) for s in summaries):
                    return True
            return False

        for loc, t, delta in updates:
            if delta <= 0 or loc.kind != OUT or loc.node == 0:
                continue
            if held(loc, t) or by_consumption(loc, t):
                new_caps.setdefault(loc, []).append(t)
            else:
                found.append(Finding(
                    "capability-without-cause", scope.path, loc, t,
                    "capability taken without holding one <= t at this output or consuming a message <= t in the same batch",
                    info))
        producers = scope.in_edges
        for loc, t, delta in updates:
            if delta <= 0 or loc.kind != IN or loc.node == 0:
                continue
            ok = False
            for src in producers.get(loc, ()):
                if src.node == 0:
                    ok = any(le(t0, t) for t0 in harvested.get(src.port, ()))
                else:
                    ok = held(src, t) or by_consumption(src, t) or any(le(t0, t) for t0 in new_caps.get(src, ()))
                if ok:
                    break
            if not ok:
                found.append(Finding(
                    "message-without-capability", scope.path, loc, t,
                    "message produced at this input, but no operator feeding it held or took a capability <= t",
                    info))
        self.findings.extend(found)
        return found

    # --- after a batch ---------------------------------------------------------------------------------

    def check_frontier_changes(self, pushed: list[tuple[Subgraph, Location, Any, int]], info: BatchInfo) -> list[Finding]:
        """A frontier moves backwards when a time appears that no element of the previous frontier was <=."""
        found: list[Finding] = []
        by_port: dict[tuple[int, Location], tuple[Subgraph, list, list]] = {}
        for scope, loc, t, delta in pushed:
            entry = by_port.get((id(scope), loc))
            if entry is None:
                entry = by_port[(id(scope), loc)] = (scope, [], [])
            (entry[1] if delta > 0 else entry[2]).append(t)
        for (_, loc), (scope, added, removed) in by_port.items():
            current = scope.tracker.frontier(loc)
            key = (scope.path, loc)
            previous = [t for t in current if t not in added] + removed
            le = scope.domain.le
            if previous or key in self._seen_nonempty:
                for t in added:
                    if not any(le(p, t) for p in previous):
                        was = previous if previous else "complete (empty)"
                        found.append(Finding(
                            "frontier-regression", scope.path, loc, t,
                            f"frontier moved backwards: {t!r} appeared, but the frontier was {was}", info))
            if current or previous:
                self._seen_nonempty.add(key)
        self.findings.extend(found)
        return found

    # --- at the end ------------------------------------------------------------------------------------

    def finish(self, root: Subgraph) -> list[Finding]:
        """Counts that are still negative once every batch is in: a consumption nobody produced."""
        found: list[Finding] = []
        for scope in root.scopes():
            if scope.tracker is None:
                continue
            for k, loc in enumerate(scope.tracker.locations):
                for t, c in scope.tracker.pointstamps[k].updates():
                    if c < 0:
                        info = self._last_negative.get((scope.path, loc, t), BatchInfo())
                        found.append(Finding(
                            "negative-count", scope.path, loc, t,
                            f"count is {c} after every batch: more consumed or released than was produced or held",
                            info))
        self.findings.extend(found)
        return found
