"""The sessions of one server: creating them from paths, uploads and live feeds, following directories, deleting.

Paths are confined to the directories the server was started with (``Settings.allowed_dirs``); uploads are
streamed into the session's own directory under ``Settings.data_dir`` with a size limit on the bytes received and
another on what they decompress to (a 32 KB zstd bomb must not become gigabytes in the server), then identified by
the feed registry like any path; a small ``sessions/<id>.json`` beside the upload's directory lets
:meth:`SessionManager.restore` bring it back under the same id when the server restarts with the same ``--data-dir``
(a directory without it is an upload that never finished, and is removed). A followed directory is scanned every
``scan_interval`` seconds (a scan that can find nothing new is skipped: the directory's time has not moved):
each new file the registry recognises becomes a followed session, unless it is a file
already followed under another name (a rotated ``a.jsonl.1``). When a followed file is rotated or rewritten in
place its session ends with a message and the feed's :meth:`~backend.feeds.progress_feeds.Feed.successor` becomes a
new session.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import shutil
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from backend.eventlog.codecs import decompresses_past
from backend.feeds.followed_file import DELETED, FileIdentity, identity_of
from backend.feeds.progress_feeds import Feed, FeedError, FeedRegistry
from backend.sessions.session import Session, SessionOptions
from backend.stores import STORE_POLL_SECONDS, StoreUrl, is_url, list_dir, locate
from backend.web.security import PathNotAllowed, confine, confine_url
from tracker.progress_log.jsonl import FILE_VANISHED, LineError

__all__ = ["SessionManager", "UploadTooLarge"]

log = logging.getLogger("flowscope.manager")


class UploadTooLarge(ValueError):
    pass


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_SID = re.compile(r"[0-9a-f]{10}")  # secrets.token_hex(5), as uploads are named
_QUIET_NS = 2_000_000_000  # a followed directory unchanged this long since its last change may skip a scan
_FULL_SCAN_EVERY = 30  # scans skipped in a row at most (file systems whose times are coarse)


def _check_openable(path: Path, allowed: list[Path]) -> None:
    """Refuse a log that is not regular files inside the allowed directories.

    A log is a regular file, or a directory of them (a rolling Spark log) none of which leads outside the allowed
    directories: a FIFO or a device would block the reader forever, a symlinked part would read any file."""
    if path.is_dir():
        for entry in path.iterdir():
            confine(entry, allowed)
            if not entry.name.startswith(".") and not (entry.is_file() or entry.is_dir()):
                raise FeedError(f"{entry}: not a regular file")
    elif not path.is_file():
        raise FeedError(f"{path}: not a regular file (a pipe, socket or device is not a log)")


def _upload_meta(directory: Path) -> Path:
    """Where an upload's file name and options are kept, once it is complete: ``sessions/<id>.json``."""
    return directory.with_name(directory.name + ".json")


def _followed_key(path: Path | StoreUrl) -> Path | StoreUrl:
    """An application's log loses ".inprogress" when it ends: still the same log, followed under one name."""
    return path.with_name(path.name.removesuffix(".inprogress"))


class SessionManager:
    def __init__(self, settings, registry: FeedRegistry):
        self.settings = settings
        self.registry = registry
        self.sessions: dict[str, Session] = {}
        self._watchers: list[asyncio.Task] = []
        self._followed: set[Path | StoreUrl] = set()
        # every file followed, whatever it is called now -> the name it was followed under
        self._followed_files: dict[FileIdentity, Path | StoreUrl] = {}
        # scans of each followed directory finished so far: a scan that adds nothing leaves no other trace, and a
        # test that a file is passed over waits for one here
        self.scans_done: dict[Path | StoreUrl, int] = {}
        # kinds of logs a followed directory's entries are not opened as sessions for: another part of the server
        # takes them (the applications index lists Spark event logs, backend/history/)
        self.listed_elsewhere: set[str] = set()
        self.known_elsewhere: Callable[[Path | StoreUrl], bool] = lambda path: False  # the same, known unread
        # a followed directory's modification time at its last whole scan
        self._dir_stamps: dict[Path | StoreUrl, int] = {}

    # --- creating --------------------------------------------------------------------------------------

    def _options(self, check: bool | None) -> SessionOptions:
        s = self.settings
        return SessionOptions(check_contracts=s.check_contracts if check is None else check,
                              checkpoint_every=s.checkpoint_every, keep_finished=s.keep_finished)

    def add(self, feed: Feed, name: str | None = None, check: bool | None = None,
            directory: Path | None = None, sid: str | None = None) -> Session:
        """A session for any feed (a live attachment, the Spark model's records); starts ingesting."""
        session = Session(feed, name, self._options(check), directory, sid)
        self.sessions[session.id] = session
        session.on_finish.append(self._feed_ended)
        session.start()
        return session

    def _feed_ended(self, session: Session) -> None:
        """A followed file was rotated or rewritten in place: follow the new content in a new session.

        One deleted from a followed directory is forgotten there, so a new file of that name is followed again."""
        ended = session.feed
        self._dir_stamps.clear()  # what ended may come back under its name: the next scans look again
        gone_path = getattr(ended, "path", None)  # followed feeds have the path they follow
        if ended.ended_early in (DELETED, FILE_VANISHED) and gone_path is not None:
            gone = _followed_key(locate(gone_path))
            self._followed.discard(gone)
            for identity in [i for i, key in self._followed_files.items() if key == gone]:
                del self._followed_files[identity]  # the file system may give its inode to the next file
        try:
            feed = ended.successor()
            if feed is None:
                return
            path = locate(getattr(feed, "path", session.name))
            new_identity = identity_of(path) if isinstance(path, Path) else None
            if new_identity is not None:
                self._followed_files[new_identity] = _followed_key(path)
            new = self.add(feed, session.name)
        except (FeedError, OSError) as e:
            log.warning("cannot follow what replaced session %s: %s", session.id, e)
            return
        session.feed.errors.append(LineError(str(path), 0, "followed-in",
                                             f"the new content is followed in session {new.id}"))

    def open_feed(self, path: str, follow: bool = False) -> Feed:
        """The feed of a log inside the allowed directories (PathNotAllowed, FileNotFoundError, FeedError).

        It reads the file to identify it, so the server calls it in a worker thread."""
        return self.registry.open(self.openable(path), follow=follow)

    def openable(self, path: str | Path | StoreUrl) -> Path | StoreUrl:
        """``path`` resolved, once it is known to be a log the server may read: regular files inside the allowed
        directories (PathNotAllowed, FileNotFoundError, FeedError), or a store's URL under one the server was
        started with (``Settings.allowed_urls``). Nothing is read."""
        if is_url(path):
            return confine_url(str(path), self.settings.allowed_urls)
        p = confine(str(path), self.settings.allowed_dirs)
        if not p.exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
        _check_openable(p, self.settings.allowed_dirs)
        return p

    def open_path(self, path: str, follow: bool = False, check: bool | None = None, name: str | None = None) -> Session:
        """A session from a path inside the allowed directories (PathNotAllowed, FileNotFoundError, FeedError)."""
        return self.add(self.open_feed(path, follow), name, check)

    async def upload(self, filename: str, chunks: AsyncIterator[bytes], declared: int | None,
                     check: bool | None = None) -> Session:
        """Stream an upload into a new session directory; UploadTooLarge or FeedError leave nothing behind."""
        limit = self.settings.upload_limit
        if declared is not None and declared > limit:
            raise UploadTooLarge(f"the upload is {declared} bytes; the limit is {limit} bytes")
        name = _SAFE.sub("_", Path(filename or "upload.jsonl").name).strip("._") or "upload.jsonl"
        sid = secrets.token_hex(5)
        directory = Path(self.settings.data_dir) / "sessions" / sid
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / name
        size = 0
        try:
            with open(target, "wb") as f:
                async for chunk in chunks:
                    size += len(chunk)
                    if size > limit:
                        raise UploadTooLarge(f"the upload exceeds the limit of {limit} bytes")
                    f.write(chunk)
            if size == 0:
                raise FeedError(f"{name}: the upload is empty")
            expanded = self.settings.upload_decompressed_limit or limit
            if await asyncio.to_thread(decompresses_past, target, expanded):
                raise UploadTooLarge(f"{name} decompresses to more than {expanded} bytes; the limit is {expanded} "
                                     "bytes (--upload-decompressed-limit)")
            try:
                feed = await asyncio.to_thread(self.registry.open, target, False)
            except FeedError as e:  # name the upload, not the server's directory
                raise FeedError(str(e).replace(str(target), name)) from None
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        session = self.add(feed, name, check, directory=directory, sid=sid)
        meta = {"file": name, "check": check, "created": session.created}
        _upload_meta(directory).write_text(json.dumps(meta))  # last: the upload is complete
        return session

    def restore(self) -> list[Session]:
        """Bring back the uploads kept in ``data_dir`` by an earlier run, under their ids.

        So ``#/s/<id>`` links keep working. Reads each file's first lines to identify it, so call it off the event
        loop's hot path."""
        root = Path(self.settings.data_dir) / "sessions"
        restored = []
        for directory in sorted(root.iterdir()) if root.is_dir() else []:
            sid = directory.name
            if not _SID.fullmatch(sid.removesuffix(".json")):
                continue  # not the server's
            if not directory.is_dir():
                if directory.suffix == ".json" and not directory.with_suffix("").is_dir():
                    directory.unlink(missing_ok=True)  # the upload it described is gone
                continue
            try:
                meta = json.loads(_upload_meta(directory).read_text())
                if meta.get("live"):
                    continue  # a live Spark session's journal: the Spark ingest brings it back
                target = directory / _SAFE.sub("_", Path(meta["file"]).name)
                feed = self.registry.open(target, False)
            except FileNotFoundError:  # an upload cut short (the server was killed while receiving it)
                shutil.rmtree(directory, ignore_errors=True)
                continue
            except (OSError, ValueError, KeyError, TypeError) as e:  # FeedError and broken JSON are ValueErrors
                log.warning("cannot restore the upload in %s: %s", directory, e)
                continue
            if sid in self.sessions:
                feed.close()
                continue
            session = self.add(feed, target.name, meta.get("check"), directory=directory, sid=sid)
            session.created = float(meta.get("created") or session.created)
            restored.append(session)
        return restored

    # --- following directories -------------------------------------------------------------------------

    def follow_directory(self, directory: Path | StoreUrl, scan_interval: float | None = None) -> None:
        """Scan `directory` (a local path or a store's URL) every `scan_interval` seconds (default 1 s on disk,
        `STORE_POLL_SECONDS` in a store) for new logs, each followed in a session of its own."""
        if scan_interval is None:
            scan_interval = STORE_POLL_SECONDS if isinstance(directory, StoreUrl) else 1.0
        self._watchers.append(asyncio.get_running_loop().create_task(self._watch(directory, scan_interval)))

    async def _watch(self, directory: Path | StoreUrl, interval: float) -> None:
        """Scan ``directory`` every ``interval`` seconds; a scan that can find nothing new is skipped.

        Nothing can be new when the directory's modification time is the one the last whole scan saw and is older
        than a few seconds (an entry added, removed or renamed moves it), that scan left no file to look at again
        (one whose first bytes were not there yet), no followed file ended since, and fewer than
        ``_FULL_SCAN_EVERY`` scans were skipped in a row. A store's directory has no such time: every scan lists it."""
        self.scans_done[directory] = 0
        skipped = 0
        while True:
            try:
                stamp: int | None = directory.stat().st_mtime_ns if isinstance(directory, Path) else None
            except OSError:
                stamp = None
            quiet = (stamp is not None and self._dir_stamps.get(directory) == stamp and skipped < _FULL_SCAN_EVERY
                     and time.time_ns() - stamp > _QUIET_NS)
            if quiet:
                skipped += 1
            else:
                skipped = 0
                if await self._scan(directory):
                    self._dir_stamps.pop(directory, None)  # something to look at again: no skipping
                elif stamp is not None:
                    self._dir_stamps[directory] = stamp
            self.scans_done[directory] += 1
            await asyncio.sleep(interval)

    async def _scan(self, directory: Path | StoreUrl) -> bool:
        """Follow the new logs in ``directory``; whether an entry could not be identified yet (to look at again)."""
        again = False
        try:
            if isinstance(directory, Path):
                entries: list[Path | StoreUrl] = list(sorted(directory.iterdir()))
            else:
                entries = [e.location for e in await asyncio.to_thread(list_dir, directory)]
        except OSError as e:
            log.warning("cannot scan %s: %s", directory, e)
            return True
        for entry in entries:
            # an application's log loses ".inprogress" when it ends: still the same log, already followed
            key = _followed_key(entry)
            if key in self._followed or entry.name.startswith("."):
                continue
            if self.known_elsewhere(entry):
                self._followed.add(key)
                continue
            identity = identity_of(entry) if isinstance(entry, Path) else None  # a store's objects: by name
            if identity in self._followed_files:  # a followed file renamed (rotated): not a new log
                self._followed.add(key)
                continue
            try:
                if isinstance(entry, Path) and isinstance(directory, Path):
                    _check_openable(confine(entry, [directory]), [directory])
            except (FeedError, PathNotAllowed, OSError):
                continue  # a pipe, a device, a link leading outside: never a log here
            try:
                kind = await asyncio.to_thread(self.registry.identify, entry, True)
            except (FeedError, OSError):
                again = True  # maybe its first bytes are not there yet
                continue
            self._followed.add(key)
            if kind.name in self.listed_elsewhere:
                continue
            if identity is not None:
                self._followed_files[identity] = key
            try:
                self.add(await asyncio.to_thread(kind.open, entry, True), entry.name)
            except (FeedError, OSError) as e:
                log.warning("cannot follow %s: %s", entry, e)
        return again

    # --- reading and deleting --------------------------------------------------------------------------

    def get(self, sid: str) -> Session | None:
        return self.sessions.get(sid)

    async def delete(self, sid: str, keep_files: bool = False) -> bool:
        session = self.sessions.pop(sid, None)
        if session is None:
            return False
        await session.stop(keep_files)
        if session.directory is not None and not keep_files:
            _upload_meta(session.directory).unlink(missing_ok=True)
        return True

    async def close(self) -> None:
        """Stop everything; uploads stay in ``data_dir`` (the server removes it if it is its temporary one)."""
        for task in self._watchers:
            task.cancel()
        for sid in list(self.sessions):
            await self.delete(sid, keep_files=True)
