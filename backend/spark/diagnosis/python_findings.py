"""The findings about PySpark's own time: a stage attempt's tasks waiting on Python workers, or on nothing measured.

Each is a rule of ``findings.STAGE_RULES`` (it reads the attempt's splits when the attempt completes):

* ``python-udf``: the tasks spent most of their run time in Python workers, starting them aside (the Python time of
  ``python_time``, within the run time); it names the Python operator (from the SQL plan) and says what to use
  instead;
* ``python-worker-startup``: starting and initialising workers took most of the run time, with more workers started
  than the executors' cores (with ``spark.python.worker.reuse`` each core starts one once);
* ``cpu-idle-tasks``: for stages that run Python whose time Spark does not record (the RDD API's ``PythonRDD``, a
  Python data source's scan, which records only the bytes), the tasks' JVM CPU time left most of their run time
  unexplained by a measured wait (GC, shuffle fetch wait, shuffle write): the task waited on Python workers, I/O,
  sleeps, remote calls or a CPU it could not get; the finding lists those the log makes possible. Stages of JVM
  code alone are left out: there an idle share mostly says the host was short of CPU, which a shared or
  oversubscribed machine makes of every stage.

Impact (``impact_s``): the time the finding names in the stage's longest task, the task that ended the stage; had
that time been absent, the stage would have ended up to that much sooner, so the job too when the stage is on its
critical path; what would replace the time (JVM code doing the same work) is not subtracted. Without an estimate
``impact_s`` is null and ``impact_note`` says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from backend.spark.diagnosis.task_metrics import AT, format_bytes, python_of

if TYPE_CHECKING:
    from backend.spark.diagnosis.findings import Diagnosis, StageRun

__all__ = ["PYTHON_RULES", "PYTHON_RDD"]

PYTHON_RDD = "PythonRDD"  # the RDD the RDD API's Python functions run in (a stage's RDD Info names it)
_RUN, _CPU, _GC, _FETCH, _WRITE = (AT["run_ms"], AT["cpu_ns"], AT["gc_ms"], AT["fetch_wait_ms"],
                                   AT["shuffle_write_ns"])
_DURATION, _PY, _BOOT, _OP = AT["duration_ms"], AT["python_total_ms"], AT["python_boot_ms"], AT["python_operator"]
_PICKLED = ("BatchEvalPython", "BatchEvalPythonUDTF")  # rows pickled one by one (Spark's PythonPickleBatchMetrics)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _longest(run: StageRun) -> list | None:
    timed = [b for b in run.splits if b[_DURATION] is not None]
    return max(timed, key=lambda b: b[_DURATION]) if timed else None


def _python_totals(run: StageRun) -> tuple[float, float, float, int, dict[int, float]]:
    """Over the attempt's tasks: run time, Python time less starts, starts (ms), workers started, and the Python
    time per operator (its accumulator id)."""
    rt = py = start = 0.0
    started = 0
    by_op: dict[int, float] = {}
    for b in run.splits:
        rt += b[_RUN] or 0
        got = python_of(b)
        if got is None:
            continue
        py += got[0] - got[1]
        start += got[1]
        if b[_BOOT] is not None:
            started += 1
        op = b[_OP]
        if op is not None:
            by_op[op] = by_op.get(op, 0.0) + got[0]
    return rt, py, start, started, by_op


def _operator(d: Diagnosis, run: StageRun, by_op: dict[int, float]) -> str | None:
    if not by_op or d.operator_of is None:
        return None
    return d.operator_of(run.stage, max(by_op, key=by_op.__getitem__))


def _impact(run: StageRun, part: int) -> float | None:
    """Seconds of one part (0: Python less start, 1: start) of the longest task's Python time."""
    b = _longest(run)
    got = python_of(b) if b is not None else None
    if got is None:
        return None
    return round((got[0] - got[1] if part == 0 else got[1]) / 1000, 3)


def _with_impact(mark: dict, impact: float | None) -> dict:
    """The mark with its ``impact_s`` (what the estimate leaves out: docs/findings.md), or, without one, null and
    ``impact_note`` saying why."""
    mark["impact_s"] = impact
    if impact is None:
        mark["impact_note"] = "the stage's longest task has no Python time or duration in the log"
    return mark


def _python_udf(d: Diagnosis, run: StageRun, summary: dict, at: float) -> list[dict]:
    if "python_total_ms" not in summary["sums"]:
        return []  # no task had Python times (most stages: no pass over the tasks)
    rt, py, _, _, by_op = _python_totals(run)
    if not rt or not py:
        return []
    ratio = py / rt
    if ratio < d.t["python_udf.ratio"] or py / 1000 < d.t["python_udf.min_s"]:
        return []
    op = _operator(d, run, by_op)
    if op is not None and op.startswith(_PICKLED):
        advice = ("Use built-in functions (pyspark.sql.functions) instead of the UDF where they can do its work; "
                  "else make it an Arrow-based pandas UDF (@pandas_udf), or let Spark send its rows as Arrow "
                  "batches (spark.sql.execution.pythonUDF.arrow.enabled; spark.sql.execution.arrow.pyspark.enabled "
                  "does it for toPandas and createDataFrame).")
    else:
        advice = ("Use built-in functions (pyspark.sql.functions) instead of the Python function where they can do "
                  "its work; else keep it on Arrow batches (pandas UDFs, spark.sql.execution.arrow.pyspark.enabled) "
                  "and vectorise its body: whole-column pandas or pyarrow operations, not a Python call per value.")
    where = f" in {op}" if op else ""
    return [_with_impact(d.mark(
        "python-udf", run, at,
        f"Python UDF time in stage {run.stage}: its tasks spent {py / 1000:.2f} s of {rt / 1000:.2f} s run time "
        f"({_pct(ratio)}) in Python workers{where}, starting them aside",
        advice,
        {"python_s": round(py / 1000, 3), "run_s": round(rt / 1000, 3), "ratio": round(ratio, 4),
         "operator": op, "tasks": summary["tasks"]},
        "python_udf.ratio", "python_udf.min_s"), _impact(run, 0))]


def _python_worker_startup(d: Diagnosis, run: StageRun, summary: dict, at: float) -> list[dict]:
    if "python_boot_ms" not in summary["sums"]:
        return []  # no task started a Python worker Spark timed
    rt, _, start, started, by_op = _python_totals(run)
    if not rt or not started:
        return []
    ratio = start / rt
    slots = run.slots or 1
    if (ratio < d.t["python_worker_startup.ratio"] or start / 1000 < d.t["python_worker_startup.min_s"]
            or started <= slots * d.t["python_worker_startup.starts_per_core"]):
        return []
    op = _operator(d, run, by_op)
    return [_with_impact(d.mark(
        "python-worker-startup", run, at,
        f"Python worker start-up in stage {run.stage}: {started} of its {summary['tasks']} tasks started a Python "
        f"worker{' for ' + op if op else ''}, {start / 1000:.2f} s of {rt / 1000:.2f} s run time ({_pct(ratio)}) "
        f"starting and initialising workers on {slots} cores",
        "Keep Python workers between tasks (spark.python.worker.reuse=true, the default) and give each task more "
        "work: fewer, larger partitions (coalesce or repartition, spark.sql.files.maxPartitionBytes, "
        "spark.sql.shuffle.partitions).",
        {"start_s": round(start / 1000, 3), "run_s": round(rt / 1000, 3), "ratio": round(ratio, 4),
         "workers_started": started, "cores": slots, "operator": op, "tasks": summary["tasks"]},
        "python_worker_startup.ratio", "python_worker_startup.min_s", "python_worker_startup.starts_per_core"),
        _impact(run, 1))]


def _idle_ms(b: list) -> float | None:
    """A task's run time that neither its JVM CPU time nor a measured wait explains (None: no CPU time)."""
    if b[_RUN] is None or b[_CPU] is None:
        return None
    return max(0.0, b[_RUN] - b[_CPU] * 1e-6 - (b[_GC] or 0) - (b[_FETCH] or 0) - (b[_WRITE] or 0) * 1e-6)


def _cpu_idle_tasks(d: Diagnosis, run: StageRun, summary: dict, at: float) -> list[dict]:
    sums = summary["sums"]
    if "python_total_ms" in sums:
        return []  # Spark timed its Python workers: the Python findings say it
    sent = sums.get("python_sent_bytes") or 0
    rdd = d.runs_python(run.stage)
    if not rdd and not sent:
        return []  # no Python outside Spark's measures (see the module docstring)
    rt = idle = 0.0
    cpu = 0.0
    for b in run.splits:
        got = _idle_ms(b)
        if got is not None:
            rt += b[_RUN]
            cpu += b[_CPU] * 1e-6
            idle += got
    if not rt:
        return []
    ratio = idle / rt
    if ratio < d.t["cpu_idle_tasks.ratio"] or idle / 1000 < d.t["cpu_idle_tasks.min_s"]:
        return []
    possible: dict[str, str] = {}  # what the task may have waited on: a key (the metric's), the words (the label's)
    if rdd:
        possible["python"] = "Python workers (RDD API: not timed by Spark) and their functions' sleeps or remote calls"
    elif sent:
        possible["python"] = (f"Python workers (its tasks sent {format_bytes(sent)} to them: a Python data source, "
                              "which Spark does not time)")
    read = sums.get("input_bytes") or 0
    written = sums.get("output_bytes") or 0
    if read:
        possible["input"] = f"reading its input ({format_bytes(read)} from storage)"
    if written:
        possible["output"] = f"writing its output ({format_bytes(written)})"
    possible["cpu"] = "a CPU the host could not give"
    last = _longest(run)
    longest = _idle_ms(last) if last is not None else None
    return [_with_impact(d.mark(
        "cpu-idle-tasks", run, at,
        f"tasks waiting in stage {run.stage}: {idle / 1000:.2f} s of their {rt / 1000:.2f} s run time ({_pct(ratio)}) "
        f"was neither JVM CPU ({cpu / 1000:.2f} s) nor a wait Spark measures; possible: "
        + "; ".join(possible.values()),
        "Find what the tasks wait on: time the stage's functions (a Python profiler, spark.python.profile=true, "
        "for Python ones); move slow calls out of per-row code, batch remote calls, and for Python work prefer "
        "DataFrame operations, whose Python time Spark measures.",
        {"idle_s": round(idle / 1000, 3), "cpu_s": round(cpu / 1000, 3), "run_s": round(rt / 1000, 3),
         "ratio": round(ratio, 4), "possible": list(possible), "tasks": summary["tasks"]},
        "cpu_idle_tasks.ratio", "cpu_idle_tasks.min_s"),
        round(longest / 1000, 3) if longest is not None else None)]


PYTHON_RULES = [_python_udf, _python_worker_startup, _cpu_idle_tasks]
