"""The critical path walk: one completed time's interval split among the holders that kept it open.

The interval of a time ``t`` runs from its start to the batch after which the scope's sinks' frontiers passed ``t``.
It is split by walking backwards over the pointstamps' positive intervals (:class:`Interval`):

* at the end, the holder the completing batch released (the one held longest, if several);
* a holder is blamed from the latest release, after it began, of a pointstamp that could result in it, and the walk
  goes on from that pointstamp; a *driver* holder (``attrs.role == "source"``) is blamed only for the time nothing
  downstream of it held ``t``;
* with no such release, the holder is blamed from its start, and the walk goes on from what created it (the batch's
  release, the capability that backed it, or for a holder whose capabilities came from nothing, the holder released
  last before it began).

The segments tile ``[start, end]``; what the walk does not reach is the driver's. Segments are ``driver``,
``capability`` or ``message`` unless the :class:`BlameVocabulary` names them (the Spark side: tasks, stages, phases).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from tracker.analysis.sink_reach import ReachTables
from tracker.reachability import OUT, Location
from tracker.subgraph import Subgraph

__all__ = ["Interval", "TimeBlame", "BlameVocabulary", "Rival", "segment", "walk_time"]

MAX_STEPS = 100_000  # holders one walk visits at most


@dataclass(eq=False, slots=True)
class Interval:
    """A pointstamp's positive stretch: from the batch that made its count positive to the one that zeroed it."""

    loc: Location
    time: Any
    start_seq: int
    start_at: float
    end_seq: int | None = None
    end_at: float | None = None
    end_cause: dict | None = None
    end_worker: Any = None
    # what the vocabulary noted of each batch that lowered the count while it held (a Spark task's end:
    # ``(at, task, launched)``)
    lowered_by: list[tuple] = field(default_factory=list)


@dataclass
class TimeBlame:
    """One completed time's blame: its segments, and what the log's marks say about it (jobs, batch, failure)."""

    scope: list
    name: str
    time: Any
    job_ids: list
    batch_id: Any
    start: float
    end: float
    blame: list[dict]
    failure: str | None = None  # what failed the time's job (None: it succeeded)

    @property
    def iteration(self) -> Any:
        """In a loop (a time ``[epoch, iteration]``), the iteration; None elsewhere."""
        return self.time[1] if type(self.time) is tuple and len(self.time) == 2 else None

    @property
    def latency_s(self) -> float:
        return round(self.end - self.start, 6)

    def to_json(self) -> dict:
        """The contract's object (``docs/blame.md``).

        A time whose job failed adds ``"status": "failed"`` and ``"failure"`` (a succeeded one has neither).
        """
        out = {"scope": self.scope, "name": self.name, "time": self.time, "job_ids": self.job_ids,
               "batch_id": self.batch_id, "iteration": self.iteration, "start": self.start, "end": self.end,
               "latency_s": self.latency_s, "blame": self.blame}
        if self.failure is not None:
            out["status"] = "failed"
            out["failure"] = self.failure
        return out


Rival = Callable[[], Interval | None]  # the walk's second choice for a holder, asked only by a what-if


class BlameVocabulary(Protocol):
    """What a log's model tells blame: the fields it reads in records, and what a holder is called.

    The walk knows pointstamps and operators' roles; the vocabulary (the Spark side:
    ``backend/spark/diagnosis/blame.py``)
    reads the model's details and marks, names the segments of the operators it knows, and says when a time
    started and which jobs it was.
    """

    def record(self, rec: dict, line: int | None) -> None:
        """A ``detail`` or ``mark`` record the replay applied."""

    def checked_cause(self, cause: dict, at: float, line: int | None) -> tuple[dict, tuple | None]:
        """A progress batch's cause, checked, and the note each interval it lowers keeps (None: none).

        Fields the vocabulary cannot use are left out and reported; the note goes to ``lowered_by``.
        """

    def cleared(self, keys: list, at: float, cause: Any) -> None:
        """A progress batch cleared these detail keys (``cause``: the batch's, as the log gives it)."""

    def start_of(self, path: tuple, t: Any) -> float | None:
        """When ``t`` started in the scope at ``path``, if the marks say (else its first pointstamp's batch)."""

    def segments(self, scope: Subgraph, holder: Interval, about: dict, seg_from: float, seg_to: float,
                 rival: Rival | None) -> list[dict] | None:
        """The segments (latest first) for ``holder`` over ``[seg_from, seg_to)``, if the vocabulary names it.

        ``about``: the holder's operator, node, port and time. None leaves it a capability or message.
        """

    def created_from_nothing(self, holder: Interval) -> bool:
        """Did ``holder``'s capabilities come from nothing (so it waited on what was released before it began)?"""

    def describe(self, path: tuple, t: Any, segments: list[dict]) -> tuple[list, Any, str | None]:
        """Name what the driver did in ``segments``; return ``t``'s job ids, batch id and failure.

        Each driver segment without ``doing`` gets one.
        """

    def crowded(self) -> bool:
        """Does the vocabulary keep enough ended task spans to prune them after a walk?"""

    def prune_spans(self, cut: float | None) -> None:
        """Drop what only a time open before ``cut`` could need (everything ended when None)."""

    def prune_finished(self, finished: Callable[[tuple, Any], bool]) -> None:
        """Drop what the vocabulary keeps per time for the times ``finished(path, t)`` says are done."""

    def forget_under(self, path: tuple) -> None:
        """Forget the scopes at or inside ``path`` (they left the replay)."""


def segment(kind: str, seg_from: float, seg_to: float, holder: dict) -> dict:
    """A blame segment: ``kind`` held the time over ``[seg_from, seg_to)``."""
    return {"kind": kind, "seconds": round(seg_to - seg_from, 6), "from": seg_from, "to": seg_to, "holder": holder}


def holder_segments(scope: Subgraph, holder: Interval, seg_from: float, seg_to: float, vocabulary: BlameVocabulary,
                    rival: Rival | None) -> list[dict]:
    """The segment(s) for ``holder`` over ``[seg_from, seg_to)``, latest first.

    ``rival`` gives the holder released last, other than ``holder``, that what it held up also waited for (the
    walk's second choice): had ``holder`` been released earlier, that one would hold the time from its release on.
    """
    op = scope.children.get(holder.loc.node)
    about: dict = {"operator": op.name if op is not None else "scope boundary", "node": holder.loc.node,
                   "port": holder.loc.to_json(), "time": holder.time}
    role = op.attrs.get("role") if op is not None else None
    if role == "source":
        return [segment("driver", seg_from, seg_to, about)]
    if role == "sink":
        return [segment("driver", seg_from, seg_to, {**about, "doing": "receiving results"})]
    named = vocabulary.segments(scope, holder, about, seg_from, seg_to, rival)
    if named is not None:
        return named
    return [segment("capability" if holder.loc.kind == OUT else "message", seg_from, seg_to, about)]


def walk_time(scope: Subgraph, closed: list[Interval], t: Any, end_seq: int, end_at: float, tables: ReachTables,
              vocabulary: BlameVocabulary) -> TimeBlame | None:
    """Blame ``t``, which completed in ``scope`` at the batch ``end_seq`` (at ``end_at``), over ``closed``.

    None when nothing but a driver's promise held it (no work ran at this time).
    """
    domain = scope.domain
    le, results_in = domain.le, domain.results_in
    to_sink = tables.to_sinks(scope)
    # what held t at a sink: a pointstamp at or before t with a path bringing it to t or before
    holders = [iv for iv in closed if le(iv.time, t) and any(le(results_in(summary, iv.time), t)
                                                            for summary in to_sink.get(iv.loc, ()))]
    drivers = tables.driver_nodes(scope)
    if all(iv.loc.node in drivers for iv in holders if iv.time == t):
        return None
    start = vocabulary.start_of(scope.path, t)
    if start is None:
        start = min((iv.start_at for iv in holders if iv.time == t), default=end_at)
    start = min(start, end_at)
    # what ended before the start cannot change the walk (segments stop there); index the rest by release
    holders = [iv for iv in holders if (iv.end_at or 0) >= start]
    holders.sort(key=lambda iv: iv.end_seq or 0)
    release_seqs = [iv.end_seq or 0 for iv in holders]
    released_by: dict[int, list[Interval]] = {}
    for iv in holders:
        released_by.setdefault(iv.end_seq or 0, []).append(iv)

    def latest(after: int, before: int, accept: Callable[[Interval], bool]) -> Interval | None:
        """The interval ``accept`` accepts released last strictly between the batches ``after`` and ``before``.

        On a tie, the one held longest.
        """
        i = bisect_left(release_seqs, before) - 1
        best = None
        while i >= 0 and release_seqs[i] > after:
            if best is not None and release_seqs[i] < (best.end_seq or 0):
                break
            candidate = holders[i]
            if accept(candidate) and (best is None or candidate.start_seq < best.start_seq):
                best = candidate
            i -= 1
        return best

    reach_to: dict[Location, dict] = {}  # this walk's ports -> the summaries to them

    def upstream(earlier: Interval, later: Interval) -> bool:
        """Could ``earlier`` result in ``later`` (a path from its port brings its time to ``later``'s or before)?"""
        to_later = reach_to.get(later.loc)
        if to_later is None:
            to_later = reach_to[later.loc] = tables.reach_to(scope, later.loc)
        summaries = to_later.get(earlier.loc)
        if summaries:
            earlier_time, later_time = earlier.time, later.time
            for summary in summaries:
                if le(results_in(summary, earlier_time), later_time):
                    return True
        return False

    def waits_for(holder: Interval, is_driver: bool) -> Callable[[Interval], bool]:
        """A test of what ``holder`` waited on: another pointstamp that could result in it.

        For a driver, also one it could result in.
        """
        def accept(other: Interval) -> bool:
            return other is not holder and (upstream(other, holder) or (is_driver and upstream(holder, other)))
        return accept

    def rival_of(holder: Interval, seq: int) -> Interval | None:
        """What-if's re-walk: had ``holder`` been released earlier, what would have held on instead.

        The batch ``seq`` released what waited on ``holder``; another holder it released would hold on at once,
        else the latest release, not of ``holder``'s making, upstream of what it released (another stage feeding
        the same results, another parent of the same stage).
        """
        group = released_by.get(seq, [])
        if any(g is holder for g in group):
            same = [g for g in group if g is not holder]
            if same:
                return same[0]
        return latest(-1, seq, lambda iv: iv is not holder and not upstream(holder, iv)
                      and any(upstream(iv, g) for g in group))

    final = released_by.get(end_seq, [])
    segments: list[dict] = []
    cut = end_at  # the walk has blamed [cut, end_at]
    if final:
        holder = min(final, key=lambda iv: iv.start_seq)
        released_seq = end_seq  # the batch whose release ended the current holder's segment
        # asked only by a task segment's what-if (most steps have none): a walk does not pay for it
        rival: Rival = partial(rival_of, holder, end_seq)
        for _ in range(MAX_STEPS):
            if cut <= start:
                break
            is_driver = holder.loc.node in drivers
            waited_on = latest(holder.start_seq, released_seq, waits_for(holder, is_driver))
            if waited_on is not None:
                seg_from = max(start, min(waited_on.end_at or start, cut))
                segments += holder_segments(scope, holder, seg_from, cut, vocabulary, rival)
                rival = partial(rival_of, waited_on, released_seq)
                cut, holder, released_seq = seg_from, waited_on, waited_on.end_seq or 0
                continue
            seg_from = max(start, min(holder.start_at, cut))
            segments += holder_segments(scope, holder, seg_from, cut, vocabulary, rival)
            cut = seg_from
            if cut <= start:
                break
            made_by = _made_by(holder, holders, released_by, upstream, vocabulary, start)
            if not made_by:
                break
            released_seq = holder.start_seq

            def unblocked(candidate: Interval, before: int = released_seq) -> tuple[int, int]:
                # the last of what it waited on: the latest release upstream of it before it was consumed
                last = latest(candidate.start_seq, before, waits_for(candidate, False))
                return max(last.end_seq or 0 if last is not None else 0, candidate.start_seq), -candidate.start_seq

            holder = max(made_by, key=unblocked)
            rival = partial(rival_of, holder, released_seq)
    if cut > start:
        segments.append(segment("driver", start, cut,
                                {"operator": "driver", "doing": "nothing in the scope held this time"}))
    segments.reverse()
    segments = [s for s in segments if s["seconds"] > 0]
    job_ids, batch_id, failure = vocabulary.describe(scope.path, t, segments)
    return TimeBlame(list(scope.path), scope.name, t, job_ids, batch_id, start, end_at, segments, failure)


def _made_by(holder: Interval, holders: list[Interval], released_by: dict[int, list[Interval]],
             upstream: Callable[[Interval, Interval], bool], vocabulary: BlameVocabulary,
             start: float) -> list[Interval]:
    """The holders ``holder`` came from, where the walk goes on when nothing released held it up.

    What the batch that created it released (upstream ones first), else the capability that backed it, else,
    when it came from nothing, the holder released last before it began.
    """
    made = [iv for iv in released_by.get(holder.start_seq, []) if iv is not holder]
    made = [iv for iv in made if upstream(iv, holder)] or made
    if not made:
        made = [iv for iv in holders if iv is not holder and iv.start_seq < holder.start_seq < (iv.end_seq or 0)
                and upstream(iv, holder)]
    if not made and vocabulary.created_from_nothing(holder):
        made = [max((iv for iv in holders if iv is not holder and (iv.end_seq or 0) <= holder.start_seq
                     and (iv.end_at or 0) >= start), key=lambda iv: iv.end_seq or 0, default=holder)]
        made = [iv for iv in made if iv is not holder]
    return made
