"""Redaction: a redacted Spark log says nothing about the machine it ran on and keeps no secret, yet the Spark
model reads it exactly as it reads the original (same progress, same jobs, stages and tasks)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from backend.eventlog import EventLogReader, find_logs
from backend.eventlog.encoders import encode
from backend.spark.recording.convert import SparkLogConversion
from backend.spark.redaction import rewrite as redact_mod
from backend.spark.redaction import rules as redact_rules
from backend.spark.redaction.rewrite import redact_log
from backend.spark.redaction.rules import REDACTED, Redactor, redact_event

from .conftest import REPO, SPARK_EVENTS, spark_event_cases

ROLLING = SPARK_EVENTS / "pyspark-4.3" / "events" / "eventlog_v2_local-1795284909880"

# What must not survive redaction, checked over the redacted bytes.
HOME_PATH = re.compile(r"(?:/home/|/Users/|/root/|[A-Za-z]:\\\\Users\\\\)[^/\\\s\"]+|(?<![\w/.])/root(?![\w-])")
IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.]*\w)")


def events_of(path) -> list[dict]:
    return [e.event for e in EventLogReader(path)]


def text_of(path) -> str:
    return "\n".join(orjson.dumps(e).decode() for e in events_of(path))


def without_hosts(value):
    """``value`` with every ``host`` field dropped, at any depth (executor marks, running tasks' details)."""
    if isinstance(value, dict):
        return {k: without_hosts(v) for k, v in value.items() if k != "host"}
    if isinstance(value, list):
        return [without_hosts(v) for v in value]
    return value


def structure(records: list[dict]) -> list[dict]:
    """Records without the names redaction may change (operator/scope names and attrs, mark labels and reasons, host
    names, failure messages)."""
    out = []
    for rec in records:
        rec = without_hosts(rec)
        if rec["type"] in ("operator", "scope"):
            rec.pop("name", None)
            rec.pop("attrs", None)
        elif rec["type"] == "mark":
            rec.pop("label", None)
            rec.pop("reason", None)  # free text from Spark (an executor's removal names its host)
            rec.pop("failure", None)  # a failed job's exception message: free text, redacted
            rec.pop("stage_name", None)  # a finding's stage operator name, as the operator's own name
            if isinstance(rec.get("metric"), dict) and "latest" in rec["metric"]:  # a task-failures finding's
                rec["metric"] = {k: v for k, v in rec["metric"].items() if k != "latest"}  # latest failure: free text
        elif rec["type"] == "progress" and "failure" in rec.get("cause", {}):
            failure = {k: v for k, v in rec["cause"]["failure"].items() if k not in ("message", "executor_removed")}
            rec = {**rec, "cause": {**rec["cause"], "failure": failure}}  # the failure's free text, redacted
        out.append(rec)
    return out


def machine_values(events: list[dict]) -> set[str]:
    """Host and user names the original log states in its structured fields."""
    found: set[str] = set()

    def walk(obj, key=None):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, k)
        elif isinstance(obj, list):
            for v in obj:
                walk(v, key)
        elif isinstance(obj, str) and key in ("Host", "hostId", "User", "Spark User", "user.name"):
            found.add(obj)

    for e in events:
        walk(e)
    # an application may be named like its user (one shared log is, `<script>...`): its name stays
    app_names = {e.get("App Name") for e in events if e.get("Event") == "SparkListenerApplicationStart"}
    return {v for v in found if len(v) > 2 and v not in ("localhost", REDACTED, "<unknown>") and v not in app_names}


@pytest.mark.spark_events
@pytest.mark.parametrize("log", spark_event_cases(lambda root: find_logs(root, recursive=True)),
                         ids=lambda log: f"{log.path.parent.name}/{log.path.name}" if log else None)
def test_a_redacted_shared_log_converts_to_the_same_progress(log, tmp_path):
    stats = redact_log(log, tmp_path / log.path.name)
    assert stats.corrupt == [] and stats.events == len(events_of(log.path))
    original, redacted = SparkLogConversion(log), SparkLogConversion(stats.output)
    before, after = list(original), list(redacted)
    assert structure(after) == structure(before)
    assert redacted.model.summary() == original.model.summary()
    assert redacted.model.unknown_events == original.model.unknown_events

    text = text_of(stats.output)
    assert not HOME_PATH.findall(text)
    assert not IPV4.findall(text)
    for value in machine_values(events_of(log.path)):
        assert not re.search(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", text), value
    assert "Classpath Entries\":{}" in text or "SparkListenerEnvironmentUpdate" not in text


def test_redaction_keeps_what_the_model_reads():
    event: dict[str, Any] = {
        "Event": "SparkListenerJobStart", "Job ID": 7, "Submission Time": 1700000000000,
        "Stage Infos": [{
            "Stage ID": 12, "Stage Attempt ID": 1, "Stage Name": "count at /home/ann/etl/job.py:42",
            "Number of Tasks": 200, "Parent IDs": [10, 11],
            "RDD Info": [{"RDD ID": 3, "Name": "file:/home/ann/data/in.csv",
                          "Callsite": "textFile at /home/ann/etl/job.py:40",
                          "Scope": "{\"id\":\"5\",\"name\":\"Exchange\"}", "Parent IDs": [2]}],
            "Details": "org.apache.spark.rdd.RDD.count(RDD.scala:1234)\n"
                       "java.base/java.lang.Thread.run(Thread.java:840)",
        }],
        "Properties": {"spark.jobGroup.id": "nightly", "callSite.short": "count at /home/ann/etl/job.py:42",
                       "spark.sql.execution.id": "3", "spark.driver.host": "10.1.2.3"},
    }
    out = redact_event(event, Redactor(local=False))
    info = out["Stage Infos"][0]
    assert out["Job ID"] == 7 and out["Submission Time"] == 1700000000000
    assert info["Stage ID"] == 12 and info["Stage Attempt ID"] == 1
    assert info["Number of Tasks"] == 200 and info["Parent IDs"] == [10, 11]
    assert info["Stage Name"] == "count at job.py:42"
    assert info["RDD Info"][0]["Name"] == "file:in.csv"
    assert info["RDD Info"][0]["Callsite"] == "textFile at job.py:40"
    assert info["RDD Info"][0]["Scope"] == event["Stage Infos"][0]["RDD Info"][0]["Scope"]
    assert info["Details"] == event["Stage Infos"][0]["Details"]
    assert out["Properties"]["spark.jobGroup.id"] == "nightly" and out["Properties"]["spark.sql.execution.id"] == "3"
    assert out["Properties"]["spark.driver.host"] == "host-1"
    assert "ann" not in orjson.dumps(out).decode()
    assert event["Stage Infos"][0]["Stage Name"].startswith("count at /home/ann")  # the input is not modified


@pytest.mark.parametrize("text,expected", [
    ("collect at /tmp/work/t1.py:9", "collect at t1.py:9"),
    ('File "/root/jobs/x.py", line 5, in <module>', 'File "x.py", line 5, in <module>'),
    ("user.home is /root", "user.home is ~"),
    ("/Users/Jose/spark/core/src/Foo.scala", "Foo.scala"),
    ("C:\\Users\\bob\\proj\\a.py:3", "a.py:3"),
    ("hdfs://nn1.corp.example.com:8020/user/ann/warehouse/t", "hdfs://host-1:8020/t"),
    ("Lost executor 2 on 10.0.0.5: heartbeat timed out", "Lost executor 2 on host-1: heartbeat timed out"),
    ("ip-10-1-2-3.ec2.internal", "host-1"),
    ("http://127.0.0.1:4040/jobs", "http://localhost:4040/jobs"),
    ("java.base/java.lang=ALL-UNNAMED java.io.IOException AES/CTR/NoPadding 2024/01/02",
     "java.base/java.lang=ALL-UNNAMED java.io.IOException AES/CTR/NoPadding 2024/01/02"),
    ("at com.x.TokenCache.get(TokenCache.java:45)", "at com.x.TokenCache.get(TokenCache.java:45)"),
    ('{"id":"3","name":"Exchange"}', '{"id":"3","name":"Exchange"}'),
    ("internal.metrics.shuffle.read.localBlocksFetched", "internal.metrics.shuffle.read.localBlocksFetched"),
])
def test_text_rules(text, expected):
    assert Redactor(local=False).text(text) == expected


SECRETS = {
    "aws_key_id": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "jdbc_password": "hunter2pw",
    "url_user_password": "s3cr3tpass",
    "conf_secret": "Zq8TopSecretValue",
    "java_opt_password": "trustme123",
    "github_token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "bearer": "eyJhbGciOiJIUzI1NiJ9abcdefgh",
    "property_token": "tok-9f8e7d6c5b4a",
}


def planted_events() -> list[dict]:
    """A tiny log with secrets where Spark does not redact them."""
    s = SECRETS
    return [
        {"Event": "SparkListenerLogStart", "Spark Version": "4.3.0"},
        {"Event": "SparkListenerEnvironmentUpdate", "JVM Information": {"Java Home": "/opt/jdk-17"},
         "Spark Properties": {"spark.driver.extraJavaOptions": f"-Dtrust.password={s['java_opt_password']} -Xmx1g",
                              "spark.hadoop.fs.s3a.secret.key": s["conf_secret"],
                              "spark.app.name": "planted"},
         "Hadoop Properties": {"fs.s3a.access.key": s["aws_key_id"]}, "System Properties": {"user.name": "mallory"},
         "Classpath Entries": {"/home/mallory/jars/x.jar": "System Classpath"}},
        {"Event": "SparkListenerApplicationStart", "App Name": "planted", "App ID": "local-1", "Timestamp": 1000,
         "User": "mallory"},
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 2000,
         "Stage Infos": [{"Stage ID": 0, "Stage Attempt ID": 0, "Stage Name": "count at /home/mallory/job.py:3",
                          "Number of Tasks": 1, "Parent IDs": [], "RDD Info": []}],
         "Properties": {"spark.job.description": f"load with {s['aws_key_id']} / {s['aws_secret']}",
                        "spark.jdbc.url": f"jdbc:postgresql://db.corp.internal:5432/x?user=mallory&password={s['jdbc_password']}",
                        "source": f"https://mallory:{s['url_user_password']}@files.corp.example.com/in.csv",
                        "spark.hadoop.auth.token": s["property_token"],
                        "note": f"pushed with {s['github_token']}"}},
        {"Event": "SparkListenerStageSubmitted", "Stage Info": {"Stage ID": 0, "Stage Attempt ID": 0,
                                                               "Stage Name": "count at /home/mallory/job.py:3",
                                                               "Number of Tasks": 1, "Parent IDs": [], "RDD Info": []}},
        {"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Stage Attempt ID": 0, "Task Type": "ResultTask",
         "Task End Reason": {"Reason": "Success"},
         "Task Info": {"Task ID": 0, "Index": 0, "Attempt": 0, "Executor ID": "driver", "Host": "mallory-laptop",
                       "Launch Time": 2100, "Finish Time": 2200}},
        {"Event": "SparkListenerStageCompleted", "Stage Info": {"Stage ID": 0, "Stage Attempt ID": 0,
                                                               "Stage Name": "count at /home/mallory/job.py:3",
                                                               "Number of Tasks": 1, "Parent IDs": [], "RDD Info": [],
                                                               "Completion Time": 2300}},
        {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 2400,
         "Job Result": {"Result": "JobFailed", "Exception": {"Message": f"401: Authorization: Bearer {s['bearer']}"}}},
        {"Event": "SparkListenerApplicationEnd", "Timestamp": 3000},
    ]


def write_log(path: Path, events: list[dict], codec: str | None = None) -> Path:
    data = b"".join(orjson.dumps(e) + b"\n" for e in events)
    path.write_bytes(encode(codec, [data[: len(data) // 2], data[len(data) // 2:]]))
    return path


def test_planted_secrets_are_gone(tmp_path):
    src = write_log(tmp_path / "local-1", planted_events())
    stats = redact_log(src, tmp_path / "out")
    raw = stats.output.read_text()
    for name, secret in SECRETS.items():
        assert secret not in raw, name
    for leak in ("mallory", "/home/", "db.corp.internal", "files.corp.example.com", "/opt/jdk-17"):
        assert leak not in raw, leak
    assert REDACTED in raw
    original, redacted = SparkLogConversion(src), SparkLogConversion(stats.output)
    assert structure(list(redacted)) == structure(list(original))
    assert redacted.model.summary() == original.model.summary()


@pytest.mark.spark_events
def test_redaction_is_deterministic(tmp_path):
    log = SPARK_EVENTS / "app-20161116163331-0000"
    first = redact_log(log, tmp_path / "a").output.read_bytes()
    second = redact_log(log, tmp_path / "b").output.read_bytes()
    assert first == second
    # and redacting event by event (what `record --redact` does) gives the same events as redacting the file
    events = events_of(log)
    r = Redactor()
    assert [r.event(e) for e in events] == [orjson.loads(line) for line in first.splitlines()]


@pytest.mark.parametrize("codec", [None, "gz", "zstd", "lz4", "snappy", "lzf"])
def test_a_single_file_keeps_its_codec(codec, tmp_path):
    suffix = f".{codec}" if codec else ""
    src = write_log(tmp_path / f"local-1{suffix}", planted_events(), codec)
    stats = redact_log(src, tmp_path / "out")  # no suffix given: the codec's is added
    assert stats.output.name == f"out{suffix}"
    assert len(events_of(stats.output)) == len(planted_events())
    into_dir = tmp_path / "dir"
    into_dir.mkdir()
    assert redact_log(src, into_dir).output == into_dir / src.name


@pytest.mark.spark_events
def test_a_rolling_log_stays_a_rolling_log(tmp_path):
    stats = redact_log(ROLLING, tmp_path / ROLLING.name)
    names = sorted(p.name for p in stats.output.iterdir())
    assert names == sorted(p.name for p in ROLLING.iterdir() if not p.name.startswith("."))
    log = find_logs(stats.output)[0]
    assert log.rolling and log.state == "complete" and log.codec == "zstd"
    assert len(events_of(stats.output)) == len(events_of(ROLLING))


def test_an_in_progress_log_keeps_its_name_and_drops_no_complete_line(tmp_path):
    lines = [orjson.dumps(e) + b"\n" for e in planted_events()]
    src = tmp_path / "local-9.inprogress"
    src.write_bytes(b"".join(lines[:5]) + lines[5][:30])  # Spark is still writing line 6
    stats = redact_log(src, tmp_path / "copy.inprogress")
    assert stats.output.name == "copy.inprogress" and stats.events == 5 and stats.corrupt == []


@pytest.mark.spark_events
def test_refuses_another_codec_and_a_full_directory(tmp_path):
    src = write_log(tmp_path / "local-1.zstd", planted_events(), "zstd")
    with pytest.raises(ValueError, match="zstd"):
        redact_log(src, tmp_path / "out.lz4")
    full = tmp_path / "full"
    (full / "x").mkdir(parents=True)
    with pytest.raises(FileExistsError):
        redact_log(ROLLING, full)


def test_corrupt_lines_are_skipped_and_reported_never_copied(tmp_path):
    lines = [orjson.dumps(e) + b"\n" for e in planted_events()]
    src = tmp_path / "local-2"
    corrupt = b'{"Event": "SparkListenerJobStart", "secret": "' + SECRETS["conf_secret"].encode() + b'"\n'  # unclosed
    src.write_bytes(b"".join(lines[:3]) + corrupt + b"".join(lines[3:]))
    seen: list = []
    stats = redact_log(src, tmp_path / "out", on_error=seen.append)
    assert [(e.line, e.kind) for e in stats.corrupt] == [(4, "invalid-json")] and seen == stats.corrupt
    assert SECRETS["conf_secret"] not in stats.output.read_text()


def test_the_local_machine_is_scrubbed_even_where_no_rule_looks(monkeypatch):
    monkeypatch.setattr(redact_rules, "_local_hosts", lambda: ["buildbox-17"])
    monkeypatch.setattr(redact_rules, "_local_users", lambda: ["carol"])
    r = Redactor()
    assert r.text("cache dir of carol on buildbox-17 (buildbox-17.lan)") == "cache dir of user on host-1 (host-1)"


@pytest.mark.spark_events
def test_command_line(tmp_path, capsys):
    dest = tmp_path / "red"
    assert redact_mod.main([str(ROLLING), str(dest)]) == 0
    assert find_logs(dest)[0].rolling
    assert redact_mod.main([str(tmp_path / "missing"), str(tmp_path / "x")]) == 2
    assert "no such" in capsys.readouterr().err


def test_fixture_logs_carry_no_machine_details():
    fixtures = REPO / "fixtures" / "spark"
    logs = find_logs(fixtures, recursive=True)
    assert len(logs) >= 6
    for log in logs:
        text = text_of(log.path)
        for path in (fixtures / log.path.parent.name).glob("*.json"):
            text += path.read_text()
        assert not HOME_PATH.findall(text), log.path
        assert not IPV4.findall(text), log.path
        assert not re.search(r"/(?:tmp|work|opt|usr|var)/", text), log.path
        assert "site-packages" not in text and "Classpath Entries\":{}" in text
