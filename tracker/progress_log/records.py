"""Progress-log records (format v1): the one place that builds them and the one place that checks their shape.

Whoever produces records (the log writer, the Spark model, a live attachment) builds them with the constructors
here, so every record of a type has the same fields in the same order (``type`` first). Whoever consumes them (the
replay, for the CLI and the server alike) asks :func:`record_problem` first: a record whose shape is wrong (a field
of the wrong type, an integer beyond 64 bits, values nested deeper than any real log needs, more capability lists
than outputs) is rejected whole with a reason, before anything else sees it. What a well-shaped record *means*
(does the scope exist, has the time the scope's depth) is the replay's business, and so are a progress record's
fields: the replay reads each of them once anyway as it converts the batch, so it checks them there, once.
``docs/progress-log.md`` is the format's specification; :class:`Limits` says what one record may cost.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FORMAT",
    "VERSION",
    "Limits",
    "DEFAULT_LIMITS",
    "header",
    "header_problem",
    "scope",
    "operator",
    "edge",
    "progress",
    "mark",
    "retire",
    "detail",
    "port_json",
    "record_problem",
    "line_problem",
    "RecordCheck",
]

FORMAT = "flowscope-progress"
VERSION = 1

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


@dataclass(frozen=True)
class Limits:
    """What one record may cost. A record over a limit is rejected with a reason naming the limit.

    The defaults are far beyond what real logs use (the largest shipped fixture's biggest node number is in the
    hundreds) and small enough that one hostile line cannot make the tracker allocate gigabytes: the tracker's
    memory for an operator grows with its node number's scope size and its port counts.
    """

    max_depth: int = 64  # nesting of arrays and objects in one record (timestamps nest one level per scope)
    max_node: int = 1_000_000  # largest child index in a scope (a scope keeps a slot per index up to it)
    max_ports: int = 10_000  # inputs or outputs of one operator or scope
    max_updates: int = 1_000_000  # updates in one progress batch
    max_scope_depth: int = 100  # scopes in scopes: a scope path's length (views nest two JSON levels per scope)


DEFAULT_LIMITS = Limits()


# --- building records ---------------------------------------------------------------------------------------------


def port_json(loc: Any) -> list:
    """A port as JSON: ``["in", node, port]`` / ``["out", node, port]``, from a Location or such a list."""
    return loc.to_json() if hasattr(loc, "to_json") else list(loc)


def header(source: str | None = None, created: str | None = None) -> dict[str, Any]:
    """The first record of every log."""
    rec: dict[str, Any] = {"type": "header", "format": FORMAT, "version": VERSION}
    if source is not None:
        rec["source"] = source
    if created is not None:
        rec["created"] = created
    return rec


def scope(path: Iterable[int], name: str = "", inputs: int = 0, outputs: int = 0, depth: int = 1,
          **extra: Any) -> dict[str, Any]:
    """A nested scope at ``path`` with ``depth`` timestamp levels; ``extra`` fields follow (``attrs``)."""
    return {"type": "scope", "path": list(path), "name": name, "inputs": inputs, "outputs": outputs, "depth": depth,
            **extra}


def operator(scope: Iterable[int], node: int, name: str = "", inputs: int = 1, outputs: int = 1,
             summary: list | None = None, capabilities: list | None = None,
             attrs: dict | None = None) -> dict[str, Any]:
    """A leaf operator; ``summary``, ``capabilities`` and (non-empty) ``attrs`` only when given."""
    rec: dict[str, Any] = {"type": "operator", "scope": list(scope), "node": node, "name": name, "inputs": inputs,
                           "outputs": outputs}
    if summary is not None:
        rec["summary"] = summary
    if capabilities is not None:
        rec["capabilities"] = capabilities
    if attrs:
        rec["attrs"] = attrs
    return rec


def edge(scope: Iterable[int], source: Any, target: Any) -> dict[str, Any]:
    """A channel from output port ``source`` to input port ``target`` (Locations or JSON ports)."""
    return {"type": "edge", "scope": list(scope), "from": port_json(source), "to": port_json(target)}


def progress(scope: Iterable[int], worker: Any, seq: int, at: float, updates: list,
             cause: dict | None = None) -> dict[str, Any]:
    """One atomic batch. ``updates`` are ``[port, time, delta]`` in JSON shape (see :func:`port_json`)."""
    rec: dict[str, Any] = {"type": "progress", "scope": list(scope), "worker": worker, "seq": seq, "at": at,
                           "updates": updates}
    if cause is not None:
        rec["cause"] = cause
    return rec


def mark(label: str, at: float, scope: Iterable[int] | None = None, **extra: Any) -> dict[str, Any]:
    """A timeline annotation; ``extra`` fields follow (``uncertain``, ``job``, ...)."""
    rec: dict[str, Any] = {"type": "mark", "at": at, "label": label}
    if scope is not None:
        rec["scope"] = list(scope)
    rec.update(extra)
    return rec


def detail(scope: list, port: list, time: Any, key: str, at: float | None, value: dict | None) -> dict[str, Any]:
    """Sets (``value`` an object) or clears (``value`` None) the entry ``key`` of the pointstamp ``(port, time)`` in
    ``scope``."""
    return {"type": "detail", "scope": scope, "port": port, "time": time, "key": key, "at": at, "value": value}


def retire(path: Iterable[int]) -> dict[str, Any]:
    """The nested scope at ``path`` has finished for good: nothing in it is held, nothing can reach it, and no record
    will name it or anything inside it again (a reader may fold it out of its live state)."""
    return {"type": "retire", "path": list(path)}


# --- checking records ---------------------------------------------------------------------------------------------


def header_problem(record: Any) -> str | None:
    """None if ``record`` is a progress-log header this reader knows, else why it is not."""
    if type(record) is not dict or record.get("type") != "header" or record.get("format") != FORMAT:
        return f'the first record must be {{"type":"header","format":"{FORMAT}","version":{VERSION}}}'
    if record.get("version") != VERSION:
        return f"progress-log version {record.get('version')!r} is not supported (this reader knows {VERSION})"
    return None


class _Reject(Exception):
    pass


def _depth_within(value: Any, limit: int) -> bool:
    """True if ``value`` nests arrays and objects at most ``limit`` levels deep (iteratively: no recursion)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if type(v) is list:
            children: Iterable[Any] = v
        elif type(v) is dict:
            children = v.values()
        else:
            continue
        if d > limit:
            return False
        stack.extend((c, d + 1) for c in children if type(c) is list or type(c) is dict)
    return True


def _walk_ok(value: Any, limit: int, depth: int = 1) -> bool:
    """True if ``value`` (a list or dict) nests at most ``limit`` levels deep and every integer in it fits in 64
    signed bits (what every consumer can store and send on). One pass over every value, since every non-progress
    record takes it (a Spark log's task details are half its records); it recurses, but never deeper than
    ``limit`` + 1 frames, whatever the value."""
    if depth > limit:
        return False
    for c in value.values() if type(value) is dict else value:
        t = type(c)
        if t is int:
            if not INT64_MIN <= c <= INT64_MAX:
                return False
        elif (t is dict or t is list) and not _walk_ok(c, limit, depth + 1):
            return False
    return True


def _int(record: dict, key: str, low: int, high: int, default: int | None = None) -> int:
    v = record.get(key, default)
    if type(v) is not int or not low <= v <= high:
        raise _Reject(f"{key} must be an integer from {low} to {high}, not {short_repr(v)}")
    return v


def _path(v: Any, key: str, limits: Limits) -> None:
    if type(v) is not list or not all(type(k) is int and 0 <= k <= limits.max_node for k in v):
        raise _Reject(f"{key} {short_repr(v)} is not a list of child indices (0 to {limits.max_node})")
    if len(v) > limits.max_scope_depth:
        raise _Reject(f"{key} nests {len(v)} scopes deep; the limit is {limits.max_scope_depth} (max_scope_depth)")


def _port(v: Any, key: str, limits: Limits) -> None:
    if (type(v) is not list or len(v) != 3 or v[0] not in ("in", "out") or type(v[1]) is not int
            or type(v[2]) is not int or not 0 <= v[1] <= limits.max_node or not 0 <= v[2] < limits.max_ports):
        raise _Reject(f'{key} {short_repr(v)} is not a port ["in"|"out", node, port]')


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 3, 40, 40, 4, 4


def short_repr(v: Any) -> str:
    """A value for a message: short, and safe for values nested thousands deep."""
    return _REPR.repr(v)


def _check_operator(record: dict, limits: Limits) -> None:
    _path(record.get("scope"), "scope", limits)
    _int(record, "node", 1, limits.max_node)
    inputs = _int(record, "inputs", 0, limits.max_ports, 1)
    outputs = _int(record, "outputs", 0, limits.max_ports, 1)
    summary = record.get("summary")
    if summary is not None:
        if type(summary) is not list or len(summary) != inputs:
            raise _Reject(f"summary must be a list of {inputs} rows (one per input)")
        for row in summary:
            if type(row) is not list or len(row) != outputs:
                raise _Reject(f"each summary row must list {outputs} antichains (one per output)")
            if not all(type(ac) is list for ac in row):
                raise _Reject("each summary entry must be a list of path summaries")
    caps = record.get("capabilities")
    if caps is not None:
        if type(caps) is not list or len(caps) > outputs:
            raise _Reject(f"capabilities must be a list of at most {outputs} lists (one per output)")
        if not all(type(times) is list for times in caps):
            raise _Reject("each capabilities entry must be a list of times")
    attrs = record.get("attrs")
    if attrs is not None and type(attrs) is not dict:
        raise _Reject("attrs must be a JSON object")


def _check_scope(record: dict, limits: Limits) -> None:
    path = record.get("path")
    _path(path, "path", limits)
    if not path:
        raise _Reject("path must name a child scope (the root needs no record)")
    _int(record, "inputs", 0, limits.max_ports, 0)
    _int(record, "outputs", 0, limits.max_ports, 0)
    if "depth" in record:
        _int(record, "depth", 1, limits.max_depth)


def _check_edge(record: dict, limits: Limits) -> None:
    _path(record.get("scope"), "scope", limits)
    _port(record.get("from"), "from", limits)
    _port(record.get("to"), "to", limits)


def _check_mark(record: dict, limits: Limits) -> None:
    at = record.get("at")
    if at is not None and type(at) not in (int, float):
        raise _Reject(f"at must be a number of seconds, not {short_repr(at)}")
    if "scope" in record:
        _path(record.get("scope"), "scope", limits)


def _check_retire(record: dict, limits: Limits) -> None:
    path = record.get("path")
    _path(path, "path", limits)
    if not path:
        raise _Reject("path must name a nested scope (the root never retires)")


_CHECKS = {
    "operator": _check_operator,
    "scope": _check_scope,
    "retire": _check_retire,
    "edge": _check_edge,
    "mark": _check_mark,
}


def record_problem(record: Any, limits: Limits = DEFAULT_LIMITS, *, walk: bool = True) -> str | None:
    """None if ``record`` is well shaped, else the reason to reject it whole (see the module docstring).

    Checks shape and cost only: field types, 64-bit integers, nesting depth, port and node numbers within
    ``limits``, summary and capability lists that match the port counts. Unknown record types are well shaped
    (readers ignore them) as long as ``type`` is a string. A progress record's fields are the replay's to check
    (:meth:`tracker.progress_log.replay.Replay.apply`): it reads each of them once as it converts the batch, and a
    second pass here cost a third of a replay. ``walk=False`` skips the walks over every value (depth, 64-bit integers):
    :func:`line_problem` passes it when the line's bytes already rule them out.
    """
    if type(record) is not dict:
        return f"a record must be a JSON object, not {type(record).__name__}"
    kind = record.get("type")
    if type(kind) is not str:
        return f"type must be a string, not {short_repr(kind)}"
    if walk and not _walk_ok(record, limits.max_depth):
        if not _depth_within(record, limits.max_depth):  # both wrong: the depth is the one reported
            return f"values nested more than {limits.max_depth} levels deep"
        return "an integer does not fit in 64 bits"
    check = _CHECKS.get(kind)
    if check is not None:
        try:
            check(record, limits)
        except _Reject as e:
            return str(e)
    return None


# 2**63 has 19 digits: a shorter run of digits is always a 64-bit integer. The test maps every digit to "0" and
# everything else to " " (one C-speed pass) and looks for nineteen "0"s in a row (another), instead of a regex.
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_NINETEEN_DIGITS = b"0" * 19
_ALL_BUT_OPENERS_AND_NEWLINES = bytes(b for b in range(256) if b not in b"[{\n")
_BRACE_AS_BRACKET = bytes(0x5B if b == 0x7B else b for b in range(256))  # "{" -> "["


def _needs_walk(raw: bytes, limits: Limits) -> bool:
    """Could this line nest too deep or hold an integer beyond 64 bits? (Enough brackets, or 19 digits in a row.)"""
    return (raw.count(b"[") + raw.count(b"{") > limits.max_depth
            or _NINETEEN_DIGITS in raw.translate(_DIGITS_AS_ZEROS))


def line_problem(raw: bytes, record: Any, limits: Limits = DEFAULT_LIMITS) -> str | None:
    """:func:`record_problem` for a record just parsed from the line ``raw``, at the cost of a byte scan: the walks
    over every value run only when the line has enough brackets to nest too deep or a run of 19 digits."""
    walk = _needs_walk(raw, limits)
    if not walk and type(record) is dict and record.get("type") == "progress":
        return None
    return record_problem(record, limits, walk=walk)


class RecordCheck:
    """:func:`line_problem` for a reader (``tracker.progress_log.jsonl``'s ``check``), with the byte scans done once
    per batch of lines rather than once per line: most lines of a log are small progress records, and scanning them one
    by one cost a reader a third of its time.

    The reader calls :meth:`lines` with each batch of complete lines before checking them one by one (:meth:`one`);
    when the
    whole batch has no run of 19 digits and no line with more opening brackets than ``max_depth``, none of its
    lines needs the walks."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._walk_free = False
        self._too_deep = b"[" * (limits.max_depth + 1)  # a line's openers, as "[", one more than the limit

    def lines(self, lines: list[bytes]) -> None:
        joined = b"\n".join(lines)
        # each line's opening brackets, all as "[", lines apart: a line with too many has a run of them too long
        openers = joined.translate(_BRACE_AS_BRACKET, _ALL_BUT_OPENERS_AND_NEWLINES)
        self._walk_free = _NINETEEN_DIGITS not in joined.translate(_DIGITS_AS_ZEROS) and self._too_deep not in openers

    def one(self, raw: bytes, record: Any) -> str | None:
        """The reason to reject ``record``, parsed from ``raw`` (one of the last batch of lines), or None."""
        if not self._walk_free:
            return line_problem(raw, record, self.limits)
        if type(record) is dict and record.get("type") == "progress":
            return None
        return record_problem(record, self.limits, walk=False)
