"""The server's own temporary data directory, used when no ``--data-dir`` is given.

It lives under ``<tmp>/flowscope-<uid>/run-<pid>-<random>`` and is removed (with the parent once empty) at every
exit the process sees: a normal exit and SIGTERM (the server's shutdown), an exception at start-up (the directory
object's finalizer at interpreter exit). A process killed with SIGKILL cannot clean up, so each new server first
removes the ``run-<pid>-*`` directories of processes that no longer exist: what a ``kill -9`` leaves lasts until the
next start.

A :class:`ScratchFile` is where a session puts what it must keep but rarely reads (its history's sealed pages): an
anonymous file in the system's temporary directory, unlinked from the moment it is made, so it goes when it is
closed or its process ends, however that ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import weakref
from pathlib import Path

__all__ = ["ScratchDir", "ScratchFile", "scratch_root"]


def scratch_root() -> Path:
    """The parent of every server's temporary data directory for this user."""
    return Path(tempfile.gettempdir()) / f"flowscope-{os.getuid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def remove_abandoned(root: Path) -> list[Path]:
    """Remove the run directories of processes that are gone (killed before they could clean up)."""
    removed = []
    for entry in root.glob("run-*-*") if root.is_dir() else []:
        try:
            pid = int(entry.name.split("-")[1])
        except ValueError:
            continue
        if not _alive(pid):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


class ScratchDir:
    """A temporary data directory owned by this process (see the module docstring)."""

    def __init__(self, root: Path | None = None) -> None:
        root = root or scratch_root()
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        remove_abandoned(root)
        self.path = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=root))
        self._remove = weakref.finalize(self, _remove, self.path)  # also at interpreter exit, if not called

    def cleanup(self) -> None:
        self._remove()


def _remove(path: Path) -> None:
    """Remove a run directory, and the per-user parent once no other server uses it."""
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        path.parent.rmdir()


class ScratchFile:
    """An append-only anonymous file (see the module docstring), a ``tracker.progress_log.pages.PageStore``.

    ``put`` appends bytes and returns ``(offset, size)``, ``get`` reads them back. Both may run in any thread
    (positioned reads and writes, no shared file position)."""

    def __init__(self, directory: Path | None = None) -> None:
        """An anonymous scratch file in ``directory``.

        The default is the system's temporary directory; being anonymous, the file adds no entry there, and a server
        given ``--data-dir`` makes no directory of its own."""
        self._file = tempfile.TemporaryFile(dir=directory)
        self._fd = self._file.fileno()
        self.size = 0  # bytes written
        self._lock = threading.Lock()

    def put(self, data: bytes) -> tuple[int, int]:
        with self._lock:
            offset = self.size
            self.size += len(data)
        view = memoryview(data)
        done = 0
        while done < len(view):
            done += os.pwrite(self._fd, view[done:], offset + done)
        return offset, len(data)

    def get(self, handle: tuple[int, int]) -> bytes:
        offset, size = handle
        data = os.pread(self._fd, size, offset)
        if len(data) != size:
            raise OSError(f"scratch file: {size} bytes at {offset} asked, {len(data)} read")
        return data

    def close(self) -> None:
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed
