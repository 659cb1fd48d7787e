"""The runtime hosted on a Spark barrier stage: one worker per task, data and progress over TCP between them.

Same programs, same answers as on threads; with each worker delaying and reordering what it receives."""

from __future__ import annotations

import pytest

from backend.spark.barrier_hosting import run_on_spark

from .test_runtime import load_example


@pytest.mark.parametrize("peers", [1, 2, 4])
def test_loops_on_spark_match_networkx(spark, peers):
    loops = load_example("loops")
    labels, notified = loops.combine(run_on_spark(spark, peers, loops.main, chaos_seed=peers if peers > 1 else None))
    assert labels == loops.expected()
    assert len(notified) == len(set(notified)) > 0


def test_barrier_on_spark(spark):
    barrier = load_example("barrier")
    outcomes = run_on_spark(spark, 2, barrier.make_main(rounds=2, work=0.05), chaos_seed=3)
    arrivals, releases, during_wait = barrier.combine(outcomes)
    for r in range(2):
        assert min(releases[r]) >= max(arrivals[r]), "released before every task arrived"
        assert during_wait[r] == [100, 100]


def test_sequencer_and_strata_on_spark(spark):
    sequencer = load_example("sequencer")
    orders = run_on_spark(spark, 4, sequencer.make_main(items=3, pace=0.002), chaos_seed=5)
    assert all(o == orders[0] for o in orders) and len(orders[0]) == 12
    strata = load_example("strata")
    outcomes = run_on_spark(spark, 2, strata.main_reachability, chaos_seed=9)
    reach, unreach = strata.expected_reachability()
    assert strata.merged(outcomes, "reachable") == reach and strata.merged(outcomes, "unreachable") == unreach


def test_worker_logs_from_spark_tasks_replay(spark, tmp_path):
    from tracker.progress_log.replay import replay_file

    loops = load_example("loops")
    outcomes = run_on_spark(spark, 2, loops.main, record_dir=str(tmp_path))
    assert loops.combine(outcomes)[0] == loops.expected()
    for w in range(2):
        replay = replay_file(tmp_path / f"worker-{w}.jsonl", check_contracts=True)
        assert replay.errors == [] and replay.batches_applied > 0
        assert replay.findings == [], "every batch a worker saw keeps the progress contract"
        assert all(p["frontier"] == [] for s in replay.state()["scopes"] for p in s["ports"])
