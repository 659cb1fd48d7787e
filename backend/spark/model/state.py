"""What the Spark model keeps for each region, job and stage, and how it emits records and counts tokens.

The first of the model's layers (``model``'s docstring names them all): its state, the records it emits, the
regions and edges it declares, and its own count of the tokens waiting at each input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from backend.spark.model.loops import JobCode
from tracker.progress_log import records as log_records

__all__ = ["Attempt", "Job", "ModelState", "NO_SHUFFLES", "Region", "StageState", "count_tokens", "record_port",
           "record_time"]

NO_SHUFFLES: frozenset = frozenset()  # one empty set for every stage that writes no shuffle (each frozenset() is new)


def record_port(kind: str, node: int, port: int) -> list:
    """A port as records write it: ``["in" or "out", node, port]``."""
    return [kind, node, port]


def record_time(t: Any) -> Any:
    """A time as records write it: a loop's ``(epoch, iteration)`` as a JSON array."""
    return list(t) if type(t) is tuple else t


@dataclass(slots=True)  # one per job, stage or region of an application, however long
class Attempt:
    caps: int = 0
    failed: bool = False
    done: bool = False


@dataclass(slots=True)  # one per job, stage or region of an application, however long
class StageState:
    stage_id: int
    name: str
    region: Region
    node: int
    job_id: int
    epoch: Any  # its time in its region: the job's epoch, or (epoch, iteration) in a loop
    parents: Sequence[int]
    children: Sequence[int] = ()
    attempts: dict[int, Attempt] = field(default_factory=dict)
    succeeded: set | None = None  # (attempt, partition) of each first success (made at the first; gone at job end)
    completed_ok: bool = False
    # (node, input port, time) each task's output goes to; node 0: out of a loop, to its region's sink
    targets: Sequence[tuple[int, int, Any]] = ()
    num_tasks: int = 0
    iteration: int | None = None  # in a loop: the iteration (its time is (epoch, iteration))
    writes: frozenset = NO_SHUFFLES  # the shuffles it writes (loops.shuffle_writes), from the job's start
    label: str = ""  # its operator's name (placement.stage_label): what its findings are grouped by

    def job_ended(self) -> None:
        """Its job released everything: keep what names the stage (id, region, node, epoch, status), drop what only
        a running stage needs (its lineage, where its tasks' output goes, its attempts' capabilities, its first
        successes), so a long application costs a small record per stage."""
        self.succeeded = None
        self.parents = self.children = self.targets = ()
        self.attempts.clear()  # what a late task or stage event finds: nothing held
        self.writes = NO_SHUFFLES


@dataclass(slots=True)  # one per job, stage or region of an application, however long
class Region:
    key: tuple
    node: int
    name: str
    kind: str
    ops: dict[Any, int] = field(default_factory=dict)
    op_ports: dict[int, dict[Any, int]] = field(default_factory=dict)  # node -> parent signature -> input port
    edges: set = field(default_factory=set)
    next_node: int = 3
    next_epoch: int = 0
    source_time: Any = 0  # what the driver holds: the next epoch (a loop's: (epoch, 0)), None once released
    messages: dict[tuple[int, int, Any], int] = field(default_factory=dict)  # (node, port, time) -> tokens waiting
    stage_ids: dict[int, None] = field(default_factory=dict)  # its stages whose job still runs, in order (a set)
    running: int = 0  # jobs started in it and not ended
    closing: bool = False  # no job will start in it any more: it retires when its last running job ends
    retired: bool = False
    parent: Region | None = None  # a loop's region (a loop is a nested scope of its region, see loops.py)
    loops: dict[Any, Region] = field(default_factory=dict)  # loop key -> its loop scope
    last_code: JobCode | None = None  # what its latest job ran (a repeat of it is the next iteration, loops.py)
    last_iteration: int = 0  # that job's iteration (0: not in a loop)
    scope_path: tuple[int, ...] = field(init=False)  # its path, for records (log_records makes it a list)

    def __post_init__(self) -> None:
        self.scope_path = (self.node,) if self.parent is None else (*self.parent.scope_path, self.node)

    @property
    def path(self) -> list[int]:
        return list(self.scope_path)


@dataclass(slots=True)  # one per job, stage or region of an application, however long
class Job:
    job_id: int
    region: Region
    epoch: int
    stages: list[int]
    status: str = "RUNNING"
    iteration: int | None = None  # an iteration of a loop of its region (see loops.py)
    loop: Region | None = None  # that loop
    failure: dict | None = None  # why its latest stage attempt failed (what a resubmitted attempt re-runs after)


class ModelState:
    """The model's state and output: regions, jobs and stages by id, the records of the event being fed, its time."""

    def __init__(self, retain_jobs: int | None = None) -> None:
        """``retain_jobs``: keep the full records of only that many of the jobs that ended last (see ``model``'s
        docstring); None keeps every job's (a post-mortem reads them: the fleet's stage rows)."""
        self.retain_jobs = retain_jobs
        self.regions: dict[tuple, Region] = {}
        self.jobs: dict[int, Job] = {}
        self.stages: dict[int, StageState] = {}
        self.uncertain: list[str] = []
        self._next_region = 1
        self._seq: dict[str, int] = {}
        self._at = 0.0
        self._line: int | None = None
        self._out: list[dict] = []

    # --- emitting ----------------------------------------------------------------------------------------

    def _emit(self, record: dict) -> None:
        self._out.append(record)

    def _batch(self, region: Region, updates: list, cause: dict) -> dict | None:
        """Emit one progress batch of the driver's, of the non-zero ``updates`` (none if all are zero), caused by
        ``cause`` (``{"event": its type, ...the Spark ids}``); returns it."""
        updates = [u for u in updates if u[2]]
        if not updates:
            return None
        if region.retired:  # nothing can reach a retired region: Spark said more than it should have
            self._uncertain(f"{cause['event']} names region {region.name!r} after it retired")
            return None
        return self._emit_batch(region, updates, "driver", cause)

    def _emit_batch(self, region: Region, updates: list, worker: str, cause: dict) -> dict:
        """Emit the progress batch of ``updates`` (each non-zero) caused by ``cause`` (the event's line is added)."""
        seqs = self._seq
        seq = seqs.get(worker, 0)
        seqs[worker] = seq + 1
        if self._line is not None:
            cause["line"] = self._line
        batch = log_records.progress(region.scope_path, worker, seq, self._at, updates, cause)
        self._out.append(batch)
        return batch

    def _mark(self, label: str, region: Region | None = None, **extra: Any) -> None:
        self._out.append(log_records.mark(label, self._at, None if region is None else region.scope_path, **extra))

    def _time(self, ms: Any) -> None:
        if isinstance(ms, (int, float)) and ms > 0:
            self._at = ms / 1000.0

    def _uncertain(self, why: str) -> None:
        if not self.uncertain:
            self._mark(f"uncertain from here: {why}", uncertain=True)
        self.uncertain.append(why)

    # --- structure ---------------------------------------------------------------------------------------

    def _region(self, key: tuple, name: str, kind: str, start: int = 0) -> Region:
        region = self.regions.get(key)
        if region is not None and not region.retired:
            return region
        region = Region(key, self._next_region, name, kind, source_time=start)
        self._next_region += 1
        self.regions[key] = region
        self._emit(log_records.scope(region.scope_path, name, 0, 0, 1, attrs={"kind": kind}))
        self._emit(log_records.operator(region.scope_path, 1, "driver (new work)", 0, 1, capabilities=[[start]],
                                        attrs={"role": "source"}))
        self._emit(log_records.operator(region.scope_path, 2, "driver (results)", 1, 0, attrs={"role": "sink"}))
        return region

    def _edge(self, region: Region, src: int, tgt: int, port: int) -> None:
        key = (src, tgt, port)
        if key not in region.edges:
            region.edges.add(key)
            self._emit(log_records.edge(region.scope_path, ("out", src, 0), ("in", tgt, port)))  # made lists there

    # --- tokens ------------------------------------------------------------------------------------------

    def _message(self, region: Region, node: int, port: int, epoch: Any, delta: int) -> list:
        count_tokens(region, (node, port, epoch), delta)
        return [record_port("in", node, port), record_time(epoch), delta]

    @staticmethod
    def _deliver(scope: Region, targets: Sequence[tuple[int, int, Any]], updates: list) -> None:
        """One token from a task to each of a stage's ``targets`` (added to ``updates``): a stage's input, the
        region's driver (results), or, from a loop, its output (node 0), which the tracker counts at the region's
        driver at the epoch: so does the model."""
        parent = scope.parent
        for target in targets:
            node, port, time = target
            if node == 0 and parent is not None:
                count_tokens(parent, (2, 0, time[0]), 1)
            else:
                count_tokens(scope, target, 1)  # a target is the (node, port, time) its tokens wait at
            updates.append([["in", node, port], record_time(time), 1])

    @staticmethod
    def _take_messages(region: Region, node: int, epoch: Any) -> list:
        """Consume the tokens waiting at ``node``'s inputs at ``epoch`` (the model's counts go to zero)."""
        messages = region.messages
        if not messages:
            return []
        taken = [(key, count) for key, count in messages.items() if key[0] == node and key[2] == epoch and count > 0]
        time = record_time(epoch)
        updates = []
        for key, count in taken:
            del messages[key]  # as count_tokens(region, key, -count)
            updates.append([["in", node, key[1]], time if time is epoch else list(time), -count])
        return updates

    def _release_stage(self, st: StageState, attempt: int | None = None) -> list:
        updates = []
        for a, att in st.attempts.items():
            if (attempt is None or a == attempt) and att.caps > 0:
                updates.append([record_port("out", st.node, 0), record_time(st.epoch), -att.caps])
                att.caps = 0
        return updates


def count_tokens(scope: Region, key: tuple, delta: int) -> None:
    """The model's own count of the tokens waiting at ``key`` = (node, input port, time) in ``scope``."""
    count = scope.messages.get(key, 0) + delta
    if count:
        scope.messages[key] = count
    else:
        scope.messages.pop(key, None)


