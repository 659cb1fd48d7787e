"""A session: one feed of records, the replay that tracks it, its history, and who is watching.

The session owns the one live :class:`~tracker.progress_log.replay.Replay` of its dataflow and runs the ingest on the
server's event loop in *slices* of at most ``slice_seconds``, then yields to requests and WebSocket senders. Nothing
else mutates the live replay, so whatever runs between slices reads a consistent state.

Per batch the replay's observer only notes the batch in the history and the ports it touched; at the end of a
slice those update the charts and each port's "last changed" batch, and go to the subscribers watching the scope
as dirty sets (how fast a client reads is the stream's business, never the ingest's). Finished scopes beyond
``keep_finished`` are folded out of the live replay and forgotten here; the history still restores them for any
moment before their fold. What the API and the stream show of a session is backend/views/projections.py's.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from backend.feeds.progress_feeds import Feed
from backend.sessions.history import History
from backend.sessions.series import SeriesRecorder
from backend.spark.diagnosis.blame import spark_blame, task_index_for
from backend.spark.diagnosis.recorded_schedule import RecordedSchedule
from backend.spark.diagnosis.task_timeline import TaskTimeline
from backend.views.graph_layout import layout_columns, layout_graph, scope_graph
from tracker.analysis.contracts import BatchInfo
from tracker.progress_log.replay import Replay
from tracker.reachability import IN, OUT, Location
from tracker.subgraph import Subgraph

__all__ = ["Session", "SessionOptions"]

log = logging.getLogger("flowscope.session")

_STRUCTURE = frozenset(("scope", "operator", "edge", "retire"))


@dataclass
class SessionOptions:
    check_contracts: bool = True
    checkpoint_every: int = 4096
    slice_seconds: float = 0.008
    idle_wait: float = 0.25  # longest wait for a live feed before polling again
    read_batch: int = 1024  # records read (and decoded, decompressed) per trip to the reading thread
    keep_finished: int | None = 64  # finished scopes kept live (browsable at the head); older ones fold (None: never)


class Session:
    """One dataflow source being tracked (see the module docstring)."""

    def __init__(self, feed: Feed, name: str | None = None, options: SessionOptions | None = None,
                 directory: Path | None = None, sid: str | None = None):
        self.id = sid or secrets.token_hex(5)
        self.feed = feed
        self.name = name or feed.label
        self.options = options or SessionOptions()
        self.directory = directory  # the session's own directory (uploads), removed with the session
        self.created = time.time()
        self.replay = Replay(feed.label, check_contracts=self.options.check_contracts, observer=self._observe,
                             keep_finished=self.options.keep_finished, checked_records=feed.checked_records)
        self.history = History(self.options.checkpoint_every, keep_finished=self.options.keep_finished)
        self.replay.on_retire.append(self._forget_folded_scope)
        tasks = task_index_for(self.replay, bars=True)  # task attempts, filled by blame, read by both
        self.blame = spark_blame(self.replay, lazy=True, tasks=tasks)  # where completed times' seconds went
        self.task_timeline = TaskTimeline(tasks)  # every task attempt's bar, for the executor timeline
        self.schedule = RecordedSchedule()  # jobs and stage attempts as scheduled, for the cores what-if
        self.series = SeriesRecorder()
        self.status = "loading"  # loading | live | done | failed | stopped
        self.error: str | None = None
        self.records = 0
        self.subscribers: set[Any] = set()
        self.last_changed: dict[tuple, dict[Location, int]] = {}
        self.structure_version = 0
        self.slices = 0  # ingest slices ended; the live state changes only inside one (the stream keys on it)
        self.listeners: list[Callable[[Session], None]] = []  # called at each slice end
        self.on_finish: list[Callable[[Session], None]] = []  # called once the feed has ended (status "done")
        self.cache: dict[Any, Any] = {}  # per structure version: layouts, port graphs
        self._touched: dict[Subgraph, set[Location]] = {}
        self._slice_first: float | None = None
        self._annotations = (0, 0)
        self._series_pending: dict[Subgraph, set[Location]] = {}
        self._series_last = 0
        self._settled_version = 0  # structure version the trackers were built (and the root laid out) for
        self._settling: asyncio.Task | None = None  # the last settle: done once its layout and trackers are made
        self._slice_version = 0
        self._chains: dict[tuple, list[tuple[Subgraph, list[Location]]]] = {}
        self._task: asyncio.Task | None = None
        self._stop = False

    # --- the ingest loop -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run(), name=f"session {self.id}")

    async def run(self) -> None:
        """Ingest the feed until it ends or the session stops.

        The feed is read on a worker thread (files, decompression, decoding never block the server) and what was read is
        applied on the event loop, in slices of ``slice_seconds``: requests and WebSocket senders run between slices and
        always see a consistent state."""
        feed, opts = self.feed, self.options
        chunk: list = []
        pos = 0
        try:
            while not self._stop:
                if pos >= len(chunk):
                    polled = await asyncio.to_thread(feed.poll, opts.read_batch)
                    if polled is None:
                        self.replay.finish()
                        self._end_slice()
                        self.status = "done"
                        self._notify_all()
                        for callback in self.on_finish:
                            callback(self)
                        return
                    if not polled:
                        if self.status == "loading":
                            self.status = "live"
                            self._notify_all()
                        self._settle()  # nothing more to read for now: the structure may be whole, lay it out
                        await feed.wait(opts.idle_wait)
                        continue
                    chunk, pos = polled, 0
                deadline = time.perf_counter() + opts.slice_seconds
                end = len(chunk)
                while pos < end:
                    line, record = chunk[pos]
                    pos += 1
                    self._apply(record, line)
                    if not pos & 63 and time.perf_counter() >= deadline:
                        break
                self._end_slice()
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.status = "stopped"
            raise
        except Exception as e:  # a bug, or a feed that broke: the session shows it instead of vanishing
            log.exception("session %s failed", self.id)
            self.status = "failed"
            self.error = f"{type(e).__name__}: {e}"
            self._notify_all()
        finally:
            feed.close()

    async def stop(self, keep_files: bool = False) -> None:
        """Stop ingesting and close the stream.

        The session's directory is removed unless ``keep_files`` (a server shutting down with a ``--data-dir`` keeps its
        uploads for the next start)."""
        self._stop = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        self.feed.close()
        for sub in list(self.subscribers):
            sub.close("session deleted")
        self.history.close()
        if self.directory is not None and not keep_files:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _apply(self, record: dict, line: int | None) -> None:
        self.records += 1
        kind = record.get("type")
        if kind in _STRUCTURE:
            self.structure_version += 1
            self._chains.clear()
            if self.cache:
                self.cache.clear()
        if self._slice_first is None and kind == "progress":
            self._slice_first = time.time()
        self.history.record(record)
        if self.replay.apply(record, line):
            self.blame.record(record, line)  # and the task index the executor timeline reads
            self.schedule.record(record)

    def _forget_folded_scope(self, scope: Subgraph) -> None:
        """``scope`` (and what it nests) leaves the live replay: forget what the session kept for it."""
        path, n = scope.path, len(scope.path)
        self._flush_series()
        for key in [k for k in self.last_changed if k[:n] == path]:
            del self.last_changed[key]
        for table in (self._touched, self._series_pending):
            for sc in [sc for sc in table if sc.path[:n] == path]:
                del table[sc]
        self.series.forget(path)
        self.history.scope_folded(scope)

    def _observe(self, info: BatchInfo, scope: Subgraph, updates: list, pushed: list) -> None:
        replay = self.replay
        self.history.batch_applied(replay, replay.last_at, info.worker, scope.path)
        touched, pending = self._touched, self._series_pending
        locs = {loc for loc, _, _ in updates}
        for t in (touched, pending):
            s = t.get(scope)
            if s is None:
                t[scope] = set(locs)
            else:
                s |= locs
        if scope.parent is not None:
            for parent, plocs in self._chain(scope):
                for t in (touched, pending):
                    p = t.get(parent)
                    if p is None:
                        t[parent] = set(plocs)
                    else:
                        p.update(plocs)
        last = None
        s1: set[Location] = set()
        s2: set[Location] = set()
        for sc, loc, _, _ in pushed:
            if sc is not last:
                last = sc
                t1 = touched.get(sc)
                if t1 is None:
                    t1 = touched[sc] = set()
                t2 = pending.get(sc)
                if t2 is None:
                    t2 = pending[sc] = set()
                s1, s2 = t1, t2
            s1.add(loc)
            s2.add(loc)
        # The charts sample at batch resolution while the session is short, then every 2, 4, ... batches
        # (bounded work however long it runs), independent of how batches fall into slices.
        b = replay.batches_applied
        if b - self._series_last >= max(1, b >> 11):
            self._flush_series()

    def _flush_series(self) -> None:
        pending, self._series_pending = self._series_pending, {}
        self._series_last = self.replay.batches_applied
        at = self.replay.last_at or 0.0
        for scope, locs in pending.items():
            self.series.update(scope, locs, at)

    def _chain(self, scope: Subgraph) -> list[tuple[Subgraph, list[Location]]]:
        """For each enclosing scope, the ports a nested scope's reports may change.

        Those are its node's ports and the targets its outputs feed, and the nested scope's own boundary outputs (the
        pushed-in frontiers)."""
        chain = self._chains.get(scope.path)
        if chain is None:
            chain = []
            s = scope
            while s.parent is not None:
                p, node = s.parent, s.node
                locs = [Location(0, OUT, i) for i in range(s.inputs)]
                chain.append((s, locs))
                plocs = [Location(node, IN, i) for i in range(s.inputs)]
                targets: dict[Location, list[Location]] = {}
                for src, tgt in p.edges:
                    if src.node == node:
                        targets.setdefault(src, []).append(tgt)
                for o in range(s.outputs):
                    src = Location(node, OUT, o)
                    plocs.append(src)
                    plocs.extend(targets.get(src, ()))
                chain.append((p, plocs))
                s = p
            self._chains[scope.path] = chain
        return chain

    def _settle(self) -> None:
        """Once the structure stops changing, build the trackers and lay out the root scope in the background.

        The structure stops changing at a slice without structure records, or when the feed has nothing more for now.
        The first view of a loaded session then waits for neither: its graph request finds the layout made, or being
        made."""
        v = self.structure_version
        quiet = v == self._slice_version
        self._slice_version = v
        if v == self._settled_version or not quiet:
            return
        self._settled_version = v
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.replay.root.schedule()
            return
        # The layout first (the page asks for it first; a copy of the structure is taken now, the rest runs in a
        # worker thread while the loop answers requests: the page itself, its graph), then the trackers (a build
        # holds the loop, and would share the interpreter with the layout meanwhile). A stream's first snapshot
        # waits for both (``settled``), so it never starts the build itself halfway through the layout, delaying
        # the picture it colours.
        self._settling = asyncio.get_running_loop().create_task(self._settle_views(v), name=f"settle {self.id}")

    async def _settle_views(self, version: int) -> None:
        try:
            await self.graph_json((), columns=True)  # the form the browser asks for
        except Exception:  # the graph request reports it to whoever asks
            log.exception("session %s: laying out structure version %d", self.id, version)
        # The requests that waited for this layout are answered in the loop's next turns: a graph of 10,000
        # operators is most of a megabyte, written as the browser reads it. The build waits for that (a few
        # milliseconds), rather than hold the answer back for its own quarter of a second.
        await asyncio.sleep(0.02)
        if version != self.structure_version or self._stop:  # grown since: its own settle builds
            return
        try:
            self.replay.root.schedule()
        except Exception:  # the stream's own build reports it to whoever watches
            log.exception("session %s: building the trackers for structure version %d", self.id, version)

    async def settled(self) -> None:
        """Returns once the settle under way (the root's layout, then the trackers) is done; at once if none is."""
        settling = self._settling
        if settling is not None and not settling.done():
            await asyncio.shield(settling)

    def graph_json(self, path: tuple, columns: bool = False) -> asyncio.Future[bytes]:
        """The laid-out graph of a scope as JSON bytes.

        As objects, or column by column (``layout_columns``); laid out once per structure version and encoded once per
        form, off the loop."""
        key = ("graph", path, self.structure_version, columns)
        fut = self.cache.get(key)
        if fut is None:
            layout = self._layout(path)

            async def encode() -> bytes:
                data = await layout
                return await asyncio.get_running_loop().run_in_executor(
                    None, lambda: orjson.dumps(layout_columns(data) if columns else data))

            fut = self.cache[key] = asyncio.ensure_future(encode())
        return fut

    def graph_ready(self, path: tuple, columns: bool = True) -> bool:
        """Whether the graph of ``path`` for the current structure is laid out and encoded (no request waits)."""
        fut = self.cache.get(("graph", path, self.structure_version, columns))
        return fut is not None and fut.done()

    def _layout(self, path: tuple) -> asyncio.Future[dict]:
        key = ("layout", path, self.structure_version)
        fut = self.cache.get(key)
        if fut is None:
            g = scope_graph(self.scope(path))  # a copy of the structure, taken here (on the loop)
            version = self.structure_version

            def lay_out() -> dict:
                data = layout_graph(g)
                data["version"] = version
                return data

            fut = self.cache[key] = asyncio.get_running_loop().run_in_executor(None, lay_out)
        return fut

    def _end_slice(self) -> None:
        self._settle()
        self.slices += 1
        touched, self._touched = self._touched, {}
        first, self._slice_first = self._slice_first, None
        if self._series_pending:
            self._flush_series()
        if touched:
            batch = self.replay.batches_applied
            by_path: dict[tuple, set[Location]] = {}
            for scope, locs in touched.items():
                path = scope.path
                by_path[path] = locs
                changed = self.last_changed.get(path)
                if changed is None:
                    changed = self.last_changed[path] = {}
                for loc in locs:
                    changed[loc] = batch
            for sub in self.subscribers:
                sub.changed(by_path.get(sub.scope), first)
        else:
            annotations = (len(self.replay.marks), len(self.replay.findings))
            if annotations != self._annotations:
                self._annotations = annotations
                for sub in self.subscribers:
                    sub.changed(None, first)
        for fn in self.listeners:
            fn(self)

    def _notify_all(self) -> None:
        for sub in self.subscribers:
            sub.changed(None, None)

    # --- reading ---------------------------------------------------------------------------------------

    @property
    def head(self) -> int:
        return self.replay.batches_applied

    @property
    def live(self) -> bool:
        return self.feed.live

    def scope(self, path: tuple) -> Subgraph:
        return self.replay.root.find(path)

    def errors(self) -> list:
        return self.feed.errors + self.replay.errors

    def changed_since(self, path: tuple, batch: int) -> list[Location]:
        changed = self.last_changed.get(path, {})
        return [loc for loc, b in changed.items() if b > batch]
