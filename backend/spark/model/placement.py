"""Stage placement: each stage's operator signature, whether Spark skips it, and where it goes in its region.

A stage's operator is named by its *signature* (its name and RDD names/scopes, never ids, plus its parents'
signatures), so micro-batch 41 and 42 run through the same operators; signatures are interned as ids, of which a
bounded number are remembered. A stage whose shuffle output exists already is *skipped* (it sends its token on to
the children that run). A driver loop's iteration (``loops.py``) goes to the loop's nested scope, at
``(epoch, iteration)``: the step operator for the stages running the loop's code, loop-local signatures for the
others.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from backend.spark.model.loops import (
    StageCode,
    chain_positions,
    job_code,
    plan_iteration,
    plan_repeat,
    repeats,
    shuffles_read,
)
from backend.spark.model.retention import JobRetention
from backend.spark.model.state import NO_SHUFFLES, Region
from tracker.progress_log import records as log_records

__all__ = ["FEEDBACK_NODE", "KEEP_WRITTEN", "LOOP_STEP", "SIGNATURE_IDS_KEPT", "JobLineage", "Placement", "stage_label",
           "StagePlacement", "job_lineage"]

SIGNATURE_IDS_KEPT = 50_000  # stage signatures remembered at least (_intern_signature): ~10 MB at most
KEEP_WRITTEN = 100_000  # shuffle outputs remembered for recognising skipped stages (a few MB at most)
LOOP_STEP = ("loop step",)  # the signature of a loop's step operator, in its loop scope
FEEDBACK_NODE = 2  # a loop scope's feedback operator (node 1 is its driver)

Placement = dict[int, tuple[Region, Any, Any]]  # stage id -> (its scope, its operator's signature, its time there)


@dataclass(slots=True)
class JobLineage:
    """A job's stages as its start event lists them: each one's info, parents and children within the job, code."""

    by_id: dict[Any, dict]  # stage id -> its Stage Info
    order: list[int]  # the stage ids, ascending
    parents: dict[int, list[int]]
    children: dict[int, list[int]]
    codes: dict[int, StageCode]


def job_lineage(infos: list) -> JobLineage:
    """The lineage of a job's ``Stage Infos`` (parents outside the job left out)."""
    by_id = {i.get("Stage ID"): i for i in infos}
    order = sorted(by_id)
    parents: dict[int, list[int]] = {}
    children: dict[int, list[int]] = {sid: [] for sid in by_id}
    for sid, info in by_id.items():
        listed = info.get("Parent IDs")
        parents[sid] = ps = [p for p in listed if p in by_id] if listed else []
        for p in ps:
            children[p].append(sid)
    codes = {sid: StageCode(info) for sid, info in by_id.items()}  # every RDD read once, here
    return JobLineage(by_id, order, parents, children, codes)


class StagePlacement(JobRetention):
    """The model's stage signatures, the shuffle outputs it remembers, and where it places each stage of a job."""

    def __init__(self, retain_jobs: int | None = None) -> None:
        super().__init__(retain_jobs)
        # the shuffles stages that completed wrote, the latest KEEP_WRITTEN (a later stage writing them is skipped)
        self._written: dict[tuple, None] = {}
        # a stage signature (base, its parents' ids) -> its id, for the signatures seen last (_intern_signature)
        self._signature_ids: dict[Any, int] = {}
        self._older_signature_ids: dict[Any, int] = {}  # the generation before: promoted back when seen again
        self._next_signature_id = 0

    def _signatures(self, lineage: JobLineage, streaming: bool) -> dict[int, Any]:
        """Each stage's signature: its code and its parents' signatures (interned), distinct within the job."""
        codes, parents = lineage.codes, lineage.parents
        sigs: dict[int, Any] = {}
        interned = self._signature_ids

        def signature(sid: int, depth: int = 0) -> Any:
            sig = sigs.get(sid)
            if sig is None:
                base = _base_signature(codes[sid], streaming)
                if depth < 50:
                    ps = parents[sid]
                    if len(ps) > 1:
                        base = (base, tuple(sorted((signature(p, depth + 1) for p in ps), key=repr)))
                    else:
                        base = (base, (signature(ps[0], depth + 1),) if ps else ())
                # interned: a lineage that grows by one stage per job (a driver loop) would otherwise nest its
                # signatures ever deeper, and hashing and sorting them would cost the square of the lineage per job
                sig = interned.get(base)
                if sig is None:
                    sig = self._intern_signature(base)
                sigs[sid] = sig
            return sig

        _distinct(lineage.order, signature, sigs)
        return sigs

    def _skipped_stages(self, lineage: JobLineage) -> tuple[dict[int, frozenset], Collection[int]]:
        """The shuffles each stage with children in the job writes, and the stages whose output exists already."""
        by_id, codes = lineage.by_id, lineage.codes
        writes = {sid: shuffles_read(codes[sid].output, [by_id[c] for c in cs])
                  for sid, cs in lineage.children.items() if cs}
        skipped = {sid for sid, w in writes.items() if self._output_exists(sid, w)} if writes else NO_SHUFFLES
        return writes, skipped

    def _output_exists(self, sid: int, writes: frozenset) -> bool:
        """Whether a stage's shuffle output is there already, so Spark skips it (see loops.py)."""
        if self._completed(sid):
            return True
        written = self._written
        return bool(writes) and all(w in written for w in writes)

    def _wrote(self, writes: frozenset) -> None:
        """Remember the shuffles a completed stage wrote.

        The latest ``KEEP_WRITTEN`` (Spark keeps a shuffle while its RDD lives; one older than that is taken as gone:
        its stage then waits for its tokens like any, and its job's end releases them, as for a stage Spark never
        submitted)."""
        written = self._written
        for w in writes:
            written.pop(w, None)
            written[w] = None
        while len(written) > KEEP_WRITTEN:
            del written[next(iter(written))]

    @property
    def remembered_signatures(self) -> int:
        """How many stage signatures the model remembers now (bounded: ``_intern_signature``)."""
        return len(self._signature_ids) + len(self._older_signature_ids)

    @property
    def signature_ids_issued(self) -> int:
        """How many signature ids the application has had (each means one signature, never reused)."""
        return self._next_signature_id

    def _intern_signature(self, base: Any) -> int:
        """The id of a stage signature not among the latest generation's.

        Ids count up and are never reused, so an id means one signature for the application's life; only the signatures
        of the last ``SIGNATURE_IDS_KEPT`` to ``2 * SIGNATURE_IDS_KEPT`` distinct ones seen are remembered (two
        generations, the older dropped whole when the newer fills), so an application whose stage code differs in every
        job (generated code) keeps a bounded map. A signature forgotten and seen again gets a new id: a region still
        holding an operator under the old one would then declare a second operator for it, which needs that many
        distinct signatures in between, far more than any region's operators."""
        sig = self._signature_ids.get(base)  # a caller's view of the newer generation may predate a rotation
        if sig is not None:
            return sig
        sig = self._older_signature_ids.pop(base, None)
        if sig is None:
            sig = self._next_signature_id
            self._next_signature_id += 1
        current = self._signature_ids
        if len(current) >= SIGNATURE_IDS_KEPT:
            self._older_signature_ids, self._signature_ids = current, {}
            current = self._signature_ids
        current[base] = sig
        return sig

    def _place(self, region: Region, epoch: int, codes: dict[int, StageCode], parents: dict, sigs: dict,
               skipped: Collection[int], streaming: bool
               ) -> tuple[Placement, int | None, Region | None]:
        """Each stage's scope, operator signature and time, the job's iteration and its loop.

        The iteration and loop are (None, None) when the job is not an iteration. A stage goes in the region by default
        (its recursive signature, the epoch); an iteration of a loop (loops.py) puts the loop's code and what runs
        downstream of it in the loop's scope, at ``(epoch, iteration)``: the step operator for the stages running the
        loop's code, loop-local signatures (parents in the loop only) for the others."""
        place: Placement = {sid: (region, sigs[sid], epoch) for sid in codes}
        if streaming:
            return place, None, None
        keys = {sid: c.key for sid, c in codes.items()}
        pos = chain_positions(keys, parents)
        # no chain and no loop yet: no iteration (plan_iteration's answer, without asking it)
        plan = plan_iteration(keys, pos, parents, skipped, region.loops) if region.loops or any(pos.values()) else None
        # no chain (or a known loop at position 0): the previous job's code again, once it ended, on a new dataset
        code, previous = job_code(codes, skipped), region.last_code
        if (plan is None or plan.iteration == 0) and not region.running and repeats(previous, code):
            plan = plan_repeat(keys, parents, skipped, region.last_iteration + 1)
        region.last_code, region.last_iteration = code, plan.iteration if plan is not None else 0
        for sid in skipped:  # a known loop's code, not run: its step, should Spark run it after all
            known = region.loops.get(keys[sid])
            if known is not None and (plan is None or sid not in plan.in_loop):
                place[sid] = (known, LOOP_STEP, (epoch, pos[sid]))
        if plan is None:
            return place, None, None
        loop = region.loops.get(plan.key) or self._loop(region, plan.key, epoch)
        local: dict[int, Any] = {}

        def local_signature(sid: int) -> Any:
            if sid in plan.members:
                return LOOP_STEP
            if sid not in local:
                inside = (local_signature(p) for p in parents[sid] if p in plan.in_loop)
                local[sid] = (_base_signature(codes[sid], False), tuple(sorted(inside, key=repr)))
            return local[sid]

        _distinct(sorted(s for s in plan.in_loop if s not in plan.members), local_signature, local)
        for sid, it in plan.in_loop.items():
            place[sid] = (loop, local_signature(sid), (epoch, it))
        return place, plan.iteration, loop

    def _loop(self, region: Region, key: tuple, epoch: int) -> Region:
        """A new loop scope in ``region`` for the stages running ``key``'s code.

        Its driver (which holds ``[epoch, 0]`` and moves on with the region's), its feedback, and an output to the
        region's driver."""
        node = region.next_node
        region.next_node += 1
        name = f"loop: {key[0]}"[:120]
        loop = Region(("loop", key), node, name, "loop", source_time=(epoch, 0), parent=region)
        loop.next_node = FEEDBACK_NODE + 1
        region.loops[key] = loop
        path = loop.scope_path
        self._emit(log_records.scope(path, name, 0, 1, 2, attrs={"kind": "loop", "step": key[0]}))
        self._emit(log_records.operator(path, 1, "driver (next iteration)", 0, 1, capabilities=[[[epoch, 0]]],
                                        attrs={"role": "source"}))
        self._emit(log_records.operator(path, FEEDBACK_NODE, "feedback (next iteration)", 1, 1, summary=[[[[0, 1]]]],
                                        attrs={"role": "feedback"}))
        self._edge(region, node, 2, 0)  # what the loop's result stages deliver goes to the region's driver
        return loop

    def _declare_stage_operators(self, lineage: JobLineage, place: Placement, streaming: bool) -> None:
        """Each stage's operator in its scope, the edges from its parents there, and a loop step's feedback."""
        parents, children = lineage.parents, lineage.children
        for sid in lineage.order:
            scope, sig, _ = place[sid]
            ps = parents[sid]
            if sig == LOOP_STEP:
                parent_sigs = [LOOP_STEP]
            else:
                parent_sigs = [place[p][1] for p in sorted(ps) if place[p][0] is scope] if ps else []
            node = self._stage_operator(scope, lineage.by_id[sid], lineage.codes[sid], sig, parent_sigs, streaming)
            if sig == LOOP_STEP:  # the feedback: its output, one iteration on, is its own input 1
                self._edge(scope, node, FEEDBACK_NODE, 0)
                self._edge(scope, FEEDBACK_NODE, node, 1)
            for p in parents[sid]:
                pscope, psig, _ = place[p]
                if pscope is scope and not (psig == sig == LOOP_STEP):
                    self._edge(scope, scope.ops[psig], node, scope.op_ports[node].get(psig, 1))
            if not children[sid]:  # a result stage: out of its loop, or to the region's driver (results)
                self._edge(scope, node, 0 if scope.parent is not None else 2, 0)

    def _stage_operator(self, region: Region, info: dict, code: StageCode, signature: Any, parent_sigs: list,
                        streaming: bool) -> int:
        node = region.ops.get(signature)
        if node is not None:
            return node
        node = region.next_node
        region.next_node += 1
        region.ops[signature] = node
        ports: dict[Any, int] = {}
        region.op_ports[node] = ports
        for k, ps in enumerate(parent_sigs, start=1):
            ports.setdefault(ps, k)
        scopes = list(code.key[1])  # sorted, each once
        attrs = {
            "stage_ids": [info.get("Stage ID")],
            "stage_name": code.name,
            "tasks": info.get("Number of Tasks"),
            "rdds": code.rdd_names[:8],
            "scopes": scopes,
            "callsite": (info.get("Details") or "").split("\n", 1)[0][:300],
        }
        name = stage_label(info, scopes, streaming)
        self._emit(log_records.operator(region.scope_path, node, name, 1 + len(parent_sigs), 1, attrs=attrs))
        self._edge(region, 1, node, 0)
        return node


def _distinct(order: list[int], signature: Callable[[int], Any], sigs: dict[int, Any]) -> None:
    """Two stages of one job with the same signature stay two operators: the second becomes ``(sig, 1)``..."""
    seen: dict[Any, int] = {}
    for sid in order:
        sig = signature(sid)
        n = seen.get(sig, 0)
        seen[sig] = n + 1
        if n:
            sigs[sid] = (sig, n)


def _base_signature(code: StageCode, streaming: bool) -> Any:
    if streaming:
        # stage names in streaming are useless ("start at NativeMethodAccessorImpl.java:0") and ids change per batch
        names = tuple(sorted(n for n in map(str, code.rdd_names) if not n.isdigit()))
        return ("scopes", code.scopes, names)
    return (code.name, code.scopes, code.callsites)


def stage_label(info: dict, scopes: list, streaming: bool) -> str:
    """A stage operator's name: Spark's stage name (its call site), or in a streaming query, where every stage is
    named after the query's start, the RDD scopes it ran."""
    name = info.get("Stage Name") or ""
    if streaming or name.startswith("start at NativeMethodAccessorImpl"):
        interesting = [s for s in scopes if not s.startswith(("WholeStageCodegen", "mapPartitions", "map"))] or scopes
        return "stage: " + ", ".join(interesting[:3]) if interesting else f"stage {info.get('Stage ID')}"
    return name[:80]
