"""The thresholds of the Spark findings: one table, each with where its default comes from, and a user's overrides.

Every finding (``backend/spark/diagnosis/findings.py``, and the SQL plan findings of
``backend/spark/sql_plan/findings.py``,
whose rows are named ``plan.*``) compares a metric with a threshold named here, and its mark says which
one fired (``threshold``: name, value, source). docs/findings.md renders the same table. A user changes them with a
TOML or JSON file (``--thresholds FILE`` on the commands that replay Spark logs), either flat (``"gc.ratio" = 0.2``)
or in tables (``[gc]`` then ``ratio = 0.2``). The flag checks the file once, then names it in the environment
(:data:`ENV`), so every process that builds a Spark model (the conversion children, the server's sessions) reads
the same values.

A new finding adds its rows to :data:`TABLE`; nothing else here changes.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ENV", "TABLE", "Threshold", "Thresholds", "ThresholdsError", "configured", "default", "load",
           "threshold_text"]

ENV = "FLOWSCOPE_THRESHOLDS"  # the file the --thresholds flag named, for every process that builds a model


@dataclass(frozen=True)
class Threshold:
    """One row of the table: its name (``finding.parameter``), default value, unit, what it means, and the source
    of the default."""

    name: str
    default: float
    unit: str
    meaning: str
    source: str
    op: str = ">="  # how the metric compares with it when the finding fires


TABLE: tuple[Threshold, ...] = (
    Threshold("straggler.factor", 3.0, "ratio",
              "a successful task at least this many times the median of its stage attempt's other tasks ...",
              "flowscope, stricter than Spark's own speculation (spark.speculation.multiplier, 1.5x the median)"),
    Threshold("straggler.min_s", 0.5, "seconds", "... and at least this much above it is a straggler",
              "flowscope: sub-second noise in tiny stages is not a finding"),
    Threshold("skew.score", 0.5, "score",
              "a stage attempt whose task durations' mean absolute deviation over their mean reaches this ...",
              "Flink FLIP-418's data-skew score"),
    Threshold("skew.min_tasks", 4, "tasks", "... with at least this many tasks is skewed", "flowscope"),
    Threshold("gc.ratio", 0.1, "fraction", "a stage attempt's JVM GC time over its tasks' run time, at least",
              "Dr. Elephant, executor GC heuristic: moderate severity at 0.1 (low 0.08, severe 0.15, critical 0.2)"),
    Threshold("gc.min_s", 1.0, "seconds", "and that GC time, summed over the attempt's tasks, at least",
              "flowscope: a small stage's JVM warm-up is not worth a finding"),
    Threshold("spill.min_bytes", 1_000_000, "bytes",
              "memory bytes spilled, summed over a stage attempt's tasks, at least",
              "Dr. Elephant (customSHSWork), executor spill: any memoryBytesSpilled is reported; flowscope's floor"),
    Threshold("fetch_wait.ratio", 0.2, "fraction",
              "a stage attempt's shuffle fetch wait time over its tasks' run time, at least",
              "Sparklens reports ReadFetch% per stage without a threshold; flowscope's"),
    Threshold("fetch_wait.min_s", 1.0, "seconds", "and that wait, summed over the attempt's tasks, at least",
              "flowscope"),
    Threshold("data_skew.read_factor", 3.0, "ratio",
              "a straggler that read at least this many times the attempt's median records or bytes is data skew",
              "flowscope, after DataFlint's partition skew (max/median) and Dr. Elephant's task skew"),
    Threshold("slow_executor.factor", 1.78, "ratio",
              "a straggler that read near the median, whose executor's other tasks in the attempt took at least "
              "this many times the other executors' median, is a slow executor",
              "Dr. Elephant, executor imbalance (max/median across executors): moderate severity at 1.78"),
    Threshold("too_few_partitions.min_stage_s", 10.0, "seconds",
              "a stage attempt with fewer tasks than the cores alive, running at least this long",
              "flowscope, after Sparklens' PRatio (tasks per core) below 1"),
    Threshold("too_few_partitions.tasks_per_core", 2.0, "tasks per core",
              "or a stage attempt with fewer tasks per core than this ...",
              "Spark's tuning guide (Level of Parallelism): 2-3 tasks per CPU core", op="<"),
    Threshold("too_few_partitions.min_task_s", 30.0, "seconds", "... whose median task ran at least this long",
              "flowscope: a task that long dwarfs the scheduling overhead a smaller one adds"),
    Threshold("tiny_tasks.min_tasks", 5000, "tasks", "a stage attempt with more tasks than this ...",
              "DataFlint, many small tasks: over 5,000 tasks", op=">"),
    Threshold("tiny_tasks.max_median_s", 0.5, "seconds", "... whose median task ran under this",
              "DataFlint, many small tasks: median under 500 ms", op="<"),
    Threshold("idle_cores.ratio", 0.5, "fraction",
              "the share of the core-seconds executors offered over the application that no task used, at least",
              "DataFlint, idle cores: over 50%"),
    Threshold("idle_cores.min_core_hours", 0.1, "core-hours", "and those idle core-hours, at least",
              "flowscope: a short local application always idles; six core-minutes are worth a look"),
    Threshold("driver_bound.ratio", 0.5, "fraction",
              "the share of the application's wall time with no task running, at least",
              "flowscope, after Sparklens' driver vs executor wall-clock split"),
    Threshold("driver_bound.min_s", 60.0, "seconds", "and that time, at least", "flowscope"),
    Threshold("task_failures.min_failed", 1, "tasks", "failed task attempts in a stage attempt, at least",
              "flowscope: every failed attempt's run is lost (Dr. Elephant rates task failure rates 0.1 / 0.3 / 0.5)"),
    # the Python findings (backend/spark/diagnosis/python_findings.py)
    Threshold("python_udf.ratio", 0.5, "fraction",
              "a stage attempt's Python worker time, starting them aside, over its tasks' run time, at least ...",
              "flowscope: most of the run time (Spark's PythonSQLMetrics time the workers per task and operator)"),
    Threshold("python_udf.min_s", 1.0, "seconds", "... and that time, summed over the attempt's tasks, at least",
              "flowscope, as gc.min_s"),
    Threshold("python_worker_startup.ratio", 0.5, "fraction",
              "a stage attempt's time starting and initialising Python workers over its tasks' run time, at least ...",
              "flowscope: most of the run time (Spark's time to start and to initialize Python workers)"),
    Threshold("python_worker_startup.min_s", 1.0, "seconds", "... that time, summed over the tasks, at least ...",
              "flowscope, as gc.min_s"),
    Threshold("python_worker_startup.starts_per_core", 1.0, "workers per core",
              "... with more Python workers started than this many per core",
              "Spark's spark.python.worker.reuse (default true): each core starts a worker once"),
    Threshold("cpu_idle_tasks.ratio", 0.5, "fraction",
              "a stage attempt without Python times whose run time neither JVM CPU time nor a measured wait (GC, "
              "shuffle fetch wait, shuffle write) explains, over its run time, at least ...",
              "flowscope: Spark's Executor CPU Time is the task thread's CPU, Executor Run Time its wall time"),
    Threshold("cpu_idle_tasks.min_s", 5.0, "seconds", "... and that time, summed over the tasks, at least",
              "flowscope: every stage of Python functions through the RDD API waits on its workers; five seconds "
              "of it in a stage are worth a look"),
    # the SQL plan findings (backend/spark/sql_plan/findings.py)
    Threshold("plan.small_files.max_average_bytes", 3_000_000, "bytes",
              "a scan or a write whose files average under this ...", "DataFlint, small files: under 3 MB on average",
              op="<"),
    Threshold("plan.small_files.min_files", 100, "files", "... over more files than this handles small files",
              "DataFlint, small files: over 100 files", op=">"),
    Threshold("plan.broadcastable_sort_merge_join.small_side_bytes", 10_000_000, "bytes",
              "a sort-merge join whose smaller side's exchange carries under this could broadcast it",
              "DataFlint, broadcastable join: a side under 10 MB", op="<"),
    Threshold("plan.broadcastable_sort_merge_join.medium_side_bytes", 100_000_000, "bytes",
              "or one whose smaller side carries under this ...", "DataFlint, broadcastable join: under 100 MB ...",
              op="<"),
    Threshold("plan.broadcastable_sort_merge_join.large_side_bytes", 10_000_000_000, "bytes",
              "... against a larger side over this", "DataFlint, broadcastable join: ... against a side over 10 GB",
              op=">"),
    Threshold("plan.large_broadcast.bytes", 1_000_000_000, "bytes", "a broadcast exchange's data size over this",
              "DataFlint, large broadcast: over 1 GB", op=">"),
    Threshold("plan.large_cross_join.scanned_rows", 10_000_000_000, "row pairs",
              "a nested-loop join or cartesian product comparing more row pairs than this (its inputs' rows, "
              "multiplied)", "DataFlint, large cross join: over 10^10 row pairs", op=">"),
    Threshold("plan.partitioned_scan_without_filter.min_partitions", 1, "partitions",
              "a scan of a partitioned table without a partition filter reading at least this many partitions",
              "DataFlint, full scan of a partitioned table: any; flowscope's floor of one"),
    Threshold("plan.long_filter.chars", 1000, "characters", "a filter whose condition is longer than this",
              "DataFlint, long filter condition: over 1,000 characters", op=">"),
)

_BY_NAME = {t.name: t for t in TABLE}


def default(name: str) -> float:
    """A threshold's default value (what code outside a model, such as the fleet's stage rows, uses)."""
    return _BY_NAME[name].default


class ThresholdsError(ValueError):
    """A thresholds file that cannot be used: the message names the file and the cause."""


class Thresholds:
    """The values in force: the defaults, with a file's overrides; ``source`` is that file (None: the defaults)."""

    def __init__(self, overrides: dict[str, float] | None = None, source: str | None = None) -> None:
        self.values = {t.name: t.default for t in TABLE}
        self.values.update(overrides or {})
        self.overridden = frozenset(overrides or ())
        self.source = source

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    def fired(self, name: str, *also: str) -> dict:
        """What a finding's mark says about the threshold that fired: its name, value, unit and source; a rule's
        further conditions (``also``) listed the same way under ``and``."""
        row = _BY_NAME[name]
        source = f"set in {self.source}" if name in self.overridden else row.source
        fired = {"name": name, "value": self.values[name], "unit": row.unit, "source": source, "op": row.op}
        if also:
            fired["and"] = [self.fired(other) for other in also]
        return fired


def threshold_text(fired: dict) -> str:
    """A fired threshold (``Thresholds.fired``) as a person reads it: ``skew.score >= 0.5 (Flink FLIP-418's
    data-skew score)``, its further conditions after it."""
    if not fired.get("name"):
        return ""
    value = fired.get("value")
    shown = f"{value:,g}" if isinstance(value, (int, float)) else str(value)
    text = f"{fired['name']} {fired.get('op', '>=')} {shown}" + (f" ({fired['source']})" if fired.get("source") else "")
    return "; ".join([text] + [threshold_text(more) for more in fired.get("and") or ()])


def load(path: str | os.PathLike) -> Thresholds:
    """A thresholds file (TOML, or JSON when it ends in ``.json``): names from :data:`TABLE`, numbers for values;
    :class:`ThresholdsError` names the file and what is wrong (a parse error with its line)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ThresholdsError(f"{p}: cannot read it ({e})") from None
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except json.JSONDecodeError as e:
        raise ThresholdsError(f"{p}:{e.lineno}: not JSON ({e.msg})") from None
    except tomllib.TOMLDecodeError as e:
        raise ThresholdsError(f"{p}: not TOML ({e})") from None
    if not isinstance(data, dict):
        raise ThresholdsError(f"{p}: must hold an object of thresholds, not {type(data).__name__}")
    overrides: dict[str, float] = {}
    for name, value in _flatten(data):
        if name not in _BY_NAME:
            known = ", ".join(sorted(_BY_NAME))
            raise ThresholdsError(f"{p}: unknown threshold {name!r} (known: {known})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
            raise ThresholdsError(f"{p}: {name} must be a number at least 0, not {value!r}")
        overrides[name] = value
    return Thresholds(overrides, str(p))


def _flatten(data: dict, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out += _flatten(value, name + ".")
        else:
            out.append((name, value))
    return out


_cache: dict[str | None, Thresholds] = {}


def configured() -> Thresholds:
    """The thresholds in force in this process: the file :data:`ENV` names (checked by the flag that set it), else
    the defaults."""
    path = os.environ.get(ENV) or None
    found = _cache.get(path)
    if found is None:
        found = _cache[path] = load(path) if path else Thresholds()
    return found
