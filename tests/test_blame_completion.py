"""Blame's completion check, kept incrementally, against the brute-force one it replaced (kept here as the oracle).

A time of a scope without inputs completes when none of the scope's live pointstamps could result, along the
paths to a sink, in a time at or before it. ``BlameTracker`` keeps what the live pointstamps could result in as
they come and go; the oracle recounts it from every live pointstamp at every check. Random batches (counts may go
negative, structure may grow in between) over a root scope (a total order) and an iterative scope (a partial
order) must complete the same times, in the same order, at the same batches.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.spark.diagnosis.blame import SparkVocabulary
from tracker.analysis.blame import BlameTracker
from tracker.progress_log.replay import Replay

ROOT_OPS = 5  # node 1 the source, node 5 the sink
LOOP = ROOT_OPS + 1  # the nested iterative scope's node in the root


def structure(summaries: list[Any], extra_edges: list[tuple[int, int]]) -> list[dict]:
    recs: list[dict] = [{"type": "operator", "scope": [], "node": 1, "name": "source", "inputs": 0, "outputs": 1,
                         "attrs": {"role": "source"}}]
    for k in range(2, ROOT_OPS):
        recs.append({"type": "operator", "scope": [], "node": k, "name": f"op {k}", "inputs": 2, "outputs": 1,
                     "summary": [[summaries[k - 2]], [[0]]]})
    recs.append({"type": "operator", "scope": [], "node": ROOT_OPS, "name": "sink", "inputs": 2, "outputs": 0,
                 "attrs": {"role": "sink"}})
    for k in range(1, ROOT_OPS):
        recs.append({"type": "edge", "scope": [], "from": ["out", k, 0], "to": ["in", k + 1, 0]})
    for a, b in extra_edges:
        recs.append({"type": "edge", "scope": [], "from": ["out", a, 0], "to": ["in", b, 1]})
    # an iterative scope with no inputs: source -> body -> out, body -> feedback (+1 iteration) -> body
    recs += [{"type": "scope", "path": [LOOP], "name": "loop", "inputs": 0, "outputs": 1, "depth": 2},
             {"type": "operator", "scope": [LOOP], "node": 1, "name": "source", "inputs": 0, "outputs": 1},
             {"type": "operator", "scope": [LOOP], "node": 2, "name": "body", "inputs": 2, "outputs": 1},
             {"type": "operator", "scope": [LOOP], "node": 3, "name": "feedback", "inputs": 1, "outputs": 1,
              "summary": [[[[0, 1]]]]},
             {"type": "edge", "scope": [LOOP], "from": ["out", 1, 0], "to": ["in", 2, 0]},
             {"type": "edge", "scope": [LOOP], "from": ["out", 2, 0], "to": ["in", 3, 0]},
             {"type": "edge", "scope": [LOOP], "from": ["out", 3, 0], "to": ["in", 2, 1]},
             {"type": "edge", "scope": [LOOP], "from": ["out", 2, 0], "to": ["in", 0, 0]}]
    return recs


ROOT_PORTS = [["out", k, 0] for k in range(1, ROOT_OPS)] + \
    [["in", k, i] for k in range(2, ROOT_OPS + 1) for i in (0, 1)]
LOOP_PORTS = [["out", 1, 0], ["in", 2, 0], ["in", 2, 1], ["out", 2, 0], ["in", 3, 0], ["out", 3, 0]]

root_update = st.tuples(st.sampled_from(ROOT_PORTS), st.integers(0, 6), st.sampled_from([-2, -1, 1, 1, 2]))
loop_update = st.tuples(st.sampled_from(LOOP_PORTS), st.tuples(st.integers(0, 3), st.integers(0, 3)),
                        st.sampled_from([-2, -1, 1, 1, 2]))
step = st.one_of(
    st.tuples(st.just("root"), st.lists(root_update, min_size=1, max_size=4)),
    st.tuples(st.just("loop"), st.lists(loop_update, min_size=1, max_size=4)),
    st.tuples(st.just("edge"), st.tuples(st.integers(1, ROOT_OPS - 1), st.integers(2, ROOT_OPS))
              .filter(lambda e: e[0] < e[1])),
)


def brute_force_completed(tracker: BlameTracker, sb: Any) -> list | None:
    """The open times nothing live could still result in at or before, in the order first held: every live
    pointstamp's times at every sink, recounted (None where the check does not count, for a scope with inputs)."""
    scope = tracker.replay.root.find(sb.path)
    sinks = tracker.tables.sink_ports(scope)
    if not sinks or scope.inputs:
        return None
    d = scope.domain
    reached = set()
    for (loc, time), c in sb.counts.items():
        if c > 0:
            for sink in sinks:
                for s in scope.path_summaries_to(sink).get(loc, ()):
                    reached.add(d.results_in(s, time))
    return [t for t in sb.first_seen if not any(d.le(r, t) for r in reached)]


class CheckedTracker(BlameTracker):
    """A blame tracker whose every completion check is compared with the oracle's."""

    def _completed(self, sb: Any, seq: int, at: float) -> list:
        want = brute_force_completed(self, sb)
        got = super()._completed(sb, seq, at)
        if want is not None:
            assert got == want, (sb.path, seq, got, want)
        return got


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(summaries=st.lists(st.sampled_from([[0], [1], [2], []]), min_size=ROOT_OPS - 2, max_size=ROOT_OPS - 2),
       extra=st.lists(st.tuples(st.integers(1, ROOT_OPS - 1), st.integers(2, ROOT_OPS)).filter(lambda e: e[0] < e[1]),
                      max_size=2),
       steps=st.lists(step, min_size=1, max_size=40))
def test_incremental_completion_agrees_with_brute_force(summaries, extra, steps):
    replay = Replay("<completion>")
    tracker = CheckedTracker(replay, SparkVocabulary(replay), lazy=True)
    for rec in structure(summaries, extra):
        assert replay.apply(rec), replay.errors
        tracker.record(rec)
    at = 1.0
    for kind, body in steps:
        at += 0.5
        if kind == "edge":
            rec = {"type": "edge", "scope": [], "from": ["out", body[0], 0], "to": ["in", body[1], 1]}
            if replay.apply(rec):  # a duplicate edge is rejected: then blame never sees it
                tracker.record(rec)
            continue
        path = [] if kind == "root" else [LOOP]
        updates = [[port, list(t) if isinstance(t, tuple) else t, delta] for port, t, delta in body]
        tracker.record({"type": "progress", "scope": path, "at": at, "updates": updates})
    # release everything: every time first held must then complete, in both scopes
    for path in ([], [LOOP]):
        sb = tracker.scopes.get(tuple(path))
        if sb is None:
            continue
        at += 0.5
        updates = [[loc.to_json(), list(t) if isinstance(t, tuple) else t, -c] for (loc, t), c in sb.counts.items()
                   if c > 0]
        if updates:
            tracker.record({"type": "progress", "scope": path, "at": at, "updates": updates})
            assert not sb.first_seen, (path, sb.first_seen)


def test_a_path_added_later_holds_what_it_reaches():
    """An edge added after the counting began shortens a path: a time it now reaches stays held."""
    replay = Replay("<grown>")
    tracker = CheckedTracker(replay, SparkVocabulary(replay), lazy=True)
    for rec in structure([[2], [2], [2]], []):
        assert replay.apply(rec), replay.errors
        tracker.record(rec)
    tracker.record({"type": "progress", "scope": [], "at": 1.0, "updates": [[["out", 2, 0], 0, 1],
                                                                           [["out", 3, 0], 5, 1]]})
    tracker.record({"type": "progress", "scope": [], "at": 2.0, "updates": [[["out", 3, 0], 5, -1]]})
    edge = {"type": "edge", "scope": [], "from": ["out", 2, 0], "to": ["in", 5, 1]}
    assert replay.apply(edge), replay.errors
    tracker.record(edge)
    tracker.record({"type": "progress", "scope": [], "at": 3.0, "updates": [[["out", 3, 0], 1, 1]]})
    tracker.record({"type": "progress", "scope": [], "at": 4.0, "updates": [[["out", 3, 0], 1, -1]]})
    # out 2 at 0 reached the sink at 4 (two +2 operators), so 0 completed; now it reaches it at 0 and holds 1
    assert [t for _, t, _, _ in tracker._pending] == [0]
    assert set(tracker.scopes[()].first_seen) == {1, 5}

