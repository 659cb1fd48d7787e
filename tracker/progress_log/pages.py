"""Append-only lists kept in compressed pages.

What a long application accumulates (timeline marks, the session history's records) costs a few bytes per item in
memory, or nothing when the pages go to a scratch file.

A :class:`PagedLines` holds byte strings. The latest ``page_size`` of them stay as they are (the *open* page, what
is read most: the present); once the open page is full it is compressed with zstandard and handed to a
:class:`PageStore`, which keeps it in memory (:class:`MemoryPages`, the default) or writes it elsewhere (the
server's scratch file, ``backend.sessions.scratch_dir.ScratchFile``) and gives back a handle to read it with. Reading an
item of a sealed page decompresses the page; the last few decompressed pages are cached, so reading in order costs
one decompression per page. Readers may run in other threads while one writer appends.

A :class:`MarkLog` is the replay's timeline marks as such a list: a sequence of dicts (JSON objects), the recent
ones kept as dicts, the older ones as compressed JSON lines.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, overload

import zstandard

try:
    import orjson

    def _dumps(value: Any) -> bytes:
        """``value`` as JSON bytes of exactly their size.

        orjson returns them in a buffer of at least 4 kB, which a kept line would hold on to."""
        try:
            return memoryview(orjson.dumps(value)).tobytes()
        except TypeError:  # an integer beyond 64 bits (a hand-written log): the standard library writes any
            return json.dumps(value, separators=(",", ":")).encode()

    def _loads(raw: bytes) -> Any:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return json.loads(raw)
except ImportError:  # pragma: no cover - orjson is a dependency; the tracker still runs without it
    def _dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()

    def _loads(raw: bytes) -> Any:
        return json.loads(raw)

__all__ = ["PageStore", "MemoryPages", "PagedLines", "MarkLog", "RecentPages"]

_CACHED_PAGES = 4


class PageStore(Protocol):
    """Where sealed pages go: ``put`` keeps a compressed page and returns a handle, ``get`` returns its bytes."""

    def put(self, data: bytes) -> Any: ...

    def get(self, handle: Any) -> bytes: ...


class MemoryPages:
    """Pages kept in memory (the handle is the page).

    Compressed bytes are copied once, exactly sized: zstandard returns them in a buffer as large as the uncompressed
    input, which would otherwise stay allocated."""

    def put(self, data: bytes) -> bytes:
        return memoryview(data).tobytes()

    def get(self, handle: bytes) -> bytes:
        return handle


class RecentPages:
    """The last ``limit`` pages read back (decompressed), by key.

    For reader threads that may run several at once: reading in order costs one decompression per page. ``get(key,
    load)`` returns the cached page or ``load()``'s, which it keeps, dropping the oldest one kept."""

    def __init__(self, limit: int = _CACHED_PAGES) -> None:
        self.limit = limit
        self._pages: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: Any, load: Callable[[], Any]) -> Any:
        page = self._pages.get(key)
        if page is None:
            page = load()
            with self._lock:
                if len(self._pages) >= self.limit:
                    self._pages.pop(next(iter(self._pages)), None)
                self._pages[key] = page
        return page


class PagedLines:
    """An append-only list of byte strings in compressed pages (see the module docstring)."""

    def __init__(self, page_size: int = 1024, store: PageStore | None = None, level: int = 3) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.page_size = page_size
        self.store: PageStore = store if store is not None else MemoryPages()
        self.pages: list[Any] = []  # the store's handle of each sealed page
        self.stored_bytes = 0  # compressed bytes of the sealed pages
        self._open: list[bytes] = []
        self._compressor = zstandard.ZstdCompressor(level=level)
        self._lock = threading.Lock()  # a reader never sees a page between the open list and the store
        self._cache = RecentPages()

    def __len__(self) -> int:
        return len(self.pages) * self.page_size + len(self._open)

    def append(self, line: bytes) -> None:
        self._open.append(line)
        if len(self._open) >= self.page_size:
            self.seal()

    def seal(self) -> None:
        """Compress the open page into the store (called when it is full; ``PagedLines`` calls it itself)."""
        lines = self._open
        if len(lines) != self.page_size:
            raise ValueError("only a full page is sealed: pages are found by index")
        blob = self._compressor.compress(b"\n".join(lines))
        handle = self.store.put(blob)
        with self._lock:
            self.pages.append(handle)
            self._open = []
            self.stored_bytes += len(blob)

    def page(self, p: int) -> list[bytes]:
        """The lines of page ``p`` (the open page's as they are now)."""
        with self._lock:
            if p >= len(self.pages):
                return self._open[:]
            handle = self.pages[p]
        lines: list[bytes] = self._cache.get(
            p, lambda: zstandard.ZstdDecompressor().decompress(self.store.get(handle)).split(b"\n"))
        return lines

    def __getitem__(self, i: int) -> bytes:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"line {i} of {n}")
        p, k = divmod(i, self.page_size)
        return self.page(p)[k]

    def __iter__(self) -> Iterator[bytes]:
        for p in range(len(self.pages) + 1):
            yield from self.page(p)


class MarkLog(Sequence[dict]):
    """The timeline marks of a replay.

    A list of dicts whose older pages are compressed (see the module docstring). Reading a mark of a sealed page returns
    a new dict each time: change one through ``append`` only."""

    def __init__(self, page_size: int = 1024, store: PageStore | None = None) -> None:
        self.lines = PagedLines(page_size, store)
        self._recent: list[dict] = []  # the open page's marks as dicts: the present is read most

    def append(self, mark: dict) -> None:
        lines = self.lines
        lines.append(_dumps(mark))
        if len(lines) % lines.page_size:
            self._recent.append(mark)
        else:  # that filled the page: it is sealed now
            self._recent = []

    def __len__(self) -> int:
        return len(self.lines)

    @overload
    def __getitem__(self, i: int) -> dict: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict]: ...

    def __getitem__(self, i: int | slice) -> dict | list[dict]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"mark {i} of {n}")
        lines = self.lines
        sealed = len(lines.pages) * lines.page_size
        if i >= sealed:
            return self._recent[i - sealed]
        return _loads(lines[i])

    def __iter__(self) -> Iterator[dict]:
        lines = self.lines
        for p in range(len(lines.pages)):
            for raw in lines.page(p):
                yield _loads(raw)
        yield from self._recent[:]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list
