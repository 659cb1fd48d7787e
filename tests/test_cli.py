"""The flowscope command line, run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from flowscope.cli import main
from tracker.progress_log.replay import replay_file

from .conftest import LOOP_LOG, REPO


def flowscope(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "flowscope.cli", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_frontiers_json_matches_the_replay():
    out = json.loads(flowscope("frontiers", LOOP_LOG, "--at", 20, "--json").stdout)
    expected = json.loads(json.dumps(replay_file(LOOP_LOG, at=20).state()))
    assert out == expected
    root = out["scopes"][0]
    assert root["path"] == [] and set(root["ports"][0]) >= {"port", "frontier", "pointstamps", "implications"}
    sink = next(p for p in root["ports"] if p["port"] == ["in", 4, 0])
    assert sink["frontier"] == [0]


def test_frontiers_text_and_check():
    proc = flowscope("frontiers", LOOP_LOG, "--check")
    assert "scope [3] 'loop' (depth 2)" in proc.stdout
    assert "0 contract findings" in proc.stdout
    assert "rejected" in proc.stdout


def test_bad_input_is_reported_with_file_and_line(tmp_path):
    log = tmp_path / "bad.jsonl"
    lines = LOOP_LOG.read_text().splitlines()
    lines[20] = lines[20][:25]  # corrupt one progress line in the middle
    log.write_text("\n".join(lines) + "\n")
    proc = flowscope("frontiers", log, "--json")
    assert f"{log}:21: " in proc.stderr
    assert json.loads(proc.stdout)["scopes"], "the rest of the log was replayed"
    missing = flowscope("frontiers", tmp_path / "nope.jsonl", check=False)
    assert missing.returncode == 2 and "no such file" in missing.stderr
    notlog = tmp_path / "x.jsonl"
    notlog.write_text('{"Task":"SparkListenerLogStart"}\n')  # neither a progress log nor a Spark event log
    proc = flowscope("frontiers", notlog, check=False)
    assert proc.returncode == 2 and "not a flowscope progress log" in proc.stderr


def test_explain_names_the_holder():
    proc = flowscope("explain", LOOP_LOG, "--at", 20, "--port", "in,4,0")
    assert "held by out(3,0) (loop) at 0" in proc.stdout
    proc = flowscope("explain", LOOP_LOG, "--at", 20, "--scope", "[3]", "--port", "in,0,0", "--time", "[0,5]", "--json")
    inner = json.loads(proc.stdout)
    holders = {(tuple(h["location"]), tuple(h["time"])) for h in inner["holders"]}
    assert holders == {(("in", 2, 0), (0, 2))}, "inside the loop, epoch 0's record at the step operator holds it"


def test_explain_takes_the_rest_scope_forms_and_says_what_is_wrong():
    """``--scope`` takes what the REST API's ``scope=`` takes (``1``, ``[1]``); a scope or port the log lacks, a
    malformed port or time, is said on stderr with what exists instead (exit code 2), never a traceback."""
    log = REPO / "fixtures" / "spark" / "batch_shuffle" / "eventlog_v2_local-1795290522070"
    args = ("--port", "in,2,0", "--at", 5, "--json")
    answer = json.loads(flowscope("explain", log, "--scope", "[1]", *args).stdout)
    assert answer["scope"] == [1] and answer["frontier"]
    assert json.loads(flowscope("explain", log, "--scope", "1", *args).stdout) == answer

    def mistake(*argv):
        proc = flowscope("explain", *argv, check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and not proc.stdout, proc.stderr
        return proc.stderr

    # a Spark log's root has no ports: the scopes inside it are named
    assert "scope [] has no port in(2,0) (it has no ports; --scope picks one inside it, scopes: [1], [2]" in mistake(
        log, "--port", "in,2,0")
    assert "no scope [1, 7] (scopes: [], [1], [2]" in mistake(log, "--scope", "1,7", "--port", "in,2,0")
    assert "scope [1] has no port in(9,0) (its ports: out(1,0), in(2,0)," in mistake(
        log, "--scope", "1", "--port", "in,9,0")
    assert "argument --port: port 'in,2': give in,NODE,PORT" in mistake(log, "--port", "in,2")
    assert "argument --scope: scope 'one'" in mistake(log, "--scope", "one", "--port", "in,2,0")
    assert "argument --at: '-1'" in mistake(log, "--port", "in,2,0", "--at", -1)
    assert "--time [1,2]: " in mistake(log, "--scope", "1", "--port", "in,2,0", "--time", "[1,2]")


@pytest.mark.parametrize("argv", [
    ["blame", "LOG", "--top", "0"], ["blame", "LOG", "--top", "-1"], ["frontiers", "LOG", "--at", "-1"],
    ["bundle", "LOG", "-o", "x.html", "--spaced", "-1"], ["bundle", "LOG", "-o", "x.html", "--max-explain", "-5"],
    ["replay", "LOG", "--upload-limit", "0"], ["serve", "--upload-decompressed-limit", "-1"],
    ["demo", "--batches", "0"], ["demo", "--rows-per-second", "two"], ["demo", "--stall", "-1"],
    ["demo", "--stall", "nan"],
])
def test_counts_and_limits_out_of_range_are_usage_errors(argv, capsys):
    """A count or limit below what it can mean is refused by the parser, naming the option (exit code 2), before
    anything runs."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    option = next(a for a in reversed(argv) if a.startswith("--"))
    assert f"error: argument {option}: " in capsys.readouterr().err


def test_frontiers_of_a_spark_event_log_are_those_of_its_recorded_progress_log(tmp_path):
    """``frontiers`` and ``explain`` take a Spark event log as well: converted and replayed in one command, the same
    state as ``record`` then ``frontiers``; a corrupt line is reported with its file and line, and skipped."""
    import zstandard

    source = REPO / "fixtures" / "spark" / "batch_shuffle" / "eventlog_v2_local-1795290522070"
    with zstandard.ZstdDecompressor().stream_reader((source / "events_1_local-1795290522070.zstd").open("rb")) as fh:
        lines = fh.read().splitlines(keepends=True)
    log = tmp_path / "app-damaged"
    log.write_bytes(b"".join(lines[:5] + [b'{"Event": broken\n'] + lines[5:]))
    recorded = tmp_path / "recorded.jsonl"
    flowscope("record", "-q", log, "-o", recorded)
    direct = flowscope("frontiers", log, "--json")
    assert json.loads(direct.stdout) == json.loads(flowscope("frontiers", recorded, "--json").stdout)
    assert f"{log}:6: invalid-json" in direct.stderr
    early = json.loads(flowscope("frontiers", log, "--at", 5, "--json").stdout)
    assert early == json.loads(flowscope("frontiers", recorded, "--at", 5, "--json").stdout)
    assert early != json.loads(direct.stdout)
    port = "in,2,0"
    assert flowscope("explain", log, "--scope", "[1]", "--port", port, "--at", 5).stdout == flowscope(
        "explain", recorded, "--scope", "[1]", "--port", port, "--at", 5).stdout
