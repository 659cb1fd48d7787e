"""Live Spark sessions kept on disk, so that a server restarted with the same ``--data-dir`` continues them.

A server given ``--data-dir`` and ``--spark-port`` writes every line a listener sends (the hellos stamped with the
time they arrived, without their token) to ``sessions/<id>/listener.jsonl`` as it arrives, beside a
``sessions/<id>.json`` that says the session is live (``{"live": true, ...}``). At the next start, each such journal is
read back through a new :class:`~backend.spark.live.socket_feed.SparkLiveFeed` under the same session id, and the feed
waits for its listener to reconnect (the application keeps running while the server is down; its listener reconnects on
its own). The reconnection's hello then says what the feed never received, an "events lost" stretch like any outage.

A journal grows with the application (its listener's lines, as Spark writes them to event logs): one kept for a
long streaming application is as large as that application's event log.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import orjson

from backend.spark.live.socket_feed import DISCONNECTED_AT, FINAL_LINES, TOO_LONG, SparkIngestServer, SparkLiveFeed
from tracker.progress_log.jsonl import LineSplitter

__all__ = ["JOURNAL", "LiveJournal", "new_journal", "restore_journals"]

log = logging.getLogger("flowscope.spark.journal")

JOURNAL = "listener.jsonl"
_HELLO = b'{"Event":"flowscope.Hello"'


class LiveJournal:
    """Appends a connection's lines to its session's journal, flushed to the OS per chunk received (a server killed
    with SIGKILL loses none it had written)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._file: IO[bytes] | None = open(directory / JOURNAL, "ab")
        self._lock = threading.Lock()

    def write(self, lines: list[bytes]) -> None:
        with self._lock:
            if self._file is None:
                return
            self._file.write(b"".join(line.rstrip(b"\r\n") + b"\n" for line in lines))
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def new_journal(data_dir: Path, label: str) -> tuple[str, LiveJournal]:
    """A new live session's id and journal under ``data_dir/sessions``."""
    sid = secrets.token_hex(5)
    directory = Path(data_dir) / "sessions" / sid
    directory.mkdir(parents=True, exist_ok=True)
    journal = LiveJournal(directory)
    meta = {"file": JOURNAL, "live": True, "label": label, "created": time.time()}
    directory.with_name(sid + ".json").write_text(json.dumps(meta))
    return sid, journal


def journal_lines(path: Path) -> Iterator[bytes]:
    """The complete lines of a journal (a last line cut short by a kill is left out)."""
    splitter = LineSplitter()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            for raw in splitter.feed(chunk):
                yield TOO_LONG if raw is None else raw


def restore_journals(data_dir: Path, ingest: SparkIngestServer,
                     add: Callable[[SparkLiveFeed, str, Path, str, float], None]) -> int:
    """Bring back the live sessions journaled in ``data_dir``: for each, a feed ``add(feed, label, directory, sid,
    created)`` makes a session of, then (on a thread, the journal may be long) the journal's lines, then the feed
    waits for its listener to reconnect. The number of sessions restored."""
    root = Path(data_dir) / "sessions"
    restored = 0
    for meta_path in sorted(root.glob("*.json")) if root.is_dir() else []:
        directory = meta_path.with_suffix("")
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError) as e:
            log.warning("cannot read %s: %s", meta_path, e)
            continue
        if not isinstance(meta, dict) or not meta.get("live") or not (directory / JOURNAL).is_file():
            continue
        label = str(meta.get("label") or "spark (live)")
        feed = SparkLiveFeed(label, ingest.capacity)
        add(feed, label, directory, directory.name, float(meta.get("created") or time.time()))
        threading.Thread(target=_replay, args=(directory, feed, ingest), name="flowscope-journal-replay",
                         daemon=True).start()
        restored += 1
    return restored


def _replay(directory: Path, feed: SparkLiveFeed, ingest: SparkIngestServer) -> None:
    path = directory / JOURNAL
    stopped_at = path.stat().st_mtime  # about when the server that wrote it stopped
    batch: list[bytes] = []
    instance = None
    for line in journal_lines(path):
        if line.startswith(FINAL_LINES):
            feed.final_seen = True
        elif line.startswith(_HELLO):
            instance = orjson.loads(line).get("instance")
        batch.append(line)
        if len(batch) >= 4096:
            if not feed.put(batch):
                return
            batch = []
    if batch and not feed.put(batch):
        return
    feed.journal = LiveJournal(directory)
    if feed.final_seen or type(instance) is not str:
        feed.end()
        return
    disconnected = DISCONNECTED_AT % stopped_at
    feed.journal.write([disconnected])
    if feed.put([disconnected]):
        ingest.wait_for(instance, feed)
