"""The Operate interface: everything a scope needs to know about a child to reason about progress around it.

As the seeds describe it, a child declares its ports, then two initialization calls exchange structure (the
child's *internal* summaries from its inputs to its outputs with its initial capabilities; the scope's
*external* summaries from the child's outputs back to its inputs with the child's initial input frontiers), and
two run-time calls exchange progress: the scope *pushes* changes to the child's input frontiers, and *pulls* the
child's progress (messages consumed at inputs, changes to capabilities held at outputs, messages produced at
outputs). A nested scope is itself such a child: that is how a subgraph is presented to its parent as an operator.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from tracker.change_batch import ChangeBatch
from tracker.frontier import Antichain

__all__ = ["Operate"]

Summary = list  # Summary[i][o] -> Antichain of summaries from input i to output o


class Operate(ABC):
    """A child of a scope, seen only through its ports and its progress."""

    @property
    @abstractmethod
    def inputs(self) -> int: ...

    @property
    @abstractmethod
    def outputs(self) -> int: ...

    @abstractmethod
    def get_internal_summary(self) -> tuple[list[list[Antichain]], list[ChangeBatch]]:
        """Summaries from each input to each output, and the capabilities initially held at each output."""

    @abstractmethod
    def set_external_summary(self, summary: list[list[Antichain]], frontiers: Sequence[ChangeBatch]) -> None:
        """Summaries from each output back to each input outside the child, and each input's initial frontier."""

    @abstractmethod
    def push_external_progress(self, frontier_changes: Sequence[ChangeBatch]) -> None:
        """Changes to the child's input frontiers (one batch of ``(time, ±count)`` per input). One-way."""

    @abstractmethod
    def pull_internal_progress(
        self, consumed: Sequence[ChangeBatch], internal: Sequence[ChangeBatch], produced: Sequence[ChangeBatch]
    ) -> bool:
        """Drain the child's progress into the given batches; True while the child may still do anything."""
