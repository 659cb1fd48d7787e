"""Every task attempt of one stage attempt, as the REST API lists and summarises them.

The Spark model keeps what the tracker and the diagnosis need of a task (its slot, its time split, its stage's
aggregates), not each attempt's every metric, accumulator and error text, which ``taskList`` and ``details=true``
return; so the REST store keeps its own rows, one :class:`TaskRow` per attempt. ``taskSummary`` reads the successful
attempts' metrics column by column, each column sorted once until the stage attempt's attempts change
(:meth:`StageTasks.sorted_column`), which is what makes a repeated summary of a 100,000-task stage cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["StageTasks", "TaskRow", "getting_result_time", "scheduler_delay"]


class TaskRow:
    """One task attempt: what its start and end events said."""

    __slots__ = ("accumulables", "attempt", "duration", "error", "executor", "fetch_start", "finish", "host",
                 "index", "launch", "locality", "metrics", "partition", "speculative", "status", "task_id")

    def __init__(self, task_id: int, index: int, attempt: int, partition: int, launch: int, executor: str,
                 host: str, locality: str, speculative: bool) -> None:
        self.task_id = task_id
        self.index = index
        self.attempt = attempt
        self.partition = partition
        self.launch = launch
        self.executor = executor
        self.host = host
        self.locality = locality
        self.speculative = speculative
        self.status = "RUNNING"
        self.finish = 0
        self.fetch_start = 0  # when the driver began fetching the result (Spark's "Getting Result Time"), or 0
        self.duration: int | None = None
        self.error: str | None = None
        self.metrics: tuple[int, ...] | None = None
        self.accumulables: list | None = None


def getting_result_time(t: TaskRow, now: int) -> int:
    """Spark's ``gettingResultTime``: from the fetch's start to the task's end (to ``now`` while it runs)."""
    if t.fetch_start > 0:
        if t.finish > 0:
            return t.finish - t.fetch_start
        return now - t.fetch_start
    return 0


def scheduler_delay(t: TaskRow, now: int) -> int:
    """Spark's ``schedulerDelay``: the task's time not spent deserializing, running, serializing or fetching."""
    m = t.metrics
    if m is None or t.duration is None:
        return 0
    return max(0, t.duration - m[2] - m[0] - m[6] - getting_result_time(t, now))


class StageTasks:
    """The task attempts of one stage attempt, by task id, with sorted metric columns cached for summaries."""

    __slots__ = ("_columns", "_rows_for", "_sorted", "_summary_rows", "rows", "version")

    def __init__(self) -> None:
        self.rows: dict[int, TaskRow] = {}
        self.version = 0  # moved by every task start and end (what the cached columns were sorted at)
        self._sorted: dict[str, list[int]] = {}
        self._summary_rows: tuple[list[TaskRow], list[TaskRow], list[TaskRow]] = ([], [], [])
        self._rows_for = -1
        self._columns: list[tuple[int, ...]] | None = None  # the successful attempts' metrics, column by column

    def __len__(self) -> int:
        return len(self.rows)

    def summary_rows(self) -> tuple[list[TaskRow], list[TaskRow], list[TaskRow]]:
        """The attempts a summary reads, in task id order: those that succeeded with metrics (whose count places
        every quantile, and whose metrics the metric columns hold), those with metrics (the scheduler delay's), and
        all of them (the duration's and the getting-result time's: Spark's store indexes those for every attempt).
        Kept, with the sorted columns, until a task starts or ends."""
        if self._rows_for != self.version:
            rows = list(self.rows.values())
            measured = [t for t in rows if t.metrics is not None]
            self._summary_rows = ([t for t in measured if t.status == "SUCCESS"], measured, rows)
            self._sorted.clear()
            self._columns = None
            self._rows_for = self.version
        return self._summary_rows

    def sorted_column(self, name: str, rows: list[TaskRow], value: Callable[[TaskRow], int] | int) -> list[int]:
        """The sorted values of one column over ``rows`` (a metric's position, over the successful attempts; or a
        function of an attempt), kept until a task starts or ends (call :meth:`summary_rows` first)."""
        out = self._sorted.get(name)
        if out is None:
            if isinstance(value, int):  # a metric of the successful attempts: transposed once, in C
                if self._columns is None:
                    self._columns = list(zip(*[t.metrics for t in self._summary_rows[0]], strict=True))
                out = sorted(self._columns[value])
            else:
                out = sorted(map(value, rows))
            self._sorted[name] = out
        return out

    def ordered(self, key: Callable[[TaskRow], int] | None, descending: bool) -> Iterable[TaskRow]:
        """Rows by task id, or by ``key`` with ties by task id (Spark's index order), either way round."""
        rows = sorted(self.rows.values(), key=lambda t: t.task_id)
        if key is not None:
            rows.sort(key=key)  # stable: equal keys stay in task id order
        if descending:
            rows.reverse()
        return rows
