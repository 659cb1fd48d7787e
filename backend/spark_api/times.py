"""Times as Spark's REST API writes and reads them.

Dates go out as ``2015-02-03T16:43:06.286GMT`` (Jackson with Spark's ``yyyy-MM-dd'T'HH:mm:ss.SSS'GMT'`` format, in
GMT); the applications list's ``minDate``-style parameters come in as that form with any zone name, or as a bare
``yyyy-MM-dd`` day in GMT (Spark's ``SimpleDateParam``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

__all__ = ["parse_date_param", "spark_time"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def spark_time(ms: int) -> str:
    """Epoch milliseconds as Spark's REST API prints a date (negative times included: a running attempt's -1)."""
    t = _EPOCH + timedelta(milliseconds=ms)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}." \
           f"{t.microsecond // 1000:03d}GMT"


_FULL = re.compile(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(.+)")
_DAY = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_OFFSET = re.compile(r"(?:GMT|UTC)?([+-])(\d{1,2}):?(\d{2})?")


def _zone(name: str) -> timezone:
    if name in ("GMT", "UTC", "Z"):
        return UTC
    m = _OFFSET.fullmatch(name)
    if m is None:
        raise ValueError(name)
    sign = -1 if m.group(1) == "-" else 1
    return timezone(sign * timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0)))


def parse_date_param(value: str) -> int:
    """A date parameter as epoch milliseconds; ValueError with Spark's message when it is neither form."""
    try:
        m = _FULL.fullmatch(value)
        if m is not None:
            y, mo, d, h, mi, s, ms = (int(g) for g in m.groups()[:7])
            t = datetime(y, mo, d, h, mi, s, ms * 1000, tzinfo=_zone(m.group(8)))
            return (t - _EPOCH) // timedelta(milliseconds=1)
        m = _DAY.fullmatch(value)
        if m is not None:
            y, mo, d = (int(g) for g in m.groups())
            return (datetime(y, mo, d, tzinfo=UTC) - _EPOCH) // timedelta(milliseconds=1)
    except ValueError:
        pass
    raise ValueError(f"Couldn't parse date: {value}")
