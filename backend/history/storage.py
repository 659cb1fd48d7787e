"""The one place the applications index touches the file system: listing a directory, reading a log's bytes.

Everything the index reads goes through these few functions. A location is a string: a local path, read with the
operating system's calls as before, or a store's URL (``s3://...``), read through ``backend.stores``; an
:class:`Entry` is what one listing says about a name in a directory, without opening it (a store keeps no time for a
key prefix: its ``mtime_ns`` is 0, and its stamp changes only with what is in it).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from backend import stores

__all__ = ["Entry", "entry", "list_entries", "log_path", "open_binary", "read_tail"]


@dataclass(frozen=True, slots=True)
class Entry:
    """A file or directory as a listing shows it: its location, name, size and modification time (0 if unknown)."""

    location: str
    name: str
    is_dir: bool
    size: int
    mtime_ns: int

    @property
    def stamp(self) -> str:
        """What changes when the entry changes: its size and modification time (a directory's: entries added,
        removed or renamed)."""
        return f"{self.size}:{self.mtime_ns}"


def _store_entry(e: stores.Entry) -> Entry:
    return Entry(e.url, e.name, e.is_dir, 0 if e.is_dir else e.size, int((e.mtime or 0) * 1e9))


def list_entries(directory: str) -> list[Entry]:
    """The regular files and directories directly in ``directory``; OSError if it cannot be listed.

    Hidden names (``.name``) are left out, and so is anything reading would block on (a FIFO, a device) or that
    leads outside ``directory`` (a link elsewhere): a followed directory shares only what is in it."""
    if stores.is_url(directory):
        return [_store_entry(e) for e in stores.list_dir(directory) if not e.name.startswith(".")]
    out = []
    with os.scandir(directory) as it:
        for e in it:
            if e.name.startswith("."):
                continue
            try:
                st = e.stat()
                if e.is_symlink() and os.path.dirname(os.path.realpath(e.path)) != os.path.realpath(directory):
                    continue
            except OSError:  # removed between the listing and the stat
                continue
            if stat.S_ISDIR(st.st_mode):
                out.append(Entry(os.path.join(directory, e.name), e.name, True, 0, st.st_mtime_ns))
            elif stat.S_ISREG(st.st_mode):
                out.append(Entry(os.path.join(directory, e.name), e.name, False, st.st_size, st.st_mtime_ns))
    return out


def entry(location: str) -> Entry | None:
    """What a listing would say of one file or directory (None if it is gone, or is neither)."""
    if stores.is_url(location):
        try:
            return _store_entry(stores.stat(location))
        except stores.StoreNotFound:
            return None
    try:
        st = os.stat(location)
    except OSError:
        return None
    name = os.path.basename(location)
    if stat.S_ISDIR(st.st_mode):
        return Entry(location, name, True, 0, st.st_mtime_ns)
    return Entry(location, name, False, st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def open_binary(location: str) -> BinaryIO:
    """The file's bytes, from the start (seekable; a store's in ranged reads)."""
    return stores.open_read(location)


def read_tail(location: str, size: int, length: int) -> bytes:
    """The last ``length`` bytes of a file ``size`` bytes long (all of it if shorter)."""
    with stores.open_read(location) as fh:
        fh.seek(max(0, size - length))
        return fh.read()


def log_path(location: str) -> Path | stores.StoreUrl:
    """What the Spark log readers open for a listed location."""
    return stores.locate(location)
