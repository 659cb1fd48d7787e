"""A multi-worker dataflow runtime whose progress is exactly timely's, built on the tracker.

Workers run the same dataflows, exchange data, and broadcast atomic progress batches to every worker; each keeps
its own tracker replica per scope (``worker``), and speaks ``tracker.broadcast``'s protocol. The Stream API and
graph description are in ``graph``, what operators do in ``operators``; what an operator sees (and the small
interface through which it reaches its worker) in ``context``; delivery (threads, chaos, the global view) in
``fabric``; hosting on threads in ``execute`` (hosting on Spark barrier tasks lives outside tracker/, in
``backend/hosting``). ``sync`` has the barrier and the sequencer of the synchronization post, ``strata`` the
Hydroflow-style stratified scheduler. Nothing here imports web or Spark code.
"""

from tracker.runtime.context import Capability, ContractViolation, OperatorContext
from tracker.runtime.execute import execute
from tracker.runtime.fabric import Chaos, Fabric, GlobalView, ThreadFabric
from tracker.runtime.graph import Exchange, Pipeline, ScopeBuilder, Stream, loop_summary
from tracker.runtime.operators import InputHandle, ProbeHandle
from tracker.runtime.worker import Worker

__all__ = [
    "Capability", "Chaos", "ContractViolation", "Exchange", "Fabric", "GlobalView", "InputHandle", "OperatorContext",
    "Pipeline", "ProbeHandle", "ScopeBuilder", "Stream", "ThreadFabric", "Worker", "execute", "loop_summary",
]
