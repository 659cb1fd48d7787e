"""Pausing Python's cyclic garbage collector while a bulk step allocates many objects that all stay alive.

Building a 10,000-operator scope's tracker, its port rows, or its layout makes a few hundred thousand containers
that outlive the step. The collector counts them as they are made and runs, several times per step, full passes
over the whole heap (the replay, the history, the session's tables), finding nothing to free.
Paused for the step, it runs once afterwards as usual, on its own thresholds.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off, if it was on.

    Nested or concurrent pauses leave it to the outermost one; reference counting still frees everything that is not in
    a cycle."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
