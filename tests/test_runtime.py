"""The multi-worker runtime: same results on 1, 2 and 4 workers, with and without random delays and reordering;
notifications never early (checked against the true progress state); barrier, sequencer and loops for real."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from tracker.progress_log.replay import replay_file
from tracker.runtime import Chaos, ContractViolation, GlobalView, execute
from tracker.runtime.graph import Exchange

from .conftest import REPO

WORKERS = [1, 2, 4]


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", REPO / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    try:  # so Spark ships the example's functions by value to its Python workers
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(module)
    except ImportError:  # pragma: no cover
        pass
    return module


def pipeline_run(peers, chaos=None, view=None, record_dir=None):
    def main(worker):
        seen = []

        def build(scope):
            inp, s = scope.new_input()
            probe = (s.exchange(lambda x: x).map(lambda x: x * 10).filter(lambda x: x % 20 == 0)
                     .flat_map(lambda x: [x, x + 1]).inspect(lambda t, r: seen.append((t, r))).probe())
            return inp, probe

        inp, probe = worker.dataflow(build)
        for epoch in range(4):
            inp.send_batch(range(epoch * 100 + worker.index, epoch * 100 + 40, worker.peers))
            inp.advance_to(epoch + 1)
            worker.step_while(lambda: probe.less_than(inp.time))
            # once the probe has passed the epoch, every record of it has been seen on this worker
            assert all(t < inp.time for t, _ in seen)
        inp.close()
        return seen

    return execute(peers, main, chaos=chaos, global_view=view, record_dir=record_dir)


def expected_pipeline():
    out = []
    for epoch in range(4):
        for x in range(epoch * 100, epoch * 100 + 40):
            if (x * 10) % 20 == 0:
                out += [(epoch, x * 10), (epoch, x * 10 + 1)]
    return sorted(out)


@pytest.mark.parametrize("peers", WORKERS)
@pytest.mark.parametrize("chaotic", [False, True])
def test_pipeline_same_result_on_any_number_of_workers(peers, chaotic):
    view = GlobalView()
    results = pipeline_run(peers, Chaos(seed=peers) if chaotic else None, view)
    assert sorted(r for per in results for r in per) == expected_pipeline()
    # exchange put every record on the worker its key names
    for index, per in enumerate(results):
        assert all((r // 10) % peers == index for _, r in per)
    assert view.violations == []


@pytest.mark.parametrize("peers", WORKERS)
@pytest.mark.parametrize("chaotic", [False, True])
def test_loops_connected_components_match_networkx(peers, chaotic):
    loops = load_example("loops")
    view = GlobalView()
    labels, notified = loops.run(peers, chaos=Chaos(seed=7, max_delay=0.002) if chaotic else None, global_view=view)
    assert labels == loops.expected()
    assert view.violations == [], "a notification fired before the true frontier passed its time"
    assert view.notifications == len(notified) > 0
    assert len(notified) == len(set(notified)), "each notification fires exactly once per worker and time"


@pytest.mark.parametrize("peers", [2, 4])
def test_barrier_never_releases_before_all_arrived(peers):
    barrier = load_example("barrier")
    view = GlobalView()
    arrivals, releases, during_wait = barrier.run(peers, rounds=3, work=0.01, chaos=Chaos(seed=1), global_view=view)
    for r in range(3):
        last_arrival = max(arrivals[r])
        assert all(release >= last_arrival for release in releases[r]), (arrivals[r], releases[r])
        assert all(count == 100 for count in during_wait[r]), "the other dataflow kept running during the wait"
    assert view.violations == []


@pytest.mark.parametrize("peers", WORKERS)
def test_sequencer_same_order_everywhere(peers):
    sequencer = load_example("sequencer")
    orders = sequencer.run(peers, items=4, pace=0.001, chaos=Chaos(seed=3))
    assert all(order == orders[0] for order in orders)
    assert sorted(orders[0]) == sorted(f"worker {w} item {k}" for w in range(peers) for k in range(4))
    for w in range(peers):  # each worker's own items keep their order
        mine = [x for x in orders[0] if x.startswith(f"worker {w} ")]
        assert mine == [f"worker {w} item {k}" for k in range(4)]


@pytest.mark.parametrize("seed", [0, 3, 6])
def test_no_replica_is_ever_ahead_of_the_truth(seed):
    """Batches from one sender overtake each other under chaos; workers must still apply them in order."""
    import time

    def main(worker):
        def build(scope):
            inp, s = scope.new_input()
            return inp, s.exchange(lambda x: x).inspect(lambda t, r: None).probe()

        inp, probe = worker.dataflow(build)
        for epoch in range(20):
            if worker.index == 0:
                inp.send_batch([1, 3, 5, 7])
            worker.step()
            time.sleep(0.002)
            inp.advance_to(epoch + 1)
            worker.step()
            worker.step_while(lambda: probe.less_than(inp.time))
        inp.close()

    view = GlobalView(check_replicas=True)
    execute(2, main, chaos=Chaos(seed=seed, max_delay=0.02), global_view=view)
    assert view.violations == []


def test_each_worker_records_its_view_as_a_progress_log(tmp_path):
    pipeline_run(2, Chaos(seed=5), record_dir=tmp_path)
    for w in range(2):
        replay = replay_file(tmp_path / f"worker-{w}.jsonl", check_contracts=True)
        assert replay.errors == []
        senders = {f.batch.worker for f in replay.findings}
        assert replay.batches_applied > 0
        assert all(p["frontier"] == [] for s in replay.state()["scopes"] for p in s["ports"])
        assert [f for f in replay.findings if f.kind == "negative-count"] == [], senders
        workers_seen: set[int] = set()
        replay2 = replay_file(
            tmp_path / f"worker-{w}.jsonl", observer=lambda info, *_, seen=workers_seen: seen.add(info.worker)
        )
        assert workers_seen == {0, 1}, "a worker's view holds every worker's batches"
        assert replay2.batches_applied == replay.batches_applied


def test_sending_needs_a_capability():
    def main(worker):
        def build(scope):
            inp, s = scope.new_input()

            def cheat(ctx):
                for time, records in ctx.input(0):
                    ctx.output(0).give(time - 1, records[0])  # earlier than anything it holds

            s.unary("cheat", cheat).probe()
            return inp

        inp = worker.dataflow(build)
        inp.advance_to(3)
        inp.send(1)
        worker.step()
        worker.step()

    with pytest.raises(ContractViolation, match="needs a capability"):
        execute(1, main)


def test_exchange_partitions_by_key():
    def main(worker):
        got: list = []

        def build(scope):
            inp, s = scope.new_input()
            s.unary("collect", lambda ctx: got.extend(x for _, r in ctx.input(0) for x in r),
                    pact=Exchange(lambda x: x)).probe()
            return inp

        inp = worker.dataflow(build)
        if worker.index == 0:
            inp.send_batch(range(12))
        inp.close()
        worker.run()
        return got

    results = execute(3, main)
    assert [sorted(r) for r in results] == [[x for x in range(12) if x % 3 == w] for w in range(3)]
