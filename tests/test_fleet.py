"""The fleet's per-application analysis (backend/fleet/analyze.py), its grouping of a file listing into
applications and its report, without Spark; and `make_fleet`, the directory of re-timed real logs the Spark test
and the benchmark run on."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from backend.eventlog import read_events
from backend.eventlog.encoders import encode
from backend.fleet.analyze import BLAME_KINDS, analyze_log, blame_column, blame_columns
from backend.fleet.job import analyze_app, analyze_task, canonical_path, group_applications, schemas, task_count
from backend.fleet.report import render_report, replay_command
from backend.spark.diagnosis.tasks import SKEW_FINDING

from .conftest import FIXTURES

SPARK_FIXTURES = sorted((FIXTURES / "spark").glob("*/eventlog_v2_*"))
# how the copies are laid out, in turn: every layout and codec the readers know
LAYOUTS = [("rolling", "zstd", 1), ("rolling", "zstd", 2), ("single", None, 1), ("single", "lz4", 1),
           ("single", "snappy", 1), ("single", "lzf", 1), ("rolling", "lz4", 3), ("single", "zstd", 1)]
_EPOCH_MS = re.compile(rb"(?<![0-9])179[5-9]\d{9}(?![0-9])")  # the fixtures were made from 2026 on
_ISO = re.compile(rb'"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z"')


def plain_events(log_dir: Path) -> bytes:
    import zstandard

    (part,) = log_dir.glob("events_1_*.zstd")
    with open(part, "rb") as fh:
        return zstandard.ZstdDecompressor().stream_reader(fh).read()


def retime(events: bytes, shift_ms: int) -> bytes:
    """A log `shift_ms` later: every epoch-millisecond number of the run (timestamps, and so the application id
    `local-<ms>`) and every streaming progress's ISO timestamp moved by the same amount."""
    shifted = _EPOCH_MS.sub(lambda m: str(int(m.group(0)) + shift_ms).encode(), events)

    def iso(m: re.Match) -> bytes:
        t = datetime.strptime(m.group(1).decode(), "%Y-%m-%dT%H:%M:%S.%f") + timedelta(milliseconds=shift_ms)
        return b'"timestamp":"' + t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3].encode() + b'Z"'
    return _ISO.sub(iso, shifted)


def write_log(dest: Path, app_id: str, events: bytes, layout: str, codec: str | None, parts: int) -> Path:
    """One application's log in `dest`, as Spark lays it out: a single file `<app>[.<codec>]`, or a rolling
    directory `eventlog_v2_<app>/` with `parts` parts and its final status marker."""
    suffix = f".{codec}" if codec else ""
    if layout == "single":
        path = dest / f"{app_id}{suffix}"
        path.write_bytes(encode(codec, [events]))
        return path
    path = dest / f"eventlog_v2_{app_id}"
    path.mkdir()
    lines = events.splitlines(keepends=True)
    step = -(-len(lines) // parts)
    for i in range(parts):
        chunk = b"".join(lines[i * step:(i + 1) * step])
        (path / f"events_{i + 1}_{app_id}{suffix}").write_bytes(encode(codec, [chunk]))
    (path / f"appstatus_{app_id}").write_bytes(b"")
    return path


def make_fleet(dest: Path, copies: int, events_of=plain_events) -> list[tuple[Path, str, int]]:
    """`copies` re-timed copies of every real fixture log in `dest` (an hour apart, each under its own
    application id, in turn in every layout and codec). Returns (path, fixture name, shift in ms) per log.
    `events_of(fixture)` gives a fixture's JSON lines (the benchmark passes bigger ones)."""
    made: list[tuple[Path, str, int]] = []
    ids = set()
    for fixture in SPARK_FIXTURES:
        events = events_of(fixture)
        original = fixture.name.removeprefix("eventlog_v2_")
        for i in range(copies):
            shift = (i + 1) * 3_600_000 + len(made)
            head, _, number = original.rpartition("-")  # local-<ms>, or app-<date>-<n> (local-cluster)
            app_id = f"{head}-{int(number) + shift}"
            assert app_id not in ids
            ids.add(app_id)
            layout, codec, parts = LAYOUTS[len(made) % len(LAYOUTS)]
            # a local-cluster id (app-<date>-<n>) holds no epoch milliseconds: renamed in the events as well
            path = write_log(dest, app_id, retime(events, shift).replace(original.encode(), app_id.encode()),
                             layout, codec, parts)
            made.append((path, fixture.parent.name, shift))
    return made


def fixture_log(name: str) -> Path:
    return next(p for p in SPARK_FIXTURES if p.parent.name == name)


def _status(name: str) -> dict:
    return json.loads((FIXTURES / "spark" / name / "spark-status.json").read_text())


# --- analyze: one application -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [p.parent.name for p in SPARK_FIXTURES])
def test_application_row_agrees_with_what_spark_reported(name: str) -> None:
    rows = analyze_log(fixture_log(name))
    app, status = rows.application, _status(name)
    assert app["readable"] and app["problems"] == []
    assert (app["app_id"], app["name"], app["spark_version"]) == (status["app_id"], status["app_name"],
                                                                  status["spark_version"])
    assert app["jobs"] == len(status["jobs"])
    assert app["failed_jobs"] == sum(1 for j in status["jobs"] if j["status"] == "FAILED")
    assert app["tasks"] == status["task_ends"]
    assert app["state"] == "complete" and app["start"] < app["end"]


def _events(name: str) -> list[dict]:
    return [ev.event for ev in read_events(fixture_log(name))]


@pytest.mark.parametrize("name", ["batch_shuffle", "skewed_straggler", "task_retries", "iterative_pagerank"])
def test_a_batch_jobs_time_runs_from_its_submission_to_its_end(name: str) -> None:
    """In a batch region a time is one job: it starts at the job's submission and ends at its completion, as
    Spark's own JobStart and JobEnd events say."""
    rows = analyze_log(fixture_log(name))
    events = _events(name)
    submitted = {e["Job ID"]: e["Submission Time"] / 1000 for e in events if e["Event"] == "SparkListenerJobStart"}
    completed = {e["Job ID"]: e["Completion Time"] / 1000 for e in events if e["Event"] == "SparkListenerJobEnd"}
    status = {j["jobId"]: j["status"] for j in _status(name)["jobs"]}
    by_job = {t["job_ids"][0]: t for t in rows.times}
    assert set(by_job) == set(status) and all(len(t["job_ids"]) == 1 for t in rows.times)
    for job_id, t in by_job.items():
        assert (t["start"], t["end"]) == (submitted[job_id], completed[job_id])
        assert t["latency_s"] == pytest.approx(completed[job_id] - submitted[job_id])
        assert t["batch_id"] is None and t["status"] == status[job_id]


def test_a_micro_batch_runs_from_its_trigger_and_the_stall_is_found() -> None:
    rows = analyze_log(fixture_log("streaming_stall"))
    batches = {t["batch_id"]: t for t in rows.times if t["region_kind"] == "streaming query"}
    trigger_ms = {b["batchId"]: b["triggerMs"] for b in _status("streaming_stall")["query"]["batches"]}
    progress = {e["progress"]["batchId"]: e["progress"] for e in _events("streaming_stall")
                if e["Event"].endswith("QueryProgressEvent")}
    assert set(batches) == set(trigger_ms) == set(progress)
    for batch_id, t in batches.items():
        started = datetime.fromisoformat(progress[batch_id]["timestamp"].replace("Z", "+00:00")).timestamp()
        assert t["start"] == pytest.approx(started, abs=1e-6) and t["time"] == batch_id
        # it ends with its last job, before the trigger's commits that Spark's trigger time also counts
        assert trigger_ms[batch_id] / 1000 - 0.4 <= t["latency_s"] <= trigger_ms[batch_id] / 1000 + 1e-6  # float ms
    slowest = max(batches.values(), key=lambda t: t["latency_s"])
    assert slowest["batch_id"] == max(trigger_ms, key=trigger_ms.__getitem__) == 4
    assert "BatchEvalPython" in slowest["culprit"] and slowest["job_ids"]
    # blamed as `flowscope blame` does: the seconds by kind add up to the latency, the UDF's task holds most
    assert sum(slowest[blame_column(k)] for k in BLAME_KINDS) == pytest.approx(slowest["latency_s"], abs=0.01)
    assert slowest[blame_column("task")] >= 0.5 * slowest["latency_s"]


def test_the_straggler_and_its_skew_name_partition_0() -> None:
    rows = analyze_log(fixture_log("skewed_straggler"))
    (stage,) = [s for s in rows.stages if s["stragglers"]]
    assert stage["skew"] >= SKEW_FINDING and stage["tasks"] == 4 and "partition 0" in stage["straggler"]
    assert stage["held_s"] >= stage["max_task_s"]
    (slow,) = [t for t in rows.times if t["culprit_signature"] == stage["signature"]]
    assert "partition 0" in slow["culprit"]


def test_a_failed_job_is_a_failed_time_and_its_stage_counts_the_failed_attempt() -> None:
    rows = analyze_log(fixture_log("task_retries"))
    failed = [t for t in rows.times if t["status"] == "FAILED"]
    assert len(failed) == 1
    assert sum(s["failed_attempts"] for s in rows.stages) == 1


def test_a_retimed_copy_gives_the_same_rows_shifted(tmp_path: Path) -> None:
    made = make_fleet(tmp_path, 2)
    by_fixture = {p.parent.name: analyze_log(p) for p in SPARK_FIXTURES}
    for path, name, shift in made:
        rows, original = analyze_log(path), by_fixture[name]
        assert rows.application["problems"] == [] and rows.application["app_id"] != original.application["app_id"]
        assert rows.application["start"] == pytest.approx(original.application["start"] + shift / 1000)
        assert [t["latency_s"] for t in rows.times] == pytest.approx([t["latency_s"] for t in original.times],
                                                                      abs=1e-3)
        assert [s["signature"] for s in rows.stages] == [s["signature"] for s in original.stages]


def test_an_unreadable_log_is_a_row_with_its_problem(tmp_path: Path) -> None:
    garbage = tmp_path / "local-1.zstd"
    garbage.write_bytes(b"this is not zstd at all")
    rows = analyze_log(garbage)
    assert not rows.application["readable"] and rows.application["app_id"] == "local-1"
    assert "not a Spark event log" in rows.application["problems"][0] and rows.times == []
    named = analyze_log(garbage, log_name="s3a://bucket/logs/local-1.zstd")
    assert named.application["problems"][0].startswith("s3a://bucket/logs/local-1.zstd: not a Spark event log")
    missing = analyze_log(tmp_path / "nothing-here")
    assert not missing.application["readable"] and "no such file" in missing.application["problems"][0]


def test_corrupt_lines_are_a_problem_but_the_rest_is_analysed(tmp_path: Path) -> None:
    events = plain_events(fixture_log("batch_shuffle")).splitlines(keepends=True)
    events[40] = b'{"Event":"SparkListenerTaskEnd", broken\n'
    path = write_log(tmp_path, "local-2", b"".join(events), "single", None, 1)
    rows = analyze_log(path)
    assert rows.application["readable"] and rows.application["corrupt_lines"] == 1
    assert "1 corrupt lines skipped; first:" in rows.application["problems"][0]
    assert f"first: {path}:41: " in rows.application["problems"][0] and rows.times
    # the rows name the log as the caller knows it (the fleet analyses local copies of hdfs:// or s3a:// logs)
    copy = analyze_log(path, log_name="hdfs://nn/logs/local-2")
    assert "first: hdfs://nn/logs/local-2:41: " in copy.application["problems"][0]
    assert copy.application["log"] == "hdfs://nn/logs/local-2" and str(tmp_path) not in str(copy.application)


def test_every_completed_time_is_blamed_as_flowscope_blame_blames_it() -> None:
    from backend.spark.diagnosis.blame import blame_log
    from backend.spark.recording.convert import SparkLogConversion

    rows = analyze_log(fixture_log("streaming_stall"))
    conversion = SparkLogConversion(fixture_log("streaming_stall"))
    direct = {(tuple(t.scope), t.time): t.to_json() for t in blame_log(conversion)}
    assert rows.times and direct
    for t in rows.times:
        entry = direct.get((tuple(t["scope"]), t["time"]))
        if entry is None:
            assert all(t[blame_column(k)] is None for k in BLAME_KINDS)
            continue
        for kind in BLAME_KINDS:
            seconds = sum(seg["seconds"] for seg in entry["blame"] if seg["kind"] == kind)
            assert t[blame_column(kind)] == pytest.approx(seconds, abs=1e-9)


def test_blame_columns_cover_every_kind() -> None:
    cols = blame_columns({"blame": [{"kind": "recompute", "seconds": 2}, {"kind": "waiting-for-slots",
                                                                          "seconds": 1}]})
    assert cols["blame_recompute_s"] == 2.0 and cols["blame_waiting_for_slots_s"] == 1.0
    assert {blame_column(k) for k in BLAME_KINDS} <= set(cols) and cols["culprit"].startswith("recompute")


# --- the job's pure parts: grouping a listing, a task's local copy -----------------------------------------------


def test_a_listing_groups_into_applications() -> None:
    listing = [
        "file:///d/eventlog_v2_local-1/events_2_local-1.zstd", "file:///d/eventlog_v2_local-1/events_1_local-1.zstd",
        "file:///d/eventlog_v2_local-1/appstatus_local-1", "file:///d/local-2.lz4", "file:///d/local-3.inprogress",
        "file:///d/README.md", "file:///d/sub/application_17_0001_1.zstd", "file:///d/spark-status.json",
    ]
    apps, skipped = group_applications(listing)
    assert skipped == 2
    assert [a.path for a in apps] == ["file:///d/eventlog_v2_local-1", "file:///d/local-2.lz4",
                                      "file:///d/local-3.inprogress", "file:///d/sub/application_17_0001_1.zstd"]
    assert [a.index for a in apps] == [0, 1, 2, 3] and apps[0].rolling and len(apps[0].files) == 3
    assert canonical_path("file:/d/a%20b") == canonical_path("file:///d/a b") == "file:///d/a b"


def test_a_task_analyses_a_local_copy_of_the_bytes_it_was_sent(tmp_path: Path) -> None:
    made = make_fleet(tmp_path, 2)
    # a rolling log in several parts (which fixture gets that layout depends on how many fixtures there are)
    path = next(p for p, _, _ in made if len(list(p.glob("events_*"))) >= 2)
    files = sorted(path.iterdir())
    apps, _ = group_applications(f"file://{f}" for f in files)
    (app,) = apps
    result = analyze_app(app, [(f"file://{f}", f.read_bytes()) for f in files if f.stat().st_size])
    direct = analyze_log(path)
    assert result["applications"][0] == direct.application
    assert result["times"] == direct.times and result["stages"] == direct.stages


def test_a_task_analyses_the_applications_dealt_to_it_each_from_its_own_files(tmp_path: Path) -> None:
    """Task k of 2 gets applications k, k + 2, ...: each from its own (sorted) files, one whose only file is empty
    (no bytes were shuffled for it) as a row with its problem, in the tables' column order (k: the task the empty
    one is dealt to, whatever the number of fixtures)."""
    make_fleet(tmp_path, 1)
    (tmp_path / "eventlog_v2_local-7").mkdir()
    (tmp_path / "eventlog_v2_local-7" / "appstatus_local-7").write_bytes(b"")
    listing = [f"file://{f}" for f in sorted(tmp_path.rglob("*")) if f.is_file()]
    apps, _ = group_applications(listing)
    task = next(i for i, app in enumerate(apps) if app.path.endswith("local-7")) % 2  # the task the empty one is in
    mine = apps[task::2]
    items = sorted((app.index, (path, Path(path.removeprefix("file://")).read_bytes())) for app in mine
                   for path in app.files if Path(path.removeprefix("file://")).stat().st_size)
    rows = list(analyze_task(apps, task, 2, iter(items)))
    assert len(rows) == len(mine) >= 3
    columns = {name: [f.name for f in schema.fields] for name, schema in schemas().items()}
    for app, (application, times, stages) in zip(mine, rows, strict=True):
        local = Path(app.path.removeprefix("file://"))
        direct = analyze_log(local)
        assert dict(zip(columns["applications"], application, strict=True)) == direct.application
        assert [dict(zip(columns["times"], t, strict=True)) for t in times] == [
            {c: t.get(c) for c in columns["times"]} for t in direct.times]
        assert len(stages) == len(direct.stages)
    empty = next(row for app, row in zip(mine, rows, strict=True) if app.path.endswith("local-7"))
    assert empty[0][columns["applications"].index("readable")] is False
    assert task_count(0, 2) == 1 and task_count(5, 2) == 5 and task_count(90, 2) == 6
    assert task_count(10_000, 2) == 157  # at most 64 applications a task


# --- the report --------------------------------------------------------------------------------------------------


def test_the_report_is_self_contained_and_links_each_slow_time_to_a_replay() -> None:
    rows = analyze_log(fixture_log("streaming_stall"))
    slow = sorted(rows.times, key=lambda t: -t["latency_s"])
    for t in slow:
        t["log"] = "/logs/eventlog_v2_local-9"
    sig = {"signature": rows.stages[0]["signature"], "name": "stage </script> x", "region_kind": "job",
           "applications": 1, "runs": 2, "held_s": 3.0, "max_held_s": 2.0, "max_skew": 1.5, "stragglers": 0,
           "failed_attempts": 0, "longest": {"app_id": "local-9", "scope": [2], "start": 1795290730.732,
                                             "held_s": 2.0, "log": "/logs/eventlog_v2_local-9"}}
    series = [{"signature": sig["signature"], "app_id": "local-9", "app_start": 1795290694.0, "held_s": 3.0,
               "log": "/logs/eventlog_v2_local-9", "start": 1795290729.626, "scope": [2]}]
    page = render_report([sig], slow, series, [], {"applications": 1, "unreadable": 0}, "/out")
    assert "<script src=" not in page and "https://" not in page.split("plotly.js v")[0][-2000:]
    assert len(page) > 1_000_000  # plotly.js itself is inside
    # each slow time opens its region at the batch that completed it (tests/test_browser_replay_at.py runs one)
    for t in slow:
        scope = ",".join(map(str, t["scope"]))
        assert f"flowscope replay /logs/eventlog_v2_local-9 --at {t['end_batch']} --scope {scope}" in page
    assert "stage &lt;/script&gt; x" in page and "completed at batch" in page
    # a signature's longest run and each regression point: where its stage started holding (UTC wall clock)
    assert "flowscope replay /logs/eventlog_v2_local-9 --at 2026-11-21T19:52:10.732Z --scope 2" in page
    point = "flowscope replay /logs/eventlog_v2_local-9 --at 2026-11-21T19:52:09.626Z --scope 2"
    assert point.replace("/", "\\u002f") in page  # in the chart's JSON, as plotly escapes it
    assert replay_command("/a b/c") == "flowscope replay '/a b/c'"
    assert replay_command("/a b/c", batch=7, scope=(3, 1)) == "flowscope replay '/a b/c' --at 7 --scope 3,1"


def test_the_cli_names_a_missing_directory_before_starting_spark(tmp_path: Path, capsys) -> None:
    from flowscope.cli import main

    assert main(["fleet", str(tmp_path / "absent"), "-o", str(tmp_path / "out")]) == 2
    assert f"{tmp_path / 'absent'}: no such directory" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_job_runs_alone_with_or_without_its_subcommand_name(tmp_path: Path, capsys) -> None:
    """`spark-submit backend/fleet/submit.py DIR -o OUT` (job.main) and `python -m backend.spark.recording.convert LOG
    -o OUT` are the CLI's commands without the CLI (backend.spark.recording.subcommand.run_subcommand): the name may be
    given or left out."""
    from backend.fleet import job
    from backend.spark.recording import convert
    for argv in ([str(tmp_path / "absent"), "-o", str(tmp_path / "out")],
                 ["fleet", str(tmp_path / "absent"), "-o", str(tmp_path / "out")]):
        assert job.main(argv) == 2
        assert f"{tmp_path / 'absent'}: no such directory" in capsys.readouterr().err
    for argv in ([str(tmp_path / "absent.log"), "-o", "-"], ["record", str(tmp_path / "absent.log"), "-o", "-"]):
        assert convert.main(argv) == 2
        assert "absent.log" in capsys.readouterr().err
