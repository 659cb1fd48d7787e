"""Feeds: where a session's progress-log records come from.

A session does not care what produced its records: a finished progress log, a progress log that is still being
written, the Spark model turning an event log into batches, or a live attachment pushing records as they happen.
All of them are a :class:`Feed`: something that can be *polled* for the records available now. ``poll`` returns
a list of ``(line, record)`` pairs (``line`` is the record's line in its file, or ``None``), an empty list when
nothing is available yet (a live feed), and ``None`` once the feed is finished. Polling never blocks for long:
the session's ingest loop interleaves it with everything else the server does, and waits with
:meth:`Feed.wait` when a live feed is idle.

Which feed a *path* becomes is decided by a :class:`FeedRegistry`: each registered :class:`FeedKind` can
``check`` a path (returning ``None`` if the path is its kind, or the reason it is not) and ``open`` it, finished
or followed. The default registry knows flowscope progress logs; other parts of the project add their kinds
through a ``register(registry)`` function in a module listed in ``EXTENSIONS`` (the Spark model's
``backend.spark.live.follow_feed`` adds Spark event logs).
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from backend.feeds.followed_file import DELETED, REPLACED, TRUNCATED, FileWatch, change_message
from backend.stores import PathOrUrl, StoreNotFound, StoreUrl, is_dir, locate, open_read, stat
from tracker.progress_log.codecs import CodecError, PlainDecoder, file_decoder
from tracker.progress_log.jsonl import JsonLinesCursor, LineError
from tracker.progress_log.log_file import ProgressLogError, first_record_problem, read_records
from tracker.progress_log.records import RecordCheck, header_problem

__all__ = [
    "Feed",
    "FeedError",
    "FeedKind",
    "FeedRegistry",
    "IterFeed",
    "ProgressLogFeed",
    "FollowProgressLog",
    "PushFeed",
    "default_registry",
    "check_progress_log",
]

Record = tuple[int | None, dict]


class FeedError(ValueError):
    """A path cannot become a feed; the message says why and is meant for the user."""


class Feed:
    """A source of progress-log records (see the module docstring)."""

    kind: str = "feed"
    label: str = ""
    live: bool = False  # may still grow: the session follows its head
    ended_early: str | None = None  # the followed file was truncated, replaced or deleted (a followed_file kind)
    checked_records: bool = False  # its records are built in-process from checked values (Replay's checked_records)

    def __init__(self) -> None:
        self.errors: list[LineError] = []  # read problems (corrupt lines), reported and skipped

    def poll(self, limit: int) -> list[Record] | None:  # pragma: no cover - interface
        raise NotImplementedError

    async def wait(self, timeout: float) -> None:
        """Wait until records may be available (at most ``timeout`` seconds)."""
        await asyncio.sleep(timeout)

    def close(self) -> None:
        pass

    def successor(self) -> Feed | None:
        """After the feed ended, a feed for what replaced its source; None when nothing replaced it.

        A followed file rotated or rewritten in place is replaced; the server follows the new content as a new
        session."""
        return None


class IterFeed(Feed):
    """Any iterable of records (or ``(line, record)`` pairs): a generator from the Spark model, a list in tests."""

    kind = "records"

    def __init__(self, records: Iterable[Any], label: str = "records", kind: str | None = None) -> None:
        super().__init__()
        self._it: Iterator[Any] | None = iter(records)
        self.label = label
        if kind:
            self.kind = kind

    def poll(self, limit: int) -> list[Record] | None:
        if self._it is None:
            return None
        out: list[Record] = []
        for item in itertools.islice(self._it, limit):
            out.append((None, item) if isinstance(item, dict) else (item[0], item[1]))
        if not out:
            self._it = None
            return None
        return out


class ProgressLogFeed(Feed):
    """A finished flowscope progress log (plain, .gz or .zst)."""

    kind = "progress-log"

    def __init__(self, path: PathOrUrl) -> None:
        super().__init__()
        self.path = str(path)
        self.label = locate(path).name
        self._it: Iterator[Record] | None = read_records(self.path, self.errors, opener=open_read)

    def poll(self, limit: int) -> list[Record] | None:
        if self._it is None:
            return None
        try:
            out = list(itertools.islice(self._it, limit))
        except ProgressLogError as e:
            self.errors.append(LineError(self.path, 0, "not-a-progress-log", str(e)))
            out = []
        except OSError as e:
            self.errors.append(LineError(self.path, 0, "unreadable", f"cannot read further: {e}"))
            out = []
        if not out:
            self._it = None
            return None
        return out

    def close(self) -> None:
        if self._it is not None:
            self._it.close()  # type: ignore[attr-defined]
            self._it = None


class FollowProgressLog(Feed):
    """A plain-text progress log that is still being written.

    Tailed with a :class:`~tracker.progress_log.jsonl.JsonLinesCursor` (a partial last line is kept for later).

    A :class:`~backend.feeds.followed_file.FileWatch` notices when the file is truncated, replaced (rotated) or deleted:
    the feed then ends (no longer live) with a message in its errors, after reading what the old file still holds
    (not for a truncation: that content is gone). A missing file is "deleted" only after ``grace`` seconds, since a
    rotation renames the file before creating the new one. :meth:`successor` follows the new content afresh."""

    kind = "progress-log"
    live = True

    def __init__(self, path: str | os.PathLike, poll_interval: float = 0.1, grace: float = 1.0) -> None:
        super().__init__()
        self.path = os.fspath(path)
        self.label = os.path.basename(self.path) + " (followed)"
        self.poll_interval = poll_interval
        self.grace = grace
        self._fh: IO[bytes] | None = None
        self._cursor = JsonLinesCursor(self.path, PlainDecoder(), self.errors.append, check=RecordCheck())
        self._watch = FileWatch(self.path)
        self._missing_since: float | None = None
        self._header = False
        self._closed = False

    def poll(self, limit: int) -> list[Record] | None:
        if self._closed:
            return None
        ready = self._cursor.ready
        if len(ready) < limit and self.ended_early is None:
            if self._fh is None:
                try:
                    self._fh = open(self.path, "rb")
                except FileNotFoundError:
                    return []
                self._watch.attach(self._fh.fileno())
            self._read_or_notice()
        out: list[Record] = []
        while ready and len(out) < limit:
            line, record = ready.popleft()
            if not self._header:
                reason = header_problem(record)
                if reason:
                    self.errors.append(LineError(self.path, line, "not-a-progress-log", reason))
                    self._closed = True
                    return None
                self._header = True
            out.append((line, record))
        if not out and self.ended_early is not None:
            self.close()
            return None
        return out

    def _read_or_notice(self) -> None:
        assert self._fh is not None
        cursor = self._cursor
        change = self._watch.check(cursor.offset)
        if change == DELETED:
            now = time.monotonic()
            self._missing_since = self._missing_since or now
            if now - self._missing_since < self.grace:
                cursor.pull(self._fh)  # the open handle still reads what was written
                return
        else:
            self._missing_since = None
        if change is None:
            cursor.pull(self._fh)
            return
        if change != TRUNCATED:  # the old file is complete: read it to its end
            while cursor.pull(self._fh):
                pass
            cursor.finish(True)
        self.ended_early = change
        self.live = False
        self.errors.append(LineError(self.path, cursor.line, change,
                                     change_message(change, cursor.line, change != DELETED)))

    def successor(self) -> Feed | None:
        if self.ended_early in (TRUNCATED, REPLACED):
            return FollowProgressLog(self.path, self.poll_interval, self.grace)
        return None

    async def wait(self, timeout: float) -> None:
        await asyncio.sleep(min(timeout, self.poll_interval))

    def close(self) -> None:
        self._closed = True
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class PushFeed(Feed):
    """A live attachment: another thread (or the event loop) pushes records; the session pulls them.

    ``push`` never blocks and never waits for the tracker: records queue up and the session applies them in
    order. ``end()`` finishes the feed once the queue is drained.
    """

    kind = "live"
    live = True

    def __init__(self, label: str = "live") -> None:
        super().__init__()
        self.label = label
        self._queue: collections.deque[Record] = collections.deque()
        self._ended = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None  # the thread running ``_loop`` (set where the loop is learned)
        self._event: asyncio.Event | None = None
        self._lock = threading.Lock()

    def push(self, record: dict, line: int | None = None) -> None:
        self._queue.append((line, record))
        self._wake()

    def push_many(self, records: Iterable[dict]) -> None:
        self._queue.extend((None, r) for r in records)
        self._wake()

    def end(self) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        loop, event = self._loop, self._event
        if loop is None or event is None:
            return
        try:
            if threading.get_ident() == self._loop_thread:
                event.set()
            else:
                loop.call_soon_threadsafe(event.set)
        except RuntimeError:  # the loop is closed
            pass

    def poll(self, limit: int) -> list[Record] | None:
        q = self._queue
        if not q:
            return None if self._ended else []
        n = min(limit, len(q))
        return [q.popleft() for _ in range(n)]

    async def wait(self, timeout: float) -> None:
        if self._event is None:
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
            self._event = asyncio.Event()
        if self._queue or self._ended:
            return
        self._event.clear()
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except TimeoutError:
            pass


# --- recognising paths -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedKind:
    """One kind of log a path can be. ``check(path)`` is None when the path is this kind, else the reason not."""

    name: str
    description: str
    check: Callable[[Path | StoreUrl], str | None]
    open: Callable[[Path | StoreUrl, bool], Feed]  # (path, follow) -> feed


class FeedRegistry:
    """The kinds of logs the server can open from a path, tried in order."""

    def __init__(self) -> None:
        self.kinds: list[FeedKind] = []

    def register(self, kind: FeedKind, first: bool = False) -> None:
        self.kinds = [k for k in self.kinds if k.name != kind.name]
        if first:
            self.kinds.insert(0, kind)
        else:
            self.kinds.append(kind)

    def identify(self, path: PathOrUrl, growing: bool = False) -> FeedKind:
        """The kind of log at ``path``.

        :class:`FeedError` lists every kind's reason if none matches, or says there is nothing at ``path`` (no
        such file, no such bucket); a ``StoreError`` says why a path or URL cannot be read. ``growing``: the file
        may still be written (followed), so a compressed stream may end early."""
        p = locate(path)
        try:
            stat(p)
        except StoreNotFound as e:
            raise FeedError(str(e)) from None
        broken = _broken_compression(p, growing or p.name.endswith(".inprogress"))
        if broken:
            raise FeedError(f"{p}: {broken}")
        reasons = []
        for kind in self.kinds:
            try:
                reason = kind.check(p)
            except OSError as e:
                reason = str(e)
            if reason is None:
                return kind
            reasons.append(f"not a {kind.description}: {reason}")
        if not reasons:
            raise FeedError(f"{p}: no kinds of log are registered")
        raise FeedError(f"{p}: " + "; ".join(reasons))

    def open(self, path: PathOrUrl, follow: bool = False) -> Feed:
        kind = self.identify(path, growing=follow)
        try:
            return kind.open(locate(path), follow)
        except (OSError, ProgressLogError) as e:
            raise FeedError(f"{path}: {e}") from None


def _broken_compression(path: Path | StoreUrl, growing: bool = False) -> str | None:
    """A .gz or .zst file whose first block does not decompress is no kind of log.

    Say so, whatever the kind. A stream that merely ends early is broken only if the file is finished (not
    ``growing``)."""
    name = path.name
    if not name.endswith((".gz", ".zst", ".zstd")) or is_dir(path):
        return None
    codec = name.rsplit(".", 1)[1]
    try:
        decoder = file_decoder(name)
        with open_read(path) as fh:
            head = fh.read(1 << 16)
            at_end = not fh.read(1)
        for _ in decoder.chunks(head):
            break  # the first block decodes
        else:
            if at_end and decoder.pending and not growing:
                return f"the {codec} stream ends too early: truncated ({decoder.pending} bytes undecodable)"
    except CodecError as e:
        return f"the {codec} compression is broken ({e})"
    return None


def check_progress_log(path: Path | StoreUrl) -> str | None:
    """None if ``path`` starts with a flowscope progress-log header (after decompression), else why not."""
    if is_dir(path):
        return "it is a directory"
    try:
        return first_record_problem(str(path), opener=open_read)
    except OSError as e:
        return f"cannot read it ({e})"


def _open_progress_log(path: Path | StoreUrl, follow: bool) -> Feed:
    if follow and isinstance(path, Path):  # a store's object is written whole: read once
        if str(path).endswith((".gz", ".zst", ".zstd")):
            raise FeedError(f"{path}: a compressed progress log cannot be followed; follow a plain .jsonl file")
        return FollowProgressLog(path)
    return ProgressLogFeed(path)


PROGRESS_LOG = FeedKind("progress-log", "flowscope progress log", check_progress_log, _open_progress_log)


# Modules that add kinds of logs to the default registry with ``register(registry)``, if they are installed.
EXTENSIONS = ("backend.spark.live.follow_feed",)


def default_registry() -> FeedRegistry:
    """Progress logs, plus every kind the extension modules register (Spark event logs)."""
    import importlib
    import importlib.util

    registry = FeedRegistry()
    registry.register(PROGRESS_LOG)
    for name in EXTENSIONS:
        if importlib.util.find_spec(name) is None:
            continue  # not part of this installation; an error inside one that is must not be hidden
        module = importlib.import_module(name)
        register = getattr(module, "register", None)
        if register is not None:
            register(registry)
    return registry
