"""Where flowscope's Spark data comes from: reading and following Spark event logs.

The layers, each in its own module: `codecs` (Spark's compression containers, decoded incrementally), `layout`
(which files make up an application's log, in what order, and whether Spark is done with it), `cursor` (a resumable
read position in one file: bytes to parsed lines), `eventlog` (one pass over a log, for replay) and `follow`
(polling a log that is still being written). They hand out `LogEvent(path, line, event)` tuples and report
problems as `LineError` values; what the events mean is the Spark model's business.
"""

from backend.eventlog.codecs import CodecError, MissingCodecError
from backend.eventlog.eventlog import EventLogReader, read_events
from backend.eventlog.eventlog_layout import AppLog, LogDirectoryScanner, describe_log, find_logs
from backend.eventlog.events import LineError, LogEvent, PendingLine, ReadStats
from backend.eventlog.follow import EventLogFollower

__all__ = [
    "AppLog",
    "CodecError",
    "EventLogFollower",
    "EventLogReader",
    "LineError",
    "LogDirectoryScanner",
    "LogEvent",
    "MissingCodecError",
    "PendingLine",
    "ReadStats",
    "describe_log",
    "find_logs",
    "read_events",
]
