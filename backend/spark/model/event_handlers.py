"""The Spark model's event handlers: one method per listener event, each emitting the records the event makes.

Job start: the source sends one token to each stage's input 0 (a skipped stage, whose shuffle output exists, sends
to its children that run instead) and moves on. Stage submitted: consume the waiting tokens and take one capability
per task, in one batch. Task success: drop one capability and send one token to each child stage (or to the sink).
Failures keep the capability (Spark retries); duplicates (speculation) send nothing. Stage failed, job end, query
terminated and application end release whatever is still held, so a finished application ends empty. A region
that can get no more work is released and *retired* (a ``retire`` record), and the model forgets its structure.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from backend.spark.diagnosis.python_findings import PYTHON_RDD
from backend.spark.diagnosis.tasks import TaskLedger, failure_text, partition_of
from backend.spark.model.iso_time import iso_seconds
from backend.spark.model.placement import JobLineage, Placement, StagePlacement, job_lineage, stage_label
from backend.spark.model.plan_naming import PlanNaming
from backend.spark.model.state import NO_SHUFFLES, Attempt, Job, Region, StageState, record_port, record_time
from backend.spark.sql_plan.plans import ADAPTIVE as SQL_ADAPTIVE
from backend.spark.sql_plan.plans import DRIVER as SQL_DRIVER
from backend.spark.sql_plan.plans import START as SQL_START
from tracker.progress_log import records as log_records

__all__ = ["HANDLED_EVENTS", "HANDLERS", "STREAMING_PREFIX", "EventHandlers", "configured_cores"]

STREAMING_PREFIX = "org.apache.spark.sql.streaming.StreamingQueryListener$"


class EventHandlers(StagePlacement):
    """The model's handler of each listener event it reads (``HANDLERS``)."""

    def __init__(self, retain_jobs: int | None = None, name_plans: bool = True) -> None:
        super().__init__(retain_jobs)
        self.task_ends = 0
        self.app_name: str | None = None
        self.app_id: str | None = None
        self.ended = False
        self._queries: dict[str, str] = {}  # query id -> name
        self.tasks = TaskLedger()  # which tasks make up each stage's capabilities (detail records)
        # the SQL plan operator each stage ran (a mark at its execution's end); None: not followed
        self.plan_naming = PlanNaming(self.tasks.diagnosis.t) if name_plans else None
        if self.plan_naming is not None:  # a Python finding names its plan operator
            self.tasks.diagnosis.operator_of = self.plan_naming.operator_of

    def _on_app_start(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self.app_name = e.get("App Name")
        self.app_id = e.get("App ID")
        self._mark(f"application {self.app_name or ''} started".replace("  ", " "))
        self.tasks.application_started(self._at)  # its wall time counts from here (findings.py)

    def _on_job_start(self, e: dict) -> None:
        self._time(e.get("Submission Time"))
        job_id: int = e["Job ID"]
        props = e.get("Properties") or {}
        infos = e.get("Stage Infos") or []
        if self.plan_naming is not None:
            self.plan_naming.job_started(props.get("spark.sql.execution.id"), infos, e.get("Stage IDs"))
        for info in infos:  # the stages running Python functions through the RDD API (python_findings)
            if any(r.get("Name") == PYTHON_RDD for r in info.get("RDD Info") or ()):
                self.tasks.diagnosis.python_rdd(info["Stage ID"])
        region, epoch, streaming = self._job_region(job_id, props, infos)
        lineage = job_lineage(infos)
        sigs = self._signatures(lineage, streaming)
        writes, skipped = self._skipped_stages(lineage)
        place, iteration, loop = self._place(region, epoch, lineage.codes, lineage.parents, sigs, skipped, streaming)
        self._declare_stage_operators(lineage, place, streaming)
        updates = self._send_job_tokens(job_id, region, epoch, lineage, place, skipped, writes, streaming)
        self._advance_source(job_id, region, epoch, streaming, updates[id(region)][1])
        self.jobs[job_id] = Job(job_id, region, epoch, lineage.order, iteration=iteration, loop=loop)
        region.running += 1
        self._batch(region, updates[id(region)][1], {"event": "JobStart", "job": job_id})
        self._advance_loop_sources(job_id, region, epoch, updates)
        more = {} if loop is None else {"iteration": iteration, "loop": loop.path}
        self._mark(f"job {job_id} started (epoch {epoch}" + (f", iteration {iteration})" if more else ")"), region,
                   job=job_id, epoch=epoch, **more)

    def _job_region(self, job_id: int, props: dict, infos: list) -> tuple[Region, int, bool]:
        """The region a job runs in (its streaming query, job group, SQL execution, or its own), its epoch there,
        and whether it is a streaming micro-batch (whose epoch is the batch id)."""
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
        return region, epoch, streaming

    def _send_job_tokens(self, job_id: int, region: Region, epoch: int, lineage: JobLineage, place: Placement,
                         skipped: Collection[int], writes: dict[int, frozenset],
                         streaming: bool) -> dict[int, tuple[Region, list]]:
        """Each stage's record (its status PENDING) and the token that waits at its input 0 (a skipped stage's go to
        its children that run): the updates of each scope's batch, by ``id(scope)``, the region's first."""
        by_id, parents, children = lineage.by_id, lineage.parents, lineage.children
        updates: dict[int, tuple[Region, list]] = {id(region): (region, [])}
        for sid in lineage.order:
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
                                          writes=writes.get(sid, NO_SHUFFLES),
                                          label=stage_label(info, list(lineage.codes[sid].key[1]), streaming))
        return updates

    def _advance_source(self, job_id: int, region: Region, epoch: int, streaming: bool, region_ups: list) -> None:
        """The region's driver must hold the job's epoch to send at it, then moves on (added to ``region_ups``)."""
        src = record_port("out", 1, 0)
        if region.source_time is None:
            self._uncertain(f"job {job_id} started in region {region.name!r} after its source was released")
        else:
            if region.source_time != epoch and region.source_time < epoch:
                region_ups += [[src, region.source_time, -1], [src, epoch, 1]]
                region.source_time = epoch
            if not streaming:
                region_ups += [[src, region.source_time, -1], [src, epoch + 1, 1]]
                region.source_time = epoch + 1

    def _advance_loop_sources(self, job_id: int, region: Region, epoch: int,
                              updates: dict[int, tuple[Region, list]]) -> None:
        """A loop's driver moves on with its region's, to ``[epoch + 1, 0]``: each loop's batch, with its tokens."""
        src = record_port("out", 1, 0)
        for each in region.loops.values():
            ups = updates.get(id(each), (each, []))[1]
            if each.source_time is not None:
                ups += [[src, record_time(each.source_time), -1], [src, [epoch + 1, 0], 1]]
                each.source_time = (epoch + 1, 0)
            self._batch(each, ups, {"event": "JobStart", "job": job_id})

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
        if self.plan_naming is not None:
            self.plan_naming.stage_submitted(sid, attempt)
        if st is None:
            return
        n = info.get("Number of Tasks", 0)
        region = st.region
        updates = self._take_messages(region, st.node, st.epoch)
        updates.append([record_port("out", st.node, 0), record_time(st.epoch), n])
        st.attempts[attempt] = Attempt(caps=n)
        self._set_stage_status(sid, attempt, "ACTIVE")
        cause = {"event": "StageSubmitted", "stage": sid, "attempt": attempt, "job": st.job_id}
        job = self.jobs.get(st.job_id)
        if attempt and job is not None and job.failure is not None:
            cause["failure"] = job.failure  # a resubmission: Spark re-runs the work the failed attempt lost
        self._batch(region, updates, cause)
        self._out += self.tasks.stage_submitted(region.path, st.node, record_time(st.epoch), sid, attempt, n, st.job_id,
                                                self._at, iteration=st.iteration, parents=st.parents,
                                                batch=st.epoch if region.kind == "streaming query" else None,
                                                name=st.label)

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
        clear = self.tasks.task_ended(e, info, sid, attempt, ok, self._at, batch, self._out)
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
        updates = [[["out", st.node, 0], record_time(epoch), -1]]
        self._deliver(region, st.targets, updates)
        if region.retired:
            return self._batch(region, updates, {"event": "TaskEnd"})  # says so
        launched = get("Launch Time")
        return self._emit_batch(region, updates, str(get("Executor ID", "driver")), {
            "event": "TaskEnd", "stage": sid, "attempt": attempt, "task": get("Task ID"), "index": get("Index"),
            "partition": partition, "launched": launched / 1000.0 if isinstance(launched, (int, float)) else None})

    def _on_stage_completed(self, e: dict) -> None:
        info, sid, attempt, st = self._stage_event(e, "Completion Time", "completed")
        if self.plan_naming is not None:
            self.plan_naming.stage_completed(sid, attempt, info.get("Accumulables"))
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
        self._retain_ended(job_id)


    def _on_query_started(self, e: dict) -> None:
        qid = e.get("id")
        if qid:
            self._queries[qid] = e.get("name") or ""
            region = self._region(("query", qid), f"query {e.get('name') or qid[:8]} (streaming)", "streaming query", 0)
            self._mark(f"query {e.get('name') or qid[:8]} started", region, query=qid)

    def _on_query_progress(self, e: dict) -> None:
        p = e.get("progress") or {}
        qid, batch = p.get("id"), p.get("batchId")
        trigger = iso_seconds(p.get("timestamp"))  # the event carries no time of its own: it is the trigger's end
        if trigger is not None and isinstance((p.get("durationMs") or {}).get("triggerExecution"), (int, float)):
            self._time(max(self._at * 1000, trigger * 1000 + p["durationMs"]["triggerExecution"]))
        region = self.regions.get(("query", qid))
        if region is None or batch is None:
            return
        if region.source_time is not None and region.source_time <= batch:
            src = record_port("out", 1, 0)
            self._batch(region, [[src, region.source_time, -1], [src, batch + 1, 1]],
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

    def _on_sql_plan(self, e: dict) -> None:
        if self.plan_naming is not None:
            self.plan_naming.plan(e)

    def _on_driver_accums(self, e: dict) -> None:
        if self.plan_naming is not None:
            self.plan_naming.driver_updated(e)

    def _on_sql_end(self, e: dict) -> None:
        self._time(e.get("time"))
        region = self.regions.get(("sql", str(e.get("executionId"))))
        self._name_plan_operators(e.get("executionId"), region)
        if region is None:
            return
        region.closing = True
        if not region.running:
            self._retire_region(region, "SQLExecutionEnd")

    def _name_plan_operators(self, execution: Any, region: Region | None) -> None:
        """A mark naming the plan operator each stage of an ended SQL execution ran (none if it named none), in its
        region (at the root when it has none of its own, or that one retired)."""
        named = self.plan_naming.execution_ended(execution) if self.plan_naming is not None else None
        findable = self.plan_naming is not None and self.plan_naming.findable
        if named or findable:  # ``plan_findings``: its plan could raise a plan finding (flowscope report reads them)
            where = region if region is not None and not region.retired else None
            more = {"plan_findings": True} if findable else {}
            ops = {str(sid): op for sid, op in sorted((named or {}).items())}
            self._mark(f"SQL execution {execution}: the plan operators its stages ran", where,
                       sql_execution=execution, plan_operators=ops, **more)

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
            updates.append([record_port("out", 1, 0), record_time(region.source_time), -1])
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
        for execution in self.plan_naming.running() if self.plan_naming is not None else ():  # never ended
            self._name_plan_operators(execution, self.regions.get(("sql", str(execution))))
        for region in regions:
            self._release_region(region, "ApplicationEnd")
        self._mark("application ended")
        self._out += self.tasks.application_ended(self._at)  # findings over the whole application
        for region in regions:
            self._retire_region(region, "ApplicationEnd")

    def _on_executor_added(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self._out += self.tasks.executor_added(e, self._at)

    def _on_executor_removed(self, e: dict) -> None:
        self._time(e.get("Timestamp"))
        self._out += self.tasks.executor_removed(e, self._at)

    def _on_stage_executor_metrics(self, e: dict) -> None:
        self.tasks.executor_metrics(e)  # peak memory per executor and stage (findings.py)

    def _on_log_start(self, e: dict) -> None:
        self.spark_version = e.get("Spark Version")

    def _on_environment(self, e: dict) -> None:
        """The application's configuration: a mark saying its task slots where the properties do (what the Overview
        and the what-if read when no executor event gives the cores: a listener attached after they were added)."""
        cores, source = configured_cores(e.get("Spark Properties") or {})
        if cores is not None and not self.tasks.executors:  # an executor event said them already
            self._mark(f"{cores} task slots configured ({source})", configured_cores=cores, cores_source=source)


def configured_cores(props: dict) -> tuple[int | None, str]:
    """The task slots Spark's properties give (slots: cores over ``spark.task.cpus``), and which property says it:
    ``spark.master`` ``local[N]`` or ``local-cluster[E,C,M]``, else ``spark.cores.max``, else
    ``spark.executor.instances`` x ``spark.executor.cores`` without dynamic allocation; (None, "") when they do not
    (``local[*]``: the driver machine's cores, which the log does not say)."""
    def number(key: str) -> int | None:
        v = props.get(key)
        return int(v) if isinstance(v, str) and v.strip().isdigit() and int(v) > 0 else None

    master = str(props.get("spark.master") or "").strip()
    cores, source = None, ""
    if master == "local":
        cores, source = 1, "spark.master local"
    elif master.startswith("local[") and master.endswith("]"):
        n = master[len("local["):-1].split(",")[0].strip()
        if n.isdigit() and int(n) > 0:
            cores, source = int(n), f"spark.master {master}"
    elif master.startswith("local-cluster[") and master.endswith("]"):
        parts = [p.strip() for p in master[len("local-cluster["):-1].split(",")]
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            cores, source = int(parts[0]) * int(parts[1]), f"spark.master {master}"
    elif number("spark.cores.max") is not None:
        cores, source = number("spark.cores.max"), "spark.cores.max"
    elif (number("spark.executor.instances") is not None and number("spark.executor.cores") is not None
          and str(props.get("spark.dynamicAllocation.enabled") or "false").strip().lower() != "true"):
        cores = number("spark.executor.instances") * number("spark.executor.cores")  # type: ignore[operator]
        source = "spark.executor.instances x spark.executor.cores"
    per_task = number("spark.task.cpus") or 1
    if cores is None or cores < per_task:
        return None, ""
    return cores // per_task, source + (f" / spark.task.cpus {per_task}" if per_task > 1 else "")


def _progress_total(progress: dict, key: str) -> Any:
    """A query progress's input rows or rates: the top-level field where Spark writes one, else the sum over its
    sources (Spark 4's event logs carry these only per source)."""
    value = progress.get(key)
    if value is not None:
        return value
    values = [s.get(key) for s in progress.get("sources") or [] if isinstance(s, dict)]
    values = [v for v in values if isinstance(v, (int, float))]
    return sum(values) if values else None


HANDLERS: dict[str, Callable[[EventHandlers, dict], None]] = {
    "SparkListenerApplicationStart": EventHandlers._on_app_start,
    "SparkListenerApplicationEnd": EventHandlers._on_app_end,
    "SparkListenerJobStart": EventHandlers._on_job_start,
    "SparkListenerJobEnd": EventHandlers._on_job_end,
    "SparkListenerStageSubmitted": EventHandlers._on_stage_submitted,
    "SparkListenerStageCompleted": EventHandlers._on_stage_completed,
    "SparkListenerTaskStart": EventHandlers._on_task_start,
    "SparkListenerTaskEnd": EventHandlers._on_task_end,
    "SparkListenerLogStart": EventHandlers._on_log_start,
    "SparkListenerEnvironmentUpdate": EventHandlers._on_environment,
    "SparkListenerExecutorAdded": EventHandlers._on_executor_added,
    "SparkListenerExecutorRemoved": EventHandlers._on_executor_removed,
    "SparkListenerStageExecutorMetrics": EventHandlers._on_stage_executor_metrics,
    "QueryStartedEvent": EventHandlers._on_query_started,
    "QueryProgressEvent": EventHandlers._on_query_progress,
    "QueryTerminatedEvent": EventHandlers._on_query_terminated,
    "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd": EventHandlers._on_sql_end,
    SQL_START: EventHandlers._on_sql_plan,
    SQL_ADAPTIVE: EventHandlers._on_sql_plan,
    SQL_DRIVER: EventHandlers._on_driver_accums,
}

# Every event type the model reads (with and without the streaming listener's prefix): a reader may skip the rest.
HANDLED_EVENTS = frozenset(HANDLERS) | frozenset(STREAMING_PREFIX + k for k in HANDLERS if k.startswith("Query"))
