"""Opening, listing and stat-ing a path or URL: the local file system directly, a store through fsspec.

Every reader of logs and directories comes here, so a log in a bucket reads as a log on disk. A local path keeps
the operating system's calls (no fsspec, nothing imported); every failure, local or remote, is a
:class:`~backend.stores.errors.StoreError` whose message is one line naming the path or URL and the cause
(:class:`~backend.stores.errors.StoreNotFound`, a `FileNotFoundError`, when there is nothing there).
"""

from __future__ import annotations

import os
import stat as stat_mode
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from backend.stores.errors import StoreError, StoreNotFound
from backend.stores.remote import remote_info, remote_list, remote_open
from backend.stores.urls import PathOrUrl, StoreUrl, locate

__all__ = ["STORE_POLL_SECONDS", "Entry", "exists", "is_dir", "list_dir", "open_read", "stat"]

#: How often a followed directory or log in a store is listed (and read) again. A store's objects appear whole (a
#: rolling application's next events_N part, a finished log), so this is how late a new one is seen; every poll
#: costs a listing request or two.
STORE_POLL_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Entry:
    """One file or directory: its `name`, its `url` (a local path for a local entry), `size` in bytes, `mtime` in
    epoch seconds (None where the store keeps none, as for a bucket's key prefix) and `is_dir`."""

    name: str
    url: str
    size: int
    mtime: float | None
    is_dir: bool

    @property
    def location(self) -> Path | StoreUrl:
        """The entry as a path or :class:`StoreUrl`, to pass on to the readers."""
        return locate(self.url)


def _local_error(path: Path, exc: OSError) -> StoreError:
    cause = exc.strerror or str(exc)
    if isinstance(exc, FileNotFoundError):
        return StoreNotFound(str(path), "no such file or directory")
    return StoreError(str(path), cause[:1].lower() + cause[1:])


def open_read(path: PathOrUrl) -> BinaryIO:
    """The file open for reading, seekable; a store's file streams in ranged reads (never fetched whole)."""
    where = locate(path)
    if isinstance(where, StoreUrl):
        return cast(BinaryIO, remote_open(where))
    try:
        return open(where, "rb")
    except OSError as exc:
        raise _local_error(where, exc) from None


def stat(path: PathOrUrl) -> Entry:
    """The entry at `path` (StoreNotFound if there is none)."""
    where = locate(path)
    if isinstance(where, StoreUrl):
        url, size, mtime, is_dir = remote_info(where)
        return Entry(where.name, str(url), size, mtime, is_dir)
    try:
        st = os.stat(where)
    except OSError as exc:
        raise _local_error(where, exc) from None
    return Entry(where.name, str(where), st.st_size, st.st_mtime, stat_mode.S_ISDIR(st.st_mode))


def exists(path: PathOrUrl) -> bool:
    """True if there is a file or directory at `path` (a failure other than its absence is still raised)."""
    try:
        stat(path)
    except StoreNotFound:
        return False
    return True


def is_dir(path: PathOrUrl) -> bool:
    """True if `path` is a directory (a key prefix with keys under it, in a bucket); False if it is none or missing."""
    try:
        return stat(path).is_dir
    except StoreNotFound:
        return False


def list_dir(path: PathOrUrl) -> list[Entry]:
    """The entries directly in the directory `path`, sorted by name, listed afresh on every call.

    Hidden names (`.`, as Hadoop's `.crc` files) are listed too: which to pass over is the caller's business."""
    where = locate(path)
    if isinstance(where, StoreUrl):
        found = [Entry(url.name, str(url), size, mtime, is_dir) for url, size, mtime, is_dir in remote_list(where)]
        return sorted(found, key=lambda e: e.name)
    out: list[Entry] = []
    try:
        with os.scandir(where) as it:
            for d in it:
                try:
                    st = d.stat()
                except FileNotFoundError:  # removed since listed
                    continue
                out.append(Entry(d.name, os.path.join(where, d.name), st.st_size, st.st_mtime,
                                 stat_mode.S_ISDIR(st.st_mode)))
    except OSError as exc:
        raise _local_error(where, exc) from None
    out.sort(key=lambda e: e.name)
    return out
