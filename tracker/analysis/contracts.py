"""Contract checking: does a recorded execution keep the promises progress tracking relies on?

The tracker is only as right as the batches it is fed. The seeds' safety argument needs every batch that adds a
pointstamp to be backed by one that could result in it: a capability is taken only by an operator that holds a
capability ``<= t`` or consumes a message ``<= t``; a message is produced only under such a capability. Batches are
consolidated (timely compacts them too), so a consumption and the production it enabled may cancel inside one
batch; the check therefore follows could-result-in: whatever a batch adds at ``(l, t)`` must be reachable from a
pointstamp the batch removes or a capability held before it, along a path whose summary takes it to ``<= t``
(timely's own debug check accepts exactly the output implications). A frontier that moves backwards, or counts
still negative once every batch is in, mean the recording (or the system recorded) broke the contract. The checker
flags, never raises: a debugger shows a broken log rather than refusing it. Every finding names the batch (``seq``,
worker, ``cause``) and the file line.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tracker.frontier import Antichain
from tracker.reachability import OUT, Location
from tracker.subgraph import Subgraph

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
        origin = f"{where}worker {b.worker}, seq {b.seq}, cause {b.cause}"
        return f"[{self.kind}] scope {list(self.scope)} {self.location} @ {self.time!r}: {self.message} ({origin})"


class ContractChecker:
    """Checks batches before they are applied, frontier changes after, and counts at the end."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._seen_nonempty: set[tuple[tuple, Location]] = set()
        self._last_negative: dict[tuple[tuple, Location, Any], BatchInfo] = {}

    def forget(self, path: tuple) -> None:
        """The scope at ``path`` (and what it nests) finished and was folded.

        Its counts are all zero, so nothing about it can be found any more; drop what was kept to check it."""
        n = len(path)
        self._seen_nonempty = {k for k in self._seen_nonempty if k[0][:n] != path}
        for key in [k for k in self._last_negative if k[0][:n] == path]:
            del self._last_negative[key]

    # --- before a batch --------------------------------------------------------------------------------

    def check_batch(self, scope: Subgraph, updates: list[tuple[Location, Any, int]], info: BatchInfo) -> list[Finding]:
        """Whatever the batch adds must be backed by something that could result in it.

        A capability or message at ``(l, t)`` is backed by a pointstamp ``(l', t')`` that the batch removes, or by a
        capability held at ``l'`` before the batch, when a path from ``l'`` to ``l`` takes ``t'`` to ``<= t``. This is
        the step of the seeds' safety argument, and it holds for consolidated batches too (an operator that consumes
        and re-sends within one batch nets its input out, but the capability upstream still backs the message).
        Messages entering a scope are backed only by the batch's own entries at the scope input (child 0).
        """
        found: list[Finding] = []
        removed: dict[Location, list[Any]] = {}
        for loc, t, delta in updates:
            if delta < 0:
                self._last_negative[(scope.path, loc, t)] = info
                removed.setdefault(loc, []).append(t)
        for loc, t, delta in updates:
            if delta <= 0 or (loc.kind == OUT and loc.node == 0):
                continue
            if self._backed(scope, loc, t, removed):
                continue
            if loc.kind == OUT:
                found.append(Finding(
                    "capability-without-cause", scope.path, loc, t,
                    "capability taken without holding one <= t or consuming, in the same batch, "
                    "something that could result in it",
                    info))
            else:
                found.append(Finding(
                    "message-without-capability", scope.path, loc, t,
                    "message produced, but nothing held or consumed upstream could result in it",
                    info))
        self.findings.extend(found)
        return found

    def _backed(self, scope: Subgraph, loc: Location, t: Any, removed: dict[Location, list]) -> bool:
        """Search backwards from ``loc`` for a removed pointstamp or a held capability that could result in ``t``.

        Breadth-first over (port, summary to ``loc``), keeping only minimal summaries per port, and stopping at the
        first backing found (usually one hop away) or where even the least time could no longer reach ``<= t``.
        """
        d = scope.domain
        le, add, then, minimum = d.le, d.results_in, d.followed_by, d.minimum
        tracker = scope.built_tracker()
        reverse_edges, reverse_internal = scope.in_edges, tracker.structure.internal_into
        seen = {loc: Antichain([d.identity], le)}
        queue = deque([(loc, d.identity)])
        while queue:
            here, s = queue.popleft()
            if not le(add(s, minimum), t):
                continue
            times = removed.get(here)
            if times and any(le(add(s, t0), t) for t0 in times):
                return True
            if here.kind == OUT and here.node != 0:
                k = tracker.index.get(here)
                if k is not None and any(c > 0 and le(add(s, t0), t) for t0, c in tracker.pointstamps[k].updates()):
                    return True
            if here.kind == OUT:
                steps = [(tgt, then(op, s)) for tgt, summaries in reverse_internal.get(here, ()) for op in summaries]
            else:
                steps = [(src, s) for src in reverse_edges.get(here, ())]
            for prev, summary in steps:
                ac = seen.get(prev)
                if ac is None:
                    ac = seen[prev] = Antichain((), le)
                if ac.insert(summary):
                    queue.append((prev, summary))
        return False

    # --- after a batch ---------------------------------------------------------------------------------

    def check_frontier_changes(
        self, pushed: list[tuple[Subgraph, Location, Any, int]], info: BatchInfo
    ) -> list[Finding]:
        """A frontier moves backwards when a time appears that no element of the previous frontier was <=."""
        found: list[Finding] = []
        by_port: dict[tuple[int, Location], tuple[Subgraph, list, list]] = {}
        for scope, loc, t, delta in pushed:
            entry = by_port.get((id(scope), loc))
            if entry is None:
                entry = by_port[(id(scope), loc)] = (scope, [], [])
            (entry[1] if delta > 0 else entry[2]).append(t)
        for (_, loc), (scope, added, removed) in by_port.items():
            current = scope.built_tracker().frontier(loc)
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
