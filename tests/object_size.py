"""Deep size of an object graph: what tests/test_bounded_live.py bounds and benchmarks/live_retention.py reports."""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterable

__all__ = ["deep_size"]

# shared by everything, not owned by the object measured
_SKIP = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType)


def deep_size(root: object, stop: Iterable[int] = ()) -> int:
    """Bytes of every object reachable from ``root`` (``sys.getsizeof`` each, once), not following classes,
    modules and functions, nor the objects whose ids are in ``stop`` (parts measured apart)."""
    seen: set[int] = set(stop)
    todo, total = [root], 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, _SKIP):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        todo.extend(gc.get_referents(obj))
    return total
