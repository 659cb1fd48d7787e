"""Replay: progress-log records through the scope hierarchy, one atomic batch at a time.

The replay is the single place where log records become tracker calls: structure records grow the hierarchy
(scopes may grow at any time), a progress record is validated whole (every port exists, every time has the
scope's depth) and then applied whole, or rejected whole with a reported error naming the file line and cause. A
rejected batch never half-applies, and a bad record never ends the replay; an edge that would close a cycle where
time never advances is rejected before it is added (:mod:`tracker.identity_cycles`). Optionally every batch is checked
against the progress contract, and every frontier change it causes is handed to an observer (the debugger's
session history is one).

A ``retire`` record says a nested scope has finished for good. A one-shot replay (``keep_finished=None``, the CLI's)
only checks that the scope exists and keeps it: its ports simply stay empty. A replay that lives as long as its
application (a server session) folds finished scopes out of the live hierarchy, keeping the ``keep_finished`` most
recent ones browsable, so its memory follows what is running, not the application's age (``docs/progress-log.md``).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from tracker.analysis.contracts import BatchInfo, ContractChecker, Finding
from tracker.analysis.details import HolderDetails
from tracker.identity_cycles import cycle_closed_by
from tracker.progress_log.jsonl import REJECTED_RECORD, LineError, Opener
from tracker.progress_log.log_file import read_records
from tracker.progress_log.pages import MarkLog
from tracker.progress_log.records import DEFAULT_LIMITS, record_problem, short_repr
from tracker.reachability import CycleError, Location
from tracker.subgraph import Subgraph
from tracker.timestamp import depth_of, time_from_json

__all__ = ["Replay", "replay_file", "BatchObserver"]

MAX_UPDATES = DEFAULT_LIMITS.max_updates
SETTLE_EVERY = 1024  # without observer or checker, batches are propagated in groups of this many
_ROOT: list = []  # a progress record without a scope is the root's (never changed)

# observer(batch info, scope, updates, frontier changes [(scope, location, time, ±1)])
BatchObserver = Callable[[BatchInfo, Subgraph, list, list], None]


def _parse1(v: Any) -> Any:
    if type(v) is int:
        return v
    raise ValueError(f"timestamp {short_repr(v)} is not an integer, but this scope's times have depth 1")


def _time_parser(depth: int) -> Callable[[Any], Any]:
    if depth == 1:
        return _parse1

    def parse(v: Any) -> Any:
        t = time_from_json(v)
        if depth_of(t) != depth:
            raise ValueError(f"timestamp {short_repr(v)} has depth {depth_of(t)}, "
                             f"but this scope's times have depth {depth}")
        return t
    return parse


class Replay:
    """Applies progress-log records to a scope hierarchy rooted at ``self.root``."""

    def __init__(self, source: str = "<log>", check_contracts: bool = False, observer: BatchObserver | None = None,
                 on_error: Callable[[LineError], None] | None = None, keep_finished: int | None = None,
                 checked_records: bool = False):
        """``on_error`` is told of each rejected record as it happens (they are all kept in ``errors`` too).
        ``keep_finished``: None keeps retired scopes; a number folds every finished scope but the latest that many.
        ``checked_records``: the records are built in this process by ``log_records``' constructors from values
        checked where they entered (the Spark model: events whose types ``event_shape`` or a typed decode checked,
        64-bit integers, strings), so the shape of structure and ``detail`` records, and the fields of a progress
        record but its updates (a batch's ``clears`` among them), are not checked again; marks,
        which carry a source's values as they are, still are. What a record means (does its scope exist, has a
        time the scope's depth, does an edge close an identity cycle) is checked as always."""
        self.source = source
        self.checked_records = checked_records
        self.root = Subgraph((), "root", 0, 0, 1)
        self.checker = ContractChecker() if check_contracts else None
        self.observer = observer
        self.errors: list[LineError] = []
        self.marks = MarkLog()  # a list of dicts whose older pages are compressed (tracker/progress_log/pages.py)
        self.finding_marks: list[int] = []  # the indexes in marks of those with a `finding` (a findings list)
        self.lost_marks: list[int] = []  # the indexes in marks of those with a `lost` count (events never received)
        self.details = HolderDetails()  # what `detail` records say pointstamps are made of (running tasks)
        self.header: dict | None = None
        self.progress_records = 0  # progress records seen, applied or rejected
        self.batches_applied = 0
        self.unknown_records = 0
        self.last_at: float | None = None  # the latest batch's wall clock
        self.next_at: float | None = None  # the next batch's wall clock, when a reader stopped before it
        self.cycle: str | None = None  # why the structure cannot be settled, once a CycleError said so
        self._sink: list | None = [] if (check_contracts or observer is not None) else None
        self.root.set_pushed_sink(self._sink)
        self._scopes: dict[tuple, tuple[Subgraph, dict, Callable]] = {}
        self.on_error = on_error
        self._root_entry: tuple | None = None
        self._unsettled = 0  # batches received but not yet propagated (only without observer and checker)
        self.keep_finished = keep_finished
        self.finished: deque[tuple] = deque()  # scopes a retire record named, not folded yet (oldest first)
        self.folded = 0  # scopes folded out of the live hierarchy
        self.on_retire: list[Callable[[Subgraph], None]] = []  # told of each scope just before it is folded
        # the last progress record applied and its updates as parsed, ``(record, [(location, time, delta)])``: what
        # a consumer fed after the replay (blame) reads instead of parsing the batch again
        self.applied_batch: tuple[dict, list] | None = None

    @property
    def findings(self) -> list[Finding]:
        return self.checker.findings if self.checker else []

    # --- records ---------------------------------------------------------------------------------------

    def apply(self, record: dict, line: int | None = None) -> bool:
        """Apply one record; on a problem, report it (``self.errors``) and return False. Never raises for bad input."""
        kind = record.get("type")
        if kind == "progress":  # most records: their fields are checked where they are read
            try:
                self._progress(record, line)
                return True
            except (ValueError, KeyError, TypeError, IndexError) as e:
                msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
                self._error(line, f"progress record rejected: {msg}")
                return False
        if kind == "mark" or not self.checked_records:  # check the whole shape first
            problem = record_problem(record)
            if problem is not None:
                self._error(line, f"{kind if type(kind) is str else 'untyped'} record rejected: {problem}")
                return False
        try:
            if kind == "detail":  # half a Spark log's records (a task's start)
                self.details.apply(record, self.batches_applied)
                return True
            if self._unsettled and kind == "edge" and self._reroutes_pending(record):
                self.settle()
            if kind == "operator":
                self._operator(record)
            elif kind == "edge":
                scope = self._scope(record.get("scope"))[0]
                source, target = Location.from_json(record.get("from")), Location.from_json(record.get("to"))
                cycle = cycle_closed_by(scope, source, target)
                if cycle is not None:  # rejected before it is added: the structure stays buildable
                    raise cycle
                scope.add_edge(source, target, cycle_checked=True)
            elif kind == "scope":
                self._new_scope(record)
            elif kind == "retire":
                self._retire(record)
            elif kind == "mark":
                mark = dict(record)
                mark["after"] = self.batches_applied
                if isinstance(mark.get("finding"), str):
                    self.finding_marks.append(len(self.marks))
                if type(mark.get("lost")) is int:
                    self.lost_marks.append(len(self.marks))
                self.marks.append(mark)
            elif kind == "header":
                self.header = record
            else:
                self.unknown_records += 1
            return True
        except (ValueError, KeyError, TypeError, IndexError) as e:
            msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
            self._error(line, f"{kind or 'untyped'} record rejected: {msg}")
            return False

    def feed(self, records: Iterable[tuple[int, dict]], limit: int | None = None) -> None:
        """Apply records in order; with ``limit``, stop after that many progress records (``--at N``)."""
        if limit is None:
            apply = self.apply
            for line, record in records:
                apply(record, line)
            return
        for line, record in records:
            if limit is not None and record.get("type") == "progress" and self.progress_records >= limit:
                self.stopped_before(record)
                break
            self.apply(record, line)

    def stopped_before(self, record: dict) -> None:
        """A reader stops before this progress record (``--at N``, a seek to a past batch): the state it shows lasts
        until the record's wall clock (:attr:`state_until`)."""
        at = record.get("at")
        self.next_at = at if type(at) is float or type(at) is int else None

    @property
    def state_until(self) -> float | None:
        """The wall clock the present state lasts until: what a running task's "running for" is measured to. The
        state after batch N lasts until batch N+1, and a task launched between them (its ``detail`` record sits
        there) runs in it: so the next batch's ``at`` when a reader stopped before it, else (a live tail, the whole
        log) the latest of the last batch's ``at`` and the ``at`` of the details present. The one rule for every
        explanation at a batch (CLI, REST, bundle). Found when asked: applying a record pays nothing for it."""
        if self.next_at is not None:
            return self.next_at
        latest = self.details.latest_at()
        if self.last_at is None or (latest is not None and latest > self.last_at):
            return latest
        return self.last_at

    def finish(self) -> list[Finding]:
        """Settle the hierarchy; with contract checking, report counts left negative. A structure that cannot be
        settled (a cycle whose summaries never advance time) is reported, not raised."""
        if not self._settled_or_reported():
            return []
        if self.checker is not None:
            return self.checker.finish(self.root)
        return []

    def _settled_or_reported(self) -> bool:
        try:
            self.root.schedule()
        except CycleError as e:
            if self.cycle is None:
                self.cycle = str(e)
                self._error(None, f"the structure cannot be replayed: {e}")
            return False
        return True

    def _error(self, line: int | None, reason: str) -> None:
        self.report(line, reason)

    def report(self, line: int | None, reason: str, kind: str = REJECTED_RECORD) -> None:
        """Report a problem with the record at ``line`` as the replay reports its own (``errors``, ``on_error``):
        a reader of fields the replay does not check (blame) reports a bad one here, so a log's problems are in one
        list."""
        err = LineError(self.source, line or 0, kind, reason)
        self.errors.append(err)
        if self.on_error is not None:
            self.on_error(err)

    def _scope(self, path: Any) -> tuple[Subgraph, dict, Callable]:
        key = tuple(path) if isinstance(path, list) else path
        entry = self._scopes.get(key)
        if entry is None:
            if not isinstance(path, list) or not all(type(k) is int for k in path):
                raise ValueError(f"scope path {short_repr(path)} is not a list of child indices")
            scope = self.root.find(path)
            entry = self._scopes[key] = (scope, {}, _time_parser(scope.domain.depth))
        return entry

    def _new_scope(self, record: dict) -> None:
        path = record.get("path")
        if not isinstance(path, list) or not path or not all(type(k) is int for k in path):
            raise ValueError(f"scope path {short_repr(path)} is not a non-empty list of child indices")
        parent = self._scope(path[:-1])[0]
        depth = record.get("depth", parent.domain.depth)
        if type(depth) is not int:
            raise ValueError(f"depth {depth!r} is not an integer")
        inputs, outputs = _count(record, "inputs"), _count(record, "outputs")
        parent.add_scope(path[-1], str(record.get("name", "")), inputs, outputs, depth)

    def _retire(self, record: dict) -> None:
        path = tuple(record["path"])  # its shape was checked (log_records)
        self.root.find(path)  # a KeyError names a scope that does not exist (or was folded already)
        if path in self.finished:
            raise ValueError(f"scope {list(path)} was retired twice")
        if self.keep_finished is None:
            return
        self.finished.append(path)
        while len(self.finished) > self.keep_finished:
            self._fold(self.finished.popleft())

    def _fold(self, path: tuple) -> None:
        """Take the finished scope at ``path`` out of the live hierarchy (its node stays in its parent, unless it has
        no ports: then nothing connected it, and it is dropped)."""
        if self._unsettled:
            self.settle()
        parent = self.root.find(path[:-1])
        problem = parent.retire_problem(path[-1])
        if problem is not None:
            raise ValueError(f"retire {list(path)}: {problem}")
        scope = self.root.find(path)
        for listener in self.on_retire:
            listener(scope)
        parent.retire(path[-1])
        parent.drop_retired(path[-1])
        self.details.forget(path)
        if self.checker is not None:
            self.checker.forget(path)
        n = len(path)
        for key in [k for k in self._scopes if type(k) is tuple and k[:n] == path]:
            del self._scopes[key]
        self.folded += 1

    def _operator(self, record: dict) -> None:
        scope, _, parse = self._scope(record.get("scope"))
        node = record.get("node")
        if type(node) is not int:
            raise ValueError(f"node {node!r} is not an integer")
        inputs, outputs = _count(record, "inputs", 1), _count(record, "outputs", 1)
        summary = record.get("summary")
        if summary is not None:
            summary = [[[parse(s) for s in ac] for ac in row] for row in summary]
        caps = record.get("capabilities")
        if caps is not None:
            caps = [[parse(t) for t in times] for times in caps]
        attrs = record.get("attrs") or {}
        if not isinstance(attrs, dict):
            raise ValueError("attrs must be a JSON object")
        scope.add_operator(node, str(record.get("name", "")), inputs, outputs, summary, caps, attrs)

    def _progress(self, record: dict, line: int | None) -> None:
        self.progress_records += 1
        path = record.get("scope", _ROOT)
        if path is _ROOT or (type(path) is list and not path):  # the root scope: most batches of most logs
            entry = self._root_entry
            if entry is None:
                entry = self._root_entry = self._scope([])
            scope, ports, parse = entry
        else:
            scope, ports, parse = self._scope(path)
        # The one check of a progress record's fields (log_records leaves them here, where each is read anyway);
        # a record built in this process from checked values (``checked_records``) has only its updates checked.
        raw_updates = record.get("updates")
        if type(raw_updates) is not list:
            raise ValueError("updates must be a list of [port, time, delta]")
        if len(raw_updates) > MAX_UPDATES:
            raise ValueError(f"{len(raw_updates)} updates in one batch (limit {MAX_UPDATES})")
        at, clears = record.get("at"), record.get("clears")
        if not self.checked_records:
            worker, cause = record.get("worker"), record.get("cause")
            if not (type(worker) is int and type(at) is float and clears is None
                    and (cause is None or type(cause) is dict)):
                _check_progress_fields(worker, at, cause, clears)  # (the common types need no closer look)
        updates: list[tuple[Location, Any, int]] = []
        append = updates.append
        get_port = ports.get
        if parse is _parse1:
            for port, t, d in raw_updates:
                loc = get_port(tuple(port))
                if loc is None:
                    loc = self._port(scope, ports, port)
                if type(d) is not int or type(t) is not int:
                    t = parse(t)
                    if type(d) is not int:
                        raise ValueError(f"delta {d!r} is not an integer")
                append((loc, t, d))
        else:
            for port, t, d in raw_updates:
                loc = get_port(tuple(port))
                if loc is None:
                    loc = self._port(scope, ports, port)
                if type(d) is not int:
                    raise ValueError(f"delta {d!r} is not an integer")
                append((loc, parse(t), d))
        if at is not None:
            self.last_at = at
        self.next_at = None
        sink = self._sink
        if sink is None:
            # Nobody watches individual batches: settle in bulk (counts add up, so the state is the same).
            scope.receive(updates)
            self.applied_batch = (record, updates)
            self.batches_applied += 1
            if clears:
                self.details.clear(scope.path, updates, clears)
            self._unsettled += 1
            if self._unsettled >= SETTLE_EVERY:
                self.settle()
            return
        info = BatchInfo(record.get("seq"), record.get("worker"), record.get("cause"), line, self.batches_applied)
        if self.checker is not None:
            if scope.needs_build:
                self.root.schedule()
            self.checker.check_batch(scope, updates, info)
        scope.receive(updates)
        self.applied_batch = (record, updates)
        self.batches_applied += 1
        if clears:
            self.details.clear(scope.path, updates, clears)
        self.root.schedule()
        pushed = sink[:]
        sink.clear()
        if self.checker is not None and pushed:
            self.checker.check_frontier_changes(pushed, info)
        if self.observer is not None:
            self.observer(info, scope, updates, pushed)

    def resume(self, pointstamps: Iterable[tuple[tuple, list[tuple[Location, Any, int]]]], batches_applied: int,
               progress_records: int, last_at: float | None) -> None:
        """Continue from a checkpoint taken after ``batches_applied`` batches (how the session history seeks).

        The structure declared up to the checkpoint has been applied already. The capabilities it declared are
        dropped, because the checkpoint's counts include whatever is still held; the checkpoint's pointstamps
        (``(scope path, [(location, time, count)])``) are received and settled, and the counters are set, so the
        next progress record applied is batch ``batches_applied + 1``.
        """
        for scope in self.root.scopes():
            scope.drop_initial_capabilities()
        by_path = dict(pointstamps)
        for scope in self.root.scopes():
            updates = by_path.get(scope.path)
            if updates:
                scope.receive(updates)
        self.root.schedule()
        self.batches_applied = batches_applied
        self.progress_records = progress_records
        self.last_at = last_at
        self.next_at = None

    def _reroutes_pending(self, record: dict) -> bool:
        """Would this edge change where batches received but not yet propagated go? Only an edge from a nested
        scope's output would: messages a nested scope produced reach its parent (along the edges from that output)
        when it is scheduled, so they must be moved before the edge exists. Everything else structure changes is
        read from counts and frontiers, which add up the same in any order (a bulk replay's state is the same as
        one settled before each structure record)."""
        source = record.get("from")
        node = source[1] if type(source) is list and len(source) == 3 else None
        if type(node) is not int:
            return True  # rejected below, where the reason is reported; settle as always
        try:
            scope = self._scope(record.get("scope"))[0]
        except (ValueError, KeyError, TypeError):
            return True
        child = scope.children.get(node)
        return child is None or child.scope is not None

    def settle(self) -> None:
        """Propagate every batch received so far through the hierarchy."""
        self._unsettled = 0
        self.root.schedule()

    @staticmethod
    def _port(scope: Subgraph, ports: dict, port: Any) -> Location:
        loc = Location.from_json(port)
        _check_port(scope, loc)
        ports[tuple(port)] = loc
        return loc

    # --- reading the state -----------------------------------------------------------------------------

    def state(self) -> dict:
        """Every scope's ports: frontier, pointstamps and implications (the `frontiers --json` shape); no scopes
        when the structure cannot be settled (see ``cycle``)."""
        if not self._settled_or_reported():
            return {"scopes": []}
        scopes: list[dict[str, Any]] = []
        for scope in self.root.scopes():
            entry: dict[str, Any] = {"path": list(scope.path), "name": scope.name, "depth": scope.domain.depth,
                                     "ports": scope.port_state()}
            if scope.parent is not None:
                entry["reported"] = scope.reported_outputs()
            scopes.append(entry)
        return {"scopes": scopes}


def _check_progress_fields(worker: Any, at: Any, cause: Any, clears: Any) -> None:
    """A progress record's fields but its updates have the types the format says (else ValueError)."""
    if worker is not None and type(worker) is not int and type(worker) is not str:
        raise ValueError(f"worker must be an integer or a string, not {short_repr(worker)}")
    if at is not None and type(at) is not float and type(at) is not int:
        raise ValueError(f"at must be a number of seconds, not {short_repr(at)}")
    if cause is not None and type(cause) is not dict:  # free metadata, but an object: blame and explain read it
        raise ValueError(f"cause must be a JSON object, not {short_repr(cause)}")
    if clears is not None and (type(clears) is not list or not all(type(k) is str for k in clears)):
        raise ValueError(f"clears must be a list of detail keys (strings), not {short_repr(clears)}")


def _count(record: dict, key: str, default: int = 0) -> int:
    v = record.get(key, default)
    if type(v) is not int or v < 0:
        raise ValueError(f"{key} must be a non-negative integer, not {v!r}")
    return v


def _check_port(scope: Subgraph, loc: Location) -> None:
    if loc.node == 0:
        count = scope.inputs if loc.kind == 1 else scope.outputs
    else:
        child = scope.children.get(loc.node)
        if child is None:
            raise ValueError(f"scope {scope.label} has no node {loc.node} (port {loc})")
        count = child.outputs if loc.kind == 1 else child.inputs
    if loc.port >= count:
        raise ValueError(f"scope {scope.label}: port {loc} does not exist")


def replay_file(
    path: str | os.PathLike,
    at: int | None = None,
    check_contracts: bool = False,
    observer: BatchObserver | None = None,
    on_error: Callable[[LineError], None] | None = None,
    opener: Opener | None = None,
) -> Replay:
    """Replay a progress log (or its first ``at`` progress records) and settle it (``opener``: ``read_records``')."""
    replay = Replay(os.fspath(path), check_contracts, observer, on_error)
    replay.feed(read_records(path, replay.errors, on_error, opener=opener), limit=at)
    replay.finish()
    return replay
