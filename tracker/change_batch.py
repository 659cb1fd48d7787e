"""ChangeBatch: an accumulation of ``(key, delta)`` updates, consolidated on read.

Timely keeps an append-only list compacted lazily; in Python a dict is the faster way to the same meaning:
equal keys merge, zero totals vanish (always: the Rust quirk that keeps a lone zero entry is not kept),
and every read returns entries sorted by key with unique keys and non-zero deltas.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["ChangeBatch"]


class ChangeBatch:
    """A multiset of keys with integer multiplicities, possibly negative."""

    __slots__ = ("_counts",)

    def __init__(self, updates: Iterable[tuple[Any, int]] = ()):
        self._counts: dict[Any, int] = {}
        self.extend(updates)

    @classmethod
    def new_from(cls, key: Any, delta: int) -> ChangeBatch:
        batch = cls()
        batch.update(key, delta)
        return batch

    def update(self, key: Any, delta: int) -> None:
        counts = self._counts
        total = counts.get(key, 0) + delta
        if total:
            counts[key] = total
        else:
            counts.pop(key, None)

    def extend(self, updates: Iterable[tuple[Any, int]]) -> None:
        for key, delta in updates:
            self.update(key, delta)

    def is_empty(self) -> bool:
        return not self._counts

    def __len__(self) -> int:
        return len(self._counts)

    def __bool__(self) -> bool:
        return bool(self._counts)

    def __iter__(self) -> Iterator[tuple[Any, int]]:
        return iter(self.into_inner())

    def get(self, key: Any) -> int:
        return self._counts.get(key, 0)

    def into_inner(self) -> list[tuple[Any, int]]:
        """The consolidated entries, sorted by key, without draining."""
        return sorted(self._counts.items())

    def drain(self) -> list[tuple[Any, int]]:
        """The consolidated entries, sorted by key; the batch is empty afterwards."""
        items = sorted(self._counts.items())
        self._counts = {}
        return items

    def drain_into(self, other: ChangeBatch) -> None:
        if not other._counts:
            other._counts, self._counts = self._counts, {}
        else:
            for key, delta in self._counts.items():
                other.update(key, delta)
            self._counts = {}

    def clear(self) -> None:
        self._counts = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChangeBatch) and self._counts == other._counts

    def __repr__(self) -> str:
        return f"ChangeBatch({self.into_inner()!r})"
