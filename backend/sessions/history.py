"""Session history: the state of the dataflow after any batch, quickly, without keeping every state.

A session's live :class:`~tracker.progress_log.replay.Replay` knows only the present. To answer "what did every port
look like after batch k" (the timeline, seeking, explaining the past) the history keeps:

* **segments of records**: every structure, progress and ``detail`` record, in segments of ``checkpoint_every``
  batches, each sealed one compressed into the session's :class:`~backend.sessions.scratch_dir.ScratchFile`;
* **checkpoints**: at each segment's start, every scope's *primary* pointstamps (what batches put there; derived
  ones, a nested scope's pushed-in frontier and reported capabilities, are recomputed) and the holder details;
* **a batch index**: per batch its wall clock (with the running maximum, for seeks by time), worker and scope.

The state after batch ``k`` is a fresh ``Replay`` given the structure, the checkpoint at or before ``k`` and at most
``checkpoint_every`` batches: its cost does not grow with the session. It equals the live replay's
(``tests/test_backend_history.py``). Batch 0 is the declared dataflow before any progress. Restored replays are kept
as *cursors* so stepping forward re-applies only the batches between. Folded scopes are folded again at the same
moments; a folded region's records are skipped by later checkpoints, so a restore costs what is live then.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import orjson
import zstandard

from backend.sessions.scratch_dir import ScratchFile
from tracker.progress_log.pages import PagedLines, RecentPages
from tracker.progress_log.replay import Replay
from tracker.reachability import OUT, Location
from tracker.subgraph import Subgraph

__all__ = ["History", "Checkpoint", "primary_pointstamps"]

_STRUCTURE = frozenset(("scope", "operator", "edge", "retire"))
_ALIVE = 0xFFFF_FFFF  # died_at of a structure record that is still needed by every checkpoint (4 bytes a record)
STRUCTURE_PAGE = 256  # structure records per compressed page


@dataclass
class Checkpoint:
    batch: int  # batches applied
    structure: int  # structure records applied (a prefix of History.structure)
    progress_records: int
    last_at: float | None
    pointstamps: list[tuple[tuple, list[tuple[Location, Any, int]]]]  # per scope path: primary pointstamps
    details: dict | None = None  # the holder details present then (HolderDetails.snapshot)


@dataclass
class Segment:
    checkpoint: Checkpoint
    lines: list[bytes] | None = field(default_factory=list)  # while open
    page: tuple[int, int] | None = None  # where it is in the scratch file, compressed, once sealed
    stored: int = 0  # its compressed size, once sealed
    count: int = 0  # records in the segment
    index: BatchIndex | None = field(default_factory=lambda: BatchIndex())  # its batches', while open
    index_page: tuple[int, int] | None = None  # where the index is in the scratch file, once sealed

    @property
    def start(self) -> int:
        return self.checkpoint.batch


class BatchIndex:
    """The batches of one segment.

    Wall clock, its running maximum over the session, worker (-1: none or not an integer), scope id (into
    ``History.scope_paths``) and the record index in the segment."""

    __slots__ = ("at", "at_max", "worker", "scope", "line")

    def __init__(self, data: bytes | None = None) -> None:
        self.at, self.at_max = array("d"), array("d")
        self.worker, self.scope, self.line = array("q"), array("q"), array("q")
        if data is not None:  # what to_bytes wrote: the columns one after the other, 8 bytes an entry
            n = len(data) // 40
            columns: tuple[array, ...] = (self.at, self.at_max, self.worker, self.scope, self.line)
            for k, column in enumerate(columns):
                column.frombytes(data[k * 8 * n:(k + 1) * 8 * n])

    def to_bytes(self) -> bytes:
        return b"".join(c.tobytes() for c in (self.at, self.at_max, self.worker, self.scope, self.line))


class Column(Sequence):
    """One column of the whole batch index (``history.at[b - 1]``: batch b's wall clock), read page by page."""

    def __init__(self, history: History, name: str) -> None:
        self._history, self._name = history, name

    def __len__(self) -> int:
        return self._history.batches

    def __getitem__(self, b):
        h = self._history
        n = h.batches
        if isinstance(b, slice):
            return [self[k] for k in range(*b.indices(n))]
        if b < 0:
            b += n
        if not 0 <= b < n:
            raise IndexError(f"batch index {b} of {n}")
        i, k = divmod(b, h.every)
        return getattr(h.segment_index(i), self._name)[k]

    def __iter__(self):
        h = self._history
        for i in range(len(h.segments)):
            yield from getattr(h.segment_index(i), self._name)


def primary_pointstamps(scope: Subgraph) -> list[tuple[Location, Any, int]]:
    """The pointstamps batches put in ``scope`` (see the module docstring): not the derived ones."""
    scope.ensure_built()
    tracker = scope.tracker
    assert tracker is not None  # built just above
    nested = scope.parent is not None
    children = scope.children
    out: list[tuple[Location, Any, int]] = []
    for k, loc in enumerate(tracker.locations):
        ps = tracker.pointstamps[k]
        if ps.is_empty() and not ps.updates():
            continue
        if loc.node == 0:
            if nested:
                continue
        elif loc.kind == OUT and children[loc.node].scope is not None:
            continue
        for t, c in ps.updates():
            out.append((loc, t, c))
    return out


class History:
    """Segments, checkpoints and the batch index of one session (see the module docstring)."""

    def __init__(self, checkpoint_every: int = 4096, pool_size: int = 4, level: int = 3,
                 keep_finished: int | None = None, directory: Path | None = None):
        """A history for a session's live replay.

        ``keep_finished`` is the live replay's (restored replays fold the same scopes); ``directory`` is where the
        scratch file is made (default: the system's temporary directory; the file is anonymous there)."""
        if checkpoint_every < 1:
            raise ValueError("checkpoint_every must be at least 1")
        self.every = checkpoint_every
        self.keep_finished = keep_finished
        self.scratch = ScratchFile(directory)
        self.structure = PagedLines(STRUCTURE_PAGE, self.scratch, level)
        # per structure record: how many structure records had been kept when it stopped being needed (a record
        # inside a folded scope), else _ALIVE; a checkpoint past that point skips it
        self.died_at = array("I")
        self._inside: dict[tuple, list[int]] = {}  # scope path -> the structure records declaring its contents
        self._own: dict[tuple, list[int]] = {}  # scope path -> its own `scope` and `retire` records
        self.fold_deaths = array("I")  # died_at of each fold whose records died (non-decreasing)
        self._fold_parents: list[tuple] = []  # and the path of the scope that held it
        self.segments: list[Segment] = [Segment(Checkpoint(0, 0, 0, None, []))]
        self._batches = 0
        self._last_at = 0.0  # the latest batch's wall clock, and the running maximum
        self._max_at = float("-inf")
        self.segment_max = array("d")  # per sealed segment: the running maximum of `at` at its end
        self._index_cache = RecentPages(8)  # sealed segments' batch indexes, read back
        # per batch (index b - 1 for batch b): wall clock, worker, scope id (index into scope_paths)
        self.at, self.worker, self.scope = Column(self, "at"), Column(self, "worker"), Column(self, "scope")
        self.at_max = Column(self, "at_max")  # the running maximum of `at`
        self.scope_paths = PagedLines(1024, self.scratch)  # per scope id: its path (JSON), the old ones on disk
        self._scope_ids: dict[tuple, int] = {}  # the live scopes' ids
        self._compressor = zstandard.ZstdCompressor(level=level)
        self._pool: list[Replay] = []
        # where each restored replay has read the records up to: (segment, line of the next record)
        self._positions: WeakKeyDictionary[Replay, tuple[int, int]] = WeakKeyDictionary()
        self._pool_size = pool_size
        self._lock = threading.Lock()
        self._lines_cache = RecentPages(4)  # sealed segments' records, read back (seeks run in worker threads)

    # --- recording (the ingest loop) -------------------------------------------------------------------

    @property
    def batches(self) -> int:
        return self._batches

    def record(self, record: dict) -> None:
        """Keep a record the replay is about to apply (progress and structure records only)."""
        kind = record.get("type")
        if kind == "progress":
            line = b"P" + orjson.dumps(record)
        elif kind in _STRUCTURE:
            line = b"S" + orjson.dumps(record)
            where = record.get("scope") if kind in ("operator", "edge") else None
            if kind == "scope" and isinstance(record.get("path"), list):
                where = record["path"][:-1]  # a nested scope's record is part of what its parent holds
            if kind in ("scope", "retire") and isinstance(record.get("path"), list):
                self._own.setdefault(tuple(record["path"]), []).append(len(self.structure))
            if isinstance(where, list) and where:  # the root never folds: its records are not listed
                inside = self._inside.get(tuple(where))
                if inside is None:
                    inside = self._inside[tuple(where)] = []
                inside.append(len(self.structure))
            self.structure.append(line)
            self.died_at.append(_ALIVE)
        elif kind == "detail":  # what holders are made of (running tasks): explain in the past shows them too
            line = b"D" + orjson.dumps(record)
        else:
            return
        seg = self.segments[-1]
        assert seg.lines is not None  # the last segment is open
        seg.lines.append(line)
        seg.count += 1

    def batch_applied(self, replay: Replay, at: Any, worker: Any, scope_path: tuple) -> None:
        """The record kept last was applied as batch ``replay.batches_applied``; checkpoint on segment ends."""
        a = float(at) if isinstance(at, (int, float)) else self._last_at
        self._last_at = a
        if a > self._max_at:
            self._max_at = a
        sid = self._scope_ids.get(scope_path)
        if sid is None:
            sid = self._scope_ids[scope_path] = len(self.scope_paths)
            self.scope_paths.append(memoryview(orjson.dumps(list(scope_path))).tobytes())  # exactly sized: pages.py
        seg = self.segments[-1]
        index = seg.index
        assert index is not None  # the last segment is open
        index.at.append(a)
        index.at_max.append(self._max_at)
        index.worker.append(worker if type(worker) is int and -(1 << 63) <= worker < (1 << 63) else -1)
        index.scope.append(sid)
        index.line.append(seg.count - 1)
        self._batches += 1
        if replay.batches_applied % self.every == 0:
            self._checkpoint(replay)

    def scope_folded(self, scope: Subgraph) -> None:
        """The live replay is folding ``scope``.

        If nothing connects it to its parent, every record about it (its own ``scope`` and ``retire`` records, what was
        declared inside it and in scopes nested in it) is dead for every later checkpoint: a replay restored there never
        declares it, and counts it as folded."""
        path, n = scope.path, len(scope.path)
        for k in [k for k in self._scope_ids if k[:n] == path]:  # no batch names it again: its id stays on disk
            del self._scope_ids[k]
        inside = [k for k in self._inside if k[:n] == path]
        own = [k for k in self._own if k[:n] == path]
        if scope.inputs or scope.outputs:
            for k in inside:  # its summary depends on its contents: every checkpoint needs them
                del self._inside[k]
            for k in own:
                del self._own[k]
            return
        now = len(self.structure)
        died_at = self.died_at
        for table, keys in ((self._inside, inside), (self._own, own)):
            for k in keys:
                for i in table.pop(k):
                    died_at[i] = now
        self.fold_deaths.append(now)
        self._fold_parents.append(path[:-1])

    def _checkpoint(self, replay: Replay) -> None:
        seg = self.segments[-1]
        lines = seg.lines
        assert lines is not None  # the last segment is open
        # written first, then the lines dropped: a seek reading this segment in a worker thread meanwhile always finds
        # one of them
        blob = self._compressor.compress(b"\n".join(lines))
        seg.page = self.scratch.put(blob)
        seg.stored = len(blob)
        seg.lines = None
        index = seg.index
        assert index is not None  # open until now
        seg.index_page = self.scratch.put(self._compressor.compress(index.to_bytes()))
        seg.index = None
        self.segment_max.append(index.at_max[-1])
        pointstamps = [(scope.path, primary_pointstamps(scope)) for scope in replay.root.scopes()]
        cp = Checkpoint(replay.batches_applied, len(self.structure), replay.progress_records, replay.last_at,
                        pointstamps, replay.details.snapshot())
        self.segments.append(Segment(cp))

    # --- reading ---------------------------------------------------------------------------------------

    def scope_path(self, sid: int) -> tuple:
        """The path of the scope numbered ``sid`` in the batch index (``history.scope[b - 1]``: batch b's)."""
        return tuple(orjson.loads(self.scope_paths[sid]))

    def segment_index(self, i: int) -> BatchIndex:
        """The batch index of segment ``i``: the open one's as it is, a sealed one's read back (a few are cached)."""
        seg = self.segments[i]
        index = seg.index
        if index is not None:
            return index
        page = seg.index_page
        assert page is not None  # sealed
        read: BatchIndex = self._index_cache.get(i, lambda: BatchIndex(self._read(page)))
        return read

    def batch_at_time(self, at: float) -> int:
        """The number of batches whose wall clock is at or before ``at``."""
        i = bisect.bisect_right(self.segment_max, at)  # every batch of the segments before i is at or before it
        if i >= len(self.segments):
            return self.batches
        return i * self.every + bisect.bisect_right(self.segment_index(i).at_max, at)

    def time_of(self, batch: int) -> float | None:
        return self.at[batch - 1] if 0 < batch <= self.batches else None

    def _segment_lines(self, i: int) -> list[bytes]:
        seg = self.segments[i]
        lines = seg.lines
        if lines is not None:
            return lines[:]  # the open segment: a snapshot of what is there now
        page = seg.page
        assert page is not None  # a segment is either open (lines) or sealed (page)

        def load() -> list[bytes]:
            data = self._read(page)
            return data.split(b"\n") if data else []
        cached: list[bytes] = self._lines_cache.get(i, load)
        return cached

    def close(self) -> None:
        """Give back the scratch file (its session stopped): the sealed pages go with it, the cursors too."""
        self._pool.clear()
        self.scratch.close()

    def _read(self, page: tuple[int, int]) -> bytes:
        """A sealed page of the scratch file, decompressed (a decompressor each: seeks run in several threads)."""
        return zstandard.ZstdDecompressor().decompress(self.scratch.get(page))

    def batch_record(self, batch: int) -> dict:
        """The progress record applied as ``batch`` (1-based)."""
        if not 0 < batch <= self.batches:
            raise IndexError(f"no batch {batch} (1..{self.batches})")
        i = (batch - 1) // self.every
        k = self.segment_index(i).line[batch - 1 - self.segments[i].start]
        return orjson.loads(memoryview(self._segment_lines(i)[k])[1:])

    def restore(self, batch: int) -> Replay:
        """A new replay at the state after ``batch`` (clamped to the recorded batches)."""
        batch = max(0, min(batch, self.batches))
        with self._lock:
            best = None
            for r in self._pool:
                if r.batches_applied <= batch and r.batches_applied // self.every == batch // self.every:
                    if best is None or r.batches_applied > best.batches_applied:
                        best = r
            if best is not None:
                self._pool.remove(best)
        replay = best if best is not None else self._from_checkpoint(batch // self.every)
        self._advance(replay, batch)
        return replay

    @contextmanager
    def at_batch(self, batch: int) -> Iterator[Replay]:
        """``with history.at_batch(k) as replay:`` read the state after batch k; the cursor goes back to the pool."""
        replay = self.restore(batch)
        try:
            yield replay
        finally:
            self.release(replay)

    def release(self, replay: Replay) -> None:
        with self._lock:
            self._pool.append(replay)
            while len(self._pool) > self._pool_size:
                self._pool.pop(0)

    def _from_checkpoint(self, i: int) -> Replay:
        i = min(i, len(self.segments) - 1)
        cp = self.segments[i].checkpoint
        replay = Replay("history", keep_finished=self.keep_finished)
        retires = []  # applied after the checkpoint's counts: a scope folds only once it is seen finished
        died_at, upto, structure = self.died_at, cp.structure, self.structure
        for k in range(upto):
            if died_at[k] <= upto:
                continue
            record = orjson.loads(memoryview(structure[k])[1:])
            if record.get("type") == "retire":
                retires.append(record)
            else:
                replay.apply(record)
        replay.resume(cp.pointstamps, cp.batch, cp.progress_records, cp.last_at)
        for record in retires:
            replay.apply(record)
        dead = bisect.bisect_right(self.fold_deaths, upto)  # folded before the checkpoint: never declared here
        replay.folded += dead
        for parent in self._fold_parents[:dead]:
            try:
                replay.root.find(parent).dropped += 1
            except KeyError:  # its parent was folded too
                pass
        self._positions[replay] = (i, 0)
        if cp.details:
            replay.details.restore(cp.details)
        return replay

    def _advance(self, replay: Replay, batch: int) -> None:
        """Apply records until ``batch`` batches are applied and the next record is a progress record."""
        i, k = self._positions[replay]
        while i < len(self.segments):
            lines = self._segment_lines(i)
            n = len(lines)
            while k < n:
                raw = lines[k]
                if replay.batches_applied >= batch and raw[0] == 80:  # b"P": the next batch
                    replay.stopped_before(orjson.loads(memoryview(raw)[1:]))  # the state lasts until it
                    self._positions[replay] = (i, k)
                    replay.root.schedule()
                    return
                replay.apply(orjson.loads(memoryview(raw)[1:]))
                k += 1
            if i == len(self.segments) - 1 or self.segments[i].lines is not None:
                break
            i, k = i + 1, 0
        self._positions[replay] = (i, k)
        replay.root.schedule()
