"""Timestamps, path summaries, and how a nested scope's times refine its parent's.

Times are plain Python values so that hashing, equality and sorting run in C: an ``int`` is a totally ordered
counter (an epoch, a batch id, an iteration); a tuple ``(outer, inner)`` is a *product* timestamp, to any depth
(``((3, 1), 4)``), ordered componentwise. Python's lexicographic tuple order is a linear extension of that partial
order, the role ``Ord`` plays in timely. ``Product`` is a named tuple interchangeable with plain tuples.

Path summaries have the same shape: ``k >= 0`` means "add k" and a tuple acts componentwise, as timely's Product
summaries (not Naiad's "outer increment resets inner"), so ``(1, 0)`` and ``(0, 1)`` are incomparable.

A :class:`TimeDomain` holds the order and summary functions for one depth, specialised so the tracker's hot loops
call one small function instead of dispatching on types. A :class:`Refinement` relates a child scope's times to its
parent's: one more level for an iterative scope, the identity for a *region*.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

__all__ = [
    "Product",
    "TimeDomain",
    "Refinement",
    "domain",
    "less_equal",
    "less_than",
    "results_in",
    "followed_by",
    "time_from_json",
    "depth_of",
]


class Product(tuple):
    """A product timestamp (or summary) ``(outer, inner)``: componentwise partial order, lexicographic sort."""

    __slots__ = ()

    def __new__(cls, outer: Any, inner: Any) -> Product:
        return tuple.__new__(cls, (outer, inner))

    @property
    def outer(self) -> Any:
        return self[0]

    @property
    def inner(self) -> Any:
        return self[1]

    def __repr__(self) -> str:
        return f"Product({self[0]!r}, {self[1]!r})"


# --- generic operations, dispatching on the value's shape (any depth) -------------------------------------


def less_equal(a: Any, b: Any) -> bool:
    """The partial order: ``<=`` on integers, componentwise on products."""
    if type(a) is int:
        return a <= b
    return less_equal(a[0], b[0]) and less_equal(a[1], b[1])


def less_than(a: Any, b: Any) -> bool:
    """Strictly less in the partial order."""
    return a != b and less_equal(a, b)


def results_in(summary: Any, time: Any) -> Any:
    """The time after travelling a path with this summary (integers add; products act componentwise)."""
    if type(summary) is int:
        return time + summary
    return (results_in(summary[0], time[0]), results_in(summary[1], time[1]))


def followed_by(first: Any, second: Any) -> Any:
    """The summary of a path that travels ``first`` and then ``second``."""
    if type(first) is int:
        return first + second
    return (followed_by(first[0], second[0]), followed_by(first[1], second[1]))


def depth_of(value: Any) -> int:
    """How many levels a timestamp or summary has (an int is depth 1)."""
    d = 1
    while type(value) is not int:
        value = value[0]
        d += 1
    return d


def time_from_json(value: Any) -> Any:
    """A timestamp or summary from its JSON form (nested two-element arrays become tuples)."""
    if type(value) is int:
        return value
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return (time_from_json(value[0]), time_from_json(value[1]))
    if isinstance(value, bool) or not isinstance(value, (int, list, tuple)):
        raise ValueError(f"not a timestamp: {value!r} (expected an integer or a two-element array)")
    raise ValueError(f"not a timestamp: {value!r} (a product timestamp has exactly two elements)")


# --- per-depth domains ------------------------------------------------------------------------------------


def _pair_less_equal(a: tuple, b: tuple) -> bool:
    return a[0] <= b[0] and a[1] <= b[1]


def _pair_add(s: tuple, t: tuple) -> tuple:
    return (t[0] + s[0], t[1] + s[1])


class TimeDomain:
    """Order and summary operations for the timestamps of one scope depth.

    ``le``/``results_in``/``followed_by`` are plain functions chosen for the depth, so hot loops bind them
    once. ``total`` says the order is total (depth 1), which lets frontiers be a single minimum.
    """

    __slots__ = ("depth", "le", "results_in", "followed_by", "minimum", "identity", "total")

    def __init__(self, depth: int):
        if depth < 1:
            raise ValueError(f"a scope depth is at least 1, not {depth}")
        self.depth = depth
        self.total = depth == 1
        if depth == 1:
            self.le: Callable[[Any, Any], bool] = operator.le
            self.results_in: Callable[[Any, Any], Any] = operator.add
            self.followed_by: Callable[[Any, Any], Any] = operator.add
            self.minimum: Any = 0
        elif depth == 2:
            self.le = _pair_less_equal
            self.results_in = _pair_add
            self.followed_by = _pair_add
            self.minimum = (0, 0)
        else:
            outer = domain(depth - 1)
            ole, oadd = outer.le, outer.results_in

            def le(a, b, ole=ole):
                return a[1] <= b[1] and ole(a[0], b[0])

            def add(s, t, oadd=oadd):
                return (oadd(s[0], t[0]), t[1] + s[1])

            self.le = le
            self.results_in = add
            self.followed_by = add
            self.minimum = (outer.minimum, 0)
        # Summaries have the same shape as times; the identity summary is the minimum (all zeros).
        self.identity = self.minimum

    def less_than(self, a: Any, b: Any) -> bool:
        return a != b and self.le(a, b)

    def parse(self, value: Any) -> Any:
        """A timestamp or summary of this depth from JSON, with a clear error when the shape is wrong."""
        t = time_from_json(value)
        if depth_of(t) != self.depth:
            raise ValueError(
                f"timestamp {value!r} has depth {depth_of(t)}, but this scope's times have depth {self.depth}"
            )
        return t

    def __repr__(self) -> str:
        return f"TimeDomain(depth={self.depth})"


_DOMAINS: dict[int, TimeDomain] = {}


def domain(depth: int) -> TimeDomain:
    """The (shared) :class:`TimeDomain` for a depth."""
    d = _DOMAINS.get(depth)
    if d is None:
        d = _DOMAINS[depth] = TimeDomain(depth)
    return d


class Refinement:
    """How a child scope's times refine its parent's (timely's ``Refines``).

    For an iterative child (one level deeper): ``to_inner(t) = (t, 0)``, ``to_outer((o, i)) = o`` and
    ``summarize((so, si)) = so``, so an inner loop looks like an identity path from outside. For a region
    (same depth) all three are the identity.
    """

    __slots__ = ("outer", "inner", "is_region")

    def __init__(self, outer: TimeDomain, inner: TimeDomain):
        if inner.depth not in (outer.depth, outer.depth + 1):
            raise ValueError(
                f"a nested scope has its parent's depth ({outer.depth}) or one more, not {inner.depth}"
            )
        self.outer = outer
        self.inner = inner
        self.is_region = inner.depth == outer.depth

    def to_inner(self, t: Any) -> Any:
        return t if self.is_region else (t, 0)

    def to_outer(self, t: Any) -> Any:
        return t if self.is_region else t[0]

    def summarize(self, s: Any) -> Any:
        return s if self.is_region else s[0]
