"""A task's time split as Spark measures it, and a stage attempt's sums and quantiles of it.

From a ``SparkListenerTaskEnd``'s ``Task Metrics`` and ``Task Info`` (and ``Task Executor Metrics``), one flat
*breakdown* per task: times in milliseconds (Spark's nanosecond CPU and shuffle-write times converted), sizes in
bytes and records. Spark's field names stayed the same from 1.x to 4.x, but which fields a log has did not (CPU
times since 2.1, records since 1.3, peak execution memory since 2.0, executor metrics since 3.0): a field the log
does not have is None here, never 0, and a stage's summary lists the fields none of its tasks had as ``absent``.

Scheduler delay is the History Server's: the task's duration less its run, deserialization, result serialization
and getting-result times, never below 0. Getting-result time is from ``Getting Result Time`` (a timestamp: when
the driver began fetching a large result) to the finish.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FIELDS", "TIME_FIELDS", "breakdown", "summarize", "RunningSums", "describe", "PHASES"]

# (breakdown field, unit) in the order people read them: the time split first, then what was read and written
TIME_FIELDS = ("duration_ms", "scheduler_delay_ms", "deserialize_ms", "deserialize_cpu_ms", "run_ms", "cpu_ms",
               "gc_ms", "fetch_wait_ms", "shuffle_write_ms", "result_serialization_ms", "getting_result_ms")
SIZE_FIELDS = ("input_records", "input_bytes", "shuffle_records_read", "shuffle_local_bytes",
               "shuffle_remote_bytes", "output_records", "output_bytes", "shuffle_write_records",
               "shuffle_write_bytes", "memory_spilled", "disk_spilled", "peak_execution_memory", "result_size",
               "peak_jvm_heap")
FIELDS = TIME_FIELDS + SIZE_FIELDS

# Spark's event timeline phases of a task bar, in order (the Executors tab draws them): each a breakdown field
PHASES = ("scheduler_delay_ms", "deserialize_ms", "fetch_wait_ms", "compute_ms", "gc_ms", "shuffle_write_ms",
          "result_serialization_ms", "getting_result_ms")

_NS = 1e-6  # nanoseconds to milliseconds


def breakdown(info: dict, metrics: dict | None, executor_metrics: dict | None = None) -> dict:
    """One task's breakdown (see the module docstring) from its ``Task Info``, ``Task Metrics`` and ``Task Executor
    Metrics``; every field of :data:`FIELDS` is there, None where the log does not say. The fields' types were
    checked where the event was read (``event_shape``, or the typed decode): numbers or null."""
    get = info.get
    launched, finished = get("Launch Time"), get("Finish Time")
    duration = finished - launched if launched is not None and finished is not None else None
    getting = get("Getting Result Time")
    getting_ms = None if getting is None or duration is None else (finished - getting if getting else 0)
    m = metrics or _EMPTY
    mget = m.get
    run, deser, ser = mget("Executor Run Time"), mget("Executor Deserialize Time"), mget("Result Serialization Time")
    cpu, deser_cpu = mget("Executor CPU Time"), mget("Executor Deserialize CPU Time")
    delay = None
    if duration is not None and run is not None and deser is not None:
        delay = duration - run - deser - (ser or 0) - (getting_ms or 0)
        if delay < 0:
            delay = 0
    sr = mget("Shuffle Read Metrics") or _EMPTY
    sw = mget("Shuffle Write Metrics") or _EMPTY
    inp = mget("Input Metrics") or _EMPTY
    outp = mget("Output Metrics") or _EMPTY
    write_ns = sw.get("Shuffle Write Time")
    heap = (executor_metrics or _EMPTY).get("JVMHeapMemory")
    return {
        "duration_ms": duration, "scheduler_delay_ms": delay, "deserialize_ms": deser,
        "deserialize_cpu_ms": None if deser_cpu is None else round(deser_cpu * _NS, 3),
        "run_ms": run, "cpu_ms": None if cpu is None else round(cpu * _NS, 3),
        "gc_ms": mget("JVM GC Time"), "fetch_wait_ms": sr.get("Fetch Wait Time"),
        "shuffle_write_ms": None if write_ns is None else round(write_ns * _NS, 3),
        "result_serialization_ms": ser, "getting_result_ms": getting_ms,
        "input_records": inp.get("Records Read"), "input_bytes": inp.get("Bytes Read"),
        "shuffle_records_read": sr.get("Total Records Read"), "shuffle_local_bytes": sr.get("Local Bytes Read"),
        "shuffle_remote_bytes": sr.get("Remote Bytes Read"),
        "output_records": outp.get("Records Written"), "output_bytes": outp.get("Bytes Written"),
        "shuffle_write_records": sw.get("Shuffle Records Written"),
        "shuffle_write_bytes": sw.get("Shuffle Bytes Written"),
        "memory_spilled": mget("Memory Bytes Spilled"), "disk_spilled": mget("Disk Bytes Spilled"),
        "peak_execution_memory": mget("Peak Execution Memory"), "result_size": mget("Result Size"),
        "peak_jvm_heap": heap or None,  # 0: the executor did not poll its metrics
    }


_EMPTY: dict = {}


def _quantiles(s: list) -> dict:
    """The History Server's five quantiles of a stage's task metric (min, 25th, median, 75th, max), of values
    sorted."""
    n = len(s)
    return {"min": s[0], "p25": s[n // 4], "median": s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2,
            "p75": s[(3 * n) // 4], "max": s[-1]}


def summarize(tasks: list[dict]) -> dict:
    """A stage attempt's finished tasks (their breakdowns) as the History Server's stage page shows them: per field,
    the sum over the tasks that have it and the quantiles; ``absent``: the fields no task had."""
    sums: dict[str, Any] = {}
    quantiles: dict[str, dict] = {}
    absent = []
    for f in FIELDS:
        values = [v for t in tasks if (v := t[f]) is not None]
        if not values:
            absent.append(f)
            continue
        values.sort()
        total = sum(values)
        sums[f] = round(total, 3) if type(total) is float else total
        quantiles[f] = _quantiles(values)
    spilled = sum(1 for t in tasks if t["memory_spilled"] or t["disk_spilled"])
    return {"tasks": len(tasks), "sums": sums, "quantiles": quantiles, "absent": absent,
            "tasks_spilled": spilled if "memory_spilled" in sums else None}


# what a running stage's finished tasks spent their time on (the stage's detail, which explain shows)
_FINISHED_FIELDS = ("duration_ms", "scheduler_delay_ms", "deserialize_ms", "run_ms", "cpu_ms", "gc_ms",
                    "fetch_wait_ms", "shuffle_write_ms", "result_serialization_ms", "getting_result_ms",
                    "memory_spilled", "disk_spilled")


class RunningSums:
    """What a running stage attempt's finished tasks spent their time on: the sums of the fields that say where
    time went (None for a field none of them had), brought up to date from a growing list of breakdowns, each
    breakdown added once."""

    __slots__ = ("seen", "sums")

    def __init__(self) -> None:
        self.seen = 0
        self.sums: dict[str, Any] = dict.fromkeys(_FINISHED_FIELDS)

    def add(self, tasks: list[dict]) -> dict:
        """The sums over ``tasks`` (the same list as before, grown), as a new dict with ``tasks``, the count."""
        sums = self.sums
        for t in tasks[self.seen:]:
            for f in _FINISHED_FIELDS:
                v = t.get(f)
                if v is not None:
                    old = sums[f]
                    sums[f] = v if old is None else old + v
        self.seen = len(tasks)
        return {"tasks": len(tasks), **{f: (None if v is None else round(v, 3)) for f, v in sums.items()}}


def _s(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 100 else f"{ms:.0f} ms"


def _b(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"


def describe(b: dict) -> str:
    """A breakdown (or a :class:`RunningSums`' sums) in one line: where the time went, then spills; absent metrics
    are said as such, never as 0."""
    parts = []
    for f, name in (("run_ms", "run"), ("cpu_ms", "CPU"), ("gc_ms", "GC"), ("fetch_wait_ms", "fetch wait"),
                    ("shuffle_write_ms", "shuffle write"), ("scheduler_delay_ms", "scheduler delay"),
                    ("deserialize_ms", "deserialize"), ("result_serialization_ms", "result serialization"),
                    ("getting_result_ms", "getting result")):
        v = b.get(f)
        if v is not None and (v or f in ("run_ms", "gc_ms")):
            parts.append(f"{name} {_s(v)}")
    missing = [name for f, name in (("run_ms", "run"), ("gc_ms", "GC"), ("cpu_ms", "CPU")) if b.get(f) is None]
    if missing:
        parts.append("no " + "/".join(missing) + " time in the log")
    spill = [f"{_b(b[f])} {name}" for f, name in (("memory_spilled", "spilled from memory"),
                                                  ("disk_spilled", "to disk")) if b.get(f)]
    return ", ".join(parts) + (f"; {', '.join(spill)}" if spill else "")
