"""A task's Python worker time, from the SQL metrics Spark's Python operators set per task, and what it overlaps.

Every Python evaluation operator of Spark SQL (``BatchEvalPython``, ``ArrowEvalPython``, ``MapInPandas`` and
``MapInArrow``, ``FlatMapGroupsInPandas``, ``FlatMapCoGroupsInPandas``, ``AggregateInPandas``, ``WindowInPandas``,
their Arrow and UDTF variants) mixes in Spark's ``PythonSQLMetrics``: per task, in the ``Accumulables`` of its
``SparkListenerTaskEnd``, named by their descriptions. A Python data source's scan declares only the two sizes.

* ``time to run Python workers`` (*total*): from the runner's start in the task (``BasePythonRunner.compute``) to
  the worker's report that it finished; it contains the two below and the worker's processing;
* ``time to start Python workers`` (*boot*): from that start to the worker's ``main()`` beginning. A reused worker
  began waiting for its next task before this one started, so its boot is negative and Spark's timing metric drops
  it: a task with a boot started a worker, a task without one reused a worker;
* ``time to initialize Python workers`` (*init*): from the worker's boot to its having read the task's functions
  and broadcasts; a reused worker's includes its idle wait before the task began, so it is read only with a boot;
* ``time to execute Python code`` (*exec*): the worker's processing, measured in the worker: reading the input
  batches, running the functions, writing the results (waits on the JVM's input included);
* ``data sent to Python workers``, ``data returned from Python workers``: bytes.

(Spark 3.4 and 3.5 set only the sizes; these times come with Spark 4.)

What overlaps what, so no time is counted twice: the Python time is wall time of the task's thread, which waits on
the worker's socket meanwhile, so it lies inside the task's run time, but it also contains whatever the JVM measured
in that window: shuffle fetch waits for the input it sends, GC pauses, shuffle writes of the rows it returned. A
task's Python time is therefore its *total*, at most what its run time leaves after fetch wait, GC and shuffle
write (those keep their own phases); computing is the rest. Its start is boot plus init when it started a worker
(0 when it reused one: how much of a reused worker's init fell inside the task Spark does not say), at most the
Python time; exec is at most what is left of that; the rest of the Python time is the worker waiting for input,
moving data outside its processing, and a reused worker reading the task's functions. Two Python
operators in one stage run pipelined in the same task (each its own worker, each its total over the same window):
the task's Python time is the larger operator's, not their sum. The RDD API (``PythonRDD``) sets none of these.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MARKER", "TOTAL", "BOOT", "INIT", "EXEC", "SENT", "RETURNED", "PYTHON_METRICS", "task_python",
           "python_parts", "NO_PYTHON"]

SENT = "data sent to Python workers"
RETURNED = "data returned from Python workers"
BOOT = "time to start Python workers"
INIT = "time to initialize Python workers"
TOTAL = "time to run Python workers"
EXEC = "time to execute Python code"
PYTHON_METRICS = (TOTAL, BOOT, INIT, EXEC, SENT, RETURNED)
_SLOT = {name: i for i, name in enumerate(PYTHON_METRICS)}
# bytes every task end carrying a Python metric has (each operator declares its sizes): a task end without them is
# decoded without its accumulables (backend.spark.model.event_fields)
MARKER = b"Python workers"
NO_PYTHON = (None,) * 7  # a task without Python metrics: its split's Python fields


def _number(update: Any) -> int | None:
    """An accumulator update as Spark writes a SQL metric's (a decimal string; an integer in older logs)."""
    if type(update) is int:
        return update
    if type(update) is str:
        try:
            return int(update)
        except ValueError:
            return None
    return None


def task_python(accumulables: Any) -> tuple | None:
    """A task's Python fields from its ``Accumulables`` (a list of ``{"ID", "Name", "Update"}``): ``(total, boot,
    init, exec, sent, returned, operator)`` of the operator with the largest total (its ``operator``: the
    accumulator id of its total, or of its first size for a data source without times; how the plan names it),
    with ``sent`` and ``returned`` summed over the task's Python operators; None when it set none."""
    if type(accumulables) is not list:
        return None
    found = []
    slots = _SLOT
    for acc in accumulables:
        if type(acc) is dict:
            slot = slots.get(acc.get("Name"))  # type: ignore[arg-type]
            if slot is not None:
                aid, update = acc.get("ID"), acc.get("Update")
                value = update if type(update) is int else _number(update)
                if type(aid) is int and value is not None and value >= 0:
                    found.append((aid, slot, value))
    if not found:
        return None
    found.sort()
    # one operator's metrics are made together (consecutive ids): a metric seen again starts the next operator
    best: list | None = None
    group: list | None = None
    sent = returned = None
    for aid, slot, value in found:
        if group is None or group[slot] is not None:
            group = [None, None, None, None, None, None, aid]
            if best is None:
                best = group
        group[slot] = value
        if slot == 0:
            group[6] = aid
            if best is None or best[0] is None or value > best[0]:
                best = group
        elif slot == 4:
            sent = value if sent is None else sent + value
        elif slot == 5:
            returned = value if returned is None else returned + value
    if best is None:
        return None
    return best[0], best[1], best[2], best[3], sent, returned, best[6]


def python_parts(run: Any, fetch: Any, gc: Any, write_ms: Any, total: Any, boot: Any, init: Any,
                 exec_: Any) -> tuple[float, float, float] | None:
    """A task's Python time as its time split shows it (the module docstring's rules): ``(python, start, exec)``
    in ms, each within the one before; None when the task has no run time or no Python total."""
    if total is None or run is None:
        return None
    room = run - (fetch or 0) - (gc or 0) - (write_ms or 0)
    python = min(total, room) if room > 0 else 0
    start = max(0, min(boot + (init or 0), python)) if boot is not None else 0
    return python, start, max(0, min(exec_ or 0, python - start))
