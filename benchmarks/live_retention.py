"""What a long live session retains per job, by the source line that allocated it (tracemalloc).

A fixture application replicated into a long one (as tests/test_fold.py does) runs through a folding server
session; memory still held is compared between a snapshot after warm-up and one at the end, grouped by the
allocating line, and divided by the jobs in between. Lines in backend/sessions/history.py are the seekable history
(checkpoints and deltas: they grow with the log by design); the rest is live state.

    PYTHONPATH=$PWD python benchmarks/live_retention.py [--copies 300] [--top 25]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from backend.sessions.session import Session, SessionOptions  # noqa: E402
from backend.spark.live.follow_feed import SparkLogFeed  # noqa: E402
from tests.object_size import deep_size  # noqa: E402

SOURCE = next((REPO / "fixtures" / "spark" / "batch_shuffle").glob("eventlog_v2_*"))
JOBS_PER_COPY = 7


def _replicate(copies: int, target: Path) -> dict:
    spec = importlib.util.spec_from_file_location("replicate", REPO / "benchmarks" / "replay_vs_history_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate(SOURCE, copies, target)


def structure_sizes(session: Session) -> dict[str, int]:
    """Deep bytes of each long-lived part of a session; the live parts stop at the seekable history."""
    stop = {id(session.history), id(session)}
    parts: dict[str, Any] = {"history (seekable)": session.history}
    feed = session.feed
    model = getattr(feed, "model", None)
    stop.add(id(feed))
    if model is not None:
        stop.add(id(model))
        parts["model"] = model
    for name, value in vars(session).items():
        if name not in ("history", "feed", "replay", "listeners") and not isinstance(value, (int, float, str)):
            parts[f"session.{name}"] = value
    parts["replay"] = session.replay
    stop.update(id(v) for v in parts.values())
    return {name: deep_size(value, stop - {id(value)}) for name, value in parts.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=300)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "app-long"
        _replicate(args.copies, log)
        session = Session(SparkLogFeed(log, follow=False),
                          options=SessionOptions(checkpoint_every=64, keep_finished=3, slice_seconds=0.002))
        snaps: list = []
        warm_jobs = args.copies * JOBS_PER_COPY // 4

        def listener(s: Session) -> None:
            jobs = len(s.replay.root.children) + s.replay.folded
            if not snaps and jobs * 7 // 4 >= warm_jobs:  # regions: 4 per copy
                gc.collect()
                snaps.append((jobs, tracemalloc.take_snapshot(), structure_sizes(s)))

        session.listeners.append(listener)

        async def run() -> None:
            session.start()
            while session.status not in ("done", "failed"):
                await asyncio.sleep(0.01)

        tracemalloc.start(1)
        asyncio.run(run())
        gc.collect()
        end = tracemalloc.take_snapshot()
        regions_end = len(session.replay.root.children) + session.replay.folded
        regions_warm, warm, sizes_warm = snaps[0]
        sizes_end = structure_sizes(session)
        jobs = (regions_end - regions_warm) * JOBS_PER_COPY / 4
        print(f"status {session.status}; regions {regions_warm} -> {regions_end} (~{jobs:.0f} jobs)")
        print("deep size per structure (warm-up -> end, bytes per job in between):")
        for name, before in sizes_warm.items():
            after = sizes_end[name]
            print(f"  {name:28s} {before:>11,} -> {after:>11,}  {(after - before) / jobs:8.1f} B/job")
        print("retained by allocating line:")
        stats = end.compare_to(warm, "lineno")
        history = live = 0
        rows = []
        for st in stats:
            frame = st.traceback[0]
            name = frame.filename.replace(str(REPO) + "/", "")
            if "tracemalloc" in name:
                continue
            if name.endswith("backend/sessions/history.py"):
                history += st.size_diff
            elif name.startswith(("backend", "tracker")):
                live += st.size_diff
                rows.append((st.size_diff, f"{name}:{frame.lineno}", st.count_diff))
        print(f"history (seekable): {history / jobs:8.1f} B/job")
        print(f"live (backend+tracker): {live / jobs:8.1f} B/job")
        for size, where, count in sorted(rows, reverse=True)[: args.top]:
            print(f"  {size / jobs:8.1f} B/job {count / jobs:6.2f} blocks/job  {where}")


if __name__ == "__main__":
    main()
