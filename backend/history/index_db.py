"""The applications index on disk: one SQLite file in the server's data directory, one row per application log.

A restart reads every row at once (the list is there before the first scan) and a scan then reads only the logs
whose listing changed. A row holds the :class:`~backend.history.app_listing.AppListing` fields, the answer summary
once the application was replayed (JSON), and nothing else: the logs stay where they are. The file is opened in WAL
mode, so a reader never waits for a scan's write; rows are written in one transaction per scan. A file of another
schema version (or not SQLite at all) is set aside and started afresh: the index is a cache of what the logs say.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import fields
from pathlib import Path

import orjson

from backend.history.app_listing import AppListing

__all__ = ["INDEX_FILE", "IndexDB"]

log = logging.getLogger("flowscope.history")

INDEX_FILE = "applications.sqlite3"
_VERSION = 1
_COLUMNS = [f.name for f in fields(AppListing)]
assert _COLUMNS[-1] == "summary"  # read back as JSON: the last column
_SCHEMA = f"""CREATE TABLE IF NOT EXISTS apps (
    location TEXT PRIMARY KEY, root TEXT NOT NULL, stamp TEXT NOT NULL, signature TEXT NOT NULL, app_id TEXT NOT NULL,
    attempt TEXT, name TEXT NOT NULL, user TEXT, spark_version TEXT, start REAL, "end" REAL, status TEXT NOT NULL,
    size INTEGER NOT NULL, updated REAL NOT NULL, exit_code INTEGER, error TEXT, summary BLOB);
PRAGMA user_version = {_VERSION};"""


class IndexDB:
    """The SQLite file of one server's applications index (see the module docstring); safe to use from threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            db = self._connect()
            version = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
            if tables and version != _VERSION:
                raise sqlite3.DatabaseError(f"schema version {version}, this flowscope writes {_VERSION}")
        except sqlite3.DatabaseError as e:
            log.warning("%s: %s; starting a new applications index", self.path, e)
            self.path.replace(self.path.with_name(self.path.name + ".old"))
            db = self._connect()
        db.executescript(_SCHEMA)
        return db

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def load(self) -> list[AppListing]:
        """Every application the index holds."""
        quoted = ", ".join(f'"{c}"' for c in _COLUMNS)
        with self._lock:
            rows = self._db.execute(f"SELECT {quoted} FROM apps").fetchall()
        return [AppListing(*row[:-1], summary=orjson.loads(row[-1]) if row[-1] is not None else None)  # type: ignore[misc]
                for row in rows]

    def put(self, listings: list[AppListing]) -> None:
        """Insert or replace these applications' rows, in one transaction."""
        if not listings:
            return
        quoted = ", ".join(f'"{c}"' for c in _COLUMNS)
        marks = ", ".join("?" for _ in _COLUMNS)
        rows = [tuple(orjson.dumps(getattr(x, c)) if c == "summary" and x.summary is not None else getattr(x, c)
                      for c in _COLUMNS) for x in listings]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany(f"INSERT OR REPLACE INTO apps ({quoted}) VALUES ({marks})", rows)
            self._db.execute("COMMIT")

    def remove(self, locations: list[str]) -> None:
        if not locations:
            return
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM apps WHERE location = ?", [(x,) for x in locations])
            self._db.execute("COMMIT")

    def put_summary(self, location: str, summary: dict) -> None:
        with self._lock:
            self._db.execute("UPDATE apps SET summary = ? WHERE location = ?", (orjson.dumps(summary), location))

    def close(self) -> None:
        with self._lock:
            self._db.close()
