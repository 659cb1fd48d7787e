"""Contract checking: each kind of broken promise is flagged with the batch that broke it; valid logs pass."""

from __future__ import annotations

from tracker.progress_log.log_file import ProgressLogWriter
from tracker.progress_log.replay import replay_file
from tracker.reachability import Source, Target


def replay_batches(tmp_path, batches):
    path = tmp_path / "log.jsonl"
    with ProgressLogWriter(path) as log:
        log.operator([], 1, "input", inputs=0, outputs=1, capabilities=[[0]])
        log.operator([], 2, "map")
        log.operator([], 3, "sink", inputs=1, outputs=0)
        log.edge([], Source(1, 0), Target(2, 0))
        log.edge([], Source(2, 0), Target(3, 0))
        for k, updates in enumerate(batches):
            log.progress([], updates, worker=k % 2, cause={"n": k})
    return replay_file(path, check_contracts=True)


def kinds(replay):
    return [f.kind for f in replay.findings]


def test_valid_pipeline_has_no_findings(tmp_path):
    replay = replay_batches(tmp_path, [
        [(Target(2, 0), 0, 1), (Source(1, 0), 0, -1), (Source(1, 0), 1, 1)],  # produce under capability, downgrade
        [(Target(2, 0), 0, -1), (Source(2, 0), 0, 1)],  # consume and capture together
        [(Source(2, 0), 0, -1), (Target(3, 0), 0, 1)],  # produce with the captured capability, drop it
        [(Target(3, 0), 0, -1)],
        [(Source(1, 0), 1, -1)],
    ])
    assert replay.findings == []
    assert all(p["frontier"] == [] for s in replay.state()["scopes"] for p in s["ports"])


def test_capability_without_cause(tmp_path):
    replay = replay_batches(tmp_path, [
        [(Source(1, 0), 0, -1), (Source(1, 0), 5, 1)],  # the input moves on to 5; nothing is in flight
        [(Source(2, 0), 3, 1)],  # map takes a capability at 3: nothing it holds or consumes could result in 3
    ])
    assert kinds(replay)[0] == "capability-without-cause"
    f = replay.findings[0]
    assert (f.location, f.time, f.batch.seq, f.batch.worker, f.batch.cause) == (Source(2, 0), 3, 0, 1, {"n": 1})
    assert f.batch.line == 8
    assert set(kinds(replay)[1:]) == {"frontier-regression"}, "and the frontiers downstream move back from 5 to 3"


def test_upstream_capability_backs_a_consolidated_batch(tmp_path):
    """Within one batch, map consumed what the input sent and re-sent it: the input's capability backs it."""
    replay = replay_batches(tmp_path, [
        [(Target(3, 0), 0, 2)],  # consolidated: in(2,0) +2 and -2 cancelled, map's output produced 2 at the sink
        [(Target(3, 0), 0, -2), (Source(1, 0), 0, -1)],
    ])
    assert replay.findings == []


def test_message_without_capability_and_frontier_regression(tmp_path):
    replay = replay_batches(tmp_path, [
        [(Source(1, 0), 0, -1)],  # the input closes: everything downstream completes
        [(Target(2, 0), 3, 1)],  # ... and then a message appears from nowhere
        [(Target(2, 0), 3, -1)],
    ])
    assert kinds(replay) == ["message-without-capability"] + ["frontier-regression"] * 3
    produced, *regressions = replay.findings
    assert produced.batch.seq == 0 and produced.batch.worker == 1 and produced.batch.cause == {"n": 1}
    # every port downstream of the message had completed, and now may see 3 again
    assert {r.location for r in regressions} == {Target(2, 0), Source(2, 0), Target(3, 0)}
    assert all(r.batch.cause == {"n": 1} for r in regressions)
    assert all(r.time == 3 and "complete" in r.message for r in regressions)


def test_capability_downgrade_backwards_is_a_regression(tmp_path):
    replay = replay_batches(tmp_path, [
        [(Source(1, 0), 0, -1), (Source(1, 0), 5, 1)],
        [(Source(1, 0), 5, -1), (Source(1, 0), 2, 1)],  # "downgrade" to an earlier time
    ])
    assert "capability-without-cause" in kinds(replay)
    regressions = [f for f in replay.findings if f.kind == "frontier-regression"]
    assert regressions and all(f.time == 2 and f.batch.cause == {"n": 1} for f in regressions)


def test_negative_counts_at_the_end_name_the_batch(tmp_path):
    replay = replay_batches(tmp_path, [
        [(Source(1, 0), 0, -1)],
        [(Target(3, 0), 4, -1)],  # consumes a message nobody produced
    ])
    negatives = [f for f in replay.findings if f.kind == "negative-count"]
    assert len(negatives) == 1
    f = negatives[0]
    assert (f.location, f.time, f.batch.cause, f.batch.worker) == (Target(3, 0), 4, {"n": 1}, 1)


def test_transient_negative_counts_are_not_findings(tmp_path):
    """The consumption is seen before the production (another worker's batch arrives later): no finding."""
    replay = replay_batches(tmp_path, [
        [(Target(2, 0), 0, -1), (Source(2, 0), 0, 1)],  # worker 0 consumes and captures (count goes to -1)
        [(Target(2, 0), 0, 1), (Source(1, 0), 0, -1)],  # worker 1's production arrives, input closes
        [(Source(2, 0), 0, -1)],
    ])
    assert "negative-count" not in kinds(replay)
