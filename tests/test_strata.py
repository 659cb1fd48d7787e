"""Strata: stratification (with networkx), rejection of negation in a loop without a tick, and stratified runs of
the design's set difference and of reachability with negation, checked against plain Python."""

from __future__ import annotations

import pytest

from tracker.progress_log.log_file import read_records
from tracker.runtime import Chaos, GlobalView
from tracker.runtime.strata import Program, StratificationError, stratify

from .test_runtime import load_example


def test_strata_of_the_design_examples():
    strata = load_example("strata")
    assert stratify(strata.difference_program()) == {"A": 0, "B": 0, "C = A \\ B": 1, "C": 1}
    s = stratify(strata.reachability_program())
    assert s["reach"] == s["step"] == 0, "the monotone recursion is one stratum"
    assert s["unreached"] == 1 and s["unreachable"] == 1


def test_negation_in_a_loop_without_a_tick_is_rejected():
    p = Program()
    p.input("base")
    p.difference("p", "base", "q")
    p.map("q", "p", lambda x: x)
    with pytest.raises(StratificationError) as err:
        stratify(p)
    assert err.value.cycle == ["p", "q"]
    assert "'p' is inside a loop without a tick: p -> q -> p" in str(err.value)


def test_negation_through_a_tick_is_accepted():
    p = Program()
    p.input("base")
    p.difference("p", "base", "q")
    p.next_tick("q", "p")
    strata = stratify(p)
    assert strata["p"] == 1 and strata["q"] == 1


def test_undeclared_input_is_named():
    p = Program()
    p.map("m", "nowhere", lambda x: x)
    with pytest.raises(ValueError, match="'m' reads 'nowhere'"):
        stratify(p)


@pytest.mark.parametrize("peers", [1, 2, 4])
def test_set_difference_over_ticks(peers):
    strata = load_example("strata")
    view = GlobalView()
    runners = strata.run_difference(peers, chaos=Chaos(seed=peers) if peers > 1 else None, global_view=view)
    assert strata.merged(runners, "C") == strata.expected_difference()
    for runner in runners:
        assert runner["completions"] == [(t, s) for t in range(len(strata.DIFF_TICKS)) for s in range(2)]
    assert view.violations == []


@pytest.mark.parametrize("peers", [1, 2, 4])
def test_reachability_with_negation(peers, tmp_path):
    strata = load_example("strata")
    view = GlobalView()
    chaos = Chaos(seed=11) if peers > 1 else None
    runners = strata.run_reachability(peers, chaos=chaos, global_view=view, record_dir=tmp_path)
    reach, unreach = strata.expected_reachability()
    assert strata.merged(runners, "reachable") == reach
    assert strata.merged(runners, "unreachable") == unreach
    assert view.violations == []
    # strata and completions are in the progress log, for the debugger
    records = [r for _, r in read_records(tmp_path / "worker-0.jsonl")]
    ops = {r["name"]: r for r in records if r["type"] == "operator"}
    assert ops["unreached"]["attrs"] == {"stratum": 1, "monotone": False, "kind": "difference"}
    assert ops["step"]["attrs"]["stratum"] == 0
    marks = [r["label"] for r in records if r["type"] == "mark"]
    assert marks[:3] == ["tick 0: stratum 0 complete", "tick 0: stratum 1 complete", "tick 0 complete"]
    assert len(marks) == 3 * len(strata.REACH_TICKS)
