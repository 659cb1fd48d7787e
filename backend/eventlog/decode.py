"""Decoding event-log lines into only what their reader needs.

The one place where a Spark event's bytes become the dict the Spark model reads. Most of a large event log is bytes
the model never looks at (SQL plans, environment dumps, block-manager updates, every task's metrics), so an
:class:`EventDecoder` reads a line's first bytes (Spark writes ``{"Event":"<type>"`` first) and then decodes nothing
for a type the reader does not want (it comes out as ``{"Event": type}``, still counted), only the listed fields
for a type with a field spec (msgspec, types checked as decoded), or the whole line (orjson) for any other type.

Whatever does not fit (no ``Event`` prefix, a field of an unexpected type, invalid JSON) is decoded whole, so a
damaged line is reported and a damaged event reaches the model as if nothing were skipped; such an event is a
:class:`WholeEvent`, whose reader checks its fields' types. A skipped line is checked only for its closing brace.
A ``SparkListenerTaskEnd`` is decoded whole, not cut around the parts nobody reads: msgspec skips bytes faster than
finding the cuts and copying the slices costs (benchmarks/README.md).
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

    ``wanted`` maps each event type the reader reads to ``None`` (the whole event, a :class:`WholeEvent`), a
    ``TypedDict`` type naming the fields to decode and their types (nested ``TypedDict`` fields narrow further;
    ``Any`` takes a value whole), or a function decoding the line's bytes itself (raising msgspec's errors for a
    line that does not fit). Types not in ``wanted`` are not decoded. Raises ``orjson.JSONDecodeError`` for a
    line that is not JSON, like ``orjson.loads``.
    """

    def __init__(self, wanted: Mapping[str, type | Callable[[bytes], Any] | None]) -> None:
        # type name -> its field spec's decode, or None for a type decoded whole: one lookup per line
        self._kinds: dict[bytes, Callable[[bytes], Any] | None] = {
            k.encode(): v if v is None or not isinstance(v, type) else msgspec.json.Decoder(v).decode
            for k, v in wanted.items()}
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
