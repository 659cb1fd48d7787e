"""Driver loops in a Spark job's stage DAG: which stages are skipped, which repeat the same code on their own output.

An iterative algorithm driven from the driver (PageRank, k-means, gradient steps) submits one job per iteration, and
each job's lineage holds every earlier iteration, with new stage ids each time: the Spark model's recursive stage
signatures differ per job. What repeats is the *code*: a stage's name (its call site) and its RDDs' scopes and call
sites, as sets (:func:`loop_key`). From that this module tells which stages are *skipped* (their output exists:
:func:`shuffle_writes`), which are *loop steps* (a parent runs the same code one iteration earlier), and which jobs
are *iterations*, by a chain of steps or, when iterations do not chain (k-means), by *repetition* of the previous
job's code on new data from common data (:class:`JobCode`, :func:`repeats`). docs/spark-model.md ("Loops") states
the rule in full.

Everything here is a pure function of one job's ``Stage Infos`` and what completed before; ``placement.py`` decides
where the stages go.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import orjson

__all__ = ["JobCode", "LoopPlan", "StageCode", "chain_positions", "job_code", "loop_key", "output_rdd",
           "plan_iteration", "plan_repeat", "rdd_scope_name", "repeats", "shuffle_writes", "shuffles_read"]


def rdd_scope_name(rdd: dict) -> str | None:
    """The name of an RDD's operation scope (``map``, ``Exchange``...), None without one."""
    scope = rdd.get("Scope")
    if not scope or type(scope) is not str:
        return None
    return _scope_name(scope)


@lru_cache(maxsize=4096)  # read once per RDD of every job (StageCode), and the same scopes repeat job after job
def _scope_name(scope: str) -> str | None:
    try:
        name = orjson.loads(scope).get("name")
    except (ValueError, AttributeError):
        return None
    return name if type(name) is str else None  # a damaged scope names nothing (sorted with names, kept in attrs)


class StageCode:
    """What one stage info says about the code its stage runs, read in one pass over its RDDs.

    A job's start reads it for the stage's operator signature, its loop key, its operator's attributes and the job's
    :class:`JobCode`.

    ``scopes``: its RDDs' scope names (those with one), sorted, repeats kept; ``callsites``: every RDD's call site
    (as text), sorted; ``key``: its :func:`loop_key`; ``rdd_names``: its RDDs' names, in order; ``output`` (its
    :func:`output_rdd`) and ``rdd_ids`` (its RDDs' ids) are read when first asked for (a stage with children, a
    possible repetition)."""

    __slots__ = ("name", "scopes", "callsites", "key", "rdd_names", "_rdds", "_ids")

    def __init__(self, info: dict) -> None:
        rdds = info.get("RDD Info") or ()
        scopes: list[str] = []
        callsites: list[str] = []
        names: list = []
        for r in rdds:
            get = r.get
            names.append(get("Name"))
            name = rdd_scope_name(r)
            if name:
                scopes.append(name)
            callsite = get("Callsite", "")
            callsites.append(callsite if type(callsite) is str else str(callsite))
        scopes.sort()
        callsites.sort()
        self.name = info.get("Stage Name")
        self.scopes = s = tuple(scopes)
        self.callsites = c = tuple(callsites)
        # the sets of scopes and call sites, sorted (most stages repeat neither)
        self.key: tuple = (self.name, s if len(set(s)) == len(s) else tuple(sorted(set(s))),
                           c if len(set(c)) == len(c) else tuple(sorted(set(c))))
        self.rdd_names = names
        self._rdds = rdds
        self._ids: list[int] | None = None

    @property
    def rdd_ids(self) -> list[int]:
        if self._ids is None:
            self._ids = [i for i in (r.get("RDD ID") for r in self._rdds) if type(i) is int]
        return self._ids

    @property
    def output(self) -> int | None:
        ids = self.rdd_ids
        return max(ids) if ids else None


def loop_key(info: dict) -> tuple:
    """What a stage runs, as code: its name (call site) and the sets of its RDDs' scopes and call sites."""
    return StageCode(info).key


def output_rdd(info: dict) -> int | None:
    """The id of the RDD a stage writes (its last one: children get higher ids than their parents)."""
    return StageCode(info).output


def shuffle_writes(info: dict, children: list[dict]) -> frozenset:
    """The shuffles a shuffle map stage writes, each as (its output RDD, the RDD of a child stage that reads it).

    A later job's stage that writes the same ones is skipped. Two shuffles of one RDD (Scala's ``pairs.reduceByKey`` and
    ``pairs.groupByKey``) are read through different RDDs, so they stay apart. A log without RDD parent ids names each
    by the output RDD alone."""
    return shuffles_read(output_rdd(info), children)


def shuffles_read(out: int | None, children: list[dict]) -> frozenset:
    """:func:`shuffle_writes` of a stage whose output RDD is ``out``."""
    if out is None:
        return frozenset()
    reads = {(out, r.get("RDD ID")) for c in children for r in c.get("RDD Info") or []
             if isinstance(r.get("Parent IDs"), list) and out in r["Parent IDs"]}
    return frozenset(reads) if reads else frozenset({(out, None)})


@dataclass
class LoopPlan:
    """Where one job's stages go when the job is an iteration.

    The loop's key, and for every stage placed in the loop its iteration (members of the loop's chain: their position;
    stages downstream of a running member: the highest iteration among their parents in the loop)."""

    key: tuple
    iteration: int  # the job's: its highest running member's
    in_loop: dict[int, int]  # stage id -> iteration
    members: set[int]  # stages running the loop's code (the loop's step operator)


def chain_positions(keys: Mapping[int, tuple], parents: Mapping[int, list[int]]) -> dict[int, int]:
    """Each stage's position in its chain of stages running the same code (0: no parent runs it)."""
    if not any(keys.get(p) == key for sid, key in keys.items() for p in parents[sid]):
        return dict.fromkeys(keys, 0)  # no chain (most jobs)
    pos: dict[int, int] = {}
    for start in sorted(keys):
        stack = [start]
        while stack:  # iterative post-order: lineages of thousands of iterations stay off the call stack
            sid = stack[-1]
            if sid in pos:
                stack.pop()
                continue
            same = [p for p in parents[sid] if keys.get(p) == keys[sid]]
            todo = [p for p in same if p not in pos]
            if todo:
                stack += todo
                continue
            pos[sid] = 1 + max(pos[p] for p in same) if same else 0
            stack.pop()
    return pos


def plan_iteration(keys: Mapping[int, tuple], pos: Mapping[int, int], parents: Mapping[int, list[int]],
                   skipped: Collection[int], known: Collection[tuple]) -> LoopPlan | None:
    """The loop this job iterates, or None.

    ``keys``: each stage's :func:`loop_key`; ``pos``: their :func:`chain_positions`; ``parents``: each stage's parents
    within the job; ``skipped``: the stages whose output exists; ``known``: the keys of the region's loops so far (a job
    that runs a known loop's code is one of its iterations, even at position 0)."""
    running = [s for s in sorted(keys) if s not in skipped]
    steps = [s for s in running if pos[s] >= 1 or keys[s] in known]
    if not steps:
        return None
    lead = max(steps, key=lambda s: (pos[s], -s))
    key = keys[lead]
    members = {s for s in keys if keys[s] == key}
    in_loop = {s: pos[s] for s in members}
    order = _downstream(members, keys, parents, skipped)
    for _ in range(len(order) + 1):  # parents before children, whatever the ids' order
        changed = False
        for s in order:
            it = max((in_loop[p] for p in parents[s] if p in in_loop), default=None)
            if it is not None and in_loop.get(s) != it:
                in_loop[s] = it
                changed = True
        if not changed:
            break
    return LoopPlan(key, pos[lead], in_loop, members)


def _downstream(members: set[int], keys: Mapping[int, tuple], parents: Mapping[int, list[int]],
                skipped: Collection[int]) -> list[int]:
    """The stages the job runs downstream of its running ``members``, by id.

    The iteration's own work (its action's result stage), not the members themselves."""
    children: dict[int, list[int]] = {s: [] for s in keys}
    for s, ps in parents.items():
        for p in ps:
            children[p].append(s)
    frontier = [s for s in members if s not in skipped]
    seen = set(frontier)
    while frontier:
        s = frontier.pop()
        for c in children[s]:
            if c not in seen and c not in skipped:
                seen.add(c)
                frontier.append(c)
    return sorted(seen - members)


class JobCode:
    """What a job of a batch region ran, to tell a repetition.

    The loop keys of its running stages, the RDDs they write (each stage's output RDD), and every RDD they compute or
    read. Made from the running stages' :class:`StageCode` s (``running``), the RDD sets are read only when asked for:
    only a job whose keys are its region's previous job's needs them."""

    __slots__ = ("keys", "_outputs", "_rdds", "_running")

    def __init__(self, keys: frozenset, outputs: frozenset | None = None, rdds: frozenset | None = None,
                 running: Sequence[StageCode] = ()) -> None:
        self.keys = keys
        self._outputs, self._rdds, self._running = outputs, rdds, running

    @property
    def outputs(self) -> frozenset:
        if self._outputs is None:
            self._outputs = frozenset(c.output for c in self._running if c.output is not None)
        return self._outputs

    @property
    def rdds(self) -> frozenset:
        if self._rdds is None:
            self._rdds = frozenset(r for c in self._running for r in c.rdd_ids)
        return self._rdds


def job_code(codes: Mapping[int, StageCode], skipped: Collection[int]) -> JobCode:
    """A job's :class:`JobCode` from its stages' :class:`StageCode` s and skipped set."""
    running = [c for s, c in codes.items() if s not in skipped]
    return JobCode(frozenset(c.key for c in running), running=running)


def repeats(previous: JobCode | None, job: JobCode) -> bool:
    """Whether ``job`` runs ``previous``'s code again on a new dataset from a common one.

    See the module docstring; that it started after ``previous`` ended is the caller's to check."""
    return (previous is not None and bool(job.keys) and job.keys == previous.keys and bool(job.outputs)
            and job.outputs.isdisjoint(previous.outputs) and not job.rdds.isdisjoint(previous.rdds))


def plan_repeat(keys: Mapping[int, tuple], parents: Mapping[int, list[int]], skipped: Collection[int],
                iteration: int) -> LoopPlan:
    """Where a repeating job's stages go.

    Its first running stage's code is the loop's step, it and what the job runs downstream of it at ``iteration``
    (nothing chains: every stage of the iteration is at it)."""
    running = [s for s in sorted(keys) if s not in skipped]
    lead = next(s for s in running if all(p in skipped for p in parents[s]))  # a job's stages form a DAG
    members = {s for s in keys if keys[s] == keys[lead]}
    in_loop = {s: iteration for s in members}
    in_loop.update((s, iteration) for s in _downstream(members, keys, parents, skipped))
    return LoopPlan(keys[lead], iteration, in_loop, members)
