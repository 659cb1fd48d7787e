"""A multi-worker dataflow runtime whose progress is exactly timely's, built on the tracker.

Workers run the same dataflows, exchange data, and broadcast atomic progress batches to every worker; each keeps
its own tracker replica per scope (``worker``). Operators and the Stream API are in ``operators``; graph
description in ``graph``; what an operator sees in ``context``; delivery (threads, chaos, the global view) in
``fabric``; hosting on threads in ``execute`` (hosting on Spark barrier tasks lives outside tracker/, in
``backend/hosting``). ``sync`` has the barrier and the sequencer of the synchronization post, ``strata`` the
Hydroflow-style stratified scheduler. Nothing here imports web or Spark code.
"""

from . import operators as _operators  # noqa: F401  (installs the Stream methods)
from .context import Capability, ContractViolation, OperatorContext
from .execute import execute
from .fabric import Chaos, GlobalView, ThreadFabric
from .graph import Exchange, Pipeline, ScopeBuilder, Stream, loop_summary
from .operators import InputHandle, ProbeHandle
from .worker import Worker

__all__ = [
    "Capability", "Chaos", "ContractViolation", "Exchange", "GlobalView", "InputHandle", "OperatorContext",
    "Pipeline", "ProbeHandle", "ScopeBuilder", "Stream", "ThreadFabric", "Worker", "execute", "loop_summary",
]
