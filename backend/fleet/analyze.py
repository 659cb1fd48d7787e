"""One application's Spark event log as the fleet's rows: its application row, its completed times, its stages.

The per-application half of `flowscope fleet` (`job.py` runs it once per application), plain Python so it is
tested and benchmarked without Spark. The log goes through the project's reader, Spark model and tracker, and the
rows are read off the tracker, not re-derived from Spark's events:

- a **time** is an epoch of a region (docs/spark-model.md): from its job's submission (a micro-batch: its trigger's
  start) to the first batch after which the region's driver sink's input frontier passed it (docs/blame.md); its
  `end_batch` counts batches as the debugger does, so the page's deep link opens there;
- a **stage** row is a stage operator at one epoch: how long its output held capabilities then, with its task
  durations (median, max, skew and stragglers as the Spark model's findings define them).

Blame comes in as a function (`analyze_log(blame=)`), its answer turned into `blame_<kind>_s` columns by
`blame_columns`. A log that cannot be read never raises: it becomes an application row whose `problems` say why.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from backend.eventlog import AppLog, EventLogReader, LineError, MissingCodecError
from backend.eventlog.decode import WholeEvent
from backend.spark.diagnosis.blame import spark_blame
from backend.spark.diagnosis.tasks import skew_score, straggler_median
from backend.spark.model.event_fields import model_decoder
from backend.spark.model.iso_time import iso_seconds
from backend.spark.model.spark_model import SparkModel
from backend.spark.recording.convert import EventLogError, open_event_log
from tracker.analysis.contracts import BatchInfo
from tracker.progress_log.replay import Replay
from tracker.reachability import Location
from tracker.subgraph import Subgraph
from tracker.timestamp import time_from_json

__all__ = [
    "APPLICATION_COLUMNS",
    "BLAME_KINDS",
    "STAGE_COLUMNS",
    "TIME_COLUMNS",
    "AppRows",
    "analyze_log",
    "blame_column",
    "blame_columns",
    "signature_key",
]

# docs/blame.md's kinds for Spark (capability: a stage held over a stretch no task's run accounts for); each becomes
# a `blame_<kind>_s` column of times/ (seconds, null until blamed), so a time's columns add up to its latency
BLAME_KINDS = ("task", "waiting-for-slots", "scheduler", "recompute", "capability", "driver")
MAX_PROBLEMS = 20  # problems listed per application (the counts are in their own columns)

_SINK_INPUT = Location.from_json(["in", 2, 0])  # the driver (results) operator's input in every region


def blame_column(kind: str) -> str:
    """The times/ column holding the seconds blamed on `kind` (`waiting-for-slots` -> `blame_waiting_for_slots_s`)."""
    return "blame_" + kind.replace("-", "_") + "_s"


APPLICATION_COLUMNS = (
    "app_id", "name", "spark_version", "start", "end", "duration_s", "jobs", "failed_jobs", "stages", "tasks",
    "times", "events", "corrupt_lines", "state", "log", "readable", "problems",
)
TIME_COLUMNS = (
    "app_id", "scope", "scope_name", "region_kind", "time", "job_ids", "batch_id", "start", "end", "latency_s",
    "end_batch", "status", "culprit", "culprit_signature", *(blame_column(k) for k in BLAME_KINDS),
)
STAGE_COLUMNS = (
    "app_id", "app_start", "scope", "region_kind", "time", "signature", "name", "stage_ids", "attempts",
    "failed_attempts", "start", "held_s", "tasks", "median_task_s", "max_task_s", "skew", "stragglers",
    "straggler",
)


@dataclass
class AppRows:
    """What one application contributes to each table (rows as dicts keyed by the *_COLUMNS names)."""

    application: dict
    times: list[dict] = field(default_factory=list)
    stages: list[dict] = field(default_factory=list)


def analyze_log(path: str | os.PathLike[str] | AppLog, *, log_name: str | None = None) -> AppRows:
    """The rows of the application whose event log is at `path` (a file or an `eventlog_v2_` directory).

    `log_name` is what the rows call the log (the fleet passes the original `hdfs://`/`s3a://` path of a log it
    copied to a local temporary directory). Each time's seconds are blamed as `flowscope blame` does
    (backend/spark/diagnosis/blame.py, fed as the replay goes). Never raises for a bad log: the application row lists
    the problem."""
    local = str(path.path if isinstance(path, AppLog) else path)
    name = log_name or local

    def named(exc: BaseException) -> str:  # messages name the log as the caller knows it, not a local copy
        return str(exc).replace(local, name)

    try:
        log = open_event_log(path)
    except (OSError, EventLogError, MissingCodecError, ValueError) as exc:
        return _unreadable(name, named(exc))
    try:
        return _Analysis(log, name).run()
    except Exception as exc:  # noqa: BLE001 - a log that breaks the analysis is a problem row, never a failed job
        return _unreadable(name, f"analysis failed: {type(exc).__name__}: {named(exc)}")


def _unreadable(name: str, problem: str) -> AppRows:
    row = dict.fromkeys(APPLICATION_COLUMNS)
    row.update(app_id=_app_id_from_name(name), log=name, readable=False, problems=[problem], jobs=0, failed_jobs=0,
               stages=0, tasks=0, times=0, events=0, corrupt_lines=0)
    return AppRows(row)


def _app_id_from_name(name: str) -> str:
    base = os.path.basename(name.rstrip("/")).removeprefix("eventlog_v2_")
    for suffix in (".inprogress", ".zstd", ".lz4", ".lzf", ".snappy", ".gz"):
        base = base.removesuffix(suffix)
    return base


def signature_key(kind: str, name: str, attrs: dict) -> str:
    """A stage operator's signature as a short stable string.

    Equal across applications running the same code: the region kind, the operator's name, call site, RDD scopes and
    names (never stage or job ids)."""
    parts = [kind, name, attrs.get("callsite") or "", sorted(attrs.get("scopes") or []),
             sorted(str(r) for r in attrs.get("rdds") or [])]
    return hashlib.sha1(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def blame_columns(entry: dict) -> dict:
    """docs/blame.md's answer for one time as `{blame_<kind>_s: seconds}` columns.

    Every kind has one (0.0 where none), plus the culprit: the segment that held the time longest."""
    cols: dict[str, Any] = {blame_column(k): 0.0 for k in BLAME_KINDS}
    worst: dict | None = None
    for seg in entry.get("blame") or []:
        col = blame_column(str(seg.get("kind")))
        if col in cols:
            cols[col] += float(seg.get("seconds") or 0.0)
        if worst is None or (seg.get("seconds") or 0) > (worst.get("seconds") or 0):
            worst = seg
    if worst is not None:
        holder = worst.get("holder") or {}
        seconds = float(worst.get("seconds") or 0.0)
        what = f"{worst.get('kind')}: {holder.get('operator', '?')}"
        if holder.get("index") is not None:  # a task: which partition, on which executor
            partition = holder.get("partition", holder["index"])  # the index is not it in a re-run
            what += f", task {holder.get('task')} partition {partition} on executor {holder.get('executor')}"
        cols["culprit"] = f"{what} ({seconds:.2f} s)"
    return cols


def _seconds_from_ms(value: Any) -> float | None:
    return value / 1000.0 if isinstance(value, (int, float)) and value > 0 else None


@dataclass
class _Hold:
    """Capabilities a stage operator's output holds at one epoch, and the seconds they were held."""

    count: int = 0
    since: float | None = None
    first: float | None = None
    seconds: float = 0.0


class _Analysis:
    """One pass over one log: events -> Spark model -> tracker, noting what the rows need on the way."""

    def __init__(self, log: AppLog, name: str) -> None:
        self.log, self.name = log, name
        self.errors: list[LineError] = []
        self.model = SparkModel()
        self.replay = Replay(name, observer=self._observe, checked_records=True)  # the model's own records
        self.blame = spark_blame(self.replay)  # the same blame as `flowscope blame`, one pass
        self.regions: dict[tuple, dict] = {}  # scope path -> {"name", "kind"}
        self.operators: dict[tuple, dict] = {}  # (scope path, node) -> operator record
        self.job_epochs: dict[tuple, list[int]] = defaultdict(list)  # (scope, epoch) -> job ids
        self.job_start: dict[tuple, float] = {}  # (scope, epoch) -> first job's submission (s)
        self.job_status: dict[int, str] = {}
        self.batches: dict[tuple, str] = {}  # (scope, batch id) -> query id, from "batch N done" marks
        self.trigger_start: dict[tuple, float] = {}  # (query id, batch id) -> trigger start (s)
        self.holds: dict[tuple, _Hold] = {}  # (scope, node, epoch) -> capabilities held at the stage's output
        self.sink: dict[tuple, dict[int, int]] = defaultdict(dict)  # scope -> sink input frontier {time: count}
        self.advances: dict[tuple, list[tuple[float, int, int | None]]] = defaultdict(list)  # (at, batch, min|None)
        self.tasks: dict[int, list[tuple[float, dict]]] = defaultdict(list)  # stage id -> (seconds, task info)
        self.attempts: dict[int, set] = defaultdict(set)
        self.failed_attempts: dict[int, set] = defaultdict(set)
        self.app_start: float | None = None
        self.app_end: float | None = None
        self.spark_version: str | None = None

    # --- the pass ----------------------------------------------------------------------------------------

    def run(self) -> AppRows:
        reader = EventLogReader(self.log, on_error=self.errors.append, decode=model_decoder())
        model, replay, on_event, on_record, blame = self.model, self.replay, self._event, self._record, self.blame
        for ev in reader:
            on_event(ev.event)
            for rec in model.feed(ev.event, ev.line, type(ev.event) is not WholeEvent):  # typed: types checked
                on_record(rec)
                if replay.apply(rec, ev.line):
                    blame.record(rec)
        replay.finish()
        times = self._times()
        stages = self._stages()
        self._culprits(times, stages)
        self._attach_blame(times, {"times": [t.to_json() for t in blame.times()]})
        return AppRows(self._application(reader, times, stages), times, stages)

    def _event(self, event: dict) -> None:
        """What the rows need from Spark's events beyond what the model turns into progress.

        Task durations, stage attempts, the micro-batches' trigger starts, the application's bounds and Spark
        version."""
        kind = event.get("Event")
        if kind == "SparkListenerTaskEnd":
            info = event.get("Task Info") or {}
            if (event.get("Task End Reason") or {}).get("Reason", "Success") == "Success" and not info.get("Failed"):
                launch, finish = _seconds_from_ms(info.get("Launch Time")), _seconds_from_ms(info.get("Finish Time"))
                if launch is not None and finish is not None:
                    self.tasks[event.get("Stage ID", -1)].append((finish - launch, info))
        elif kind == "SparkListenerStageCompleted":
            info = event.get("Stage Info") or {}
            sid, attempt = info.get("Stage ID", -1), info.get("Stage Attempt ID", 0)
            self.attempts[sid].add(attempt)
            if info.get("Failure Reason"):
                self.failed_attempts[sid].add(attempt)
        elif kind == "SparkListenerApplicationStart":
            self.app_start = _seconds_from_ms(event.get("Timestamp"))
        elif kind == "SparkListenerApplicationEnd":
            self.app_end = _seconds_from_ms(event.get("Timestamp"))
        elif kind == "SparkListenerLogStart":
            self.spark_version = event.get("Spark Version")
        elif isinstance(kind, str) and kind.endswith("QueryProgressEvent"):
            p = event.get("progress") or {}
            start = iso_seconds(p.get("timestamp"))
            if start is not None and p.get("batchId") is not None:
                self.trigger_start[(p.get("id"), p["batchId"])] = start

    def _record(self, rec: dict) -> None:
        kind = rec["type"]
        if kind == "progress":
            scope = tuple(rec["scope"])
            at = rec.get("at") or 0.0
            for port, t, d in rec["updates"]:
                if port[0] == "out" and port[1] >= 3:
                    self._hold(scope, port[1], time_from_json(t), d, at)  # a loop's [epoch, iteration]: a tuple
        elif kind == "mark":
            scope = tuple(rec.get("scope") or ())
            if "job" in rec and "epoch" in rec:
                if "status" in rec:
                    self.job_status[rec["job"]] = rec["status"]
                else:
                    self.job_epochs[(scope, rec["epoch"])].append(rec["job"])
                    self.job_start.setdefault((scope, rec["epoch"]), rec.get("at") or 0.0)
            elif "batch" in rec and "query" in rec:
                self.batches[(scope, rec["batch"])] = rec["query"]
        elif kind == "scope":
            kind_of_region = (rec.get("attrs") or {}).get("kind")
            self.regions[tuple(rec["path"])] = {"name": rec.get("name", ""), "kind": kind_of_region}
        elif kind == "operator":
            self.operators[(tuple(rec["scope"]), rec["node"])] = rec

    def _hold(self, scope: tuple, node: int, time: Any, delta: int, at: float) -> None:
        hold = self.holds.get((scope, node, time))
        if hold is None:
            hold = self.holds[(scope, node, time)] = _Hold()
        before = hold.count
        hold.count += delta
        if before <= 0 < hold.count:
            hold.since = at
            if hold.first is None:
                hold.first = at
        elif before > 0 >= hold.count and hold.since is not None:
            hold.seconds += at - hold.since
            hold.since = None

    def _observe(self, info: BatchInfo, scope: Subgraph, updates: list, pushed: list) -> None:
        """Follow every region's sink input frontier; note each change with the batch's wall clock."""
        changed = set()
        for sc, loc, t, d in pushed:
            if loc == _SINK_INPUT and len(sc.path) == 1:
                frontier = self.sink[sc.path]
                count = frontier.get(t, 0) + d
                if count:
                    frontier[t] = count
                else:
                    frontier.pop(t, None)
                changed.add(sc.path)
        for path in changed:
            frontier = self.sink[path]
            low = min(frontier) if frontier else None
            # the batch number as the debugger counts (the state after this many batches: this one included), so
            # a time's `end_batch` is where `flowscope replay LOG --at N` shows it completed
            self.advances[path].append((self.replay.last_at or 0.0, (info.index or 0) + 1, low))

    # --- rows --------------------------------------------------------------------------------------------

    def _times(self) -> list[dict]:
        """Every time that completed at its region's sink, with its interval."""
        keys = set(self.job_epochs) | set(self.batches)
        by_scope: dict[tuple, list[int]] = defaultdict(list)
        for scope, t in keys:
            by_scope[scope].append(t)
        app_id = self.model.app_id or _app_id_from_name(self.name)
        rows = []
        for scope, epochs in sorted(by_scope.items()):
            region = self.regions.get(scope, {})
            streaming = region.get("kind") == "streaming query"
            advances = self.advances.get(scope, [])
            # the frontier's least element after each change (None: empty, past every time), as a sort key
            lows = [float("inf") if low is None else low for _, _, low in advances]
            monotone = all(a <= b for a, b in zip(lows, lows[1:], strict=False))
            for t in sorted(epochs):
                i = _first_past(lows, t, monotone)
                if i is None:
                    continue  # still open when the log ends
                end, end_batch, _ = advances[i]
                start = self.job_start.get((scope, t))
                if streaming:
                    query = self.batches.get((scope, t))
                    start = self.trigger_start.get((query, t), start)
                jobs = sorted(self.job_epochs.get((scope, t), []))
                statuses = {self.job_status.get(j) for j in jobs}
                row = dict.fromkeys(TIME_COLUMNS)
                row.update(
                    app_id=app_id, scope=list(scope), scope_name=region.get("name"), region_kind=region.get("kind"),
                    time=t, job_ids=jobs, batch_id=t if streaming else None, start=start, end=end,
                    latency_s=None if start is None else max(0.0, end - start), end_batch=end_batch,
                    status="FAILED" if "FAILED" in statuses else ("SUCCEEDED" if jobs else None),
                )
                rows.append(row)
        return rows

    def _stages(self) -> list[dict]:
        """Every stage operator at every epoch where it held capabilities, with its tasks' figures."""
        ids: dict[tuple, list[int]] = defaultdict(list)
        for sid, st in self.model.stages.items():
            ids[(tuple(st.region.path), st.node, st.epoch)].append(sid)
        app_id = self.model.app_id or _app_id_from_name(self.name)
        end = self.app_end or self.replay.last_at
        rows = []
        for (scope, node, t), hold in sorted(self.holds.items()):
            if hold.first is None:
                continue
            held = hold.seconds + (max(0.0, (end or hold.since or 0.0) - hold.since) if hold.since is not None else 0.0)
            op = self.operators.get((scope, node)) or {}
            attrs = op.get("attrs") or {}
            kind = self.regions.get(scope, {}).get("kind") or ""
            sids = sorted(ids.get((scope, node, t), []))
            tasks = [task for sid in sids for task in self.tasks.get(sid, [])]
            durations = sorted(d for d, _ in tasks)
            median = statistics.median(durations) if durations else None
            longest = max(tasks, key=lambda x: x[0]) if tasks else None
            stragglers = [d for d in durations if straggler_median(d, durations) is not None]
            straggler = None
            others = straggler_median(longest[0], durations) if longest is not None else None
            if longest is not None and others is not None:
                info = longest[1]
                straggler = (f"task {info.get('Task ID')} (partition {info.get('Index')}, executor "
                             f"{info.get('Executor ID')}) ran {longest[0]:.2f} s, median of the others {others:.2f} s")
            row = dict.fromkeys(STAGE_COLUMNS)
            row.update(
                # a loop's stage holds (epoch, iteration): the row's time is the epoch (its job's), as elsewhere
                app_id=app_id, app_start=self.app_start, scope=list(scope), region_kind=kind,
                time=t[0] if type(t) is tuple else t,
                signature=signature_key(kind, op.get("name", ""), attrs), name=op.get("name"), stage_ids=sids,
                attempts=sum(len(self.attempts.get(s, ())) for s in sids),
                failed_attempts=sum(len(self.failed_attempts.get(s, ())) for s in sids),
                start=hold.first, held_s=held, tasks=len(durations), median_task_s=median,
                max_task_s=durations[-1] if durations else None,
                skew=skew_score(durations) if durations else None,
                stragglers=len(stragglers), straggler=straggler,
            )
            rows.append(row)
        return rows

    def _culprits(self, times: list[dict], stages: list[dict]) -> None:
        """Without blame, a time's culprit is the stage that held it longest (and its straggler, if any)."""
        longest: dict[tuple, dict] = {}
        for st in stages:
            # a loop's stages (docs/spark-model.md, "Loops") hold their region's time: the job's epoch
            key = (tuple(st["scope"][:-1] if st["region_kind"] == "loop" else st["scope"]), st["time"])
            if key not in longest or st["held_s"] > longest[key]["held_s"]:
                longest[key] = st
        for row in times:
            held = longest.get((tuple(row["scope"]), row["time"]))
            if held is None:
                row["culprit"] = "driver (no stage ran)"
                continue
            row["culprit"] = f"stage {held['name']} held {held['held_s']:.2f} s" + (
                f"; {held['straggler']}" if held["straggler"] else "")
            row["culprit_signature"] = held["signature"]

    @staticmethod
    def _attach_blame(times: list[dict], answer: dict) -> None:
        by_time = {}
        for e in answer.get("times") or []:
            scope, t = tuple(e.get("scope") or ()), e.get("time")
            if e.get("iteration") is not None:  # a loop's iteration [epoch, iteration] is its region's epoch
                scope, t = scope[:-1], t[0]
            by_time[(scope, t)] = e
        for row in times:
            entry = by_time.get((tuple(row["scope"]), row["time"]))
            if entry is not None:
                row.update(blame_columns(entry))

    def _where(self, err: LineError) -> str:
        """A line error with the file named as the caller knows the log (a rolling log's part by its name)."""
        where = f"{self.name.rstrip('/')}/{os.path.basename(err.path)}" if self.log.rolling else self.name
        text = f"{where}:{err.line}: {err.kind}: {err.reason}"
        return f"{text} [{err.excerpt}]" if err.excerpt else text

    def _application(self, reader: EventLogReader, times: list[dict], stages: list[dict]) -> dict:
        model, stats = self.model, reader.stats
        problems: list[str] = []
        corrupt = stats.lines_corrupt + stats.streams_corrupt
        if corrupt:
            problems.append(f"{corrupt} corrupt lines skipped; first: {self._where(self.errors[0])}" if self.errors
                            else f"{corrupt} corrupt lines skipped")
        problems += [f"replay: {err}" for err in self.replay.errors[:5]]
        problems += [f"uncertain: {why}" for why in model.uncertain[:5]]
        if reader.pending is not None:
            problems.append(f"in progress: last line unfinished at {reader.pending.line}")
        if not model.ended:
            problems.append("the application has not ended (no ApplicationEnd)")
        if not stats.events:
            problems.append("no events in the log")
        failed = sum(1 for job in model.jobs.values() if job.status == "FAILED")
        row = dict.fromkeys(APPLICATION_COLUMNS)
        row.update(
            app_id=model.app_id or _app_id_from_name(self.name), name=model.app_name, spark_version=self.spark_version,
            start=self.app_start, end=self.app_end,
            duration_s=(self.app_end - self.app_start) if self.app_start and self.app_end else None,
            jobs=len(model.jobs), failed_jobs=failed, stages=len(model.stage_status), tasks=model.task_ends,
            times=len(times), events=stats.events, corrupt_lines=corrupt, state=self.log.state, log=self.name,
            readable=bool(stats.events), problems=problems[:MAX_PROBLEMS],
        )
        return row


def _first_past(lows: list[float], t: int, monotone: bool) -> int | None:
    """The index of the first frontier change after which no time `<= t` remains.

    Lows never decrease in a well-formed log (binary search); a regression, which the contract checker would flag, is
    scanned linearly."""
    if monotone:
        i = bisect.bisect_right(lows, t)
        return i if i < len(lows) else None
    return next((i for i, low in enumerate(lows) if low > t), None)
