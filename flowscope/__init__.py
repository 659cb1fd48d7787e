"""flowscope: a visual debugger for dataflow progress.

The public surface is small: ``flowscope.attach(spark)`` streams a running PySpark application into a flowscope
session, and the ``flowscope`` command line (``flowscope.cli``). ``flowscope.attach`` keeps its heavy imports
(the server, asyncio) inside the functions that need them, so the command line still starts fast.
"""

from .attach import AttachError, attach

__all__ = ["attach", "AttachError"]
