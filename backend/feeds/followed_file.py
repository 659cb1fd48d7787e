"""What happened to a file being followed: still the same file, truncated in place, replaced (rotated), or deleted.

A follower reads a path from a byte offset it remembers. Three things break that silently: the file is truncated and
rewritten in place (the offset now points into the middle of other content), it is rotated (``a.jsonl`` renamed to
``a.jsonl.1`` and a new ``a.jsonl`` created: the path names another inode), or it is deleted. :class:`FileWatch`
remembers the identity (device, inode) of the file first read and the start of its content, and :meth:`FileWatch.check`
says which of these happened, so the follower can end its session with a message and, for a replaced file, follow the
new one in a new session. A rewrite already longer than what was read that starts with the same bytes cannot be told
from growth; everything else is noticed at the next poll.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["DELETED", "REPLACED", "TRUNCATED", "FileIdentity", "FileWatch", "identity_of", "change_message"]

TRUNCATED = "file-truncated"
REPLACED = "file-replaced"
DELETED = "file-deleted"

PREFIX_BYTES = 4096  # the start of the content compared to notice a rewrite that is already as long as before


@dataclass(frozen=True)
class FileIdentity:
    """The same (device, inode) is the same file, whatever its name now."""

    device: int
    inode: int


def identity_of(path: str | os.PathLike[str]) -> FileIdentity | None:
    """The identity of the file at ``path``, or None if there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileIdentity(st.st_dev, st.st_ino)


class FileWatch:
    """Watches the file at ``path`` while a follower reads it (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.identity: FileIdentity | None = None
        self._prefix = b""

    def attach(self, fh_fileno: int) -> None:
        """The follower opened the file: remember which file it is."""
        st = os.fstat(fh_fileno)
        self.identity = FileIdentity(st.st_dev, st.st_ino)

    def rename(self, path: str | os.PathLike[str]) -> None:
        """The same file has a new name (a Spark log losing ``.inprogress``)."""
        self.path = os.fspath(path)

    def check(self, offset: int) -> str | None:
        """None while the path still names the file read up to ``offset``; else TRUNCATED, REPLACED or DELETED."""
        if self.identity is None:
            return None
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return DELETED
        except OSError:
            return None  # unreadable for a moment: look again at the next poll
        if FileIdentity(st.st_dev, st.st_ino) != self.identity:
            return REPLACED
        if st.st_size < offset:
            return TRUNCATED
        return self._rewritten(offset)

    def _rewritten(self, offset: int) -> str | None:
        """The start of the file changed: it was truncated and rewritten beyond ``offset`` since the last poll."""
        want = min(offset, PREFIX_BYTES)
        if want == 0:
            return None
        try:
            with open(self.path, "rb") as fh:
                head = fh.read(want)
        except OSError:
            return None
        if len(self._prefix) < want:  # first look (or more was read since): remember the start as it is now
            if not self._prefix or head.startswith(self._prefix):
                self._prefix = head
                return None
        return None if head.startswith(self._prefix[:want]) else TRUNCATED


def change_message(change: str, line: int, successor: bool) -> str:
    """What the user reads in the session's errors when its followed file changed under it."""
    what = {TRUNCATED: "was truncated (rewritten in place)", REPLACED: "was replaced by a new file (rotated)",
            DELETED: "was deleted"}[change]
    then = ("the new content is followed in a new session" if successor
            else "nothing more will be read")
    return f"the followed file {what} after line {line}: this session ended there; {then}"
