"""A long application's Spark model keeps a bounded map of stage signatures, and bounding it changes no record.

The signature map (stage code and parents -> a small id) grew by one entry per distinct stage code for the
application's life: harmless while jobs repeat their code, unbounded when the code differs in every job (generated
code, a driver loop whose lambdas differ). A fixture application replicated into a long one, its stage names made
new in every job, runs through a model that remembers few signatures: the map stays bounded, ids are never reused,
and on the plain replicated log (code repeating) a model that forgets early writes exactly the records of one that
never forgets.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from backend.spark.model import placement as spark_placement
from backend.spark.model.spark_model import SparkModel

from .conftest import REPO
from .object_size import deep_size

SOURCE = next((REPO / "fixtures" / "spark" / "batch_shuffle").glob("eventlog_v2_*"))
COPIES = 40  # 280 jobs


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> list[dict]:
    spec = importlib.util.spec_from_file_location("replicate", REPO / "benchmarks" / "replay_vs_history_server.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    target = tmp_path_factory.mktemp("long") / "app-long"
    assert module.generate(SOURCE, COPIES, target)["jobs"] == 7 * COPIES
    return [json.loads(line) for line in target.read_text().splitlines() if line.strip()]


def _generated_code(events: list[dict]) -> list[dict]:
    """The same application, every job's stages named anew (as generated code would be)."""
    out = []
    for event in events:
        if event.get("Event") == "SparkListenerJobStart":
            event = json.loads(json.dumps(event))
            for info in event.get("Stage Infos", []):
                info["Stage Name"] = f"{info.get('Stage Name')} #{event['Job ID']}"
        out.append(event)
    return out


def _records(model: SparkModel, events: list[dict]) -> list[dict]:
    return [rec for i, event in enumerate(events) for rec in model.feed(event, i + 1)]


def test_stage_signatures_stay_bounded_when_every_job_has_new_code(events, monkeypatch):
    monkeypatch.setattr(spark_placement, "SIGNATURE_IDS_KEPT", 16)
    model = SparkModel(retain_jobs=10)
    sizes = []
    for i, event in enumerate(_generated_code(events)):
        model.feed(event, i + 1)
        sizes.append(model.remembered_signatures)
    assert model.signature_ids_issued > 4 * 16  # far more distinct signatures than remembered ...
    assert max(sizes) <= 2 * 16  # ... yet the map never held more than two generations


def test_forgetting_signatures_changes_no_record(events, monkeypatch):
    for source in (events, _generated_code(events)):
        want = _records(SparkModel(retain_jobs=10), source)
        monkeypatch.setattr(spark_placement, "SIGNATURE_IDS_KEPT", 4)
        forgetting = SparkModel(retain_jobs=10)
        got = _records(forgetting, source)
        monkeypatch.undo()
        assert forgetting.remembered_signatures <= 8
        assert got == want


def test_a_dropped_region_leaves_only_a_pointer_per_list_in_the_root_tracker():
    """Node numbers only grow, so the root tracker's per-node lists keep a slot for every region ever declared; a
    folded, dropped region's slot is a shared empty entry, not lists of its own (a few pointers, no more)."""
    from tracker.progress_log import records as log_records
    from tracker.progress_log.replay import Replay

    replay = Replay("long", keep_finished=0)
    sizes = {}
    for k in range(1, 3001):
        for rec in (log_records.scope([k], f"job {k}", 0, 0),
                    log_records.operator([k], 1, "driver", 0, 1, capabilities=[[0]]),
                    log_records.operator([k], 2, "sink", 1, 0),
                    log_records.edge([k], ["out", 1, 0], ["in", 2, 0]),
                    log_records.progress([k], 0, 0, float(k), [[["out", 1, 0], 0, -1]]),
                    log_records.retire([k])):
            assert replay.apply(rec), replay.errors[-1:]
        replay.settle()
        if k in (1000, 3000):
            tracker = replay.root.tracker
            assert tracker is not None
            sizes[k] = deep_size(tracker)
    assert replay.folded == 3000 and len(replay.root.children) == 0
    per_region = (sizes[3000] - sizes[1000]) / 2000
    assert per_region <= 40, per_region  # three list slots of 8 bytes, and the lists' spare room
