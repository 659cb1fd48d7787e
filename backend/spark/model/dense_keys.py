"""Spark's job and stage ids as positions in a byte array: what a long application keeps per job costs a byte.

Spark numbers jobs and stages densely from 0, and a stage's first attempt is the one that counts, so a job id
``i``, a stage id ``i`` or attempt 0 of stage ``i`` (the key ``(i, 0)``) is byte ``i`` of an array, where a dict or
set entry would cost a hundred bytes or more. Anything else (a later attempt, a negative id, an id far past the
others, as a hostile log may carry) goes to a small dict or set beside it. The model's :class:`StatusTable` (the
statuses of folded jobs and stage attempts) and the gap detector's sets of stages (``gaps.py``) are built on it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["DENSE_SLACK", "KeySet", "dense_index"]

DENSE_SLACK = 1 << 16  # an id this far past the array's end goes beside it (a hostile log's huge ids)


def dense_index(key: Any) -> int | None:
    """The byte of ``key`` (an id, or ``(id, 0)``), None for a key that has none (a later attempt, not an id)."""
    k = key[0] if type(key) is tuple and len(key) == 2 and key[1] == 0 else key
    return k if type(k) is int and k >= 0 else None


class KeySet:
    """A set of ids, or of ``(id, attempt)`` keys, a byte per dense key (see the module docstring).

    One kind of key per set: ``i`` and ``(i, 0)`` are the same byte."""

    __slots__ = ("_bytes", "_others")

    def __init__(self) -> None:
        self._bytes = bytearray()
        self._others: set = set()

    def add(self, key: Any) -> None:
        k, present = dense_index(key), self._bytes
        if k is not None and k < len(present) + DENSE_SLACK:
            if k >= len(present):
                present.extend(bytes(k + 1 - len(present)))
            present[k] = 1
        else:
            self._others.add(key)

    def __sizeof__(self) -> int:
        return object.__sizeof__(self) + sys.getsizeof(self._bytes) + sys.getsizeof(self._others)

    def update(self, keys: Iterable[Any]) -> None:
        for key in keys:
            self.add(key)

    def discard(self, key: Any) -> None:
        k = dense_index(key)
        if k is not None and k < len(self._bytes):
            self._bytes[k] = 0
        if self._others:  # an id once far past the array may be in both since the array grew
            self._others.discard(key)

    def __contains__(self, key: Any) -> bool:
        k = dense_index(key)
        if k is not None and k < len(self._bytes) and self._bytes[k]:
            return True
        return bool(self._others) and key in self._others
