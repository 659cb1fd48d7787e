"""Typed request and response models: they validate input and document the API (OpenAPI at /docs).

Times are JSON values (an integer, or nested two-element arrays for product times), so they are typed ``Any``.
A port is ``["in"|"out", node, port]``. A *port row*, the unit of state, is
``[kind, node, port, frontier, pointstamps, implications]`` with ``frontier`` a list of times and the two count
lists ``[[time, count], ...]``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

PortRow = list[Any]


class Problem(BaseModel):
    detail: str = Field(description="what went wrong and what to do about it")


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """A route's error responses for the OpenAPI document: each status answers with a :class:`Problem`."""
    return {status: {"model": Problem} for status in statuses}


class SessionCreate(BaseModel):
    path: str = Field(description="a log file (or directory) inside the directories the server was started with")
    follow: bool = Field(False, description="follow the file as it grows (a live session)")
    check: bool = Field(True, description="check every batch against the progress contract")
    name: str | None = Field(None, description="display name (default: the file name)")


class SessionInfo(BaseModel):
    """A session, or an application of a followed directory not opened yet (status ``listed``: then only ``id``,
    ``name``, ``kind``, ``source``, ``live``, ``status`` and ``application`` are given)."""

    id: str
    name: str
    kind: str = Field(description="what the feed is: progress-log, live, spark-eventlog, ...")
    source: str
    live: bool = Field(description="the source may still grow; the view follows its head")
    status: Literal["listed", "loading", "live", "done", "failed", "stopped"]
    error: str | None = None
    created: float | None = None
    records: int = 0
    batches: int = Field(0, description="batches applied so far: the head of the timeline")
    first_at: float | None = None
    last_at: float | None = None
    errors: int = Field(0, description="corrupt lines and rejected batches")
    findings: int = 0
    marks: int = 0
    scopes: int = 0
    operators: int = 0
    checked: bool = True
    events_lost: int = Field(0, description="a live Spark session: events its listener took from Spark that never "
                                            "arrived (outages of the server or the network, a full listener queue)")
    connected: bool | None = Field(None, description="a live Spark session: its listener is connected now")
    application: dict[str, Any] | None = Field(
        None, description="an application of a followed directory: key, app_id, attempt, name, user, spark_version, "
                          "start, end, duration_s, status (in_progress, finished, failed, incomplete), size, updated, "
                          "error, summary (once replayed: duration_s, jobs, tasks, idle_cores_pct, findings "
                          "[{kind, text, impact_s}], findings_total, slowest [{name, latency_s}]), rest (Spark's REST "
                          "documents of it)")


class ScopeTree(BaseModel):
    path: list[int]
    name: str
    depth: int
    operators: int
    inputs: int
    outputs: int
    scopes: list[ScopeTree]


class GraphNode(BaseModel):
    id: int = Field(description="child index in the scope (0 for the boundary boxes)")
    box: str = Field(description="'enter' / 'leave' for the scope's boundary, else the child index")
    kind: Literal["operator", "scope", "enter", "leave"]
    name: str
    inputs: int
    outputs: int
    x: float
    y: float
    w: float
    h: float
    layer: int
    band: int
    attrs: dict[str, Any] = {}
    scope: list[int] | None = Field(None, description="for a folded nested scope: its path, to open it")
    contains: int | None = Field(None, description="for a folded nested scope: operators inside, at any depth")


class GraphEdge(BaseModel):
    from_: list[Any] = Field(alias="from")
    to: list[Any]
    feedback: bool = Field(description="set aside by the layering (closes a cycle)")


class Graph(BaseModel):
    scope: list[int]
    name: str
    depth: int
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    width: float
    height: float
    layers: int
    bands: int
    band_y: list[list[float]] = Field(description="top and bottom of each band (rows of wrapped layers)")
    band_gap: float
    node_width: float
    port_gap: float
    version: int = Field(description="structure version: the graph changes when the dataflow grows")


class ScopeState(BaseModel):
    scope: list[int]
    batch: int = Field(description="the state after this many batches")
    head: int
    at: float | None = Field(None, description="wall clock of that batch")
    version: int
    ports: list[PortRow] = Field(description="[kind, node, port, frontier, pointstamps, implications]")


class HolderOut(BaseModel):
    location: list[Any]
    time: Any
    count: int
    summary: Any
    results_in: Any
    from_parent: bool
    what: Literal["capability", "message", "parent-frontier", "nested-scope"]
    operator: str = Field(description="name of the operator (or nested scope) holding it")
    attrs: dict[str, Any] = Field({}, description="the operator's metadata: Spark stage, tasks, executors, ...")
    path: list[list[Any]] = Field(description="ports from the holder to the asked port, for highlighting")
    next: dict[str, Any] | None = Field(None, description="where to ask next: {scope, port} (nested or parent)")


class Explanation(BaseModel):
    scope: list[int]
    port: list[Any]
    time: Any
    frontier: list[Any]
    batch: int
    holders: list[HolderOut]
    implied: list[HolderOut]
    held: bool
    late: list[dict[str, Any]] = Field(default_factory=list, description=(
        "the pointstamps that are actually late, first those with running work (a driver holder waits on them), "
        "each with `running` tasks (id, partition, index in the task set, attempt, executor, host, launched, "
        "running_s: seconds from launched to the end of the state shown, the next batch's `at` or at the head the "
        "latest time seen; speculative) and `pending` {count, since}"))
    events_lost: list[dict[str, Any]] = Field(default_factory=list, description=(
        "the stretches before this state whose events never arrived (a live Spark session's listener outages): "
        "{after: batch, lost: events, from, until: wall-clock s, label}; when any, the state may be wrong"))


class Strata(BaseModel):
    scope: list[int]
    strata: list[list[int]] = Field(
        description="operators by stratum: longest path from the sources, feedback set aside")
    feedback: list[list[str]] = Field(description="the edges (between boxes) set aside to break cycles")


class FindingOut(BaseModel):
    kind: str
    scope: list[int]
    port: list[Any]
    time: Any
    message: str
    batch: dict[str, Any]


class Findings(BaseModel):
    total: int
    findings: list[FindingOut]


class Mark(BaseModel):
    label: str
    at: float | None = None
    after: int = Field(description="batches applied before the mark")
    scope: list[int] | None = None
    completes: Any = Field(None, description="a finished job's or micro-batch's mark: the time of its scope it "
                                             "completes (GET .../blame?scope=&time= splits its latency)")
    finding: str | None = Field(None, description="a Spark finding: straggler or skew; then node, time, stage, "
                                                  "attempt, and task, partition, index, executor, duration_s, "
                                                  "median_task_s, records, bytes (a straggler: what it read), "
                                                  "ended_at (a straggler's end, epoch seconds) or summary (a "
                                                  "skewed stage's aggregate)")
    lost: int | None = Field(None, description="an \"events lost\" mark: events that never arrived (a live Spark "
                                               "listener's outage or full queue), from `at` to `lost_until`")
    lost_until: float | None = None
    node: int | None = None
    time: Any = None
    stage: int | None = None
    attempt: int | None = None
    task: int | None = None
    index: int | None = None
    partition: int | None = None
    executor: str | None = None
    duration_s: float | None = None
    median_task_s: float | None = None
    records: int | None = None
    bytes: int | None = None
    ended_at: float | None = None
    summary: dict | None = None


class Marks(BaseModel):
    total: int
    marks: list[Mark]


class LogErrorOut(BaseModel):
    path: str
    line: int
    reason: str


class Errors(BaseModel):
    total: int
    errors: list[LogErrorOut]


class SearchHit(BaseModel):
    scope: list[int]
    scope_name: str
    node: int
    name: str
    nested: bool


class StepSeries(BaseModel):
    name: str
    t: list[float]
    v: list[float | None]


class CountSeries(BaseModel):
    t: list[float]
    messages: list[float]
    capabilities: list[float]


class Series(BaseModel):
    scope: list[int]
    nodes: dict[str, StepSeries] = Field(description="per operator: its frontier as a number over wall time")
    counts: CountSeries = Field(description="messages in flight and capabilities held in the scope over time")


class WorkerStats(BaseModel):
    worker: int
    batches: int
    first_batch: int
    last_batch: int
    first_at: float
    last_at: float


class Workers(BaseModel):
    workers: list[WorkerStats]
    buckets: list[float] = Field(description="start wall time of each histogram bucket")
    histogram: dict[str, list[int]] = Field(description="per worker: batches in each bucket")


class BatchRow(BaseModel):
    batch: int
    at: float | None
    worker: int | None
    scope: list[int]
    seq: Any = None
    cause: Any = None
    updates: int


class Batches(BaseModel):
    total: int
    batches: list[BatchRow]


ScopeTree.model_rebuild()
