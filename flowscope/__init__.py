"""flowscope: a visual debugger for dataflow progress.

The public surface is small: ``flowscope.attach(spark)`` streams a running PySpark application into a flowscope
session, and the ``flowscope`` command line (``flowscope.cli``). ``attach`` is imported on first use, so the
command line starts fast.
"""

from typing import Any

__all__ = ["attach"]


def __getattr__(name: str) -> Any:
    if name == "attach":
        from .attach import attach

        return attach
    raise AttributeError(f"module 'flowscope' has no attribute {name!r}")
