"""Where an application's event log lives on disk, in which files and order, and whether Spark is done writing it.

Spark writes an application's log in one of two layouts:

- **single file** `<app>[.<codec>]`, named `<app>[.<codec>].inprogress` while the application runs and renamed at
  the end (the 3.x default);
- **rolling directory** `eventlog_v2_<app>/` holding `events_<N>_<app>[.<codec>]` parts, read in numeric order of N
  (not name order: 10 sorts before 2), plus an empty marker `appstatus_<app>.inprogress` that loses `.inprogress`
  when the application ends (the 4.x default). The History Server's compactor may replace parts 1..N by
  `events_<N>_<app>[.<codec>].compact`; reading then starts at the newest compact part.

`<app>` is the application id, with `_<attempt>` on clusters that retry drivers. A directory of applications holds
any mix of both, on local disk or in a store (`s3://...`, reached through `backend.stores`). This module only looks
at names and markers (and, when scanning a directory, the first bytes of a file so READMEs and stray files are not
mistaken for logs); reading the events is `eventlog`'s business.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from backend.eventlog.codecs import CodecError, MissingCodecError, codec_from_name, make_decoder, strip_codec
from backend.stores import PathOrUrl, StoreNotFound, StoreUrl, exists, is_dir, list_dir, locate, open_read, stat

__all__ = [
    "AppLog",
    "LogDirectoryScanner",
    "LogState",
    "describe_log",
    "find_logs",
    "head_looks_like_event_log",
    "looks_like_event_log",
    "part_index",
    "parts_in_read_order",
    "rolling_parts",
    "rolling_state",
    "starts_like_events",
    "state_of_markers",
]

ROLLING_PREFIX = "eventlog_v2_"
STATUS_PREFIX = "appstatus_"
INPROGRESS = ".inprogress"
_PART_RE = re.compile(r"^events_(\d+)_(.+)$")

LogState = Literal["complete", "in_progress", "unknown"]


@dataclass(frozen=True)
class AppLog:
    """One application (attempt)'s event log.

    `name` is the application id (plus attempt) as the file names spell it; the authoritative ids are in the
    `SparkListenerApplicationStart` event. `files` are in read order. `state` is `complete` (renamed / marker
    final), `in_progress` (`.inprogress`), or `unknown` (a rolling directory with no `appstatus_` marker, which
    Spark itself would not list; read as complete)."""

    name: str
    path: Path | StoreUrl
    rolling: bool
    files: tuple[Path | StoreUrl, ...]
    state: LogState

    @property
    def in_progress(self) -> bool:
        return self.state == "in_progress"

    def size(self) -> int:
        """Bytes on disk (or in the store) of its files as they are now; a file gone since it was listed counts 0."""
        total = 0
        for path in self.files:
            try:
                total += stat(path).size
            except OSError:
                continue
        return total

    @property
    def codec(self) -> str | None:
        return codec_from_name(self.files[0].name) if self.files else codec_from_name(self.path.name)


def part_index(path: Path | StoreUrl) -> int:
    """N of a rolling part `events_<N>_<app>...`, or -1 if the name is not one."""
    m = _PART_RE.match(strip_codec(path.name))
    return int(m.group(1)) if m else -1


def parts_in_read_order(names: Iterable[str]) -> list[str]:
    """The `events_<N>_*` names among a rolling log directory's entries, in read order.

    From the newest `.compact` part, if any, then every later part by N. Hidden files (Hadoop's `.crc`) are ignored."""
    parts: list[tuple[int, bool, str]] = []
    for name in names:
        m = _PART_RE.match(strip_codec(name))
        if m is None:
            continue
        parts.append((int(m.group(1)), name.endswith(".compact"), name))
    compacts = [n for n, is_compact, _ in parts if is_compact]
    start = max(compacts) if compacts else 0
    kept = [(n, name) for n, is_compact, name in parts if n > start or (n == start and is_compact)]
    kept.sort(key=lambda t: t[0])
    return [name for _, name in kept]


def state_of_markers(names: Iterable[str]) -> LogState:
    """What the `appstatus_` marker among a rolling log directory's entries says.

    A final marker wins over an in-progress one (a rename seen half-way through a directory listing)."""
    markers = [n for n in names if n.startswith(STATUS_PREFIX)]
    if any(not n.endswith(INPROGRESS) for n in markers):
        return "complete"
    if markers:
        return "in_progress"
    return "unknown"


def _names(directory: Path | StoreUrl) -> list[str] | None:
    """The names in `directory`, or None if there is no such directory."""
    try:
        return [e.name for e in list_dir(directory)]
    except StoreNotFound:
        return None


def rolling_parts(directory: PathOrUrl) -> list[Path | StoreUrl]:
    """The `events_<N>_*` parts of a rolling log directory in read order (:func:`parts_in_read_order`)."""
    where = locate(directory)
    return [where / name for name in parts_in_read_order(_names(where) or [])]


def rolling_state(directory: PathOrUrl) -> LogState:
    """What the `appstatus_` marker of a rolling log directory says (:func:`state_of_markers`)."""
    return state_of_markers(_names(locate(directory)) or [])


def _rolling_log(p: Path | StoreUrl, names: list[str]) -> AppLog | None:
    parts = [p / name for name in parts_in_read_order(names)]
    if not p.name.startswith(ROLLING_PREFIX) and not parts:
        return None
    return AppLog(name=p.name.removeprefix(ROLLING_PREFIX), path=p, rolling=True, files=tuple(parts),
                  state=state_of_markers(names))


def _file_log(p: Path | StoreUrl) -> AppLog:
    state: LogState = "in_progress" if p.name.endswith(INPROGRESS) else "complete"
    return AppLog(name=strip_codec(p.name), path=p, rolling=False, files=(p,), state=state)


def describe_log(path: PathOrUrl) -> AppLog:
    """The AppLog for one application's log: a file (any codec, maybe `.inprogress`) or an `eventlog_v2_` dir.

    A local path or a store's URL. A rolling directory is recognised by its name or, failing that, by holding
    `events_<N>_` parts. Raises `StoreNotFound` (a `FileNotFoundError`) when there is nothing at `path`."""
    p = locate(path)
    if not stat(p).is_dir:
        return _file_log(p)
    log = _rolling_log(p, [e.name for e in list_dir(p)])
    if log is None:
        raise ValueError(
            f"{p} is a directory, not an application's rolling event log (no events_<N>_ files): "
            "use find_logs() to list the applications in it"
        )
    return log


def find_logs(path: PathOrUrl, *, recursive: bool = False) -> list[AppLog]:
    """Every application log at `path`, a local path or a store's URL.

    The log itself if `path` is one, else those in the directory (sorted by name; with `recursive`, in sub-directories
    too). Files that do not start like a Spark event log (JSON with an `Event` key, or a known codec's magic bytes) are
    passed over, so a README or an expectations folder is no obstacle; an empty `.inprogress` file counts (Spark just
    created it)."""
    p = locate(path)
    if not stat(p).is_dir:
        return [_file_log(p)]
    entries = list_dir(p)
    log = _rolling_log(p, [e.name for e in entries])
    if log is not None:
        return [log]
    found: list[AppLog] = []
    for entry in entries:
        if entry.name.startswith((".", "_")):
            continue
        where = entry.location
        if entry.is_dir:
            if entry.name.startswith(ROLLING_PREFIX):
                try:
                    found.append(describe_log(where))
                except FileNotFoundError:  # removed since listed
                    continue
            elif recursive:
                found.extend(find_logs(where, recursive=True))
        elif looks_like_event_log(where) and exists(where):  # else renamed since listed (Spark dropping
            found.append(_file_log(where))  # `.inprogress`): found by its new name at the next scan
    return found


class LogDirectoryScanner:
    """Finds the applications that appear in a directory over time (`flowscope serve --follow DIR`).

    Each `scan()` returns the logs not returned before. An application is known by its name, so the rename of
    `app.inprogress` to `app` is not a new application; a log whose first bytes are not there yet is picked up by a
    later scan."""

    def __init__(self, directory: PathOrUrl, *, recursive: bool = False) -> None:
        self.directory = locate(directory)
        self.recursive = recursive
        self.seen: set[str] = set()

    def scan(self) -> list[AppLog]:
        if not is_dir(self.directory):
            return []
        new = [log for log in find_logs(self.directory, recursive=self.recursive) if log.name not in self.seen]
        self.seen.update(log.name for log in new)
        return new


_MAGIC = {
    "zstd": (b"\x28\xb5\x2f\xfd",),
    "lz4": (b"LZ4Block",),
    "snappy": (b"\x82SNAPPY\x00",),
    "lzf": (b"ZV\x00", b"ZV\x01"),
    "gz": (b"\x1f\x8b",),
}
_JSON_EVENT_START = re.compile(rb'^\s*\{\s*"Event"\s*:')


SNIFF_BYTES = 1 << 16  # what :func:`head_looks_like_event_log` needs of a compressed file's start


def looks_like_event_log(path: PathOrUrl) -> bool:
    """Sniff the first bytes (:func:`head_looks_like_event_log`), on disk or in a store."""
    where = locate(path)
    codec = codec_from_name(where.name)
    try:
        with open_read(where) as fh:
            head = fh.read(64 if codec is None else SNIFF_BYTES)
    except OSError:
        return False
    return head_looks_like_event_log(where.name, head)


def head_looks_like_event_log(name: str, head: bytes) -> bool:
    """Whether a file called `name` whose first bytes are `head` starts like a Spark event log.

    `{"Event":` for plain files; for compressed ones the codec's magic, and `{"Event":` at the start of what the first
    block decodes to (a damaged progress log compressed with zstd has the magic too: it is no Spark log). A first block
    that does not decode, or is not complete yet, passes: reading the log reports what is wrong with it."""
    codec = codec_from_name(name)
    if not head:
        return name.endswith(INPROGRESS)
    if codec is None:
        return starts_like_events(head)
    if not head.startswith(_MAGIC[codec]):
        return False
    text = b""
    try:
        for chunk in make_decoder(codec, name).chunks(head[:SNIFF_BYTES]):
            text += chunk
            if len(text) >= 64:
                break
    except (CodecError, MissingCodecError):
        return True
    return not text.strip() or starts_like_events(text)


def starts_like_events(text: bytes) -> bool:
    """Whether decoded text starts like a Spark event log: `{"Event":`."""
    return _JSON_EVENT_START.match(text[:64]) is not None
