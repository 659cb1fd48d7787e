"""``/storage/rdd`` and ``/storage/rdd/{id}``: Spark's ``RDDStorageInfo`` of cached RDDs."""

from __future__ import annotations

from backend.spark_api.app_state import AppState, RddState

__all__ = ["rdd_doc", "rdd_list"]


def rdd_doc(rdd: RddState, state: AppState, with_parts: bool = True) -> dict:
    doc: dict = {"id": rdd.rdd_id, "name": rdd.name, "numPartitions": rdd.num_partitions,
                 "numCachedPartitions": len(rdd.partitions), "storageLevel": rdd.storage_level,
                 "memoryUsed": rdd.memory_used, "diskUsed": rdd.disk_used}
    if rdd.distributions:
        dists = []
        for executor_id, d in rdd.distributions.items():
            ex = state.executors.get(executor_id)
            if ex is None:
                continue
            dist: dict = {"address": ex.host_port, "memoryUsed": d.memory_used,
                          "memoryRemaining": ex.max_memory - ex.memory_used, "diskUsed": d.disk_used}
            if ex.has_memory_info:
                dist.update({"onHeapMemoryUsed": d.on_heap_used, "offHeapMemoryUsed": d.off_heap_used,
                             "onHeapMemoryRemaining": ex.total_on_heap - ex.used_on_heap,
                             "offHeapMemoryRemaining": ex.total_off_heap - ex.used_off_heap})
            dists.append(dist)
        doc["dataDistribution"] = dists
    doc["partitions"] = [{"blockName": p.block_name, "storageLevel": p.storage_level, "memoryUsed": p.memory_used,
                          "diskUsed": p.disk_used, "executors": p.executors} for p in rdd.partitions.values()]
    return doc


def rdd_list(state: AppState) -> list[dict]:
    """The RDDs with at least one cached partition, by id."""
    return [rdd_doc(state.rdds[k], state) for k in sorted(state.rdds) if state.rdds[k].partitions]
