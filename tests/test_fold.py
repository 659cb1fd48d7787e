"""Finished scopes fold out of a long session's live state and stay seekable in its history (``retire`` records).

A real Spark application (fixtures/spark/batch_shuffle: three lone jobs and a SQL execution) replicated into a long
one, as benchmarks/app_age.py does, runs through a server session that keeps only a few finished regions live: the
live hierarchy stays small while every region of the application ends, and seeking to any moment shows exactly
what a replay that never folds shows then (a folded region's ports are all empty by then).
"""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from backend.sessions.session import Session, SessionOptions
from backend.spark.live.follow_feed import SparkLogFeed
from backend.spark.recording.convert import SparkLogConversion
from backend.views.projections import scope_tree
from tracker.progress_log import records as log_records
from tracker.progress_log.replay import Replay

from .conftest import REPO

SOURCE = next((REPO / "fixtures" / "spark" / "batch_shuffle").glob("eventlog_v2_*"))
COPIES = 30  # 210 jobs, 120 regions
KEEP = 3


def _replicate(target):
    """The fixture copied COPIES times into one application, by the benchmarks' replicator."""
    spec = importlib.util.spec_from_file_location("replicate", REPO / "benchmarks" / "replay_vs_history_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate(SOURCE, COPIES, target)


@pytest.fixture(scope="module")
def long_log(tmp_path_factory):
    target = tmp_path_factory.mktemp("long") / "app-long"
    meta = _replicate(target)
    assert meta["jobs"] == 7 * COPIES
    return target


def _live_size(session: Session) -> tuple[int, int]:
    """Regions and leaf operators in the live hierarchy."""
    scopes = list(session.replay.root.scopes())
    operators = sum(1 for s in scopes for op in s.children.values() if op.scope is None and not op.retired)
    return len(scopes) - 1, operators


def _never_folding_states(log, batches: set[int]) -> tuple[dict[int, dict], int, int]:
    """A one-shot replay of the same records (it keeps every scope): its state at each of ``batches``."""
    replay = Replay("reference")
    states, scopes, retires = {}, 0, 0
    for rec in SparkLogConversion(log):
        if rec["type"] == "progress" and replay.batches_applied in batches:
            states[replay.batches_applied] = replay.state()
        scopes += rec["type"] == "scope"
        retires += rec["type"] == "retire"
        assert replay.apply(rec), replay.errors[-1:]
    replay.finish()
    states[replay.batches_applied] = replay.state()
    return states, scopes, retires


def _by_path(state: dict) -> dict[tuple, dict]:
    return {tuple(s["path"]): s for s in state["scopes"]}


def test_a_long_session_keeps_a_bounded_live_state_and_seeks_into_folded_regions(long_log):
    session = Session(SparkLogFeed(long_log, follow=False),
                      options=SessionOptions(checkpoint_every=64, keep_finished=KEEP, slice_seconds=0.002))
    sizes: list[tuple[int, int]] = []
    session.listeners.append(lambda s: sizes.append(_live_size(s)))

    async def run() -> None:
        session.start()
        while session.status not in ("done", "failed"):
            await asyncio.sleep(0.01)

    asyncio.run(run())
    assert session.status == "done" and not session.errors(), session.errors()[:3]
    head = session.head
    assert len(sizes) > 20  # many slices: the bound below held all along, not only at the end

    # every region of the application ended and all but the last KEEP were folded out of the live replay
    batches = {1, 10, 40, 64, 65, 200, head // 3, head // 2, head - 1}
    reference, regions, retires = _never_folding_states(long_log, batches)
    assert regions == 4 * COPIES and retires == regions
    assert session.replay.folded == regions - KEEP
    live_regions, live_operators = _live_size(session)
    assert live_regions == KEEP
    assert len(session.replay.root.children) == KEEP  # folded regions leave no node behind (they had no ports)
    assert scope_tree(session.replay.root)["folded"] == regions - KEEP
    # at most KEEP finished regions and the one or two running ones were ever live at once, of 120
    assert max(r for r, _ in sizes) <= KEEP + 2, max(sizes)
    assert max(o for _, o in sizes) <= (KEEP + 2) * 6, max(sizes)
    assert len(session.last_changed) <= KEEP + 3 and len(session.series.scopes) <= KEEP + 3
    assert len(session.blame.scopes) <= KEEP + 3

    # seeking shows what a replay that never folds shows: every scope still live then, port for port; a scope
    # folded by then is one whose ports were all empty
    for k in sorted(batches):
        with session.history.at_batch(k) as restored:
            got = _by_path(restored.state())
        want = _by_path(reference[k])
        assert set(got) <= set(want), k
        for path, scope in want.items():
            if path in got:
                assert got[path]["ports"] == scope["ports"], (k, path)
            else:
                assert all(not p["frontier"] and not p["pointstamps"] for p in scope["ports"]), (k, path)
        assert len(want) - len(got) <= regions - KEEP

    # an early moment: the first job's region is there, and something in it still holds its epoch
    with session.history.at_batch(3) as restored:
        first = restored.root.find((1,))
        held = [p["port"] for p in first.port_state() if p["frontier"] == [0]]
        assert ["in", 2, 0] in held, held  # the driver's sink still waits for epoch 0
    with session.history.at_batch(head) as restored:
        with pytest.raises(KeyError):
            restored.root.find((1,))
        assert restored.folded == regions - KEEP
        # a restore declares only what is live at its checkpoint, not every region the application ever had
        assert len(restored.root.children) == KEEP and restored.root.dropped == regions - KEEP


def test_a_retire_record_is_checked():
    """A retire record names a finished scope; an early or unknown one is rejected whole and changes nothing."""
    records = [
        log_records.scope([1], "job", 0, 0),
        log_records.operator([1], 1, "driver", 0, 1, capabilities=[[0]]),
        log_records.operator([1], 2, "sink", 1, 0),
        log_records.edge([1], ["out", 1, 0], ["in", 2, 0]),
    ]
    for keep in (None, 0):
        replay = Replay("t", keep_finished=keep)
        for rec in records:
            assert replay.apply(rec)
        assert not replay.apply(log_records.retire([7]))
        assert not replay.apply({"type": "retire", "path": []})
        if keep == 0:
            assert not replay.apply(log_records.retire([1]))  # still holds its capability
            assert "not finished" in replay.errors[-1].reason
            assert replay.root.find((1,)) is not None and replay.folded == 0
        replay.apply(log_records.progress([1], 0, 0, 1.0, [[["out", 1, 0], 0, -1]]))
        assert replay.apply(log_records.retire([1]))
        replay.settle()
        if keep is None:  # a one-shot replay keeps it: its ports are all empty
            assert all(not p["frontier"] for p in replay.root.find((1,)).port_state())
        else:
            assert replay.folded == 1 and [s.path for s in replay.root.scopes()] == [()]
            assert not replay.apply(log_records.retire([1]))  # folded already: no such scope


def test_a_streaming_querys_region_keeps_only_its_running_stages():
    """A query runs for days in one region: what the model keeps for the region follows the running batch, not the
    number of batches so far (the per-job records of Spark's own job list aside)."""
    from backend.eventlog import EventLogReader
    from backend.spark.model.spark_model import SparkModel

    model = SparkModel()
    kept = []
    log = next((REPO / "fixtures" / "spark" / "streaming_stateful").glob("eventlog_v2_*"))
    for ev in EventLogReader(log):
        model.feed(ev.event, ev.line)
        if ev.event.get("Event") == "SparkListenerJobEnd":
            region = model.jobs[ev.event["Job ID"]].region
            if region.kind == "streaming query":
                running = {s for j in model.jobs.values() if j.status == "RUNNING" for s in j.stages}
                kept.append(set(region.stage_ids) <= running)
    assert len(kept) >= 7 and all(kept)
    assert all(st.succeeded is None for st in model.stages.values())  # no per-task state once a job ended


def test_a_finished_jobs_stages_keep_only_what_names_them():
    """Once a job ended, its stages keep their id, region, node and epoch (what the fleet and the summary read), not
    their lineage or their tasks' targets: a long application costs a small record per stage."""
    from backend.eventlog import EventLogReader
    from backend.spark.model.spark_model import SparkModel

    model = SparkModel()
    for name in ("batch_shuffle", "streaming_stateful"):
        log = next((REPO / "fixtures" / "spark" / name).glob("eventlog_v2_*"))
        for ev in EventLogReader(log):
            model.feed(ev.event, ev.line)
    assert model.stages and all(job.status != "RUNNING" for job in model.jobs.values())
    for st in model.stages.values():
        assert not (st.parents or st.children or st.targets or st.writes), st.stage_id
        assert all(att.caps == 0 for att in st.attempts.values())  # a late event may name an attempt: nothing held
        assert st.region.path and st.node >= 3


@pytest.mark.parametrize("name", ["batch_shuffle", "streaming_stateful", "task_retries", "iterative_kmeans",
                                  "executor_lost"])
def test_a_model_that_folds_ended_jobs_says_the_same(name):
    """A session's model keeps the full records of only its latest ended jobs (``retain_jobs``); the rest fold into
    a byte per status. Folding after every job changes no record it writes and nothing its summary says (every
    job's and stage attempt's status, as Spark's own job list), and leaves one job's records."""
    from backend.eventlog import EventLogReader
    from backend.spark.model.spark_model import SparkModel

    log = next((REPO / "fixtures" / "spark" / name).glob("eventlog_v2_*"))
    full, folding = SparkModel(), SparkModel(retain_jobs=1)
    for ev in EventLogReader(log):
        assert folding.feed(ev.event, ev.line) == full.feed(ev.event, ev.line), (name, ev.line)
    assert folding.summary() == full.summary()
    assert len(full.jobs) > 1 and len(folding.jobs) <= 1 and len(folding.folded_jobs) == len(full.jobs) - 1
    assert len(folding.stages) < len(full.stages)
    assert not any(r.retired for r in folding.regions.values() if r.kind in ("job", "sql execution"))


def _retained_bytes(log, keep: int, retain_jobs: int) -> tuple[int, Session]:
    """What a server session on ``log`` still holds once done (tracemalloc: every allocation made while it ran
    and still alive), with ``keep`` finished regions live and ``retain_jobs`` jobs in the model's job list."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        feed = SparkLogFeed(log, follow=False)
        feed.model.retain_jobs = retain_jobs
        session = Session(feed, options=SessionOptions(keep_finished=keep, checkpoint_every=256))

        async def run() -> None:
            session.start()
            while session.status not in ("done", "failed"):
                await asyncio.sleep(0.01)

        asyncio.run(run())
        assert session.status == "done", session.error
        gc.collect()
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return retained, session


# What a long session may keep per job of this application (7 jobs, 4 regions, ~90 records a copy) once every
# table with a bound has reached it (the test makes those bounds small: the model's job list, the live regions,
# blame's kept times, the task ledger's stage aggregates, the cores what-if's recorded jobs). Measured: ~1.1 kB (0.85 kB
# before the task bars carried their phases). About 0.35 kB of it is the history's
# died_at (8 bytes a structure record) and each folded region's scope path in the batch index, the compressed marks
# and a byte per job and stage status; the rest the executor timeline's task bars (~0.15 kB) and decoded ids they
# keep. The gap detector's listed stages and finished attempts took ~0.45 kB more until they became a byte per stage
# (dense_keys.KeySet). Before the history, its batch index and the marks were paged and the model folded its job
# list: ~12.4 kB a job under the same bounds. Since the Python findings, batch_shuffle's first RDD stage (its Python
# workers starting) raises a cpu-idle-tasks finding, copy after copy: its mark (a finding mark is ~4 kB of dicts,
# kept whole in the timeline) adds ~0.2-0.3 kB a job (~2.2 kB measured).
BYTES_PER_JOB = 2500


def test_a_long_sessions_memory_per_job_is_bounded(tmp_path_factory, monkeypatch):
    """The memory a session keeps grows by at most BYTES_PER_JOB a job as the application gets longer: measured
    between a 140-job and a 560-job copy of the same application (the same shape: only its length differs), so
    what every session holds whatever its length (imports, caches, the open history segment) cancels out."""
    import backend.spark.diagnosis.recorded_schedule
    import backend.spark.diagnosis.tasks
    import tracker.analysis.blame

    monkeypatch.setattr(tracker.analysis.blame, "KEEP_TIMES", 50)  # bounded tables, bounded early: 140 jobs fill them
    monkeypatch.setattr(backend.spark.diagnosis.tasks, "KEEP_COMPLETED", 50)
    monkeypatch.setattr(backend.spark.diagnosis.recorded_schedule, "KEEP_JOBS", 50)  # the cores what-if's jobs
    sizes = {}
    for copies in (2, 20, 80):  # the first warms the process up (imports, caches): not measured
        target = tmp_path_factory.mktemp(f"x{copies}") / "app"
        spec = importlib.util.spec_from_file_location("replicate", REPO / "benchmarks" / "replay_vs_history_server.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        jobs = module.generate(SOURCE, copies, target)["jobs"]
        retained, session = _retained_bytes(target, keep=8, retain_jobs=30)
        sizes[jobs] = retained
        feed = session.feed
        assert isinstance(feed, SparkLogFeed)
        assert len(feed.model.jobs) <= 30 and sum(1 for _ in session.replay.root.scopes()) <= 1 + 8 + 2
        assert len(session.replay.marks) > 2 * jobs  # the whole timeline is still there
        history = session.history  # what it keeps of sealed segments in memory: where they are in the scratch file
        assert all(seg.lines is None and seg.index is None for seg in history.segments[:-1])
        assert copies == 2 or (len(history.segments) > 2 and history.scratch.size > 0)
        del session
    (j1, m1), (j2, m2) = sorted(sizes.items())[1:]
    per_job = (m2 - m1) / (j2 - j1)
    assert per_job < BYTES_PER_JOB, f"{per_job:.0f} bytes a job ({m1:,} bytes at {j1} jobs, {m2:,} at {j2})"
