"""SQL metric values: the tasks' and the driver's accumulator updates, kept and combined as Spark's SQL listener does.

What Spark's ``SQLAppStatusListener`` does with them (the History Server's ``/sql`` answers come from it), as
facts this module reproduces:

* A job of a SQL execution starts fresh metric tables for each of its stages (``Stage Infos``), sized by the
  stage's task count; a stage attempt other than the table's starts it afresh again. Tables exist only once the
  execution knows some metrics (its plan arrived before the job).
* A task's ``Accumulables`` (TaskEnd, ``Update`` per accumulator id) set the value of its partition index in its
  stage's table, for the accumulators the execution's plans declared; once a task of an index succeeded, later
  updates for that index are ignored. An index no task reported stays 0.
* For each stage and metric that needs a maximum (all but ``sum``), the first task's value is the maximum until a
  strictly greater one comes; over stages, the first stage holding the greatest wins.
* ``SparkListenerDriverAccumUpdates`` append the driver's values (each pair counts, repeats included); a driver
  value above the tasks' maximum makes the maximum the driver's.
* At ``SQLExecutionEnd`` the values are combined and kept; later task events do not change them.
* Combining, by type: ``sum`` adds everything; ``size``, ``timing`` and ``nsTiming`` drop negative values (Spark's
  "not set" is -1), then give the total and the min, median (the upper one: index n/2 of the sorted values) and
  max; one value or none gives just that value (or 0); ``nsTiming`` values are shown in ms, truncated after the
  sum; ``average`` keeps values above 0, each ten times the average it stands for, and gives min, median and max.

:func:`spark_string` writes a combined value exactly as Spark's UI and REST API print it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

__all__ = ["StageTable", "Combined", "combine", "spark_string", "bytes_to_string", "ms_to_string", "METRIC_TYPES"]

METRIC_TYPES = ("sum", "size", "timing", "nsTiming", "average")
AVERAGE_BASE = 10  # an average metric's values are ten times the average they stand for
NS_PER_MS = 1_000_000


@dataclass(slots=True)
class StageTable:
    """One stage attempt's values of the execution's metrics: per accumulator, a value per partition index."""

    stage: int
    attempt: int
    tasks: int
    values: dict[int, dict[int, int]] = field(default_factory=dict)  # accumulator -> {index: value}
    top: dict[int, list[int]] = field(default_factory=dict)  # accumulator -> [max value, task id]
    done: set[int] = field(default_factory=set)  # indexes a task completed successfully

    def update(self, task: int, index: int, succeeded: bool, updates: list[tuple[int, int]],
               types: dict[int, str]) -> bool:
        """Take a task's updates; False when its index already succeeded (the updates are ignored)."""
        if index in self.done:
            return False
        for acc, value in updates:
            kind = types.get(acc)
            if kind is None:
                continue
            self.values.setdefault(acc, {})[index] = value
            if kind != "sum":
                top = self.top.get(acc)
                if top is None:
                    self.top[acc] = [value, task]
                elif value > top[0]:
                    top[0], top[1] = value, task
        if succeeded:
            self.done.add(index)
        return True

    def column(self, acc: int) -> list[int] | None:
        """Every index's value of one accumulator (0 where no task reported), or None if none did."""
        got = self.values.get(acc)
        if got is None:
            return None
        size = max(self.tasks, max(got) + 1 if got else 0)
        col = [0] * size
        for i, v in got.items():
            if i >= 0:
                col[i] = v
        return col


@dataclass(slots=True, frozen=True)
class Combined:
    """One metric's value over an execution, in Spark's unit (rows, bytes, ms; an average as itself)."""

    type: str
    value: float  # the total (sum, size, timing); an average's median
    min: float | None
    med: float | None
    max: float | None
    count: int  # values combined (tasks' indexes plus driver updates)
    max_at: tuple[int, int, int] | None  # (stage, attempt, task) of the maximum; None: the driver's or none

    def to_json(self) -> dict:
        out: dict = {"type": self.type, "value": self.value, "min": self.min, "med": self.med, "max": self.max}
        if self.type != "sum":
            out["max_at"] = (None if self.max_at is None else
                             {"stage": self.max_at[0], "attempt": self.max_at[1], "task": self.max_at[2]})
        return out


def combine(kind: str, tables: list[StageTable], acc: int, driver: list[int]) -> Combined | None:
    """One accumulator's combined value over an execution's stage tables (in the order Spark visits its stages)
    and the driver's updates; None when nothing reported it."""
    columns = [c for c in (t.column(acc) for t in tables) if c is not None]
    if not columns and not driver:
        return None
    best: list[int] | None = None  # [value, stage, attempt, task]
    for t in tables:
        top = t.top.get(acc)
        if top is not None and (best is None or top[0] > best[0]):
            best = [top[0], t.stage, t.attempt, top[1]]
    if best is not None and any(v > best[0] for v in driver):
        best = None
    values = [v for col in columns for v in col] + list(driver)
    at = (best[1], best[2], best[3]) if best is not None else None
    if kind == "sum":
        return Combined(kind, sum(values), None, None, None, len(values), None)
    if kind == "average":
        valid = sorted(v for v in values if v > 0)
        if len(valid) <= 1:
            one = valid[0] / AVERAGE_BASE if valid else 0.0
            return Combined(kind, one, one, one, one, len(valid), at)
        lo, med, hi = (valid[0] / AVERAGE_BASE, valid[len(valid) // 2] / AVERAGE_BASE, valid[-1] / AVERAGE_BASE)
        return Combined(kind, med, lo, med, hi, len(valid), at)
    valid = sorted(v for v in values if v >= 0)
    unit = _ns_to_ms if kind == "nsTiming" else int
    if len(valid) <= 1:
        one = unit(valid[0]) if valid else 0
        return Combined(kind, one, one, one, one, len(valid), at)
    return Combined(kind, unit(sum(valid)), unit(valid[0]), unit(valid[len(valid) // 2]), unit(valid[-1]),
                    len(valid), at)


def _ns_to_ms(ns: int) -> int:
    """Nanoseconds to whole milliseconds, truncated toward zero (Java's ``toMillis``)."""
    return ns // NS_PER_MS if ns >= 0 else -(-ns // NS_PER_MS)


# --- as Spark prints them ---------------------------------------------------------------------------------------------

_SUFFIX = "(min, med, max (stageId: taskId))"


def _half_up(x: float | Decimal, places: str) -> str:
    d = x if isinstance(x, Decimal) else Decimal(repr(x))
    return str(d.quantize(Decimal(places), rounding=ROUND_HALF_UP))


def bytes_to_string(size: int) -> str:
    """Bytes as Spark's ``Utils.bytesToString`` writes them: "672.0 B", "32.0 MiB" (a unit once the value is 2)."""
    units = (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10))
    if size >= (1 << 11) * (1 << 60):
        return f"{Decimal(size):.2E} B"
    for unit, shift in units:
        if size >= 2 * (1 << shift):
            return f"{_half_up(Decimal(size) / Decimal(1 << shift), '0.1')} {unit}"
    return f"{_half_up(Decimal(size), '0.1')} B"


def _float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def ms_to_string(ms: int) -> str:
    """Milliseconds as Spark's ``Utils.msDurationToString`` writes them: "97 ms", "1.3 s", "2.0 m", "1.50 h"."""
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{_half_up(_float32(_float32(ms) / 1000), '0.1')} s"
    if ms < 3_600_000:
        return f"{_half_up(_float32(_float32(ms) / 60_000), '0.1')} m"
    return f"{_half_up(_float32(_float32(ms) / 3_600_000), '0.01')} h"


def _average_string(x: float) -> str:
    d = Decimal(repr(x)).quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN).normalize()
    whole, _, frac = f"{d:f}".partition(".")
    sign = "-" if whole.startswith("-") else ""
    grouped = f"{int(whole.lstrip('-') or 0):,}"
    return sign + grouped + ("." + frac if frac else "")


def spark_string(c: Combined) -> str:
    """A combined value as the History Server's REST API prints it (``/sql/{execution}?details=true``)."""
    task = "(driver)" if c.max_at is None else f"(stage {c.max_at[0]}.{c.max_at[1]}: task {c.max_at[2]})"
    if c.type == "sum":
        return f"{int(c.value):,}"
    if c.type == "average":
        if c.count <= 1:
            return _average_string(c.value)
        return f"{_SUFFIX}:\n({_average_string(c.min or 0)}, {_average_string(c.med or 0)}, " \
               f"{_average_string(c.max or 0)} {task})"
    fmt = bytes_to_string if c.type == "size" else ms_to_string
    if c.count <= 1:
        return fmt(int(c.value))
    return f"total {_SUFFIX}\n{fmt(int(c.value))} ({fmt(int(c.min or 0))}, {fmt(int(c.med or 0))}, " \
           f"{fmt(int(c.max or 0))} {task})"
