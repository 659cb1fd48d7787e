"""`flowscope fleet` on real PySpark (local[2]): 200+ re-timed real logs in every layout and codec, plus broken
ones, through the Spark job; its Parquet tables must say exactly what the per-application analysis says when run
directly on each log, and a broken log must be a row with its problem, never a failed job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from backend.fleet.analyze import analyze_log
from backend.fleet.job import run_fleet
from backend.spark.diagnosis.tasks import SKEW_FINDING

from .test_fleet import fixture_log, make_fleet, plain_events, write_log

# Spark's Python workers must run this interpreter (its packages: zstandard, lz4, ...); set before any session
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

COPIES = 35  # copies of each fixture log (ten fixtures: 350 applications)


@pytest.fixture(scope="module")
def session():
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    active = SparkSession.getActiveSession()
    if active is not None:  # another module's session: share it (one SparkContext per process)
        yield active
        return
    spark = (SparkSession.builder.master("local[2]").appName("flowscope-fleet-tests")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


def _key(row: dict) -> tuple:
    return row["app_id"], tuple(row["scope"]), row["time"]


def test_the_fleet_tables_are_the_per_application_analysis(session, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    made = make_fleet(logs, COPIES)
    (logs / "local-1000000000001.zstd").write_bytes(b"\x28\xb5\x2f\xfd but then garbage")  # zstd magic, no frame
    original = fixture_log("skewed_straggler").name.removeprefix("eventlog_v2_").encode()
    events = plain_events(fixture_log("skewed_straggler")).replace(original, b"local-1000000000002").splitlines(True)
    events[10] = b"{not json\n"
    damaged = write_log(logs, "local-1000000000002", b"".join(events[:30]), "rolling", "zstd", 2)  # corrupt, cut
    (logs / "README.md").write_text("not a log")
    out = tmp_path / "out"

    summary = run_fleet(session, str(logs), str(out))

    assert len(made) >= 200 and summary.applications == len(made) + 2 and summary.skipped_files == 1
    read = session.read.parquet
    apps = {r["app_id"]: r.asDict(recursive=True) for r in read(str(out / "applications")).collect()}
    times = {_key(r.asDict()): r.asDict() for r in read(str(out / "times")).collect()}
    stages = [r.asDict() for r in read(str(out / "stages")).collect()]
    assert len(apps) == len(made) + 2

    expected_times: dict[tuple, dict] = {}
    expected_stages = 0
    for path in [p for p, _, _ in made] + [damaged]:
        direct = analyze_log(path)
        assert apps[direct.application["app_id"]] == direct.application
        expected_times.update((_key(t), t) for t in direct.times)
        expected_stages += len(direct.stages)
    assert times.keys() == expected_times.keys()
    for key, t in expected_times.items():
        assert {k: times[key][k] for k in t} == t, key
    assert len(stages) == expected_stages == summary.stages

    unreadable = apps["local-1000000000001"]
    assert not unreadable["readable"] and unreadable["problems"] and unreadable["jobs"] == 0
    cut = apps["local-1000000000002"]
    assert cut["readable"] and cut["corrupt_lines"] == 1 and cut["jobs"] >= 1
    assert any("corrupt lines skipped" in p for p in cut["problems"])
    assert any("has not ended" in p for p in cut["problems"])
    assert summary.unreadable == 1

    signatures = {r["signature"]: r.asDict() for r in read(str(out / "stage_signatures")).collect()}
    for sig, row in signatures.items():
        runs = [s for s in stages if s["signature"] == sig]
        assert row["runs"] == len(runs) and row["applications"] == len({s["app_id"] for s in runs})
        assert row["held_s"] == pytest.approx(sum(s["held_s"] for s in runs))
    # the same code in every copy: each fixture's signatures recur in all of its copies
    assert max(r["applications"] for r in signatures.values()) >= COPIES
    straggling = [r for r in signatures.values() if r["stragglers"]]
    assert straggling and all(r["max_skew"] >= SKEW_FINDING for r in straggling)

    page = (out / "report.html").read_text()
    assert summary.report == str(out / "report.html") and "plotly" in page.lower()
    slowest = max(expected_times.values(), key=lambda t: t["latency_s"])
    log = next(a["log"] for a in apps.values() if a["app_id"] == slowest["app_id"])
    assert f"flowscope replay {log}" in page


def test_bytes_read_through_sparks_scan_give_the_same_tables(session, tmp_path: Path) -> None:
    """Logs on a filesystem only Spark reads (hdfs://, s3a://) reach the tasks as bytes from Spark's scan,
    shuffled to each application's task; forced here on local files (`read_locally=False`): the same rows as the
    analysis of each log, a broken log and a rolling directory holding only its status marker as problem rows."""
    logs = tmp_path / "logs"
    logs.mkdir()
    made = make_fleet(logs, 2)
    (logs / "local-1000000000001.zstd").write_bytes(b"\x28\xb5\x2f\xfd but then garbage")
    (logs / "eventlog_v2_local-1000000000003").mkdir()
    (logs / "eventlog_v2_local-1000000000003" / "appstatus_local-1000000000003").write_bytes(b"")
    out = tmp_path / "out"

    summary = run_fleet(session, str(logs), str(out), report=False, read_locally=False)

    assert summary.applications == len(made) + 2 and summary.unreadable == 2
    read = session.read.parquet
    apps = {r["app_id"]: r.asDict(recursive=True) for r in read(str(out / "applications")).collect()}
    times = {_key(r.asDict()): r.asDict() for r in read(str(out / "times")).collect()}
    expected_times: dict[tuple, dict] = {}
    for path, _, _ in made:
        direct = analyze_log(path)
        assert apps[direct.application["app_id"]] == direct.application
        expected_times.update((_key(t), t) for t in direct.times)
    assert times.keys() == expected_times.keys()
    for key, t in expected_times.items():
        assert {k: times[key][k] for k in t} == t, key
    assert not apps["local-1000000000001"]["readable"] and not apps["local-1000000000003"]["readable"]
    assert apps["local-1000000000003"]["problems"]


def _console_progress(tmp_path: Path, **env: str) -> str:
    """The spark.ui.showConsoleProgress of the session `flowscope fleet` builds, in a process of its own (a JVM is
    started there with the given environment)."""
    code = ("from backend.fleet.job import build_session\n"
            "s = build_session('local[1]')\n"
            "print('VALUE=' + s.sparkContext.getConf().get('spark.ui.showConsoleProgress', 'unset'))\n"
            "s.stop()\n")
    base = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR")}
    run = subprocess.run([sys.executable, "-c", code], env={**base, "SPARK_LOCAL_IP": "127.0.0.1",
                         "PYTHONPATH": str(Path(__file__).resolve().parents[1]), **env},
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.split("VALUE=")[1].strip()


def test_the_fleet_session_draws_no_console_progress_bar_unless_configured(tmp_path: Path) -> None:
    """Spark's progress bar would be mixed into the job's own lines: off by default, as the user set it otherwise
    (spark-submit's --conf through PYSPARK_SUBMIT_ARGS, or spark-defaults.conf)."""
    assert _console_progress(tmp_path) == "false"
    submit_args = "--conf spark.ui.showConsoleProgress=true pyspark-shell"
    assert _console_progress(tmp_path, PYSPARK_SUBMIT_ARGS=submit_args) == "true"
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("# mine\nspark.ui.showConsoleProgress   true\n")
    assert _console_progress(tmp_path, SPARK_CONF_DIR=str(conf)) == "true"


def test_a_fleet_in_a_bucket_is_listed_and_read_through_the_stores(session, s3, tmp_path: Path) -> None:
    """`flowscope fleet s3://...` (a real process, its own JVM) lists the bucket through backend.stores and each task
    reads its applications from the store: the same rows as the analysis of each log on disk."""
    logs = tmp_path / "logs"
    logs.mkdir()
    made = make_fleet(logs, 1)
    url = s3.put_tree(logs, f"{s3.bucket('fleet')}/spark-events")
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "flowscope.cli", "fleet", url, "-o", str(out), "--master", "local[2]",
                          "--no-report"], env={**s3.env, "SPARK_LOCAL_IP": "127.0.0.1"}, capture_output=True,
                         text=True, timeout=600, cwd=Path(__file__).resolve().parents[1])
    assert run.returncode == 0, run.stderr[-3000:]
    apps = {r["app_id"]: r.asDict(recursive=True) for r in session.read.parquet(str(out / "applications")).collect()}
    assert len(apps) == len(made)
    for path, _, _ in made:
        direct = analyze_log(path).application
        row = apps[direct["app_id"]]
        assert row["log"] == f"{url}/{path.name}"
        assert {k: v for k, v in row.items() if k != "log"} == {k: v for k, v in direct.items() if k != "log"}
