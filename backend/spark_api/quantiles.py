"""Spark's indexed quantiles: the value at index ``min(floor(q * n), n - 1)`` of the sorted values, for each
requested ``q`` in increasing order (``AppStatusStore.taskSummary``), not an interpolation."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["indexed_quantiles", "parse_quantiles"]


def parse_quantiles(text: str) -> list[float]:
    """The ``quantiles`` parameter, sorted; ValueError with Spark's 400 message for a value that is not a number."""
    out = []
    for part in text.split(","):
        try:
            out.append(float(part))
        except ValueError:
            raise ValueError(f'Bad value for parameter "quantiles".  Expected a double, got "{part}"') from None
    return sorted(out)


def indexed_quantiles(sorted_values: Sequence[int | float], quantiles: Sequence[float],
                      count: int | None = None) -> list[float]:
    """``count`` places the quantiles (default: the values' own count); a place past the values is NaN."""
    n = len(sorted_values) if count is None else count
    return [float(sorted_values[i]) if (i := min(int(q * n), n - 1)) < len(sorted_values) else math.nan
            for q in quantiles]
