"""Running N workers as threads of one process (fast, for tests and examples)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from tracker.runtime.fabric import Chaos, GlobalView, ThreadFabric
from tracker.runtime.worker import Worker

__all__ = ["execute"]


def execute(
    peers: int,
    main: Callable[[Worker], Any],
    chaos: Chaos | None = None,
    global_view: GlobalView | None = None,
    record_dir: str | os.PathLike | None = None,
    timeout: float = 120.0,
) -> list[Any]:
    """Run ``main(worker)`` on ``peers`` worker threads; returns each worker's result, by index.

    ``main`` builds dataflows and drives them (``worker.step()``, ``worker.run()``), as in timely's ``execute``.
    With ``record_dir``, each worker writes its view to ``worker-<i>.jsonl`` there. An exception in any worker is
    raised here; a run that does not finish within ``timeout`` seconds raises ``TimeoutError``.
    """
    fabric = ThreadFabric(peers, chaos, global_view)
    results: list[Any] = [None] * peers
    errors: list[BaseException] = []

    def run(i: int) -> None:
        record = os.path.join(os.fspath(record_dir), f"worker-{i}.jsonl") if record_dir is not None else None
        worker = Worker(i, peers, fabric, record)
        try:
            results[i] = main(worker)
            worker.run()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            errors.append(e)
        finally:
            worker.close()

    threads = [threading.Thread(target=run, args=(i,), name=f"flowscope-worker-{i}", daemon=True) for i in range(peers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        if t.is_alive():
            raise TimeoutError(f"worker thread {t.name} did not finish within {timeout} s")
    if errors:
        raise errors[0]
    return results
