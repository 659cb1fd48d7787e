"""Plan findings: what a finished SQL plan's operators and metrics say a user should change, each citing its metric.

The rules and their default thresholds are DataFlint's (as the design note on diagnosis lists them); the thresholds
are rows of the Spark findings' table (``backend/spark/diagnosis/thresholds.py``, named
``plan.<finding>.<parameter>``), so a
thresholds file changes them as it changes every finding's. Each finding is a mark shaped like the Spark model's
findings (``finding`` is its kind; ``label`` its text; ``stage``; ``recommendation``; ``metric`` and ``value`` say
what fired; ``threshold`` which threshold, as ``Thresholds.fired`` says it), plus ``execution``, ``operator`` (the
plan node id), ``operator_name`` and the execution's ``description`` (what groups a query's findings across its
runs: ``backend/spark/diagnosis/groups.py``).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from backend.spark.diagnosis.thresholds import Thresholds
from backend.spark.sql_plan.metrics import bytes_to_string

__all__ = ["plan_findings", "could_find", "FINDING_KINDS"]

FINDING_KINDS = ("small_files", "broadcastable_sort_merge_join", "large_broadcast", "large_cross_join",
                 "partitioned_scan_without_filter", "long_filter")

_READ_FILES = ("number of files read",)
_READ_BYTES = ("size of files read",)
_WRITTEN_FILES = ("number of written files",)
_WRITTEN_BYTES = ("written output",)


def _metric(node: dict, names: tuple[str, ...]) -> dict | None:
    for m in node.get("metrics", ()):
        if m.get("name") in names:
            return m
    return None


def _value(node: dict, names: tuple[str, ...]) -> float | None:
    m = _metric(node, names)
    return m.get("value") if m is not None else None


def _size(n: float) -> str:
    """Bytes as Spark writes them ("1200.0 B", "3.1 MiB")."""
    return bytes_to_string(int(n))


def _scan(name: str) -> bool:
    return name.startswith("Scan") or name.startswith("FileScan") or "Scan " in name


def _cross(name: str) -> bool:
    return "NestedLoopJoin" in name or name == "CartesianProduct"


def could_find(name: str, desc: str, metrics: dict[str, float | None], thresholds: Thresholds | None = None) -> bool:
    """Whether some rule of :func:`plan_findings` could fire on an operator of this name and description, with
    these metrics (name -> its value where the caller knows it exactly, else None: then any value is assumed):
    what a reader checks before reading a log's plans for their findings (the Spark model, on each execution's
    final plan, knowing the values only the driver set)."""
    name = name.strip()
    t = thresholds or Thresholds()

    def above(metric: str, threshold: str) -> bool:
        value = metrics.get(metric)
        return value is None or value > t[threshold]

    for files_names, bytes_names in ((_READ_FILES, _READ_BYTES), (_WRITTEN_FILES, _WRITTEN_BYTES)):
        if files_names[0] in metrics:
            files, size = metrics[files_names[0]], metrics.get(bytes_names[0])
            if files is None or (files > t["plan.small_files.min_files"] and (
                    size is None or size / files < t["plan.small_files.max_average_bytes"])):
                return True
    partitions = metrics.get("number of partitions read")
    return (name == "SortMergeJoin" or _cross(name)
            or (name == "BroadcastExchange" and "data size" in metrics
                and above("data size", "plan.large_broadcast.bytes"))
            or (_scan(name) and "number of partitions read" in metrics
                and (partitions is None or partitions >= t["plan.partitioned_scan_without_filter.min_partitions"]))
            or (name == "Filter" and len(desc) > t["plan.long_filter.chars"]))


def plan_findings(execution: dict, thresholds: Thresholds | None = None) -> list[dict]:
    """The findings of one execution (``SqlPlans.execution_json``'s body without them), against ``thresholds``
    (default: the table's defaults)."""
    t = thresholds or Thresholds()
    nodes = {n["id"]: n for n in execution.get("nodes", ())}
    out: list[dict] = []

    def mark(kind: str, node: dict, text: str, recommendation: str, metric: str, value: Any, fired: str,
             *also: str) -> None:
        stages = node.get("stages") or []
        out.append({"type": "mark", "at": (execution.get("completed") or 0) / 1000, "finding": kind,
                    "label": f"SQL execution {execution['execution']} · {node['name']} (node {node['id']}): {text}",
                    "execution": execution["execution"], "operator": node["id"], "operator_name": node["name"],
                    "description": execution.get("description") or "",
                    "stage": stages[0] if stages else None, "stages": stages,
                    "recommendation": recommendation, "metric": metric, "value": value,
                    "threshold": t.fired(f"plan.{kind}.{fired}", *(f"plan.{kind}.{a}" for a in also))})

    for node in nodes.values():
        name = node["name"]
        for files_names, bytes_names, verb in ((_READ_FILES, _READ_BYTES, "read"),
                                               (_WRITTEN_FILES, _WRITTEN_BYTES, "written")):
            files, size = _value(node, files_names), _value(node, bytes_names)
            average_under = t["plan.small_files.max_average_bytes"]
            if files and size is not None and files > t["plan.small_files.min_files"] and size / files < average_under:
                mark("small_files", node, f"{int(files):,} files {verb}, {_size(size / files)} on average",
                     "fewer, larger files: coalesce or repartition before writing, or compact the table "
                     f"(files of at least {_size(average_under)})",
                     f"{files_names[0]} / {bytes_names[0]}", {"files": files, "bytes": size},
                     "max_average_bytes", "min_files")
        if name == "SortMergeJoin":
            sides = [_side_bytes(nodes, c) for c in node.get("children", ())]
            known = [s for s in sides if s is not None]
            if len(known) == 2:
                small, large = min(known), max(known)
                fired: tuple[str, ...] = ()
                if small < t["plan.broadcastable_sort_merge_join.small_side_bytes"]:
                    fired = ("small_side_bytes",)
                elif (small < t["plan.broadcastable_sort_merge_join.medium_side_bytes"]
                      and large > t["plan.broadcastable_sort_merge_join.large_side_bytes"]):
                    fired = ("medium_side_bytes", "large_side_bytes")
                if fired:
                    mark("broadcastable_sort_merge_join", node,
                         f"one side is {_size(small)} (the other {_size(large)}): small enough to broadcast",
                         "broadcast the small side: a broadcast() hint, or raise spark.sql.autoBroadcastJoinThreshold "
                         "above its size", "data size of the exchanges feeding the join",
                         {"small_side": small, "large_side": large}, *fired)
        if name == "BroadcastExchange":
            size = _value(node, ("data size",))
            if size is not None and size > t["plan.large_broadcast.bytes"]:
                mark("large_broadcast", node, f"broadcasts {_size(size)}",
                     "do not broadcast this side (drop the hint, or lower spark.sql.autoBroadcastJoinThreshold); "
                     "filter or project it first", "data size", size, "bytes")
        if _cross(name):
            rows = [_rows_into(nodes, c) for c in node.get("children", ())]
            if len(rows) == 2 and None not in rows:
                scanned = rows[0] * rows[1]  # type: ignore[operator]
                if scanned > t["plan.large_cross_join.scanned_rows"]:
                    mark("large_cross_join", node, f"compares {scanned:,.0f} row pairs "
                         f"({rows[0]:,.0f} x {rows[1]:,.0f})",
                         "add an equality condition to the join (so Spark can hash or sort-merge it), or filter "
                         "both sides first", "number of output rows of both inputs (their product)", scanned,
                         "scanned_rows")
        if _scan(name):
            meta = node.get("metadata") or {}
            partitions = _metric(node, ("number of partitions read",))
            read = (partitions.get("value") or 0) if partitions is not None else 0
            if (partitions is not None and meta.get("PartitionFilters", "[]").strip() == "[]"
                    and read >= t["plan.partitioned_scan_without_filter.min_partitions"]):
                mark("partitioned_scan_without_filter", node,
                     f"reads every partition of a partitioned table ({int(read):,} partitions)",
                     "filter on the partition columns so Spark prunes partitions",
                     "PartitionFilters (empty) / number of partitions read", read, "min_partitions")
        if name == "Filter":
            condition = node.get("desc", "")[len("Filter "):] if node.get("desc", "").startswith("Filter") \
                else node.get("desc", "")
            if len(condition) > t["plan.long_filter.chars"]:
                mark("long_filter", node, f"its condition is {len(condition):,} characters long",
                     "simplify the condition: a join with a small table of the values, or isin() over a list",
                     "filter condition length", len(condition), "chars")
    return out


def _upstream(nodes: dict[int, dict], start: int, want: Any, stop: Any) -> dict | None:
    """The first node at or below ``start`` (following children, not below a node where ``stop`` holds) for which
    ``want`` holds."""
    seen: set[int] = set()
    todo = deque([start])
    while todo:
        nid = todo.popleft()
        if nid in seen or nid not in nodes:
            continue
        seen.add(nid)
        if want(nodes[nid]):
            return nodes[nid]
        if not stop(nodes[nid]):
            todo.extend(nodes[nid].get("children", []))
    return None


def _side_bytes(nodes: dict[int, dict], child: int) -> float | None:
    """The bytes a join side brings: the data size of the shuffle feeding it (None when another join's output,
    not an exchange, feeds it)."""
    ex = _upstream(nodes, child, lambda n: "Exchange" in n["name"] and _value(n, ("data size",)) is not None,
                   lambda n: "Exchange" in n["name"] or "Join" in n["name"])
    return _value(ex, ("data size",)) if ex is not None else None


def _rows_into(nodes: dict[int, dict], child: int) -> float | None:
    found = _upstream(nodes, child, lambda n: _value(n, ("number of output rows",)) is not None,
                      lambda n: "Exchange" in n["name"] or "Join" in n["name"])
    return _value(found, ("number of output rows",)) if found is not None else None
