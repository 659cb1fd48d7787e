"""Antichains: frontiers of times and sets of minimal path summaries.

An :class:`Antichain` is a set of mutually incomparable elements. As a frontier it reads "every time that may
still appear is ``>=`` some element"; the empty antichain means "complete". As a set of path summaries it holds
the minimal ways a time can change along the paths between two ports.

A :class:`MutableAntichain` keeps signed counts per time and exposes the frontier of the times whose count is
*strictly positive*. ``update_iter`` returns the discrete frontier changes (``+1`` entered, ``-1`` left), which is
what the tracker propagates: counts that go transiently negative (batches from other workers arriving out of
order) are stored but never leak into a frontier. Updates that provably cannot change the frontier (a time strictly
above it, or a decrement at a time nothing in the frontier is ``<=``) skip the rebuild, so the cost follows the
frontier, not the number of updates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tracker.timestamp import less_equal

__all__ = ["Antichain", "MutableAntichain"]

Order = Callable[[Any, Any], bool]


class Antichain:
    """A set of mutually incomparable elements under a partial order ``le``."""

    __slots__ = ("_elements", "_le")

    def __init__(self, elements: Iterable[Any] = (), le: Order = less_equal):
        self._elements: list[Any] = []
        self._le = le
        for e in elements:
            self.insert(e)

    @classmethod
    def single(cls, element: Any, le: Order = less_equal) -> Antichain:
        """The antichain of one element (what a builder makes per internal path: no comparisons needed)."""
        a = cls.__new__(cls)
        a._elements = [element]
        a._le = le
        return a

    def insert(self, element: Any) -> bool:
        """Add ``element`` unless something ``<=`` it is present; evict what it is ``<=``. True if it changed."""
        le = self._le
        elements = self._elements
        for x in elements:
            if le(x, element):
                return False
        self._elements = [x for x in elements if not le(element, x)]
        self._elements.append(element)
        return True

    def extend(self, elements: Iterable[Any]) -> bool:
        changed = False
        for e in elements:
            changed |= self.insert(e)
        return changed

    def less_than(self, time: Any) -> bool:
        """Some element is strictly less than ``time``."""
        le = self._le
        return any(x != time and le(x, time) for x in self._elements)

    def less_equal(self, time: Any) -> bool:
        """Some element is ``<= time``: read as a frontier, ``time`` may still appear."""
        le = self._le
        return any(le(x, time) for x in self._elements)

    def dominates(self, other: Antichain) -> bool:
        """The antichain partial order: every element of ``other`` is ``>=`` some element of ``self``."""
        return all(self.less_equal(b) for b in other._elements)

    def elements(self) -> list[Any]:
        """The elements in sorted order (a linear extension of the partial order)."""
        return sorted(self._elements)

    def clear(self) -> None:
        self._elements = []

    def is_empty(self) -> bool:
        return not self._elements

    def __iter__(self) -> Iterator[Any]:
        return iter(self._elements)

    def __len__(self) -> int:
        return len(self._elements)

    def __contains__(self, element: Any) -> bool:
        return element in self._elements

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Antichain):
            return len(self._elements) == len(other._elements) and set(self._elements) == set(other._elements)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._elements))

    def __repr__(self) -> str:
        return f"Antichain({self.elements()!r})"


class MutableAntichain:
    """Counts per time, and the frontier of the minimal times with a strictly positive count."""

    __slots__ = ("_counts", "_frontier", "_le", "_total")

    def __init__(self, le: Order = less_equal, total: bool = False):
        self._counts: dict[Any, int] = {}
        self._frontier: list[Any] = []
        self._le = le
        self._total = total

    @classmethod
    def from_elem(cls, time: Any, le: Order = less_equal, total: bool = False) -> MutableAntichain:
        m = cls(le, total)
        m._counts[time] = 1
        m._frontier = [time]
        return m

    # --- reading ---------------------------------------------------------------------------------------

    def frontier(self) -> list[Any]:
        """The frontier, sorted."""
        f = self._frontier
        return sorted(f) if len(f) > 1 else list(f)

    def is_empty(self) -> bool:
        """True when the *frontier* is empty (counts may still be non-zero, e.g. negative)."""
        return not self._frontier

    def count_for(self, time: Any) -> int:
        return self._counts.get(time, 0)

    def updates(self) -> list[tuple[Any, int]]:
        """Every time with a non-zero count, sorted."""
        return sorted(self._counts.items())

    def update_rows(self) -> list[list]:
        """:meth:`updates` as ``[time, count]`` lists, the shape the views send (most ports have one count or none)."""
        counts = self._counts
        if len(counts) > 1:
            return [[t, c] for t, c in sorted(counts.items())]
        return [[t, c] for t, c in counts.items()]

    def has_negative(self) -> bool:
        return any(c < 0 for c in self._counts.values())

    def less_than(self, time: Any) -> bool:
        le = self._le
        return any(x != time and le(x, time) for x in self._frontier)

    def less_equal(self, time: Any) -> bool:
        le = self._le
        return any(le(x, time) for x in self._frontier)

    # --- writing ---------------------------------------------------------------------------------------

    def update(self, time: Any, delta: int) -> list[tuple[Any, int]]:
        """Apply one update; return the frontier changes as sorted ``(time, +1|-1)`` pairs."""
        if not delta:
            return []
        counts = self._counts
        count = counts.get(time, 0) + delta
        if count:
            counts[time] = count
        else:
            del counts[time]
        frontier = self._frontier
        if self._total:
            if not frontier:
                if count > 0:
                    frontier.append(time)
                    return [(time, 1)]
                return []
            least = frontier[0]
            if time > least:
                return []
            if time < least:
                if count > 0:
                    frontier[0] = time
                    return [(time, 1), (least, -1)]
                return []
            if count > 0:
                return []
            # The least time left the frontier: the next least positive time (all are > least) replaces it.
            positive = [t for t, c in counts.items() if c > 0]
            if positive:
                new = min(positive)
                frontier[0] = new
                return [(least, -1), (new, 1)]
            frontier.clear()
            return [(least, -1)]
        le = self._le
        for x in frontier:
            if x != time and le(x, time):
                return []
        if delta < 0:
            for x in frontier:
                if le(x, time):
                    break
            else:
                return []
        return self._rebuild()

    def update_iter(self, updates: Iterable[tuple[Any, int]]) -> list[tuple[Any, int]]:
        """Apply every update, then return the net frontier changes as sorted ``(time, +1|-1)`` pairs."""
        counts = self._counts
        le = self._le
        rebuild = False
        for time, delta in updates:
            if not delta:
                continue
            if not rebuild:
                frontier = self._frontier
                if any(x != time and le(x, time) for x in frontier):
                    pass
                elif delta < 0 and not any(le(x, time) for x in frontier):
                    pass
                else:
                    rebuild = True
            count = counts.get(time, 0) + delta
            if count:
                counts[time] = count
            else:
                del counts[time]
        return self._rebuild() if rebuild else []

    def _rebuild(self) -> list[tuple[Any, int]]:
        old = self._frontier
        if self._total:
            positive = [t for t, c in self._counts.items() if c > 0]
            new = [min(positive)] if positive else []
        else:
            le = self._le
            new = []
            for t in sorted(t for t, c in self._counts.items() if c > 0):
                for x in new:
                    if le(x, t):
                        break
                else:
                    new.append(t)
        self._frontier = new
        if old == new:
            return []
        changes = [(t, -1) for t in old if t not in new]
        changes.extend((t, 1) for t in new if t not in old)
        changes.sort()
        return changes

    def __repr__(self) -> str:
        return f"MutableAntichain(frontier={self.frontier()!r}, counts={self.updates()!r})"
