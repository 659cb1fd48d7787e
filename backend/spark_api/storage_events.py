"""Cached RDD blocks as Spark's status listener accounts for them: each partition's executors and sizes, each
executor's share of an RDD, and the executors' storage memory, moved by block updates, unpersisted RDDs and lost
executors (``AppStatusListener.updateRDDBlock`` and its neighbours). Every size is kept at or above zero, as Spark
keeps it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from backend.spark_api.app_state import ExecutorState, RddPartition, RddState, storage_description

__all__ = ["Level", "block_updated", "drop_executor", "level_of", "unpersist", "valid_level"]

Level = tuple[bool, bool, bool, bool, int]  # (disk, memory, off heap, deserialized, replication)
_EMPTY: Mapping[str, Any] = {}


def level_of(sl: Mapping[str, Any] | None) -> Level:
    """A ``"Storage Level"`` object."""
    sl = sl or _EMPTY
    return (bool(sl.get("Use Disk")), bool(sl.get("Use Memory")), bool(sl.get("Use Off Heap")),
            bool(sl.get("Deserialized")), int(sl.get("Replication") or 1))


def valid_level(level: Level) -> bool:
    return (level[0] or level[1]) and level[4] > 0


def _set_partition(rdd: RddState, part: RddPartition, executors: list[str], memory: int, disk: int) -> None:
    """A partition's new place and sizes; its storage level is what it now uses of the RDD's."""
    level = rdd.level
    part.executors = executors
    part.memory_used = memory
    part.disk_used = disk
    part.storage_level = storage_description(disk > 0, memory > 0, level[2], level[3] if memory > 0 else False,
                                             len(executors))


def drop_executor(rdd: RddState, executor_id: str) -> None:
    """An executor was lost: its share of the RDD and its copies of partitions go."""
    rdd.distributions.pop(executor_id, None)
    for name, part in list(rdd.partitions.items()):
        if executor_id not in part.executors:
            continue
        n = len(part.executors)
        if n == 1:
            del rdd.partitions[name]
            rdd.memory_used = max(0, rdd.memory_used - part.memory_used)
            rdd.disk_used = max(0, rdd.disk_used - part.disk_used)
        else:
            rdd.memory_used = max(0, rdd.memory_used - part.memory_used // n)
            rdd.disk_used = max(0, rdd.disk_used - part.disk_used // n)
            _set_partition(rdd, part, [x for x in part.executors if x != executor_id],
                           max(0, part.memory_used - part.memory_used // n),
                           max(0, part.disk_used - part.disk_used // n))


def unpersist(rdd: RddState, executors: Mapping[str, ExecutorState]) -> None:
    """An unpersisted RDD's blocks and memory leave the executors that held them."""
    for part in rdd.partitions.values():
        for executor_id in part.executors:
            ex = executors.get(executor_id)
            if ex is not None:
                ex.rdd_blocks -= 1
    for executor_id, dist in rdd.distributions.items():
        ex = executors.get(executor_id)
        if ex is None:
            continue
        if ex.has_memory_info:
            if rdd.off_heap:
                ex.used_off_heap = max(0, ex.used_off_heap - dist.off_heap_used)
            else:
                ex.used_on_heap = max(0, ex.used_on_heap - dist.on_heap_used)
        ex.memory_used = max(0, ex.memory_used - dist.memory_used)
        ex.disk_used = max(0, ex.disk_used - dist.disk_used)


def _executor_storage(ex: ExecutorState, level: Level, memory_delta: int, disk_delta: int) -> None:
    if ex.has_memory_info:
        if level[2]:
            ex.used_off_heap = max(0, ex.used_off_heap + memory_delta)
        else:
            ex.used_on_heap = max(0, ex.used_on_heap + memory_delta)
    ex.memory_used = max(0, ex.memory_used + memory_delta)
    ex.disk_used = max(0, ex.disk_used + disk_delta)


def block_updated(info: Mapping[str, Any], rdds: Mapping[int, RddState],
                  executors: Mapping[str, ExecutorState]) -> None:
    """A ``"Block Updated Info"``: an RDD block or a broadcast block stored, resized or dropped."""
    block = info.get("Block ID") or ""
    executor_id = (info.get("Block Manager ID") or _EMPTY).get("Executor ID")
    level = level_of(info.get("Storage Level"))
    disk_delta = (info.get("Disk Size") or 0) * (1 if level[0] else -1)
    memory_delta = (info.get("Memory Size") or 0) * (1 if level[1] else -1)
    ex = executors.get(executor_id) if isinstance(executor_id, str) else None
    if block.startswith("broadcast_"):
        if ex is not None:
            _executor_storage(ex, level, memory_delta, disk_delta)
        return
    if not block.startswith("rdd_") or not isinstance(executor_id, str):
        return
    try:
        rdd_id = int(block.split("_")[1])
    except (IndexError, ValueError):
        return
    if ex is not None:
        _executor_storage(ex, level, memory_delta, disk_delta)
    blocks_delta = 0
    rdd = rdds.get(rdd_id)
    if rdd is not None:
        part = rdd.partitions.get(block)
        if part is None:
            part = rdd.partitions[block] = RddPartition(block)
            _set_partition(rdd, part, [], 0, 0)
        if valid_level(level):
            placed = part.executors
            if executor_id not in placed:
                blocks_delta = 1
                placed = [*placed, executor_id]
        else:
            blocks_delta = -1
            placed = [x for x in part.executors if x != executor_id]
        if placed:
            _set_partition(rdd, part, placed, max(0, part.memory_used + memory_delta),
                           max(0, part.disk_used + disk_delta))
        else:
            del rdd.partitions[block]
        if ex is not None:
            if ex.rdd_blocks + blocks_delta > 0:
                dist = rdd.distribution(executor_id)
                dist.memory_used = max(0, dist.memory_used + memory_delta)
                dist.disk_used = max(0, dist.disk_used + disk_delta)
                if ex.has_memory_info:
                    if level[2]:
                        dist.off_heap_used = max(0, dist.off_heap_used + memory_delta)
                    else:
                        dist.on_heap_used = max(0, dist.on_heap_used + memory_delta)
            else:
                rdd.distributions.pop(executor_id, None)
        rdd.memory_used = max(0, rdd.memory_used + memory_delta)
        rdd.disk_used = max(0, rdd.disk_used + disk_delta)
    if ex is not None:
        ex.rdd_blocks += blocks_delta
