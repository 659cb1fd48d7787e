"""Decoding event-log lines into only what their reader needs: the one place where a Spark event's bytes become
the dict the Spark model reads.

Most of a large event log is bytes the model never looks at: SQL plan strings (``SparkListenerSQLExecutionStart``,
``SparkListenerSQLAdaptiveExecutionUpdate``: tens of KB each), environment dumps, block-manager updates, and inside
every ``SparkListenerTaskEnd`` the task's metrics and accumulables. An :class:`EventDecoder` looks at a line's
first bytes (Spark writes ``{"Event":"<type>"`` first) and then

* for a type the reader does not want, decodes nothing: the event comes out as ``{"Event": type}`` so that it is
  still counted (the model reports it among the event types it does not model);
* for a type with a field spec (a ``TypedDict``), decodes only those fields with msgspec, skipping the rest of the
  line without building it;
* for any other wanted type, decodes the whole line (orjson).

Whatever does not fit (no ``Event`` prefix, an escaped type name, a field of an unexpected JSON type, a line that is
not valid JSON) is decoded whole with orjson, so a damaged line is reported exactly as before and a damaged event
reaches the model exactly as before. An event decoded whole comes out as a :class:`WholeEvent` (a ``dict``): the
types of its fields were not checked by a field spec, so its reader checks them; any other event is a plain
``dict`` whose listed fields have the types its spec declares. A skipped line is checked only for its closing
brace: a truncated line is still reported, but a line corrupted in its middle is not noticed when nothing in it is
read.

Decoding a ``SparkListenerTaskEnd`` in two slices (the head before ``"Accumulables"``, the tail from
``"Task Metrics"``) so that the three quarters nobody reads are not even parsed was measured and does not pay:
msgspec skips those bytes at about 0.8 GB/s (6 us of a 9 us line), while finding the cuts, copying the slices and
checking the nesting level cost more than that (13 us per line on the 100-job benchmark log).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import orjson

__all__ = ["EventDecoder", "WholeEvent"]

_PREFIX = b'{"Event":"'
_START = len(_PREFIX)


class WholeEvent(dict):
    """An event decoded whole (orjson), not through a field spec: nothing has checked the types of its fields."""

    __slots__ = ()


def _whole(raw: bytes) -> Any:
    obj = orjson.loads(raw)
    return WholeEvent(obj) if type(obj) is dict else obj


class EventDecoder:
    """``decoder(raw_line)`` -> the event dict, decoding only what ``wanted`` asks for.

    ``wanted`` maps each event type the reader reads to ``None`` (the whole event, a :class:`WholeEvent`) or a
    ``TypedDict`` type naming the fields to decode and their types (nested ``TypedDict`` fields narrow further;
    ``Any`` takes a value whole). Types not in ``wanted`` are not decoded. Raises ``orjson.JSONDecodeError`` for a
    line that is not JSON, like ``orjson.loads``.
    """

    def __init__(self, wanted: Mapping[str, type | None]) -> None:
        # type name -> its field spec's decode, or None for a type decoded whole: one lookup per line
        self._kinds: dict[bytes, Callable[[bytes], Any] | None] = {
            k.encode(): None if v is None else msgspec.json.Decoder(v).decode for k, v in wanted.items()}
        self._names: dict[bytes, str] = {}  # skipped type names, decoded once

    def __call__(self, raw: bytes) -> Any:
        if raw.startswith(_PREFIX):
            end = raw.find(b'"', _START)
            if end > 0:
                name = raw[_START:end]
                kinds = self._kinds
                if name in kinds:  # never an escaped name: no wanted type has a backslash in its name
                    slim = kinds[name]
                    if slim is None:
                        return _whole(raw)
                    try:
                        return slim(raw)
                    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
                        return _whole(raw)  # the same event, or the same error, as a whole decode gives
                if b"\\" not in name and raw.rstrip().endswith(b"}"):
                    text = self._names.get(name)
                    if text is None:
                        text = self._names[name] = name.decode("utf-8", "replace")
                    return {"Event": text}
        return _whole(raw)
