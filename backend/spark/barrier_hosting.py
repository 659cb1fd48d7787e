"""The runtime's workers as the tasks of a Spark barrier stage.

Spark is the distributed engine, flowscope brings only the timely protocol.

``rdd.barrier().mapPartitions`` launches all N tasks together (Spark refuses a barrier stage it cannot schedule
at once); each task becomes one worker, listens on its executor's address, and learns the others' through
``BarrierTaskContext.allGather``. Workers then exchange data and progress over TCP (``tracker.runtime.tcp``). After
its dataflows complete, each task waits at Spark's barrier before closing its connections, so nobody closes a
connection a peer is still sending on. This is the only module of the runtime that imports pyspark; it runs on
``local[N]`` here and unchanged on a cluster.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

__all__ = ["run_on_spark"]


def _task(peers: int, main: Callable[[Any], Any], chaos_seed: int | None, record_dir: str | None):
    def run(_partition):
        import os
        import random
        import time

        from pyspark import BarrierTaskContext

        from tracker.runtime.fabric import Fabric
        from tracker.runtime.tcp import TcpFabric
        from tracker.runtime.worker import Worker

        ctx = BarrierTaskContext.get()
        index = ctx.partitionId()
        infos = ctx.getTaskInfos()
        host = infos[index].address.rsplit(":", 1)[0] if infos and infos[index].address else "127.0.0.1"
        tcp = TcpFabric(index, peers, host)
        addresses = ctx.allGather(tcp.address)
        tcp.connect(list(addresses))
        fabric: Fabric = tcp if chaos_seed is None else _DelayingFabric(tcp, random.Random(chaos_seed * 1000 + index))
        record = os.path.join(record_dir, f"worker-{index}.jsonl") if record_dir else None
        worker = Worker(index, peers, fabric, record)
        started = time.monotonic()
        try:
            result = main(worker)
            worker.run()
        finally:
            worker.close()
        elapsed = time.monotonic() - started
        ctx.barrier()
        tcp.close()
        yield index, pickle.dumps((result, elapsed, worker.steps))

    return run


class _DelayingFabric:
    """Holds back each incoming message for a random number of receive calls, so deliveries reorder."""

    def __init__(self, inner: Any, rng: Any):
        self.inner = inner
        self.rng = rng
        self.peers = inner.peers
        self.global_view = None
        self._held: list = []

    def send(self, src: int, dst: int, msg: tuple) -> None:
        self.inner.send(src, dst, msg)

    def broadcast(self, src: int, msg: tuple) -> None:
        self.inner.broadcast(src, msg)

    def recv(self, index: int, timeout: float = 0.0) -> list:
        for msg in self.inner.recv(index, timeout if not self._held else 0.0):
            self._held.append([self.rng.randint(0, 3), msg])
        ready = [m for hold, m in self._held if hold == 0]
        self._held = [[hold - 1, m] for hold, m in self._held if hold > 0]
        self.rng.shuffle(ready)
        return ready

    def close(self) -> None:
        self.inner.close()


def run_on_spark(spark: Any, peers: int, main: Callable[[Any], Any], chaos_seed: int | None = None,
                 record_dir: str | None = None) -> list[Any]:
    """Run ``main(worker)`` on ``peers`` barrier tasks of ``spark`` (a SparkSession or SparkContext).

    Returns each worker's result by index. ``main`` must be picklable by Spark (closures are, via cloudpickle).
    With ``chaos_seed``, each worker delays and reorders what it receives.
    """
    sc = getattr(spark, "sparkContext", spark)
    rdd = sc.parallelize(range(peers), peers)
    out = rdd.barrier().mapPartitions(_task(peers, main, chaos_seed, record_dir)).collect()
    results: list[Any] = [None] * peers
    for index, payload in out:
        results[index] = pickle.loads(payload)[0]
    return results


def run_on_spark_timed(spark: Any, peers: int, main: Callable[[Any], Any]) -> list[tuple[Any, float, int]]:
    """Like :func:`run_on_spark`, also returning each worker's elapsed seconds and steps (for benchmarks)."""
    sc = getattr(spark, "sparkContext", spark)
    rdd = sc.parallelize(range(peers), peers)
    out = rdd.barrier().mapPartitions(_task(peers, main, None, None)).collect()
    results: list[Any] = [None] * peers
    for index, payload in out:
        results[index] = pickle.loads(payload)
    return results
