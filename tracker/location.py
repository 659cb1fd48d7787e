"""Ports: a node's numbered inputs (*targets*) and outputs (*sources*), as every tracker module names them.

A leaf module: reachability, identity cycles, explanations and the runtime all speak of ``Location`` s, and none
of them needs the others to do so.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["IN", "KIND_NAMES", "OUT", "Location", "Source", "Target", "new_location"]

IN = 0
OUT = 1
KIND_NAMES = ("in", "out")


class Location(NamedTuple):
    """A port of a node. ``kind`` is ``IN`` (a target, input port) or ``OUT`` (a source, output port).

    Locations sort by node, then targets before sources, then port: timely's ``Location`` order.
    """

    node: int
    kind: int
    port: int

    @property
    def is_target(self) -> bool:
        return self.kind == IN

    @property
    def is_source(self) -> bool:
        return self.kind == OUT

    def to_json(self) -> list:
        return [KIND_NAMES[self.kind], self.node, self.port]

    @classmethod
    def from_json(cls, value: Any) -> Location:
        try:
            kind, node, port = value
            k = KIND_NAMES.index(kind)
        except (TypeError, ValueError):
            raise ValueError(f'not a port: {value!r} (expected ["in"|"out", node, port])') from None
        if type(node) is not int or type(port) is not int or node < 0 or port < 0:
            raise ValueError(f"not a port: {value!r} (node and port are non-negative integers)")
        return cls(node, k, port)

    def __str__(self) -> str:
        return f"{KIND_NAMES[self.kind]}({self.node},{self.port})"


# ``new_location(Location, (node, kind, port))`` makes a Location without the named tuple's Python-level
# ``__new__``: the building loops make one per port and per internal path (a tenth of a 10,000-operator build).
new_location = tuple.__new__


def Target(node: int, port: int) -> Location:
    """Input ``port`` of ``node`` (for node 0: scope output ``port``)."""
    return new_location(Location, (node, IN, port))


def Source(node: int, port: int) -> Location:
    """Output ``port`` of ``node`` (for node 0: scope input ``port``)."""
    return new_location(Location, (node, OUT, port))
