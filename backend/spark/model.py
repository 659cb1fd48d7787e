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
* Job start: the source sends one token to each stage's input 0 (a skipped stage, whose shuffle output exists,
  sends to its children instead) and moves on. Stage submitted: consume the waiting tokens and take one capability
  per task, in one batch. Task success: drop one capability and send one token to each child stage (or to the
  sink). Failures keep the capability (Spark retries); duplicates (speculation) send nothing. Stage failed, job end,
  query terminated and application end release whatever is still held, so a finished application ends empty.

Spark drops events when a listener lags; a gap (a task of a stage that was never submitted, a job that never
started) marks the session *uncertain* from that point instead of inventing progress.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from tracker import log_records

from .event_shape import event_problem
from .tasks import TaskLedger, partition_of

__all__ = ["HANDLED_EVENTS", "SparkModel", "SparkSummary"]

STREAMING_PREFIX = "org.apache.spark.sql.streaming.StreamingQueryListener$"


def _port(kind: str, node: int, port: int) -> list:
    return [kind, node, port]


@dataclass
class Attempt:
    caps: int = 0
    failed: bool = False
    done: bool = False


@dataclass
class StageState:
    stage_id: int
    name: str
    region: Region
    node: int
    job_id: int
    epoch: int
    parents: list[int]
    children: list[int] = field(default_factory=list)
    attempts: dict[int, Attempt] = field(default_factory=dict)
    succeeded: set = field(default_factory=set)  # (attempt, partition) of each first success
    completed_ok: bool = False
    targets: list[tuple[int, int]] = field(default_factory=list)  # (node, input port) each task's output goes to
    num_tasks: int = 0


@dataclass
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
    source_time: int | None = 0
    messages: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (node, port, epoch) -> tokens waiting
    stage_ids: dict[int, None] = field(default_factory=dict)  # the stages created in it, in order (an ordered set)

    @property
    def path(self) -> list[int]:
        return [self.node]


@dataclass
class Job:
    job_id: int
    region: Region
    epoch: int
    stages: list[int]
    status: str = "RUNNING"


@dataclass
class SparkSummary:
    """What Spark itself would report: jobs, stage attempts and their statuses, task ends."""

    jobs: dict[int, str]
    stages: dict[tuple[int, int], str]
    tasks: int
    uncertain: bool


class SparkModel:
    """Turns Spark listener events (dicts) into progress-log records, one event at a time."""

    def __init__(self) -> None:
        self.regions: dict[tuple, Region] = {}
        self.jobs: dict[int, Job] = {}
        self.stages: dict[int, StageState] = {}
        self.unknown_events: dict[str, int] = {}
        self.task_ends = 0
        self.uncertain: list[str] = []
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
        self._attempts_of: dict[int, list[int]] = {}  # stage id -> its attempts in stage_status: O(1) per job end
        self.tasks = TaskLedger()  # which tasks make up each stage's capabilities (detail records)

    # --- driving -----------------------------------------------------------------------------------------

    def feed(self, event: dict, line: int | None = None) -> list[dict]:
        """The progress-log records this event produces (possibly none)."""
        self._out = []
        self._line = line
        kind = event.get("Event")
        problem = event_problem(event)
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

    def note(self, label: str) -> dict:
        """A timeline mark at the model's current time, for something that happened outside the events."""
        return log_records.mark(label, self._at)

    def summary(self) -> SparkSummary:
        return SparkSummary({j: job.status for j, job in self.jobs.items()}, dict(self.stage_status), self.task_ends,
                            bool(self.uncertain))

    # --- emitting ----------------------------------------------------------------------------------------

    def _emit(self, record: dict) -> None:
        self._out.append(record)

    def _batch(self, region: Region, updates: list, event: str, worker: str = "driver", **ids: Any) -> dict | None:
        """Emit one progress batch of the non-zero ``updates`` (none if all are zero); returns it."""
        updates = [u for u in updates if u[2]]
        if not updates:
            return None
        seq = self._seq.get(worker, 0)
        self._seq[worker] = seq + 1
        cause = {"event": event, **ids}
        if self._line is not None:
            cause["line"] = self._line
        batch = log_records.progress(region.path, worker, seq, self._at, updates, cause)
        self._emit(batch)
        return batch

    def _mark(self, label: str, region: Region | None = None, **extra: Any) -> None:
        self._emit(log_records.mark(label, self._at, None if region is None else region.path, **extra))

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
        if region is not None:
            return region
        region = Region(key, self._next_region, name, kind, source_time=start)
        self._next_region += 1
        self.regions[key] = region
        self._emit(log_records.scope(region.path, name, 0, 0, 1, attrs={"kind": kind}))
        self._emit(log_records.operator(region.path, 1, "driver (new work)", 0, 1, capabilities=[[start]],
                                        attrs={"role": "source"}))
        self._emit(log_records.operator(region.path, 2, "driver (results)", 1, 0, attrs={"role": "sink"}))
        return region

    def _edge(self, region: Region, src: int, tgt: int, port: int) -> None:
        key = (src, tgt, port)
        if key not in region.edges:
            region.edges.add(key)
            self._emit(log_records.edge(region.path, _port("out", src, 0), _port("in", tgt, port)))

    def _stage_operator(self, region: Region, info: dict, signature: Any, parent_sigs: list, streaming: bool) -> int:
        node = region.ops.get(signature)
        if node is not None:
            return node
        node = region.next_node
        region.next_node += 1
        region.ops[signature] = node
        region.op_ports[node] = {}
        for k, ps in enumerate(parent_sigs, start=1):
            region.op_ports[node].setdefault(ps, k)
        rdds = info.get("RDD Info") or []
        scopes = sorted({s for s in (_scope_name(r) for r in rdds) if s})
        attrs = {
            "stage_ids": [info.get("Stage ID")],
            "stage_name": info.get("Stage Name"),
            "tasks": info.get("Number of Tasks"),
            "rdds": [r.get("Name") for r in rdds][:8],
            "scopes": scopes,
            "callsite": (info.get("Details") or "").split("\n", 1)[0][:300],
        }
        name = _stage_label(info, scopes, streaming)
        self._emit(log_records.operator(region.path, node, name, 1 + len(parent_sigs), 1, attrs=attrs))
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
        ids = {i.get("Stage ID") for i in infos}
        by_id = {i.get("Stage ID"): i for i in infos}
        parents = {sid: [p for p in (by_id[sid].get("Parent IDs") or []) if p in ids] for sid in by_id}
        children: dict[int, list[int]] = {sid: [] for sid in by_id}
        for sid, ps in parents.items():
            for p in ps:
                children[p].append(sid)
        sigs: dict[int, Any] = {}

        def signature(sid: int, depth: int = 0) -> Any:
            if sid not in sigs:
                info = by_id[sid]
                base = _base_signature(info, streaming)
                if depth < 50:
                    base = (base, tuple(sorted((signature(p, depth + 1) for p in parents[sid]), key=repr)))
                sigs[sid] = base
            return sigs[sid]

        seen_sigs: dict[Any, int] = {}
        for sid in sorted(by_id):  # two identical stages in one job stay two operators
            sig = signature(sid)
            n = seen_sigs.get(sig, 0)
            seen_sigs[sig] = n + 1
            if n:
                sigs[sid] = (sig, n)
        updates = []
        for sid in sorted(by_id):
            info = by_id[sid]
            parent_sigs = [sigs[p] for p in sorted(parents[sid])]
            node = self._stage_operator(region, info, sigs[sid], parent_sigs, streaming)
            for p in parents[sid]:
                pnode = region.ops[sigs[p]]
                self._edge(region, pnode, node, region.op_ports[node].get(sigs[p], 1))
            if not children[sid]:
                self._edge(region, node, 2, 0)
        for sid in sorted(by_id):
            self._set_stage_status(sid, by_id[sid].get("Stage Attempt ID", 0), "PENDING", if_absent=True)
            node = region.ops[sigs[sid]]
            previous = self.stages.get(sid)
            if previous is not None and previous.completed_ok:
                # skipped: its shuffle output exists; it feeds its children now
                for c in children[sid]:
                    cnode = region.ops[sigs[c]]
                    port = region.op_ports[cnode].get(sigs[sid], 1)
                    updates.append(self._message(region, cnode, port, epoch, 1))
                continue
            targets = [(region.ops[sigs[c]], region.op_ports[region.ops[sigs[c]]].get(sigs[sid], 1))
                       for c in children[sid]]
            region.stage_ids[sid] = None
            self.stages[sid] = StageState(sid, by_id[sid].get("Stage Name", ""), region, node, job_id, epoch,
                                          parents[sid], children[sid], targets=targets or [(2, 0)],
                                          num_tasks=by_id[sid].get("Number of Tasks", 0))
            updates.append(self._message(region, node, 0, epoch, 1))
        # the source: it must hold the epoch to send at it, then moves on
        src = _port("out", 1, 0)
        if region.source_time is None:
            self._uncertain(f"job {job_id} started in region {region.name!r} after its source was released")
        else:
            if region.source_time != epoch and region.source_time < epoch:
                updates += [[src, region.source_time, -1], [src, epoch, 1]]
                region.source_time = epoch
            if not streaming:
                updates += [[src, region.source_time, -1], [src, epoch + 1, 1]]
                region.source_time = epoch + 1
        self.jobs[job_id] = Job(job_id, region, epoch, sorted(by_id))
        self._batch(region, updates, "JobStart", job=job_id)
        self._mark(f"job {job_id} started (epoch {epoch})", region, job=job_id, epoch=epoch)

    def _message(self, region: Region, node: int, port: int, epoch: int, delta: int) -> list:
        key = (node, port, epoch)
        count = region.messages.get(key, 0) + delta
        if count:
            region.messages[key] = count
        else:
            region.messages.pop(key, None)
        return [_port("in", node, port), epoch, delta]

    def _take_messages(self, region: Region, node: int, epoch: int) -> list:
        updates = []
        for (n, port, t), count in list(region.messages.items()):
            if n == node and t == epoch and count > 0:
                updates.append(self._message(region, node, port, epoch, -count))
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
        updates.append([_port("out", st.node, 0), st.epoch, n])
        st.attempts[attempt] = Attempt(caps=n)
        self._set_stage_status(sid, attempt, "ACTIVE")
        self._batch(region, updates, "StageSubmitted", stage=sid, attempt=attempt, job=st.job_id)
        self._out += self.tasks.stage_submitted(region.path, st.node, st.epoch, sid, attempt, n, st.job_id, self._at)

    def _on_task_start(self, e: dict) -> None:
        info = e.get("Task Info") or {}
        self._time(info.get("Launch Time"))
        st = self.stages.get(e["Stage ID"])  # checked by event_shape before the handler runs
        if st is not None:  # who holds what: the task ledger names it (detail records)
            self._out += self.tasks.task_started(e, self._at)

    def _on_task_end(self, e: dict) -> None:
        info = e.get("Task Info") or {}
        self._time(info.get("Finish Time"))
        self.task_ends += 1
        sid, attempt = e["Stage ID"], e.get("Stage Attempt ID", 0)
        st = self.stages.get(sid)
        if st is None:
            self._uncertain(f"task of stage {sid}, which was never submitted")
            return
        batch = self._task_end_batch(e, info, st, sid, attempt)
        clear = self.tasks.task_ended(e, self._at, batch)  # the task's detail, cleared once its batch is applied
        if clear is not None:
            self._out.append(clear)

    def _task_end_batch(self, e: dict, info: dict, st: StageState, sid: int, attempt: int) -> dict | None:
        """A successful task's output: its capability dropped, a token to each child stage (the batch emitted)."""
        reason = (e.get("Task End Reason") or {}).get("Reason", "Success")
        index = info.get("Index")
        att = st.attempts.get(attempt)
        if reason != "Success" or info.get("Killed") or info.get("Failed"):
            return None  # Spark retries the task: the capability stays
        partition = partition_of(info)
        done = (attempt, partition)
        if done in st.succeeded:
            return None  # a speculative or retried duplicate: only the attempt's first success of it produces
        st.succeeded.add(done)
        if att is None or att.caps <= 0:
            return None  # a task of an attempt already completed or failed (a zombie): nothing held
        att.caps -= 1
        region = st.region
        updates = [[_port("out", st.node, 0), st.epoch, -1]]
        for node, port in st.targets:
            updates.append(self._message(region, node, port, st.epoch, 1))
        return self._batch(region, updates, "TaskEnd", worker=str(info.get("Executor ID", "driver")), stage=sid,
                           attempt=attempt, task=info.get("Task ID"), index=index, partition=partition,
                           launched=_seconds(info.get("Launch Time")))

    def _release_stage(self, st: StageState, attempt: int | None = None) -> list:
        updates = []
        for a, att in st.attempts.items():
            if (attempt is None or a == attempt) and att.caps > 0:
                updates.append([_port("out", st.node, 0), st.epoch, -att.caps])
                att.caps = 0
        return updates

    def _on_stage_completed(self, e: dict) -> None:
        info, sid, attempt, st = self._stage_event(e, "Completion Time", "completed")
        if st is None:
            return
        failed = bool(info.get("Failure Reason"))
        self._set_stage_status(sid, attempt, "FAILED" if failed else "COMPLETE")
        if not failed:
            st.completed_ok = True
        updates = self._release_stage(st, attempt)
        self._batch(st.region, updates, "StageCompleted", stage=sid, attempt=attempt, failed=failed)
        self._out += self.tasks.stage_completed(sid, attempt, self._at)

    def _set_stage_status(self, sid: int, attempt: int, status: str, *, if_absent: bool = False) -> None:
        key = (sid, attempt)
        if key not in self.stage_status:
            self._attempts_of.setdefault(sid, []).append(attempt)
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
        job.status = "SUCCEEDED" if result == "JobSucceeded" else "FAILED"
        region = job.region
        updates = []
        for sid in job.stages:
            st = self.stages.get(sid)
            if st is None or st.job_id != job_id:
                continue
            updates += self._take_messages(region, st.node, job.epoch)
            updates += self._release_stage(st)
        for sid in job.stages:
            for a in self._attempts_of.get(sid, ()):
                if self.stage_status[(sid, a)] == "PENDING":  # never submitted: Spark reports it skipped
                    self.stage_status[(sid, a)] = "SKIPPED"
        updates += self._take_messages(region, 2, job.epoch)
        self._batch(region, updates, "JobEnd", job=job_id)
        for sid in job.stages:
            self._out += self.tasks.release_stage(sid, self._at)
        self._mark(f"job {job_id} {job.status.lower()} (epoch {job.epoch})", region, job=job_id, epoch=job.epoch,
                   status=job.status)

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
                        "QueryProgressEvent", query=qid, batch=batch)
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

    def _release_region(self, region: Region, event: str) -> None:
        updates = []
        if region.source_time is not None:
            updates.append([_port("out", 1, 0), region.source_time, -1])
            region.source_time = None
        for (node, port, t), count in list(region.messages.items()):
            if count:
                updates.append(self._message(region, node, port, t, -count))
        for sid in region.stage_ids:
            st = self.stages.get(sid)
            if st is not None and st.region is region:
                updates += self._release_stage(st)
        self._batch(region, updates, event)
        for sid in region.stage_ids:  # this region's stages only: O(region), not O(application), per region
            st = self.stages.get(sid)
            if st is not None and st.region is region:
                self._out += self.tasks.release_stage(sid, self._at)

    def _on_app_end(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self.ended = True
        for region in self.regions.values():
            self._release_region(region, "ApplicationEnd")
        self._mark("application ended")

    def _on_executor_added(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self._out += self.tasks.executor_added(e, self._at)

    def _on_executor_removed(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self._out += self.tasks.executor_removed(e, self._at)

    def _on_log_start(self, e: dict) -> None:
        self.spark_version = e.get("Spark Version")


def _seconds(ms: Any) -> float | None:
    return ms / 1000.0 if isinstance(ms, (int, float)) else None


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


def _scope_name(rdd: dict) -> str | None:
    scope = rdd.get("Scope")
    if not scope:
        return None
    try:
        return orjson.loads(scope).get("name")  # one per RDD of every job: the fast parser
    except (ValueError, AttributeError):
        return None


def _base_signature(info: dict, streaming: bool) -> Any:
    rdds = info.get("RDD Info") or []
    scopes = tuple(sorted(s for s in (_scope_name(r) for r in rdds) if s))
    if streaming:
        # stage names in streaming are useless ("start at NativeMethodAccessorImpl.java:0") and ids change per batch
        names = tuple(sorted(str(r.get("Name")) for r in rdds if not str(r.get("Name", "")).isdigit()))
        return ("scopes", scopes, names)
    return (info.get("Stage Name"), scopes, tuple(sorted(str(r.get("Callsite", "")) for r in rdds)))


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
}

# Every event type the model reads (with and without the streaming listener's prefix): a reader may skip the rest.
HANDLED_EVENTS = frozenset(_HANDLERS) | frozenset(STREAMING_PREFIX + k for k in _HANDLERS if not k.startswith("Spark"))
