"""The Spark model: a Spark application's listener events as scopes, operators, edges and atomic progress batches.

Input is the stream of Spark listener events as JSON dicts (exactly what Spark writes to event logs, and what the
live listener forwards); output is progress-log records (format v1), so the tracker computes, for every stage and
every epoch, what may still arrive and who holds it. ``docs/spark-model.md`` is the mapping, one row per event.

* The root scope is the application (integer epochs). Each Structured Streaming query, job group, SQL execution
  or lone job gets a *region* (a nested scope with the same times) so the view can fold it. A streaming query's
  epoch is the micro-batch id; a batch region's epoch is the job's sequence number in it.
* In a region: node 1 is the *driver source* (it holds a capability at the next epoch while work may still come),
  node 2 the *driver sink* (where results arrive), and one operator per stage *signature* (its name and RDD
  names/scopes, never ids, plus its parents' signatures), so micro-batch 41 and 42 run through the same operators.
  Input 0 of a stage operator is "work from outside the region"; input k >= 1 is its k-th parent stage.
* A driver loop (a batch region's jobs that apply the same code to the previous job's output, ``loops.py``) gets
  a nested *loop* scope in its region: times ``[epoch, iteration]``, one step operator whose output feeds back
  (summary ``[0, 1]``) into its own input 1, its own driver source, one output to the region's driver sink.
* Job start: the source sends one token to each stage's input 0 (a skipped stage, whose shuffle output exists,
  sends to its children that run instead) and moves on. Stage submitted: consume the waiting tokens and take one
  capability per task, in one batch. Task success: drop one capability and send one token to each child stage (or
  to the sink). Failures keep the capability (Spark retries); duplicates (speculation) send nothing. Stage failed,
  job end, query terminated and application end release whatever is still held, so a finished application ends
  empty.
* A region that can get no more work (a lone job at its end, a SQL execution at its end once its jobs ended, a
  terminated query, every region at application end) is released and *retired* (a ``retire`` record): a long
  application's reader folds it out of its live state, and the model forgets what it kept for its structure.
* What Spark's own job list shows (every job's and stage attempt's status) is kept for the whole application. A
  model made with ``retain_jobs=N`` (a server session's: it lives as long as its application) keeps the full
  records (``jobs``, ``stages``: region, stages, node, epoch) of the N jobs that ended last and folds older ones
  into :class:`StatusTable` s, a byte per job and per stage attempt; ``summary()`` reads both, and a stage whose
  record was folded is still known to have completed (a later job listing it skips it).

Spark drops events when a listener lags; a gap (a task of a stage that was never submitted, a job that never
started) marks the session *uncertain* from that point instead of inventing progress.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracker import log_records

from .dense_keys import DENSE_SLACK, dense_index
from .event_shape import event_problem
from .loops import (
    JobCode,
    StageCode,
    chain_positions,
    job_code,
    plan_iteration,
    plan_repeat,
    repeats,
    shuffles_read,
)
from .tasks import TaskLedger, failure_text, partition_of

__all__ = ["HANDLED_EVENTS", "SparkModel", "SparkSummary"]

STREAMING_PREFIX = "org.apache.spark.sql.streaming.StreamingQueryListener$"
_NOTHING: frozenset = frozenset()  # one empty set for every stage that writes no shuffle (each frozenset() is new)
SIGNATURE_IDS_KEPT = 50_000  # stage signatures remembered at least (_intern_signature): ~10 MB at most
SESSION_RETAINED_JOBS = 1000  # a session's model keeps this many ended jobs' full records (as spark.ui.retainedJobs)
KEEP_WRITTEN = 100_000  # shuffle outputs remembered for recognising skipped stages (a few MB at most)
_STEP = ("loop step",)  # the signature of a loop's step operator, in its loop scope
_FEEDBACK = 2  # a loop scope's feedback operator (node 1 is its driver)


def _port(kind: str, node: int, port: int) -> list:
    return [kind, node, port]


def _jt(t: Any) -> Any:
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
    writes: frozenset = _NOTHING  # the shuffles it writes (loops.shuffle_writes), from the job's start

    def job_ended(self) -> None:
        """Its job released everything: keep what names the stage (id, region, node, epoch, status), drop what only
        a running stage needs (its lineage, where its tasks' output goes, its attempts' capabilities, its first
        successes), so a long application costs a small record per stage."""
        self.succeeded = None
        self.parents = self.children = self.targets = ()
        self.attempts.clear()  # what a late task or stage event finds: nothing held
        self.writes = _NOTHING


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


_STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "PENDING", "ACTIVE", "COMPLETE", "SKIPPED")
_STATUS_CODE = {status: k + 1 for k, status in enumerate(_STATUSES)}  # 0: no entry


class StatusTable:
    """Statuses of finished jobs (keyed by job id) or stage attempts (``(stage id, attempt)``), a byte each
    (``dense_keys``): attempt 0 of id ``i`` is byte ``i`` of an array; anything else goes to a small dict."""

    def __init__(self) -> None:
        self._codes = bytearray()
        self._others: dict = {}
        self._count = 0

    def __setitem__(self, key: Any, status: str) -> None:
        k, code = dense_index(key), _STATUS_CODE.get(status)
        codes = self._codes
        if k is not None and code is not None and k < len(codes) + DENSE_SLACK:
            if k >= len(codes):
                codes.extend(bytes(k + 1 - len(codes)))
            self._count += codes[k] == 0
            codes[k] = code
            if self._others and self._others.pop(key, None) is not None:
                self._count -= 1  # kept beside the array until it grew past this id: one entry, not two
            return
        if k is not None and k < len(codes) and codes[k]:
            codes[k] = 0  # a status with no code now: it lives beside the array only
            self._count -= 1
        self._count += key not in self._others
        self._others[key] = status

    def get(self, key: Any) -> str | None:
        k = dense_index(key)
        if k is not None and k < len(self._codes) and self._codes[k]:
            return _STATUSES[self._codes[k] - 1]
        return self._others.get(key)

    def __len__(self) -> int:
        return self._count

    def items(self, stage_keys: bool) -> Iterator[tuple[Any, str]]:
        """Every entry; ``stage_keys``: the dense ones as ``(stage id, 0)``."""
        for k, code in enumerate(self._codes):
            if code:
                yield ((k, 0) if stage_keys else k), _STATUSES[code - 1]
        yield from self._others.items()


@dataclass
class SparkSummary:
    """What Spark itself would report: jobs, stage attempts and their statuses, task ends."""

    jobs: dict[int, str]
    stages: dict[tuple[int, int], str]
    tasks: int
    uncertain: bool


class SparkModel:
    """Turns Spark listener events (dicts) into progress-log records, one event at a time."""

    def __init__(self, retain_jobs: int | None = None) -> None:
        """``retain_jobs``: keep the full records of only that many of the jobs that ended last (see the module
        docstring); None keeps every job's (a post-mortem reads them: the fleet's stage rows)."""
        self.retain_jobs = retain_jobs
        self.regions: dict[tuple, Region] = {}
        self.jobs: dict[int, Job] = {}
        self.stages: dict[int, StageState] = {}
        self.unknown_events: dict[str, int] = {}
        self.task_ends = 0
        self.uncertain: list[str] = []
        self.events_lost = 0  # counted by note_lost
        self.app_name: str | None = None
        self.app_id: str | None = None
        self.ended = False
        self.damaged_events = 0  # events skipped because a field had the wrong type (see event_shape)
        self.on_damaged: Callable[[int | None, str, str], None] | None = None  # (line, event type, what is wrong)
        self._next_region = 1
        self._seq: dict[str, int] = {}
        self._at = 0.0
        self._line: int | None = None
        self._out: list[dict] = []
        self._queries: dict[str, str] = {}  # query id -> name
        # (stage id, attempt) -> PENDING/ACTIVE/COMPLETE/FAILED/SKIPPED, as Spark's own status listener keeps it
        self.stage_status: dict[tuple[int, int], str] = {}
        self._more_attempts: dict[int, list[int]] = {}  # stage id -> its attempts but 0 in stage_status (rare)
        self._ended_jobs: deque[int] = deque()  # with retain_jobs: the jobs whose records are kept, oldest first
        self.folded_jobs = StatusTable()  # with retain_jobs: the statuses of the jobs ended before those
        self.folded_stages = StatusTable()  # and of their stage attempts
        # the shuffles stages that completed wrote, the latest KEEP_WRITTEN (a later stage writing them is skipped)
        self._written: dict[tuple, None] = {}
        # a stage signature (base, its parents' ids) -> its id, for the signatures seen last (_intern_signature)
        self._signature_ids: dict[Any, int] = {}
        self._older_signature_ids: dict[Any, int] = {}  # the generation before: promoted back when seen again
        self._next_signature_id = 0
        self.tasks = TaskLedger()  # which tasks make up each stage's capabilities (detail records)

    # --- driving -----------------------------------------------------------------------------------------

    def feed(self, event: dict, line: int | None = None, checked: bool = False) -> list[dict]:
        """The progress-log records this event produces (possibly none). ``checked``: the fields the model reads
        already have the types ``event_shape`` requires (a typed decode, ``event_fields.model_decoder``), so they
        are not checked again."""
        self._out = []
        self._line = line
        kind = event.get("Event")
        # a typed decode checked every type: only a job start has a field types cannot check (event_shape)
        problem = None if checked and kind != "SparkListenerJobStart" else event_problem(event, checked)
        if problem is not None:  # skipped whole: half an event would leave the model inconsistent
            self.damaged_events += 1
            if self.on_damaged is not None:
                self.on_damaged(line, str(kind), problem)
            self._uncertain(f"a damaged {kind} event was skipped" + (f" (line {line})" if line else ""))
            return self._out
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None and isinstance(kind, str) and kind.startswith(STREAMING_PREFIX):
            handler = _HANDLERS.get(kind[len(STREAMING_PREFIX):])
        if handler is None:
            name = kind if isinstance(kind, str) else f"<{type(kind).__name__}>"  # never the repr of a hostile value
            self.unknown_events[name] = self.unknown_events.get(name, 0) + 1
            return []
        handler(self, event)
        return self._out

    @property
    def at(self) -> float:
        """Wall-clock seconds of the latest event that carried a time: what the model's records are stamped with."""
        return self._at

    def note_gap(self, reason: str) -> list[dict]:
        """A gap found outside the model (lost events, a dropped connection): mark the model uncertain from here
        for ``reason``. Returns the records that say so (a mark, the first time)."""
        self._out = []
        self._uncertain(reason)
        return self._out

    def note_lost(self, count: int, reason: str, until: float | None = None) -> list[dict]:
        """Events known to be lost (a broken connection, a full queue): an "events lost" mark with the ``count``, from
        the latest event's time to ``until`` (wall-clock seconds, when known), and uncertain from here. The marks'
        ``lost``/``lost_until`` fields let the timeline draw the stretch and explain/blame say an answer spans it."""
        self._out = []
        self._uncertain(reason)
        self.events_lost += count
        extra: dict[str, Any] = {"lost": count, "uncertain": True}
        if until is not None and until > self._at:
            extra["lost_until"] = until
        self._mark(f"events lost: {count}: {reason}", **extra)
        return self._out

    def note(self, label: str) -> dict:
        """A timeline mark at the model's current time, for something that happened outside the events."""
        return log_records.mark(label, self._at)

    def summary(self) -> SparkSummary:
        jobs = dict(self.folded_jobs.items(False))
        jobs.update((j, job.status) for j, job in self.jobs.items())
        stages = dict(self.folded_stages.items(True))
        stages.update(self.stage_status)
        return SparkSummary(jobs, stages, self.task_ends, bool(self.uncertain))

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

    def _stage_operator(self, region: Region, info: dict, code: StageCode, signature: Any, parent_sigs: list,
                        streaming: bool) -> int:
        node = region.ops.get(signature)
        if node is not None:
            return node
        node = region.next_node
        region.next_node += 1
        region.ops[signature] = node
        ports: dict[Any, int] = {}
        region.op_ports[node] = ports
        for k, ps in enumerate(parent_sigs, start=1):
            ports.setdefault(ps, k)
        scopes = list(code.key[1])  # sorted, each once
        attrs = {
            "stage_ids": [info.get("Stage ID")],
            "stage_name": code.name,
            "tasks": info.get("Number of Tasks"),
            "rdds": code.rdd_names[:8],
            "scopes": scopes,
            "callsite": (info.get("Details") or "").split("\n", 1)[0][:300],
        }
        name = _stage_label(info, scopes, streaming)
        self._emit(log_records.operator(region.scope_path, node, name, 1 + len(parent_sigs), 1, attrs=attrs))
        self._edge(region, 1, node, 0)
        return node

    # --- events ------------------------------------------------------------------------------------------

    def _on_app_start(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self.app_name = e.get("App Name")
        self.app_id = e.get("App ID")
        self._mark(f"application {self.app_name or ''} started".replace("  ", " "))

    def _on_job_start(self, e: dict) -> None:
        self._time(e.get("Submission Time"))
        job_id: int = e["Job ID"]
        props = e.get("Properties") or {}
        infos = e.get("Stage Infos") or []
        query: str = props.get("sql.streaming.queryId") or ""
        streaming = bool(query) and props.get("streaming.sql.batchId") is not None
        if streaming:
            epoch = int(props["streaming.sql.batchId"])
            name = self._queries.get(query) or query[:8]
            region = self._region(("query", query), f"query {name} (streaming)", "streaming query", epoch)
        else:
            group = props.get("spark.jobGroup.id")
            sql = props.get("spark.sql.execution.id")
            if group:
                key, name, kind = ("group", group), f"job group {group}", "job group"
            elif sql is not None:
                key, name, kind = ("sql", str(sql)), f"SQL execution {sql}", "sql execution"
            else:
                desc = props.get("spark.job.description") or (infos[-1].get("Stage Name") if infos else "")
                key, name, kind = ("job", job_id), f"job {job_id}: {desc}"[:120], "job"
            region = self._region(key, name, kind)
            epoch = region.next_epoch
            region.next_epoch += 1
        by_id = {i.get("Stage ID"): i for i in infos}
        order = sorted(by_id)
        parents: dict[int, list[int]] = {}
        children: dict[int, list[int]] = {sid: [] for sid in by_id}
        for sid, info in by_id.items():
            listed = info.get("Parent IDs")
            parents[sid] = ps = [p for p in listed if p in by_id] if listed else []
            for p in ps:
                children[p].append(sid)
        codes = {sid: StageCode(info) for sid, info in by_id.items()}  # every RDD read once, here
        sigs: dict[int, Any] = {}
        interned = self._signature_ids

        def signature(sid: int, depth: int = 0) -> Any:
            sig = sigs.get(sid)
            if sig is None:
                base = _base_signature(codes[sid], streaming)
                if depth < 50:
                    ps = parents[sid]
                    if len(ps) > 1:
                        base = (base, tuple(sorted((signature(p, depth + 1) for p in ps), key=repr)))
                    else:
                        base = (base, (signature(ps[0], depth + 1),) if ps else ())
                # interned: a lineage that grows by one stage per job (a driver loop) would otherwise nest its
                # signatures ever deeper, and hashing and sorting them would cost the square of the lineage per job
                sig = interned.get(base)
                if sig is None:
                    sig = self._intern_signature(base)
                sigs[sid] = sig
            return sig

        _distinct(order, signature, sigs)
        writes = {sid: shuffles_read(codes[sid].output, [by_id[c] for c in cs]) for sid, cs in children.items() if cs}
        skipped = {sid for sid, w in writes.items() if self._output_exists(sid, w)} if writes else _NOTHING
        place, iteration, loop = self._place(region, epoch, codes, parents, sigs, skipped, streaming)
        for sid in order:
            scope, sig, _ = place[sid]
            ps = parents[sid]
            if sig == _STEP:
                parent_sigs = [_STEP]
            else:
                parent_sigs = [place[p][1] for p in sorted(ps) if place[p][0] is scope] if ps else []
            node = self._stage_operator(scope, by_id[sid], codes[sid], sig, parent_sigs, streaming)
            if sig == _STEP:  # the feedback: its output, one iteration on, is its own input 1
                self._edge(scope, node, _FEEDBACK, 0)
                self._edge(scope, _FEEDBACK, node, 1)
            for p in parents[sid]:
                pscope, psig, _ = place[p]
                if pscope is scope and not (psig == sig == _STEP):
                    self._edge(scope, scope.ops[psig], node, scope.op_ports[node].get(psig, 1))
            if not children[sid]:  # a result stage: out of its loop, or to the region's driver (results)
                self._edge(scope, node, 0 if scope.parent is not None else 2, 0)
        updates: dict[int, tuple[Region, list]] = {id(region): (region, [])}
        for sid in order:
            info = by_id[sid]
            self._set_stage_status(sid, info.get("Stage Attempt ID", 0), "PENDING", if_absent=True)
            scope, sig, t = place[sid]
            node = scope.ops[sig]
            if children[sid]:
                fed = [(c, scope.ops[place[c][1]], scope.op_ports[scope.ops[place[c][1]]].get(sig, 1), place[c][2])
                       for c in children[sid] if place[c][0] is scope]
                targets = [f[1:] for f in fed]
            else:
                fed, targets = [], [(0, 0, t) if scope.parent else (2, 0, epoch)]
            entry = updates.get(id(scope))
            if entry is None:
                entry = updates[id(scope)] = (scope, [])
            ups = entry[1]
            if sid in skipped:  # its output exists: it feeds the children that run, in its scope, now
                ups += [self._message(scope, cnode, port, ct, 1) for c, cnode, port, ct in fed if c not in skipped]
                if self._completed(sid):
                    continue  # Spark listed it before under this id, and it ran
            else:
                ups.append(self._message(scope, node, 0, t, 1))
            scope.stage_ids[sid] = None
            self.stages[sid] = StageState(sid, info.get("Stage Name", ""), scope, node, job_id, t,
                                          parents[sid], children[sid], targets=targets,
                                          num_tasks=info.get("Number of Tasks", 0),
                                          iteration=t[1] if scope is not region else None,
                                          writes=writes.get(sid, _NOTHING))
        # the source: it must hold the epoch to send at it, then moves on
        src = _port("out", 1, 0)
        region_ups = updates[id(region)][1]
        if region.source_time is None:
            self._uncertain(f"job {job_id} started in region {region.name!r} after its source was released")
        else:
            if region.source_time != epoch and region.source_time < epoch:
                region_ups += [[src, region.source_time, -1], [src, epoch, 1]]
                region.source_time = epoch
            if not streaming:
                region_ups += [[src, region.source_time, -1], [src, epoch + 1, 1]]
                region.source_time = epoch + 1
        self.jobs[job_id] = Job(job_id, region, epoch, order, iteration=iteration, loop=loop)
        region.running += 1
        self._batch(region, region_ups, {"event": "JobStart", "job": job_id})
        for each in region.loops.values():  # a loop's driver moves on with its region's: [epoch + 1, 0]
            ups = updates.get(id(each), (each, []))[1]
            if each.source_time is not None:
                ups += [[src, _jt(each.source_time), -1], [src, [epoch + 1, 0], 1]]
                each.source_time = (epoch + 1, 0)
            self._batch(each, ups, {"event": "JobStart", "job": job_id})
        more = {} if loop is None else {"iteration": iteration, "loop": loop.path}
        self._mark(f"job {job_id} started (epoch {epoch}" + (f", iteration {iteration})" if more else ")"), region,
                   job=job_id, epoch=epoch, **more)

    def _output_exists(self, sid: int, writes: frozenset) -> bool:
        """Whether a stage's shuffle output is there already, so Spark skips it (see loops.py)."""
        if self._completed(sid):
            return True
        written = self._written
        return bool(writes) and all(w in written for w in writes)

    def _wrote(self, writes: frozenset) -> None:
        """Remember the shuffles a completed stage wrote: the latest ``KEEP_WRITTEN`` (Spark keeps a shuffle while
        its RDD lives; one older than that is taken as gone: its stage then waits for its tokens like any, and its
        job's end releases them, as for a stage Spark never submitted)."""
        written = self._written
        for w in writes:
            written.pop(w, None)
            written[w] = None
        while len(written) > KEEP_WRITTEN:
            del written[next(iter(written))]

    @property
    def remembered_signatures(self) -> int:
        """How many stage signatures the model remembers now (bounded: ``_intern_signature``)."""
        return len(self._signature_ids) + len(self._older_signature_ids)

    @property
    def signature_ids_issued(self) -> int:
        """How many signature ids the application has had (each means one signature, never reused)."""
        return self._next_signature_id

    def _intern_signature(self, base: Any) -> int:
        """The id of a stage signature not among the latest generation's. Ids count up and are never reused, so
        an id means one signature for the application's life; only the signatures of the last
        ``SIGNATURE_IDS_KEPT`` to ``2 * SIGNATURE_IDS_KEPT`` distinct ones seen are remembered (two generations,
        the older dropped whole when the newer fills), so an application whose stage code differs in every job
        (generated code) keeps a bounded map. A signature forgotten and seen again gets a new id: a region still
        holding an operator under the old one would then declare a second operator for it, which needs that
        many distinct signatures in between, far more than any region's operators."""
        sig = self._signature_ids.get(base)  # a caller's view of the newer generation may predate a rotation
        if sig is not None:
            return sig
        sig = self._older_signature_ids.pop(base, None)
        if sig is None:
            sig = self._next_signature_id
            self._next_signature_id += 1
        current = self._signature_ids
        if len(current) >= SIGNATURE_IDS_KEPT:
            self._older_signature_ids, self._signature_ids = current, {}
            current = self._signature_ids
        current[base] = sig
        return sig

    def _place(self, region: Region, epoch: int, codes: dict[int, StageCode], parents: dict, sigs: dict,
               skipped: Collection[int], streaming: bool
               ) -> tuple[dict[int, tuple[Region, Any, Any]], int | None, Region | None]:
        """Each stage's scope, operator signature and time, the job's iteration and its loop (None, None: not an
        iteration). In the region
        by default (its recursive signature, the epoch); an iteration of a loop (loops.py) puts the loop's code
        and what runs downstream of it in the loop's scope, at ``(epoch, iteration)``: the step operator for the
        stages running the loop's code, loop-local signatures (parents in the loop only) for the others."""
        place: dict[int, tuple[Region, Any, Any]] = {sid: (region, sigs[sid], epoch) for sid in codes}
        if streaming:
            return place, None, None
        keys = {sid: c.key for sid, c in codes.items()}
        pos = chain_positions(keys, parents)
        # no chain and no loop yet: no iteration (plan_iteration's answer, without asking it)
        plan = plan_iteration(keys, pos, parents, skipped, region.loops) if region.loops or any(pos.values()) else None
        # no chain (or a known loop at position 0): the previous job's code again, once it ended, on a new dataset
        code, previous = job_code(codes, skipped), region.last_code
        if (plan is None or plan.iteration == 0) and not region.running and repeats(previous, code):
            plan = plan_repeat(keys, parents, skipped, region.last_iteration + 1)
        region.last_code, region.last_iteration = code, plan.iteration if plan is not None else 0
        for sid in skipped:  # a known loop's code, not run: its step, should Spark run it after all
            known = region.loops.get(keys[sid])
            if known is not None and (plan is None or sid not in plan.in_loop):
                place[sid] = (known, _STEP, (epoch, pos[sid]))
        if plan is None:
            return place, None, None
        loop = region.loops.get(plan.key) or self._loop(region, plan.key, epoch)
        local: dict[int, Any] = {}

        def local_signature(sid: int) -> Any:
            if sid in plan.members:
                return _STEP
            if sid not in local:
                inside = (local_signature(p) for p in parents[sid] if p in plan.in_loop)
                local[sid] = (_base_signature(codes[sid], False), tuple(sorted(inside, key=repr)))
            return local[sid]

        _distinct(sorted(s for s in plan.in_loop if s not in plan.members), local_signature, local)
        for sid, it in plan.in_loop.items():
            place[sid] = (loop, local_signature(sid), (epoch, it))
        return place, plan.iteration, loop

    def _loop(self, region: Region, key: tuple, epoch: int) -> Region:
        """A new loop scope in ``region`` for the stages running ``key``'s code: its driver (which holds
        ``[epoch, 0]`` and moves on with the region's), its feedback, and an output to the region's driver."""
        node = region.next_node
        region.next_node += 1
        name = f"loop: {key[0]}"[:120]
        loop = Region(("loop", key), node, name, "loop", source_time=(epoch, 0), parent=region)
        loop.next_node = _FEEDBACK + 1
        region.loops[key] = loop
        path = loop.scope_path
        self._emit(log_records.scope(path, name, 0, 1, 2, attrs={"kind": "loop", "step": key[0]}))
        self._emit(log_records.operator(path, 1, "driver (next iteration)", 0, 1, capabilities=[[[epoch, 0]]],
                                        attrs={"role": "source"}))
        self._emit(log_records.operator(path, _FEEDBACK, "feedback (next iteration)", 1, 1, summary=[[[[0, 1]]]],
                                        attrs={"role": "feedback"}))
        self._edge(region, node, 2, 0)  # what the loop's result stages deliver goes to the region's driver
        return loop

    def _message(self, region: Region, node: int, port: int, epoch: Any, delta: int) -> list:
        _count(region, (node, port, epoch), delta)
        return [_port("in", node, port), _jt(epoch), delta]

    @staticmethod
    def _deliver(scope: Region, targets: Sequence[tuple[int, int, Any]], updates: list) -> None:
        """One token from a task to each of a stage's ``targets`` (added to ``updates``): a stage's input, the
        region's driver (results), or, from a loop, its output (node 0), which the tracker counts at the region's
        driver at the epoch: so does the model."""
        parent = scope.parent
        for target in targets:
            node, port, time = target
            if node == 0 and parent is not None:
                _count(parent, (2, 0, time[0]), 1)
            else:
                _count(scope, target, 1)  # a target is the (node, port, time) its tokens wait at
            updates.append([["in", node, port], _jt(time), 1])

    @staticmethod
    def _take_messages(region: Region, node: int, epoch: Any) -> list:
        """Consume the tokens waiting at ``node``'s inputs at ``epoch`` (the model's counts go to zero)."""
        messages = region.messages
        if not messages:
            return []
        taken = [(key, count) for key, count in messages.items() if key[0] == node and key[2] == epoch and count > 0]
        time = _jt(epoch)
        updates = []
        for key, count in taken:
            del messages[key]  # as _count(region, key, -count)
            updates.append([["in", node, key[1]], time if time is epoch else list(time), -count])
        return updates

    def _stage_event(self, e: dict, time_field: str, what: str) -> tuple[dict, int, int, StageState | None]:
        """The stage info, id, attempt and state a stage event names; a stage no job listed makes us uncertain."""
        info = e.get("Stage Info") or {}
        self._time(info.get(time_field))
        sid, attempt = info["Stage ID"], info.get("Stage Attempt ID", 0)
        st = self.stages.get(sid)
        if st is None:
            self._uncertain(f"stage {sid} {what} without a job that lists it")
        return info, sid, attempt, st

    def _on_stage_submitted(self, e: dict) -> None:
        info, sid, attempt, st = self._stage_event(e, "Submission Time", "submitted")
        if st is None:
            return
        n = info.get("Number of Tasks", 0)
        region = st.region
        updates = self._take_messages(region, st.node, st.epoch)
        updates.append([_port("out", st.node, 0), _jt(st.epoch), n])
        st.attempts[attempt] = Attempt(caps=n)
        self._set_stage_status(sid, attempt, "ACTIVE")
        cause = {"event": "StageSubmitted", "stage": sid, "attempt": attempt, "job": st.job_id}
        job = self.jobs.get(st.job_id)
        if attempt and job is not None and job.failure is not None:
            cause["failure"] = job.failure  # a resubmission: Spark re-runs the work the failed attempt lost
        self._batch(region, updates, cause)
        self._out += self.tasks.stage_submitted(region.path, st.node, _jt(st.epoch), sid, attempt, n, st.job_id,
                                                self._at, iteration=st.iteration)

    def _on_task_start(self, e: dict) -> None:
        info = e.get("Task Info") or {}
        self._time(info.get("Launch Time"))
        if self.stages.get(e["Stage ID"]) is not None:  # checked by event_shape before the handler runs
            self.tasks.task_started(e, info, self._at, self._out)  # who holds what: a detail record names it

    def _on_task_end(self, e: dict) -> None:
        info = e.get("Task Info") or {}
        self._time(info.get("Finish Time"))
        self.task_ends += 1
        sid, attempt = e["Stage ID"], e.get("Stage Attempt ID", 0)
        st = self.stages.get(sid)
        if st is None:
            self._uncertain(f"task of stage {sid}, which was never submitted")
            return
        get = info.get
        reason = e.get("Task End Reason")
        # only a success produces: Spark retries any other end, and the capability stays
        ok = not ((reason and reason.get("Reason", "Success") != "Success") or get("Killed") or get("Failed"))
        batch = self._task_end_batch(info, st, sid, attempt) if ok else None
        # the task's detail, cleared once its batch is applied
        clear = self.tasks.task_ended(e, info, sid, attempt, ok, self._at, batch)
        if clear is not None:
            self._out.append(clear)

    def _task_end_batch(self, info: dict, st: StageState, sid: int, attempt: int) -> dict | None:
        """A successful task's output: its capability dropped, a token to each child stage (the batch emitted)."""
        get = info.get
        partition = partition_of(info)
        done = (attempt, partition)
        succeeded = st.succeeded
        if succeeded is None:
            st.succeeded = {done}
        elif done in succeeded:
            return None  # a speculative or retried duplicate: only the attempt's first success of it produces
        else:
            succeeded.add(done)
        att = st.attempts.get(attempt)
        if att is None or att.caps <= 0:
            return None  # a task of an attempt already completed or failed (a zombie): nothing held
        att.caps -= 1
        region, epoch = st.region, st.epoch
        # every update non-zero: no filter (see _batch)
        updates = [[["out", st.node, 0], _jt(epoch), -1]]
        self._deliver(region, st.targets, updates)
        if region.retired:
            return self._batch(region, updates, {"event": "TaskEnd"})  # says so
        launched = get("Launch Time")
        return self._emit_batch(region, updates, str(get("Executor ID", "driver")), {
            "event": "TaskEnd", "stage": sid, "attempt": attempt, "task": get("Task ID"), "index": get("Index"),
            "partition": partition, "launched": launched / 1000.0 if isinstance(launched, (int, float)) else None})

    def _release_stage(self, st: StageState, attempt: int | None = None) -> list:
        updates = []
        for a, att in st.attempts.items():
            if (attempt is None or a == attempt) and att.caps > 0:
                updates.append([_port("out", st.node, 0), _jt(st.epoch), -att.caps])
                att.caps = 0
        return updates

    def _on_stage_completed(self, e: dict) -> None:
        info, sid, attempt, st = self._stage_event(e, "Completion Time", "completed")
        if st is None:
            return
        failed = bool(info.get("Failure Reason"))
        self._set_stage_status(sid, attempt, "FAILED" if failed else "COMPLETE")
        cause = {"event": "StageCompleted", "stage": sid, "attempt": attempt, "failed": failed}
        if failed:
            cause["failure"] = failure = self._stage_failure(sid, attempt, info)
            job = self.jobs.get(st.job_id)
            if job is not None:
                job.failure = failure
        else:
            st.completed_ok = True
            self._wrote(st.writes)  # a shuffle map stage: its output stays
        updates = self._release_stage(st, attempt)
        self._batch(st.region, updates, cause)
        self._out += self.tasks.stage_completed(sid, attempt, self._at)

    def _stage_failure(self, sid: int, attempt: int, info: dict) -> dict:
        """Why a stage attempt failed: its latest task failure (the fetch failure that names the lost executor, the
        exception of a task that failed too often), else the stage's ``Failure Reason``; with the attempt."""
        failure = self.tasks.failure(sid, attempt) or {"reason": "StageFailed",
                                                        "message": failure_text(info.get("Failure Reason"))}
        return {**failure, "stage": sid, "attempt": attempt}

    def _completed(self, sid: int) -> bool:
        """Whether stage ``sid`` completed (an attempt of it did), its full record kept or folded."""
        st = self.stages.get(sid)
        if st is not None:
            return st.completed_ok
        folded = self.folded_stages
        if not folded:  # nothing folded (a model keeping every job, or early on)
            return False
        return any(folded.get((sid, a)) == "COMPLETE" for a in (0, *self._more_attempts.get(sid, ())))

    def _set_stage_status(self, sid: int, attempt: int, status: str, *, if_absent: bool = False) -> None:
        key = (sid, attempt)
        if if_absent and key not in self.stage_status and self.folded_stages.get(key) is not None:
            return  # a folded job's stage, listed again (its status stays Spark's: what it had)
        if key not in self.stage_status:
            if attempt != 0:
                self._more_attempts.setdefault(sid, []).append(attempt)
        elif if_absent:
            return
        self.stage_status[key] = status

    def _on_job_end(self, e: dict) -> None:
        self._time(e.get("Completion Time"))
        job_id = e["Job ID"]
        job = self.jobs.get(job_id)
        if job is None:
            self._uncertain(f"job {job_id} ended without having started")
            return
        result = (e.get("Job Result") or {}).get("Result", "JobSucceeded")
        if job.status == "RUNNING":
            job.region.running -= 1
        job.status = "SUCCEEDED" if result == "JobSucceeded" else "FAILED"
        region = job.region
        updates: dict[int, tuple[Region, list]] = {}  # its loop's batch, then its region's
        for sid in job.stages:
            st = self.stages.get(sid)
            if st is None or st.job_id != job_id:
                continue
            ups = updates.setdefault(id(st.region), (st.region, []))[1]
            ups += self._take_messages(st.region, st.node, st.epoch)
            ups += self._release_stage(st)
        status, later = self.stage_status, self._more_attempts
        for sid in job.stages:
            for key in ((sid, 0), *((sid, a) for a in later.get(sid, ()))) if later else ((sid, 0),):
                if status.get(key) == "PENDING":  # never submitted: Spark reports it skipped
                    status[key] = "SKIPPED"
        region_ups = updates.pop(id(region), (region, []))[1]
        for scope, ups in updates.values():
            self._batch(scope, ups, {"event": "JobEnd", "job": job_id})
        region_ups += self._take_messages(region, 2, job.epoch)
        self._batch(region, region_ups, {"event": "JobEnd", "job": job_id})
        for sid in job.stages:
            self._out += self.tasks.release_stage(sid, self._at)
            st = self.stages.get(sid)
            if st is not None and st.job_id == job_id:
                st.job_ended()  # its job released everything: no task of it can produce any more
                region.stage_ids.pop(sid, None)  # nothing left to release: a query's list stays short for days
        more: dict[str, Any] = {} if job.loop is None else {"iteration": job.iteration, "loop": job.loop.path}
        if job.status == "FAILED":  # what Spark says failed it (a job has no failure field when it succeeded)
            more["failure"] = failure_text(((e.get("Job Result") or {}).get("Exception") or {}).get("Message")) or (
                job.failure or {}).get("message") or result
        label = f"job {job_id} {job.status.lower()} (epoch {job.epoch}"
        self._mark(label + (f", iteration {job.iteration})" if job.loop is not None else ")"), region, job=job_id,
                   epoch=job.epoch, status=job.status, **more)
        if (region.kind == "job" or region.closing) and not region.running:
            self._retire_region(region, "JobEnd")
        if self.retain_jobs is not None:
            self._ended_jobs.append(job_id)
            while len(self._ended_jobs) > self.retain_jobs:
                self._fold_job(self._ended_jobs.popleft())

    def _fold_job(self, job_id: int) -> None:
        """Keep only the statuses of an ended job and of its stages' attempts (``retain_jobs``): a long
        application's model then grows by a few bytes a job."""
        job = self.jobs.pop(job_id, None)
        if job is None:
            return
        self.folded_jobs[job_id] = job.status
        for sid in job.stages:
            st = self.stages.get(sid)
            if st is None or st.job_id != job_id:
                continue  # listed again by a later job (its output reused): that job's record now
            del self.stages[sid]
            for a in (0, *self._more_attempts.get(sid, ())):
                status = self.stage_status.pop((sid, a), None)
                if status is not None:
                    self.folded_stages[(sid, a)] = status

    # streaming

    def _on_query_started(self, e: dict) -> None:
        qid = e.get("id")
        if qid:
            self._queries[qid] = e.get("name") or ""
            region = self._region(("query", qid), f"query {e.get('name') or qid[:8]} (streaming)", "streaming query", 0)
            self._mark(f"query {e.get('name') or qid[:8]} started", region, query=qid)

    def _on_query_progress(self, e: dict) -> None:
        p = e.get("progress") or {}
        qid, batch = p.get("id"), p.get("batchId")
        trigger = _iso_seconds(p.get("timestamp"))  # the event carries no time of its own: it is the trigger's end
        if trigger is not None and isinstance((p.get("durationMs") or {}).get("triggerExecution"), (int, float)):
            self._time(max(self._at * 1000, trigger * 1000 + p["durationMs"]["triggerExecution"]))
        region = self.regions.get(("query", qid))
        if region is None or batch is None:
            return
        if region.source_time is not None and region.source_time <= batch:
            self._batch(region, [[_port("out", 1, 0), region.source_time, -1], [_port("out", 1, 0), batch + 1, 1]],
                        {"event": "QueryProgressEvent", "query": qid, "batch": batch})
            region.source_time = batch + 1
        watermark = (p.get("eventTime") or {}).get("watermark")
        duration = p.get("batchDuration")
        if duration is None:
            duration = (p.get("durationMs") or {}).get("triggerExecution")
        self._mark(f"batch {batch} done", region, query=qid, batch=batch, duration_ms=duration,
                   input_rows=_progress_total(p, "numInputRows"), rate=_progress_total(p, "inputRowsPerSecond"),
                   processed_rate=_progress_total(p, "processedRowsPerSecond"), watermark=watermark,
                   trigger_start=trigger, phases_ms=p.get("durationMs"))

    def _on_query_terminated(self, e: dict) -> None:
        region = self.regions.get(("query", e.get("id")))
        if region is None:
            return
        self._release_region(region, "QueryTerminatedEvent")
        self._mark("query terminated" + (f": {e.get('exception')}" if e.get("exception") else ""), region)
        self._retire_region(region, "QueryTerminatedEvent")

    def _on_sql_end(self, e: dict) -> None:
        self._time(e.get("time"))
        region = self.regions.get(("sql", str(e.get("executionId"))))
        if region is None:
            return
        region.closing = True
        if not region.running:
            self._retire_region(region, "SQLExecutionEnd")

    def _retire_region(self, region: Region, event: str) -> None:
        """No more work can come to ``region``: release what it still holds, retire it, forget its structure."""
        if region.retired:
            return
        self._release_region(region, event)
        self._emit(log_records.retire(region.scope_path))
        region.retired = True  # its key may come back (a restarted query): a new region then (see _region)
        region.ops.clear()
        region.op_ports.clear()
        region.edges.clear()
        region.stage_ids.clear()
        region.messages.clear()  # empty by now, but a dict keeps the table it grew to until cleared
        region.loops.clear()  # its loops are nested scopes of it: retired with it
        region.last_code = None
        if self.retain_jobs is not None and region.kind in ("job", "sql execution"):
            if self.regions.get(region.key) is region:  # these keys never come back: keep what runs, not every region
                del self.regions[region.key]

    def _release_region(self, region: Region, event: str) -> None:
        """Release everything a region holds: its loops' first, then its own."""
        for loop in region.loops.values():
            self._release_scope(loop, event)
        self._release_scope(region, event)

    def _release_scope(self, region: Region, event: str) -> None:
        updates = []
        if region.source_time is not None:
            updates.append([_port("out", 1, 0), _jt(region.source_time), -1])
            region.source_time = None
        for (node, port, t), count in list(region.messages.items()):
            if count:
                updates.append(self._message(region, node, port, t, -count))
        for sid in region.stage_ids:
            st = self.stages.get(sid)
            if st is not None and st.region is region:
                updates += self._release_stage(st)
        self._batch(region, updates, {"event": event})
        for sid in region.stage_ids:  # this region's stages only: O(region), not O(application), per region
            st = self.stages.get(sid)
            if st is not None and st.region is region:
                self._out += self.tasks.release_stage(sid, self._at)

    def _on_app_end(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self.ended = True
        regions = [r for r in self.regions.values() if not r.retired]
        for region in regions:
            self._release_region(region, "ApplicationEnd")
        self._mark("application ended")
        for region in regions:
            self._retire_region(region, "ApplicationEnd")

    def _on_executor_added(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self._out += self.tasks.executor_added(e, self._at)

    def _on_executor_removed(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self._out += self.tasks.executor_removed(e, self._at)

    def _on_log_start(self, e: dict) -> None:
        self.spark_version = e.get("Spark Version")


def _count(scope: Region, key: tuple, delta: int) -> None:
    """The model's own count of the tokens waiting at ``key`` = (node, input port, time) in ``scope``."""
    count = scope.messages.get(key, 0) + delta
    if count:
        scope.messages[key] = count
    else:
        scope.messages.pop(key, None)


def _distinct(order: list[int], signature: Callable[[int], Any], sigs: dict[int, Any]) -> None:
    """Two stages of one job with the same signature stay two operators: the second becomes ``(sig, 1)``..."""
    seen: dict[Any, int] = {}
    for sid in order:
        sig = signature(sid)
        n = seen.get(sig, 0)
        seen[sig] = n + 1
        if n:
            sigs[sid] = (sig, n)


def _iso_seconds(text: Any) -> float | None:
    """A progress event's ISO 8601 UTC timestamp (``2026-11-21T19:52:15.005Z``) as epoch seconds."""
    if not isinstance(text, str):
        return None
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _progress_total(progress: dict, key: str) -> Any:
    """A query progress's input rows or rates: the top-level field where Spark writes one, else the sum over its
    sources (Spark 4's event logs carry these only per source)."""
    value = progress.get(key)
    if value is not None:
        return value
    values = [s.get(key) for s in progress.get("sources") or [] if isinstance(s, dict)]
    values = [v for v in values if isinstance(v, (int, float))]
    return sum(values) if values else None


def _base_signature(code: StageCode, streaming: bool) -> Any:
    if streaming:
        # stage names in streaming are useless ("start at NativeMethodAccessorImpl.java:0") and ids change per batch
        names = tuple(sorted(n for n in map(str, code.rdd_names) if not n.isdigit()))
        return ("scopes", code.scopes, names)
    return (code.name, code.scopes, code.callsites)


def _stage_label(info: dict, scopes: list, streaming: bool) -> str:
    name = info.get("Stage Name") or ""
    if streaming or name.startswith("start at NativeMethodAccessorImpl"):
        interesting = [s for s in scopes if not s.startswith(("WholeStageCodegen", "mapPartitions", "map"))] or scopes
        return "stage: " + ", ".join(interesting[:3]) if interesting else f"stage {info.get('Stage ID')}"
    return name[:80]


_HANDLERS = {
    "SparkListenerApplicationStart": SparkModel._on_app_start,
    "SparkListenerApplicationEnd": SparkModel._on_app_end,
    "SparkListenerJobStart": SparkModel._on_job_start,
    "SparkListenerJobEnd": SparkModel._on_job_end,
    "SparkListenerStageSubmitted": SparkModel._on_stage_submitted,
    "SparkListenerStageCompleted": SparkModel._on_stage_completed,
    "SparkListenerTaskStart": SparkModel._on_task_start,
    "SparkListenerTaskEnd": SparkModel._on_task_end,
    "SparkListenerLogStart": SparkModel._on_log_start,
    "SparkListenerExecutorAdded": SparkModel._on_executor_added,
    "SparkListenerExecutorRemoved": SparkModel._on_executor_removed,
    "QueryStartedEvent": SparkModel._on_query_started,
    "QueryProgressEvent": SparkModel._on_query_progress,
    "QueryTerminatedEvent": SparkModel._on_query_terminated,
    "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd": SparkModel._on_sql_end,
}

# Every event type the model reads (with and without the streaming listener's prefix): a reader may skip the rest.
HANDLED_EVENTS = frozenset(_HANDLERS) | frozenset(STREAMING_PREFIX + k for k in _HANDLERS if k.startswith("Query"))
