"""The plan graph of one SQL execution, built from an event's ``sparkPlanInfo`` tree as Spark's SQL tab builds it.

Spark numbers the graph's nodes in a depth-first walk of the tree (the ids the History Server's
``/sql/{execution}`` REST answer and the SQL tab use), skipping the wrappers that are not operators of their own:
``InputAdapter`` and the adaptive query stages (``ShuffleQueryStage``, ``BroadcastQueryStage``,
``TableCacheQueryStage``, ``ResultQueryStage``) stand for their child; a ``WholeStageCodegen (n)`` node becomes a
*cluster* whose members are the operators below it down to the next ``InputAdapter``; a ``ReusedExchange`` (or a
reused query stage or subquery) is an edge from the exchange it reuses, not a node. Edges go from child to parent
(data flow).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = ["PlanMetric", "PlanNode", "PlanGraph", "build_graph", "codegen_stages", "node_stages", "PlanShapeError"]

CODEGEN = "WholeStageCodegen"
_PASS_THROUGH_STAGES = ("BroadcastQueryStage", "ShuffleQueryStage")
_REUSABLE = ("Subquery", "InMemoryRelation")
MAX_DEPTH = 2000  # deeper plans are cut (a hostile or broken log must not exhaust the stack)


class PlanShapeError(ValueError):
    """A ``sparkPlanInfo`` that is not a plan tree (what is wrong, and where)."""


@dataclass(slots=True, frozen=True)
class PlanMetric:
    name: str
    accumulator: int
    type: str  # sum | size | timing | nsTiming | average (or a connector's custom type)


@dataclass(slots=True)
class PlanNode:
    id: int
    name: str
    desc: str
    metrics: list[PlanMetric]
    metadata: dict[str, str]
    cluster: PlanNode | None = None  # the WholeStageCodegen node it runs inside
    members: list[int] = field(default_factory=list)  # a codegen cluster's operators

    @property
    def is_codegen(self) -> bool:
        return self.name.startswith(CODEGEN)

    @property
    def codegen_stage(self) -> int | None:
        """The codegen stage number ``n`` of ``WholeStageCodegen (n)``: its own, or the cluster's it runs in."""
        node = self if self.is_codegen else self.cluster
        if node is None:
            return None
        text = node.name.strip()[len(CODEGEN):].strip()
        if text.startswith("(") and text.endswith(")") and text[1:-1].strip().isdigit():
            return int(text[1:-1])
        return None


@dataclass(slots=True)
class PlanGraph:
    nodes: dict[int, PlanNode]  # by id, in id order
    edges: list[tuple[int, int]]  # (from child, to parent)
    _children: dict[int, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for a, b in self.edges:
            self._children.setdefault(b, []).append(a)

    def children(self, node_id: int) -> list[int]:
        return list(self._children.get(node_id, ()))

    def accumulators(self) -> dict[int, PlanMetric]:
        return {m.accumulator: m for n in self.nodes.values() for m in n.metrics}


def _key(info: dict, known: dict[int, Any]) -> Any:
    """What makes two plan subtrees the same for reuse (Spark compares name, string, children and metadata);
    ``known``: the keys found so far in this tree, by ``id`` of the subtree (each subtree's key is found once)."""
    got = known.get(id(info))
    if got is not None:
        return got
    name = info.get("nodeName")
    simple = "InMemoryRelation" if name == "InMemoryRelation" else info.get("simpleString")
    meta = info.get("metadata")
    meta_key = tuple(sorted((str(k), str(v)) for k, v in meta.items())) if isinstance(meta, dict) else ()
    children = info.get("children")
    kids = tuple(_key(c, known) for c in children if isinstance(c, dict)) if isinstance(children, list) else ()
    known[id(info)] = key = (name, simple, kids, meta_key)
    return key


def _metrics(info: dict) -> list[PlanMetric]:
    """A node's metrics; a ``metrics`` field that is not a list is a damaged node (:class:`PlanShapeError`)."""
    metrics = info.get("metrics") or []
    if not isinstance(metrics, list):
        raise PlanShapeError(f"{info.get('nodeName', '')}: metrics is a {type(metrics).__name__}, not a list")
    out = []
    for m in metrics:
        if not isinstance(m, dict):
            continue
        acc = m.get("accumulatorId")
        if isinstance(acc, bool) or not isinstance(acc, int):
            continue
        out.append(PlanMetric(str(m.get("name", "")), acc, str(m.get("metricType") or "sum")))
    return out


class _Builder:
    def __init__(self) -> None:
        self.next_id = 0
        self.nodes: dict[int, PlanNode] = {}
        self.edges: list[tuple[int, int]] = []
        self.reused: dict[Any, PlanNode] = {}
        self.keys: dict[int, Any] = {}  # _key's, by id of the subtree (the tree outlives the build)

    def node(self, info: dict, cluster: PlanNode | None) -> PlanNode:
        meta = info.get("metadata")
        node = PlanNode(self.next_id, str(info.get("nodeName", "")), str(info.get("simpleString", "")),
                        _metrics(info), {str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {},
                        cluster)
        self.next_id += 1
        self.nodes[node.id] = node
        if cluster is not None:
            cluster.members.append(node.id)
        return node

    def link(self, child: PlanNode, parent: PlanNode | None) -> None:
        if parent is not None:
            self.edges.append((child.id, parent.id))

    def walk(self, info: Any, parent: PlanNode | None, cluster: PlanNode | None, depth: int) -> None:
        if not isinstance(info, dict):
            raise PlanShapeError(f"a plan node is a {type(info).__name__}, not an object")
        if depth > MAX_DEPTH:
            raise PlanShapeError(f"the plan is deeper than {MAX_DEPTH} operators")
        name = str(info.get("nodeName", ""))
        children = info.get("children") or []
        if not isinstance(children, list):
            raise PlanShapeError(f"{name}: children is a {type(children).__name__}, not a list")
        first = children[0] if children else None
        if name.startswith(CODEGEN):
            self.walk_only(first, name, parent, self.node(info, None), depth)
        elif name == "InputAdapter":
            self.walk_only(first, name, parent, None, depth)
        elif name in _PASS_THROUGH_STAGES:
            reused = self.reused.get(_key(first, self.keys)) if isinstance(first, dict) else None
            if reused is not None and parent is not None:
                self.link(reused, parent)
            else:
                self.walk_only(first, name, parent, None, depth)
        elif name in ("TableCacheQueryStage", "ResultQueryStage"):
            self.walk_only(first, name, parent, None, depth)
        elif name in _REUSABLE and cluster is not None:
            self.walk(info, parent, None, depth)
        elif name in _REUSABLE and _key(info, self.keys) in self.reused:
            self.link(self.reused[_key(info, self.keys)], parent)
        elif name == "ReusedSubquery":
            self.walk_only(first, name, parent, cluster, depth)
        elif name == "ReusedExchange" and isinstance(first, dict) and _key(first, self.keys) in self.reused:
            self.link(self.reused[_key(first, self.keys)], parent)
        else:
            node = self.node(info, cluster)
            if "Exchange" in name or name in _REUSABLE:
                self.reused[_key(info, self.keys)] = node
            self.link(node, parent)
            for child in children:
                self.walk(child, node, cluster, depth + 1)

    def walk_only(self, child: Any, name: str, parent: PlanNode | None, cluster: PlanNode | None,
                  depth: int) -> None:
        if child is None:
            return  # a wrapper without its child: nothing below it to draw
        self.walk(child, parent, cluster, depth + 1)


def build_graph(plan_info: Any) -> PlanGraph:
    """The plan graph of a ``sparkPlanInfo`` tree; raises :class:`PlanShapeError` when it is not one."""
    b = _Builder()
    b.walk(plan_info, None, None, 0)
    return PlanGraph(dict(sorted(b.nodes.items())), b.edges)


def node_stages(node: PlanNode, ran_in: Mapping[int, Iterable[int]],
                codegen_in: Mapping[str, Iterable[int]]) -> dict[int, None]:
    """The stages a node ran in, in the order found: those whose tasks set one of its metrics (``ran_in``:
    accumulator -> stages), and for a node in a codegen cluster (or the cluster itself) the stages that ran its
    codegen stage (``codegen_in``: ``"WholeStageCodegen (n)"`` -> stages, known from their RDDs' scopes), else, when
    that says nothing, the stages that set one of the cluster's metrics."""
    stages: dict[int, None] = {}
    for m in node.metrics:
        for s in ran_in.get(m.accumulator, ()):
            stages[s] = None
    cluster = node if node.is_codegen else node.cluster
    if cluster is not None:
        for s in codegen_in.get(cluster.name.strip(), ()):
            stages[s] = None
        if not stages:
            for m in cluster.metrics:
                for s in ran_in.get(m.accumulator, ()):
                    stages[s] = None
    return stages


def _scope_name(rdd: Any) -> str | None:
    """The operation scope's name of an RDD (``Scope`` is a JSON string such as ``{"id":"12","name":"Exchange"}``)."""
    text = rdd.get("Scope") if isinstance(rdd, dict) else None
    if not isinstance(text, str) or '"name"' not in text:
        return None
    try:
        scope = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    name = scope.get("name") if isinstance(scope, dict) else None
    return name if isinstance(name, str) else None


def codegen_stages(rdd_infos: Any) -> list[str]:
    """The codegen stages (``"WholeStageCodegen (n)"``) a Spark stage runs: the scopes of its RDDs (``RDD Info``)."""
    names = {_scope_name(r) for r in rdd_infos} if isinstance(rdd_infos, list) else set()
    return sorted(n for n in names if n and n.startswith(CODEGEN))
