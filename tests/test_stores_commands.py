"""The commands read logs in S3 as they read them on disk: the same answers, and one line when they cannot.

The logs are real (fixtures/spark, made by PySpark): a rolling `eventlog_v2_` directory as Spark 4 writes it, the
same events as one plain file and as one lz4 file, each uploaded to a real S3 API server (moto's, its own process
on 127.0.0.1, reached through `AWS_ENDPOINT_URL`). Each command runs as a real `flowscope` process.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from backend.eventlog.encoders import encode

from .conftest import FIXTURES, LOOP_LOG, REPO
from .s3_server import S3Server, client_env, free_port, moto_server

ROLLING = next((FIXTURES / "spark" / "skewed_straggler").glob("eventlog_v2_*"))
APP = ROLLING.name.removeprefix("eventlog_v2_")


def flowscope(*args: object, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flowscope.cli", *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def log_text(rolling: Path) -> bytes:
    """The events of a rolling zstd log, decompressed (independently of backend.eventlog)."""
    out = b""
    for part in sorted(rolling.glob("events_*")):
        with open(part, "rb") as fh:
            out += zstandard.ZstdDecompressor().stream_reader(fh, read_across_frames=True).read()
    return out


@pytest.fixture(scope="module")
def logs(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Each layout's local log and its URL in the bucket."""
    local = tmp_path_factory.mktemp("logs")
    shutil.copytree(ROLLING, local / ROLLING.name)
    text = log_text(ROLLING)
    (local / APP).write_bytes(text)
    (local / f"{APP}.lz4").write_bytes(encode("lz4", [text[i:i + 65536] for i in range(0, len(text), 65536)]))
    bucket = s3.bucket("spark-logs")
    out = {}
    for layout, name in (("rolling", ROLLING.name), ("plain", APP), ("lz4", f"{APP}.lz4")):
        out[layout] = (local / name, s3.put_tree(local / name, f"{bucket}/{layout}/{name}"))
    return out


@pytest.mark.parametrize("layout", ["rolling", "plain", "lz4"])
def test_report_from_s3_equals_report_from_disk(s3, logs, layout):
    local, url = logs[layout]
    on_disk = flowscope("report", "--json", local, env=s3.env)
    assert on_disk.returncode == 0, on_disk.stderr
    in_s3 = flowscope("report", "--json", url.replace("s3://", "s3a://") if layout == "rolling" else url, env=s3.env)
    assert in_s3.returncode == 0, in_s3.stderr
    answer = json.loads(in_s3.stdout)
    assert answer == json.loads(on_disk.stdout)
    assert answer["application"]["jobs"] > 0 and answer["slowest"], "a real answer, not an empty one"


@pytest.mark.parametrize("command", [["frontiers", "--json"], ["blame", "--json"], ["whatif", "--json"]])
def test_frontiers_blame_and_whatif_from_s3_equal_the_disk(s3, logs, command):
    local, url = logs["rolling"]
    on_disk = flowscope(*command, local, env=s3.env)
    assert on_disk.returncode == 0, on_disk.stderr
    in_s3 = flowscope(*command, url, env=s3.env)
    assert in_s3.returncode == 0, in_s3.stderr
    assert json.loads(in_s3.stdout) == json.loads(on_disk.stdout)
    assert len(in_s3.stdout) > 200


def test_reading_in_child_processes_streams_from_s3_too(s3, logs):
    """A large log is read, modelled and replayed in three processes (forced here): the reader's child opens the
    store itself."""
    local, url = logs["plain"]
    on_disk = flowscope("report", "--json", "--pipeline-bytes", 0, local, env=s3.env)
    in_s3 = flowscope("report", "--json", "--pipeline-bytes", 0, url, env=s3.env)
    assert in_s3.returncode == 0, in_s3.stderr
    assert json.loads(in_s3.stdout) == json.loads(on_disk.stdout)


def test_a_progress_log_in_s3_replays_as_on_disk(s3, tmp_path):
    log = tmp_path / "loop.jsonl.gz"
    log.write_bytes(gzip.compress(LOOP_LOG.read_bytes()))
    url = s3.put_tree(log, f"{s3.bucket('progress-logs')}/loop.jsonl.gz")
    for command, says in ((["frontiers", "--json", "--at", 20], '"frontier":'),
                          (["explain", "--at", 20, "--port", "in,4,0"], "held by out(3,0)")):
        on_disk = flowscope(*command[:1], log, *command[1:], env=s3.env)
        in_s3 = flowscope(*command[:1], url, *command[1:], env=s3.env)
        assert in_s3.returncode == 0, in_s3.stderr
        assert in_s3.stdout == on_disk.stdout and says in in_s3.stdout


def test_record_writes_the_same_progress_log_from_s3(s3, logs, tmp_path):
    local, url = logs["lz4"]
    assert flowscope("record", local, "-o", tmp_path / "disk.jsonl", env=s3.env).returncode == 0
    done = flowscope("record", url, "-o", tmp_path / "s3.jsonl", env=s3.env)
    assert done.returncode == 0, done.stderr
    disk = (tmp_path / "disk.jsonl").read_text().splitlines()
    remote = (tmp_path / "s3.jsonl").read_text().splitlines()
    assert len(remote) == len(disk) > 50
    assert remote[1:] == disk[1:]  # the header names the source


def test_a_bundle_from_s3_stores_what_one_from_disk_stores(s3, logs, tmp_path):
    local, url = logs["rolling"]
    on_disk = flowscope("bundle", local, "-o", tmp_path / "disk.html", env=s3.env)
    in_s3 = flowscope("bundle", url, "-o", tmp_path / "s3.html", env=s3.env)
    assert in_s3.returncode == 0, in_s3.stderr
    counts = re.compile(r"\d+ moments, \d+ answers, \d+ explanations")
    said = counts.search(in_s3.stdout)
    assert said and said[0] == counts.search(on_disk.stdout)[0]  # type: ignore[index]
    assert (tmp_path / "s3.html").stat().st_size > 100_000


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr  # one line, never a traceback
    return lines[0]


@pytest.mark.parametrize("command", ["report", "frontiers", "blame", "plan", "replay", "bundle"])
def test_a_missing_bucket_is_one_line_naming_the_url(s3, command, tmp_path):
    url = "s3://no-such-bucket/spark-events/eventlog_v2_app"
    extra = ["-o", tmp_path / "b.html"] if command == "bundle" else []
    line = one_line_error(flowscope(command, url, *extra, env=s3.env))
    assert line.endswith(f"{url}: no such bucket"), line


def test_a_missing_key_is_one_line_naming_the_url(s3, logs):
    url = f"{s3.bucket('spark-logs')}/rolling/no-such-app"
    assert one_line_error(flowscope("frontiers", url, env=s3.env)) == f"flowscope: {url}: no such file or directory"
    assert one_line_error(flowscope("serve", "--follow", url, env=s3.env)) == \
        f"flowscope: --follow {url}: no such file or directory"
    assert one_line_error(flowscope("serve", "--follow", logs["plain"][1], env=s3.env)) == \
        f"flowscope: --follow {logs['plain'][1]}: not a directory"


def test_credentials_the_store_refuses_are_one_line(s3):
    """A store that checks every request's credentials (moto's IAM), given keys it does not know."""
    with moto_server(INITIAL_NO_AUTH_ACTION_COUNT="0") as (endpoint, _):
        url = "s3://spark-logs/rolling/eventlog_v2_app"
        env = {**s3.env, **client_env(endpoint), "AWS_ACCESS_KEY_ID": "AKIAUNKNOWNKEY000000"}
        for command in ("report", "frontiers"):
            line = one_line_error(flowscope(command, url, env=env))
            assert line.startswith(f"flowscope: {url}: access denied ("), line


def test_nothing_listening_at_the_endpoint_is_one_line(s3, logs):
    _, url = logs["rolling"]
    env = {**s3.env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}  # botocore's retries: AWS_MAX_ATTEMPTS
    for command in ("report", "blame"):
        line = one_line_error(flowscope(command, url, env=env))
        assert line.startswith(f"flowscope: {url}: cannot reach the store's endpoint"), line


def test_hdfs_without_its_library_says_what_is_missing(s3):
    line = one_line_error(flowscope("report", "hdfs://127.0.0.1:9/spark-events/app", env=s3.env))
    assert line.startswith("flowscope: hdfs://127.0.0.1:9/spark-events/app: "), line
    assert "pyarrow" in line or "libhdfs" in line, line  # pyarrow not installed, or installed without Hadoop's lib
