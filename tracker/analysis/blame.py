"""Blame: where the seconds of each completed time went, followed as a replay applies records.

A time completes at a scope's sinks when their input frontiers pass it; :mod:`tracker.analysis.critical_path` then
splits its interval among the holders that kept it open. :class:`BlameTracker` keeps what that walk needs: per scope,
the positive intervals of its pointstamps while some time that may need them is open, and which times are open. What
the log's model calls things (Spark's tasks, stages, jobs) comes from a :class:`~tracker.analysis.critical_path.
BlameVocabulary` passed in. The answer and its kinds: ``docs/blame.md``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tracker.analysis.critical_path import BlameVocabulary, Interval, TimeBlame, walk_time
from tracker.analysis.sink_reach import ReachTables, SinkReach
from tracker.progress_log.replay import Replay
from tracker.reachability import Location
from tracker.subgraph import Subgraph
from tracker.timestamp import time_from_json

__all__ = ["BlameTracker", "ScopeHolds", "KEEP_TIMES", "KEEP_DONE", "LAZY_PENDING", "PRUNE_EVERY"]

KEEP_TIMES = 10_000  # blamed times kept per tracker (the oldest are dropped first)
KEEP_DONE = 10_000  # completed times a scope remembers by value (see ScopeHolds.done)
LAZY_PENDING = 256  # completed times a lazy tracker lets wait before walking them
PRUNE_EVERY = 32  # completions between prunes of intervals no open time can need


@dataclass
class ScopeHolds:
    """One scope's pointstamps as blame follows them: counts, intervals, and which times are open or done."""

    path: tuple
    counts: dict[tuple[Location, Any], int] = field(default_factory=dict)
    open_intervals: dict[tuple[Location, Any], Interval] = field(default_factory=dict)
    closed: list[Interval] = field(default_factory=list)
    first_seen: dict[Any, tuple[int, float]] = field(default_factory=dict)  # open time -> (seq, at) first held
    active: dict[Any, float] = field(default_factory=dict)  # open time -> when something but a driver first held it
    # completed times, oldest first: the latest KEEP_DONE, so a long-lived scope's bookkeeping stays bounded; in a
    # total order, every time at or before the latest one forgotten (``done_floor``: (le, time)) counts as completed
    done: dict[Any, None] = field(default_factory=dict)
    done_floor: tuple | None = None
    reach: SinkReach | None = None  # what the live pointstamps could result in at the sinks (None: not kept now)

    def is_done(self, t: Any) -> bool:
        """Did ``t`` complete already (so a pointstamp at it opens nothing)?"""
        if t in self.done:
            return True
        floor = self.done_floor
        return floor is not None and floor[0](t, floor[1])


class BlameTracker:
    """Blames every time that completes at a sink; fed each record after ``replay`` applied it.

    ``lazy``: walk completed times only when asked (:meth:`times`) or when ``LAZY_PENDING`` are waiting, so a
    session's ingest pays for the bookkeeping only. Works live (a session keeps one) and on a whole log.
    """

    def __init__(self, replay: Replay, vocabulary: BlameVocabulary, lazy: bool = False) -> None:
        self.replay = replay
        self.vocabulary = vocabulary
        self.lazy = lazy
        self.scopes: dict[tuple, ScopeHolds] = {}
        # the scopes a prune may change or that hold an open time; the others are idle (no open time, no ended
        # interval): a prune would leave them as they are, so it visits only these
        self._unpruned: dict[tuple, ScopeHolds] = {}
        self.results: deque[TimeBlame] = deque(maxlen=KEEP_TIMES)
        self.seq = 0
        self._pending: list[tuple[ScopeHolds, Any, int, float]] = []  # (scope, time, seq, at) completed, unwalked
        self._ports: dict[tuple, Location] = {}
        self.tables = ReachTables()
        self._completions = 0
        self._prune_due = False  # PRUNE_EVERY more times completed: prune at the next flush
        self._last_at = 0.0
        replay.on_retire.append(self._forget_retired)

    def _forget_retired(self, scope: Subgraph) -> None:
        """Blame what completed in ``scope``, then forget it: it is about to leave the live replay.

        So a long session's blame state follows what is running.
        """
        self.flush()
        path, n = scope.path, len(scope.path)
        for key in [k for k in self.scopes if k[:n] == path]:
            del self.scopes[key]
            self._unpruned.pop(key, None)
        self.tables.forget_under(path)
        self.vocabulary.forget_under(path)

    # --- feeding -------------------------------------------------------------------------------------------

    def record(self, rec: dict, line: int | None = None) -> None:
        """Follow one record the replay applied (``line``: where it is, for reporting a field blame cannot use)."""
        kind = rec.get("type")
        if kind == "progress":
            pending = self._pending
            if (self._prune_due and not pending) or pending and (not self.lazy or len(pending) >= LAZY_PENDING):
                self.flush()
            self._progress(rec, True, line)
        elif kind == "detail" or kind == "mark":
            self.vocabulary.record(rec, line)
        elif kind in ("scope", "operator", "edge"):
            self._structure_changed(rec.get("path") if kind == "scope" else rec.get("scope", []))
            if kind == "operator" and rec.get("capabilities"):
                self._initial(rec)

    def _structure_changed(self, path: Any) -> None:
        """Forget what was counted along the paths to the sinks of the scope at ``path`` and the scopes around it.

        For a scope record, ``path`` is the new scope: its parent gained a child.
        """
        for stale in self.tables.structure_changed(path, lambda: list(self.scopes)):
            holds = self.scopes.get(stale)
            if holds is not None:
                holds.reach = None  # counted along the old paths: counted afresh at the next completion check

    def _initial(self, rec: dict) -> None:
        """An operator's initial capabilities: positive from now (the last batch's time) on."""
        node = rec.get("node")
        updates = [[["out", node, o], t, 1] for o, times in enumerate(rec["capabilities"]) for t in times]
        self._progress({"scope": rec.get("scope", []), "at": self._last_at, "updates": updates}, advance=False)

    def times(self) -> list[TimeBlame]:
        """Every blamed time still kept, in completion order (pending completions are blamed first)."""
        self.flush()
        return list(self.results)

    def _progress(self, rec: dict, advance: bool = True, line: int | None = None) -> None:
        at = rec.get("at")
        if type(at) is not float and not isinstance(at, (int, float)):
            return
        path = rec.get("scope", [])
        if type(path) is not list:
            return
        self._last_at = at
        self.seq = seq = self.seq + 1
        holds = self.scopes.get(tuple(path))
        if holds is None:
            holds = self.scopes[tuple(path)] = ScopeHolds(tuple(path))
        cause = rec.get("cause")
        lowering: tuple | None = None  # the vocabulary's note for each interval this batch lowers
        if cause:
            cause, lowering = self.vocabulary.checked_cause(cause, at, line)
        else:
            cause = {}
        counts = holds.counts
        open_intervals = holds.open_intervals
        reach = holds.reach
        released = False
        applied = self.replay.applied_batch
        updates = applied[1] if applied is not None and applied[0] is rec else self._parse(rec.get("updates") or ())
        for loc, t, delta in updates:
            if loc.node == 0:
                continue  # the scope's boundary: messages entering or leaving, the parent's pointstamps
            key = (loc, t)
            before = counts.get(key, 0)
            after = before + delta
            if before > 0 and after > 0:  # still held: most updates (a task's end, a token to a stage)
                counts[key] = after
                if delta < 0 and lowering is not None:
                    interval = open_intervals.get(key)
                    if interval is not None:
                        interval.lowered_by.append(lowering)
                continue
            if after:
                counts[key] = after
            else:
                del counts[key]
            if before <= 0 < after:
                open_intervals[key] = Interval(loc, t, seq, at)
                if reach is not None:
                    reach.add(loc, t)
                if t in holds.first_seen or not holds.is_done(t):  # an open time, or one never completed
                    if t not in holds.first_seen:
                        holds.first_seen[t] = (seq, at)
                        if reach is not None and reach.total:
                            reach.opened(t)
                    if t not in holds.active and not self._is_driver(holds.path, loc.node):
                        holds.active[t] = at
                        self._unpruned[holds.path] = holds
            elif after <= 0 < before:
                interval = open_intervals.pop(key, None)
                released = True
                if reach is not None:
                    reach.remove(loc, t)
                if interval is not None:
                    interval.end_seq, interval.end_at, interval.end_cause = seq, at, cause
                    interval.end_worker = rec.get("worker")
                    if lowering is not None and delta < 0:
                        interval.lowered_by.append(lowering)
                    holds.closed.append(interval)
                    self._unpruned[holds.path] = holds
        clears = rec.get("clears")
        if clears:
            self.vocabulary.cleared(clears, at, cause)
        if released and holds.first_seen and advance:  # a sink's frontier moves only when a pointstamp is released
            self._completed(holds, seq, at)

    def _parse(self, updates: Any) -> list[tuple[Location, Any, int]]:
        """A batch's updates as the replay parses them (for initial capabilities, which it did not apply)."""
        ports = self._ports
        out = []
        for port, t, delta in updates:
            loc = ports.get(tuple(port))
            if loc is None:
                loc = ports[tuple(port)] = Location.from_json(port)
            out.append((loc, t if type(t) is int else time_from_json(t), delta))
        return out

    def _completed(self, holds: ScopeHolds, seq: int, at: float) -> list:
        """Move the open times the sinks' frontiers passed to the pending completions; return them in order.

        Only the times something other than a driver held are blamed (see below).
        """
        reach = holds.reach
        if reach is not None:
            done = reach.completed(holds.first_seen)
        else:
            try:
                scope = self.replay.root.find(holds.path)
            except KeyError:
                return []
            sinks = self.tables.sink_ports(scope)
            if not sinks:
                return []
            if not scope.inputs:
                # no input: the sinks' frontiers are exactly what the scope's own pointstamps could result in
                # there, which this tracker counts itself from now on (no propagation after every batch)
                reach = holds.reach = SinkReach(self.tables.to_sinks(scope), scope.domain, holds.counts,
                                                holds.first_seen)
                self.tables.derived.add(holds.path)
                done = reach.completed(holds.first_seen)
            else:
                # the parent's frontier, pushed in, may hold the time too: ask the tracker (settled now)
                self.replay.settle()
                frontiers = [scope.tracker.frontier(loc) for loc in sinks] if scope.tracker is not None else []
                le = scope.domain.le
                done = [t for t in holds.first_seen if not any(any(le(f, t) for f in fr) for fr in frontiers)]
        for t in done:
            self._remember_done(holds, t)
            del holds.first_seen[t]
            self._completions += 1
            if self._completions % PRUNE_EVERY == 0:
                self._prune_due = True
            if holds.active.pop(t, None) is not None:
                self._pending.append((holds, t, seq, at))
            # else nothing but a driver's promise held it (``active``: a pointstamp at t that is not a driver's
            # opened): no work ran at this time, so it has no blame, and walking its holders would only say so
        return done

    def _remember_done(self, holds: ScopeHolds, t: Any) -> None:
        """Remember that ``t`` completed, among the latest KEEP_DONE of the scope.

        An older one, forgotten, still counts as completed in a total order, where it is at or before the floor.
        """
        holds.done[t] = None
        if len(holds.done) <= KEEP_DONE:
            return
        oldest = next(iter(holds.done))
        del holds.done[oldest]
        try:
            domain = self.replay.root.find(holds.path).domain
        except KeyError:
            return
        if domain.total and (holds.done_floor is None or domain.le(holds.done_floor[1], oldest)):
            holds.done_floor = (domain.le, oldest)

    def _is_driver(self, path: tuple, node: int) -> bool:
        roles = self.tables.drivers.get(path)
        if roles is None:
            try:
                scope = self.replay.root.find(path)
            except KeyError:
                return False
            roles = self.tables.driver_nodes(scope)
        return node in roles

    # --- blaming ---------------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Walk every pending completed time; prune when due."""
        pending, self._pending = self._pending, []
        for holds, t, seq, at in pending:
            result = self._blame(holds, t, seq, at)
            if result is not None:
                self.results.append(result)
        if self._prune_due:  # only once every pending time is blamed: they may need what a prune drops
            self._prune_due = False
            self._prune()
        elif pending and self.vocabulary.crowded():
            self.vocabulary.prune_spans(self._earliest_open())

    def _blame(self, holds: ScopeHolds, t: Any, end_seq: int, end_at: float) -> TimeBlame | None:
        try:
            scope = self.replay.root.find(holds.path)
        except KeyError:
            return None
        return walk_time(scope, holds.closed, t, end_seq, end_at, self.tables, self.vocabulary)

    def _earliest_open(self) -> float | None:
        """When the earliest open time began (what a prune keeps everything since)."""
        return min((at for holds in self._unpruned.values() for at in holds.active.values()), default=None)

    def _prune(self) -> None:
        """Drop the intervals and the vocabulary's records that no open time can need."""
        cut = None
        for holds in list(self._unpruned.values()):
            opened = min(holds.active.values(), default=None)
            if opened is not None:
                cut = opened if cut is None else min(cut, opened)
            if opened is None:
                holds.closed = [iv for iv in holds.closed if iv.end_seq is None]
            else:
                holds.closed = [iv for iv in holds.closed if (iv.end_at or 0) >= opened]
            if not holds.active and not holds.closed:
                del self._unpruned[holds.path]
        self.vocabulary.prune_finished(self._finished)
        self.vocabulary.prune_spans(cut)

    def _finished(self, path: tuple, t: Any) -> bool:
        """Has ``t`` completed in the scope at ``path`` (and is no longer open)?"""
        holds = self.scopes.get(path)
        return holds is not None and t not in holds.first_seen and holds.is_done(t)
