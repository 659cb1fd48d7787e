"""`flowscope record`: a Spark event log converted into a flowscope progress log.

This is how a post-mortem starts: the event log a cluster already writes (a file, a rolling `eventlog_v2_`
directory, an `.inprogress` log, any of Spark's codecs) goes through the reader (`backend.eventlog`), optionally
the redactor (`backend.spark.redaction.rewrite`), and the Spark model (`backend.spark.model.spark_model`), and comes
out as progress-log records (format v1) that `flowscope frontiers`, `explain` and the debugger read. One pass,
streaming: memory is bounded by the model's state (stages, jobs, running tasks), never by the length of the log.

Nothing in a damaged log stops the conversion: a corrupt line is reported with its file, line and reason and
skipped, unknown event types are counted, and gaps the model notices (events Spark dropped) are marked
"uncertain" in the log itself. The summary says all of it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

from backend.eventlog import AppLog, EventLogReader, LineError, MissingCodecError, describe_log, find_logs
from backend.eventlog.decode import WholeEvent
from backend.eventlog.eventlog_layout import looks_like_event_log
from backend.eventlog.read_process import EventReaderProcess
from backend.spark.model.event_fields import model_decoder
from backend.spark.model.event_shape import event_problem
from backend.spark.model.spark_model import SparkModel, SparkSummary
from backend.spark.recording.subcommand import run_subcommand
from backend.spark.redaction.rules import Redactor
from backend.stores import PathOrUrl, StoreUrl, locate, open_read, stat
from tracker.progress_log.jsonl import DAMAGED_EVENT
from tracker.progress_log.log_file import FORMAT, ProgressLogWriter

__all__ = ["EventLogError", "RecordSummary", "SparkLogConversion", "main", "open_event_log", "record", "register"]

ProgressCallback = Callable[[int, int], None]  # (bytes read so far, total bytes of the log's files)
LOOKAHEAD = 1000  # events read before the header is written, looking for the application's name
READ_IN_CHILD_BYTES = 16 << 20  # `read_in_child=None` reads a log this large (on disk) in a child process


class EventLogError(ValueError):
    """The path is not something `record` can read as one Spark application's event log."""


@dataclass
class RecordSummary:
    """What one conversion did. `errors` are the corrupt lines (also passed to `on_error` as found)."""

    source: str
    app_id: str | None = None
    app_name: str | None = None
    state: str = "complete"  # the log's state: complete, in_progress, unknown (rolling log without marker)
    events: int = 0
    records: int = 0
    batches: int = 0
    marks: int = 0
    lines: int = 0
    blank_lines: int = 0
    corrupt_lines: int = 0
    damaged_events: int = 0  # events skipped whole because a field had the wrong type (reported in `errors`)
    errors: list[LineError] = field(default_factory=list)
    unknown_events: dict[str, int] = field(default_factory=dict)
    uncertain: list[str] = field(default_factory=list)
    ended: bool = False
    pending: str | None = None  # the unfinished last line of an in-progress log, "file:line (N bytes)"
    bytes_read: int = 0
    bytes_uncompressed: int = 0
    seconds: float = 0.0

    @property
    def accounted(self) -> bool:
        """Every line read was an event, a blank line or a reported corrupt line."""
        return self.lines == self.events + self.corrupt_lines + self.blank_lines

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "errors"}
        out["errors"] = [str(e) for e in self.errors]
        return out

    def __str__(self) -> str:
        app = f"{self.app_name!r} ({self.app_id})" if self.app_name else (self.app_id or self.source)
        mb = self.bytes_uncompressed / 1e6
        text = (f"{app}: {self.events} events ({mb:.1f} MB) -> {self.records} records, {self.batches} progress "
                f"batches, {self.marks} marks in {self.seconds:.2f} s")
        if self.corrupt_lines:
            text += f"; {self.corrupt_lines} corrupt lines skipped"
        if self.damaged_events:
            text += f"; {self.damaged_events} damaged events skipped"
        if self.unknown_events:
            text += f"; {sum(self.unknown_events.values())} events of {len(self.unknown_events)} types not modelled"
        if self.uncertain:
            more = len(self.uncertain) - 1
            text += f"; uncertain: {self.uncertain[0]}" + (f" (+{more})" if more else "")
        if self.pending:
            text += f"; in progress, last line unfinished at {self.pending}"
        elif not self.ended:
            text += "; the application has not ended (no ApplicationEnd)"
        return text


def open_event_log(path: PathOrUrl | AppLog) -> AppLog:
    """The one application log at `path` (a local path or a store's URL), or an error that names the file and says
    what is wrong with it (`StoreError`, a one-line `OSError`, when it cannot be reached)."""
    if isinstance(path, AppLog):
        return path
    p = locate(path)
    if stat(p).is_dir:
        try:
            logs = find_logs(p)
        except ValueError as exc:
            raise EventLogError(str(exc)) from None
        if not logs:
            raise EventLogError(f"{p}: no Spark event log in this directory")
        if len(logs) > 1:
            names = ", ".join(log.path.name for log in logs[:5]) + (", ..." if len(logs) > 5 else "")
            raise EventLogError(f"{p}: this directory holds {len(logs)} application logs ({names}); name one of them")
        return logs[0]
    if not looks_like_event_log(p):
        raise EventLogError(f"{p}: not a Spark event log ({_what_it_is(p)})")
    return describe_log(p)


def _what_it_is(p: Path | StoreUrl) -> str:
    try:
        with open_read(p) as fh:
            head = fh.read(256)
    except OSError as exc:
        return str(exc)
    if FORMAT.encode() in head:
        return "it is a flowscope progress log already"
    if not head:
        return "the file is empty"
    return ("it does not start with a JSON object with an \"Event\" key, nor with the magic bytes of the codec its "
            "name announces")


class SparkLogConversion:
    """A Spark event log as progress-log records, read in one pass.

    `source_name()` reads ahead a little (up to `LOOKAHEAD` events) to find the application's name for the
    header; iterating yields the records; `summary()` tells what happened. Raises `FileNotFoundError`,
    `EventLogError` or `MissingCodecError` at construction if the log cannot be read at all. `read_in_child`:
    read and decode in a child process (`backend.eventlog.read_process`), so the model here and the reading there
    run on two cores; the records are the same (None: when the log has `READ_IN_CHILD_BYTES` or more).
    `name_plans`: the model names the SQL plan operator of each stage (`SparkModel`'s option)."""

    def __init__(
        self,
        source: PathOrUrl | AppLog,
        *,
        redact: bool | Redactor = False,
        on_error: Callable[[LineError], None] | None = None,
        progress: ProgressCallback | None = None,
        read_in_child: bool | None = False,
        name_plans: bool = True,
    ) -> None:
        self.log = open_event_log(source)
        self.total_bytes = self.log.size()
        if read_in_child is None:  # a child's start-up (tens of ms) pays on a large log only
            read_in_child = self.total_bytes >= READ_IN_CHILD_BYTES
        self._on_error = on_error
        self.redactor = redact if isinstance(redact, Redactor) else (Redactor() if redact else None)
        # the model reads a few fields of a few event types; redaction rewrites whole events, so it decodes all
        decode = partial(model_decoder, name_plans) if self.redactor is None else None
        self._typed = decode is not None  # events it does not hand out whole have their types checked
        self.reader: EventLogReader | EventReaderProcess
        if read_in_child:  # reading and decoding on another core, the model here: the same events
            self.reader = EventReaderProcess(self.log, on_error=self._error, decode=decode)
        else:
            self.reader = EventLogReader(self.log, on_error=self._error, decode=None if decode is None else decode())
        self.model = SparkModel(name_plans=name_plans)
        self.model.on_damaged = self._damaged
        self._path = str(self.log.path)  # the file of the event being modelled
        self.line: int | None = None  # and its line
        self.progress = progress  # called with (bytes read, total bytes) as the log is read
        self._events = iter(self.reader)
        self._ahead: list[Any] = []
        self._looked = False
        self._multi = len(self.log.files) > 1
        self._summary = RecordSummary(self.log.path.name, state=self.log.state)
        self._started = time.perf_counter()

    def _error(self, err: LineError) -> None:
        self._summary.errors.append(err)
        if self._on_error is not None:
            self._on_error(err)

    def _damaged(self, line: int | None, kind: str, problem: str) -> None:
        self._error(LineError(self._path, line or 0, DAMAGED_EVENT, f"{kind} skipped: {problem}"))

    def source_name(self) -> str:
        """What the header's `source` says: the application's name and id, and the log's file name."""
        if not self._looked:
            self._looked = True
            for ev in self._events:
                self._ahead.append(ev)
                if ev.event.get("Event") == "SparkListenerApplicationStart" or len(self._ahead) >= LOOKAHEAD:
                    break
        name = app_id = None
        for ev in self._ahead:
            if ev.event.get("Event") == "SparkListenerApplicationStart":
                event = self.redactor.event(ev.event) if self.redactor else ev.event
                name, app_id = event.get("App Name"), event.get("App ID")
                name = name if isinstance(name, str) else None  # a damaged event names nothing (never its repr)
                app_id = app_id if isinstance(app_id, str) else None
                break
        label = f"Spark application {name!r}" if name else "Spark application"
        if app_id:
            label += f" ({app_id})"
        return f"{label}, event log {self.log.path.name}"

    def __iter__(self) -> Iterator[dict]:
        model, redactor, summary = self.model, self.redactor, self._summary
        stats = self.reader.stats
        progress, total = self.progress, self.total_bytes
        last_bytes = -1
        multi, typed = self._multi, self._typed
        ahead, self._ahead = self._ahead, []
        events = chain(ahead, self._events)
        for ev in events:
            self._path, self.line = ev.path, ev.line
            event = ev.event
            if redactor is not None and event_problem(event) is None:  # a damaged event is only reported
                event = redactor.event(event)
            records = model.feed(event, ev.line, typed and type(event) is not WholeEvent)
            if records:
                for rec in records:
                    kind = rec["type"]
                    if kind == "progress":
                        summary.batches += 1
                        if multi:
                            rec["cause"]["file"] = os.path.basename(ev.path)
                    elif kind == "mark":
                        summary.marks += 1
                    summary.records += 1
                    yield rec
            if progress is not None and stats.bytes_compressed != last_bytes:
                last_bytes = stats.bytes_compressed
                progress(last_bytes, total)
        if progress is not None:
            progress(stats.bytes_compressed, max(total, stats.bytes_compressed))

    def model_summary(self) -> SparkSummary:
        """What Spark itself would report of what was read so far (``SparkModel.summary``)."""
        return self.model.summary()

    def close(self) -> None:
        """Stop reading (a child process reading the log is stopped); only needed when not iterated to the end."""
        if isinstance(self.reader, EventReaderProcess):
            self.reader.close()

    def summary(self) -> RecordSummary:
        s, stats, model = self._summary, self.reader.stats, self.model
        s.app_id, s.app_name, s.ended = model.app_id, model.app_name, model.ended
        s.events, s.lines, s.blank_lines = stats.events, stats.lines_read, stats.lines_blank
        s.corrupt_lines = stats.lines_corrupt + stats.streams_corrupt
        s.unknown_events = dict(model.unknown_events)
        s.damaged_events = model.damaged_events
        s.uncertain = list(model.uncertain)
        pending = self.reader.pending
        s.pending = f"{os.path.basename(pending.path)}:{pending.line} ({pending.size} bytes)" if pending else None
        s.bytes_read, s.bytes_uncompressed = stats.bytes_compressed, stats.bytes_uncompressed
        s.seconds = time.perf_counter() - self._started
        return s


def record(
    eventlog_path: PathOrUrl | AppLog,
    out_path: str | os.PathLike[str] | Any,
    redact: bool | Redactor = False,
    progress: ProgressCallback | None = None,
    *,
    on_error: Callable[[LineError], None] | None = None,
) -> RecordSummary:
    """Convert a Spark event log into a progress log (v1) at `out_path`.

    `.zst`/`.gz` compress by suffix; a binary file object works too. `redact` rewrites every event first
    (`backend.spark.redaction.rewrite`); `progress` is called with (bytes read, total bytes) as the log is read;
    `on_error` with each corrupt line as it is found. Returns the summary; raises `FileNotFoundError`, `EventLogError`
    or `MissingCodecError` (before anything is written) when the log cannot be read."""
    conversion = SparkLogConversion(eventlog_path, redact=redact, on_error=on_error, progress=progress)
    return _write(conversion, out_path)


def _write(conversion: SparkLogConversion, out: Any) -> RecordSummary:
    """Write the conversion's records to `out`; a file left half-written by an error is removed."""
    writer = ProgressLogWriter(out, source=conversion.source_name())
    try:
        write = writer.write
        for rec in conversion:
            write(rec)
    except BaseException:
        conversion.close()
        writer.close()
        if isinstance(out, (str, os.PathLike)):
            Path(out).unlink(missing_ok=True)
        raise
    writer.close()
    return conversion.summary()


# --- command line ---------------------------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add `record` to the `flowscope` CLI's subparsers."""
    p = subparsers.add_parser(
        "record",
        help="convert a Spark event log into a flowscope progress log",
        description="Convert a Spark event log (a file, a rolling eventlog_v2_ directory, an .inprogress log; "
                    "plain or .zstd/.lz4/.snappy/.lzf) into a flowscope progress log that `flowscope frontiers` "
                    "and the debugger read. Corrupt lines are reported and skipped.")
    p.add_argument("eventlog", metavar="EVENTLOG", help="the Spark event log of one application")
    p.add_argument("--thresholds", metavar="FILE",
                   help="override the Spark findings' thresholds from a TOML or JSON file (docs/findings.md)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the progress log to write (.jsonl; .jsonl.zst or .jsonl.gz to compress; - for stdout)")
    p.add_argument("--redact", action="store_true",
                   help="remove machine details (paths, hosts, IPs, users) and secrets from names first, "
                        "for logs shared outside the team")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object on stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary line")
    p.set_defaults(func=cmd_record)


def cmd_record(args: argparse.Namespace) -> int:
    shown = 0

    def on_error(err: LineError) -> None:
        nonlocal shown
        shown += 1
        if shown <= 20:
            print(f"flowscope: {err}", file=sys.stderr)
        elif shown == 21:
            print("flowscope: more corrupt lines follow; the summary counts them", file=sys.stderr)

    out: Any = args.output
    if out == "-":
        out = sys.stdout.buffer
    try:
        conversion = SparkLogConversion(args.eventlog, redact=args.redact, on_error=on_error, read_in_child=None)
    except (OSError, EventLogError, MissingCodecError) as exc:  # StoreError: one line naming the path or URL
        print(f"flowscope: {exc}", file=sys.stderr)
        return 2
    if out is not sys.stdout.buffer:
        parent = Path(out).resolve().parent
        if not parent.is_dir():
            conversion.close()
            print(f"flowscope: cannot write {out}: the directory {parent} does not exist", file=sys.stderr)
            return 2
    bar = None
    if not args.quiet and sys.stderr.isatty():
        bar = _progress_bar(conversion)
    try:
        if bar is not None:
            with bar:
                summary = _write(conversion, out)
        else:
            summary = _write(conversion, out)
    except OSError as exc:
        print(f"flowscope: cannot write {args.output}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(summary.to_json()) + b"\n")
        sys.stdout.flush()
    elif not args.quiet:
        target = "stdout" if out is sys.stdout.buffer else args.output
        print(f"flowscope: recorded {summary} -> {target}", file=sys.stderr)
    return 0


def _progress_bar(conversion: SparkLogConversion):
    """A rich progress bar on stderr, by bytes of the log read."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    progress = Progress(
        TextColumn("[bold]record[/bold] {task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
        TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    task = progress.add_task(conversion.log.path.name, total=conversion.total_bytes or None)
    last = [0.0]

    def update(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 0.1 or done >= total:
            last[0] = now
            progress.update(task, completed=done, total=total or None)

    conversion.progress = update
    return progress


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m backend.spark.recording.convert EVENTLOG -o OUT [--redact]`: the same command without the flowscope
    CLI."""
    return run_subcommand("record", register, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
