"""A task's time split as Spark measures it, and a stage attempt's sums and quantiles of it.

From a ``SparkListenerTaskEnd``'s ``Task Metrics`` and ``Task Info`` (and ``Task Executor Metrics``), one flat
*split* per task: times in Spark's units (milliseconds; CPU times and shuffle write time in nanoseconds, as Spark
measures them, named ``_ns``), sizes in bytes and records. Spark's field names stayed the same from 1.x to 4.x,
but which fields a log has did not (CPU times since 2.1, records since 1.3, peak execution memory since 2.0,
executor metrics since 3.0): a field the log does not have is None here, never 0, and a stage's summary lists the
fields none of its tasks had as ``absent``.

A split is a list in :data:`FIELDS` order (a JSON array in the progress log: ``cause.metrics`` of a task's end;
fields are only ever added at the end, and a reader takes those it knows), since a task's end is most of a log and
a list of numbers costs a fraction of a dict to build and to keep; :func:`as_dict` names the fields for people
(blame's ``breakdown``, the API).

Scheduler delay is the History Server's: the task's duration less its run, deserialization, result serialization
and getting-result times, never below 0. Getting-result time is from ``Getting Result Time`` (a timestamp: when
the driver began fetching a large result) to the finish.

The Python fields come from the SQL metrics Spark's Python operators set per task (the task's ``Accumulables``;
``python_time`` says which and what overlaps what): the largest operator's total, boot, init and exec times (ms),
the bytes sent to and returned from the workers, and ``python_operator``, the accumulator id that names the
operator in the SQL plan (an id, not a quantity: no sums or quantiles of it). :func:`python_of` gives a task's Python
time as its breakdown shows it, within its run time.
"""

from __future__ import annotations

from typing import Any

from backend.spark.diagnosis.python_time import NO_PYTHON, python_parts, task_python

__all__ = ["FIELDS", "TIME_FIELDS", "PHASES", "split", "as_dict", "summarize", "RunningSums", "describe", "AT",
           "format_bytes", "python_of", "python_of_dict", "python_sums", "python_words", "PYTHON_FIELDS", "SUMMED"]

# the split's fields in order: the time split first, then what was read and written
TIME_FIELDS = ("duration_ms", "scheduler_delay_ms", "deserialize_ms", "deserialize_cpu_ns", "run_ms", "cpu_ns",
               "gc_ms", "fetch_wait_ms", "shuffle_write_ns", "result_serialization_ms", "getting_result_ms")
SIZE_FIELDS = ("input_records", "input_bytes", "shuffle_records_read", "shuffle_local_bytes",
               "shuffle_remote_bytes", "output_records", "output_bytes", "shuffle_write_records",
               "shuffle_write_bytes", "memory_spilled", "disk_spilled", "peak_execution_memory", "result_size",
               "peak_jvm_heap")
PYTHON_FIELDS = ("python_total_ms", "python_boot_ms", "python_init_ms", "python_exec_ms", "python_sent_bytes",
                 "python_returned_bytes", "python_operator")  # python_time.task_python's, in its order
FIELDS = TIME_FIELDS + SIZE_FIELDS + PYTHON_FIELDS
AT = {f: i for i, f in enumerate(FIELDS)}  # a field's position in a split
SUMMED = tuple(f for f in FIELDS if f != "python_operator")  # the fields a stage's summary sums (not the id)
_NOT_SUMMED = frozenset(FIELDS) - frozenset(SUMMED)

# Spark's event timeline phases of a task bar, in order, in milliseconds (the Executors tab draws them): split
# fields, the shuffle write time in ms, the Python workers' time (python_of) and the computing time (run time less
# fetch wait, GC, shuffle write and Python)
PHASES = ("scheduler_delay_ms", "deserialize_ms", "fetch_wait_ms", "compute_ms", "python_ms", "gc_ms",
          "shuffle_write_ms", "result_serialization_ms", "getting_result_ms")

_EMPTY: dict = {}


def split(info: dict, metrics: dict | None, executor_metrics: dict | None = None) -> list:
    """One task's split (see the module docstring), :data:`FIELDS` in order, from its ``Task Info``, ``Task
    Metrics`` and ``Task Executor Metrics``; None where the log does not say. The fields' types were checked where
    the event was read (``event_shape``, or the typed decode): numbers or null."""
    get = info.get
    launched, finished = get("Launch Time"), get("Finish Time")
    duration = finished - launched if launched is not None and finished is not None else None
    getting = get("Getting Result Time")
    getting_ms = None if getting is None or duration is None else (finished - getting if getting else 0)
    m = metrics or _EMPTY
    mget = m.get
    run, deser, ser = mget("Executor Run Time"), mget("Executor Deserialize Time"), mget("Result Serialization Time")
    delay = None
    if duration is not None and run is not None and deser is not None:
        delay = duration - run - deser - (ser or 0) - (getting_ms or 0)
        if delay < 0:
            delay = 0
    sr = mget("Shuffle Read Metrics") or _EMPTY
    sw = mget("Shuffle Write Metrics") or _EMPTY
    inp = mget("Input Metrics") or _EMPTY
    outp = mget("Output Metrics") or _EMPTY
    return [
        duration, delay, deser, mget("Executor Deserialize CPU Time"), run, mget("Executor CPU Time"),
        mget("JVM GC Time"), sr.get("Fetch Wait Time"), sw.get("Shuffle Write Time"), ser, getting_ms,
        inp.get("Records Read"), inp.get("Bytes Read"), sr.get("Total Records Read"), sr.get("Local Bytes Read"),
        sr.get("Remote Bytes Read"), outp.get("Records Written"), outp.get("Bytes Written"),
        sw.get("Shuffle Records Written"), sw.get("Shuffle Bytes Written"), mget("Memory Bytes Spilled"),
        mget("Disk Bytes Spilled"), mget("Peak Execution Memory"), mget("Result Size"),
        (executor_metrics or _EMPTY).get("JVMHeapMemory") or None,  # heap 0: the executor did not poll it
        *(NO_PYTHON if (accs := get("Accumulables")) is None else task_python(accs) or NO_PYTHON)]


_RUN, _FETCH, _GC, _WRITE = AT["run_ms"], AT["fetch_wait_ms"], AT["gc_ms"], AT["shuffle_write_ns"]
_PY = AT["python_total_ms"]


def python_of(b: Any) -> tuple[float, float, float] | None:
    """A split's Python time as its breakdown shows it: ``(python, start, exec)`` in ms (``python_time``'s rules:
    within the run time less fetch wait, GC and shuffle write); None for a task without Python time or a split
    from before the Python fields."""
    if len(b) <= _PY + 3 or b[_PY] is None:
        return None
    write = b[_WRITE]
    return python_parts(b[_RUN], b[_FETCH], b[_GC], write * 1e-6 if write is not None else None, b[_PY],
                        b[_PY + 1], b[_PY + 2], b[_PY + 3])


def python_of_dict(d: dict) -> dict | None:
    """:func:`python_of` of a split with its fields named (:func:`as_dict`), as blame's breakdown carries it:
    ``{"ms", "start_ms", "exec_ms"}``; None without Python time."""
    got = python_of([d.get(f) for f in FIELDS])
    if got is None:
        return None
    return {"ms": round(got[0], 3), "start_ms": round(got[1], 3), "exec_ms": round(got[2], 3)}


def as_dict(values: Any) -> dict:
    """A split (a tuple, or the JSON array a log carries) with its fields named: every field of :data:`FIELDS`,
    None for one a shorter array lacks (a log written before it was added)."""
    out = dict.fromkeys(FIELDS)
    out.update(zip(FIELDS, values, strict=False))
    return out


def _quantiles(s: list) -> dict:
    """The History Server's five quantiles of a stage's task metric (min, 25th, median, 75th, max), of values
    sorted."""
    n = len(s)
    return {"min": s[0], "p25": s[n // 4], "median": s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2,
            "p75": s[(3 * n) // 4], "max": s[-1]}


_MEMORY, _DISK = AT["memory_spilled"], AT["disk_spilled"]


def summarize(tasks: list[list]) -> dict:
    """A stage attempt's finished tasks (their splits) as the History Server's stage page shows them: per field,
    the sum over the tasks that have it and the quantiles; ``absent``: the fields no task had."""
    sums: dict[str, Any] = {}
    quantiles: dict[str, dict] = {}
    absent = []
    columns = list(zip(*tasks, strict=True)) if tasks else [()] * len(FIELDS)
    for f, column in zip(FIELDS, columns, strict=True):
        if f in _NOT_SUMMED:
            continue
        try:
            total = sum(column)  # raises on a None: cheaper than looking for one first
            values = sorted(column)
        except TypeError:
            if column.count(None) == len(column):  # a field no task had (the Python ones, mostly): no pass
                absent.append(f)
                continue
            values = sorted(v for v in column if v is not None)
            total = sum(values)
        if not values:
            absent.append(f)
            continue
        if type(total) is float:
            total = round(sum(values), 3)  # summed in sorted order, as the quantiles read them
        sums[f] = total
        quantiles[f] = _quantiles(values)
    spilled = sum(1 for t in tasks if t[_MEMORY] or t[_DISK])
    out = {"tasks": len(tasks), "sums": sums, "quantiles": quantiles, "absent": absent,
           "tasks_spilled": spilled if "memory_spilled" in sums else None}
    if "python_total_ms" in sums:
        out["python"] = python_sums(tasks)
    return out


def python_sums(tasks: list[list]) -> dict:
    """The tasks' Python time as their breakdowns show it (:func:`python_of`), summed: ``{"ms", "start_ms",
    "exec_ms", "tasks"}`` (``tasks``: those with Python time) in ms, rounded to the microsecond."""
    python = start = ran = 0.0
    n = 0
    for b in tasks:
        got = python_of(b)
        if got is not None:
            python += got[0]
            start += got[1]
            ran += got[2]
            n += 1
    return {"ms": round(python, 3), "start_ms": round(start, 3), "exec_ms": round(ran, 3), "tasks": n}


# what a running stage's finished tasks spent their time on (the stage's detail, which explain shows)
_FINISHED_FIELDS = ("duration_ms", "scheduler_delay_ms", "deserialize_ms", "run_ms", "cpu_ns", "gc_ms",
                    "fetch_wait_ms", "shuffle_write_ns", "result_serialization_ms", "getting_result_ms",
                    "memory_spilled", "disk_spilled")
_FINISHED_AT = [(f, AT[f]) for f in _FINISHED_FIELDS]


class RunningSums:
    """What a running stage attempt's finished tasks spent their time on: the sums of the fields that say where
    time went (None for a field none of them had), brought up to date from a growing list of splits, each added
    once."""

    __slots__ = ("seen", "sums", "python")

    def __init__(self) -> None:
        self.seen = 0
        self.sums: dict[str, Any] = dict.fromkeys(_FINISHED_FIELDS)
        self.python: dict | None = None  # python_sums of the tasks so far, once one had Python time

    def add(self, tasks: list[list]) -> dict:
        """The sums over ``tasks`` (the same list as before, grown), as a new dict with ``tasks``, the count."""
        sums = self.sums
        new = tasks[self.seen:]
        if new:
            columns = list(zip(*new, strict=False))
            for f, i in _FINISHED_AT:
                column = columns[i]
                try:
                    total = sum(column)  # raises on a None: cheaper than looking for one first
                except TypeError:
                    total = None
                old = sums[f]
                if type(total) is int and (old is None or type(old) is int):
                    sums[f] = total if old is None else old + total
                    continue
                for v in column:  # None or floats among them: added one by one, in order
                    if v is not None:
                        old = sums[f]
                        sums[f] = v if old is None else old + v
            if any(b[_PY] is not None for b in new if len(b) > _PY):
                more = python_sums(new)
                old_py = self.python
                self.python = more if old_py is None else {
                    k: round(old_py[k] + more[k], 3) if k != "tasks" else old_py[k] + more[k] for k in more}
        self.seen = len(tasks)
        out = {"tasks": len(tasks), **sums}
        if self.python is not None:
            out["python"] = self.python
        return out


def _s(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 100 else f"{ms:.0f} ms"


def format_bytes(n: float) -> str:
    """A byte count as people read it (decimal units: 22.2 kB, 1.5 MB)."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000.0
    return f"{n:.1f} TB"


def python_words(py: dict) -> str:
    """Python time (:func:`python_sums`, or one task's :func:`python_of_dict`) as the breakdown says it."""
    parts = [f"starting {_s(py['start_ms'])}"] if py.get("start_ms") else []
    if py.get("exec_ms"):
        parts.append(f"executing Python code {_s(py['exec_ms'])}")
    return f"Python workers {_s(py['ms'])}" + (f" ({', '.join(parts)})" if parts else "")


def describe(b: dict) -> str:
    """A split with its fields named (:func:`as_dict`, or a :class:`RunningSums`' sums) in one line: where the
    time went, then spills; absent metrics are said as such, never as 0."""
    parts = []
    for f, name in (("run_ms", "run"), ("cpu_ns", "CPU"), ("gc_ms", "GC"), ("fetch_wait_ms", "fetch wait"),
                    ("shuffle_write_ns", "shuffle write"), ("scheduler_delay_ms", "scheduler delay"),
                    ("deserialize_ms", "deserialize"), ("result_serialization_ms", "result serialization"),
                    ("getting_result_ms", "getting result")):
        v = b.get(f)
        if v is not None and (v or f in ("run_ms", "gc_ms")):
            parts.append(f"{name} {_s(v * 1e-6 if f.endswith('_ns') else v)}")
    py = b.get("python")  # RunningSums' and blame's breakdown's (python_sums, python_of_dict)
    if py:
        parts.append(python_words(py))
    missing = [name for f, name in (("run_ms", "run"), ("gc_ms", "GC"), ("cpu_ns", "CPU")) if b.get(f) is None]
    if missing:
        parts.append("no " + "/".join(missing) + " time in the log")
    spill = [f"{format_bytes(b[f])} {name}" for f, name in (("memory_spilled", "spilled from memory"),
                                                  ("disk_spilled", "to disk")) if b.get(f)]
    return ", ".join(parts) + (f"; {', '.join(spill)}" if spill else "")
