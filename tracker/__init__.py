"""flowscope's progress tracker: a Python implementation of timely dataflow's progress tracking.

One concept per module, as in timely's ``progress/``: ``timestamp`` (times, summaries, refinement),
``change_batch``, ``frontier`` (antichains), ``reachability`` (builder and tracker of one scope), ``operate``
(the child interface), ``subgraph`` (scopes and child 0), ``broadcast`` (the distributed protocol of atomic
batches), ``explain`` (who holds a frontier), ``contracts`` (checking batches against the progress contract),
``progress_log`` (the log format) and ``replay`` (a log through the scope hierarchy). Nothing here imports web
or Spark code.
"""

from tracker.change_batch import ChangeBatch
from tracker.frontier import Antichain, MutableAntichain
from tracker.operate import Operate
from tracker.reachability import IN, OUT, Builder, CycleError, Location, Source, Target, Tracker
from tracker.subgraph import OperatorNode, Subgraph
from tracker.timestamp import Product, Refinement, TimeDomain, domain, followed_by, less_equal, less_than, results_in

__all__ = [
    "Antichain", "Builder", "ChangeBatch", "CycleError", "IN", "Location", "MutableAntichain", "OUT", "Operate",
    "OperatorNode", "Product", "Refinement", "Source", "Subgraph", "Target", "TimeDomain", "Tracker", "domain",
    "followed_by", "less_equal", "less_than", "results_in",
]
