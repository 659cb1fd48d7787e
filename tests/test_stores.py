"""backend.stores: one API for local paths and store URLs, against a real S3 API server (moto's, its own process)."""

from __future__ import annotations

import os
import pickle

import pytest

from backend.eventlog import EventLogFollower, EventLogReader, find_logs
from backend.eventlog.child import ChildStream
from backend.stores import (
    StoreError,
    StoreNotFound,
    StoreUrl,
    exists,
    is_url,
    list_dir,
    locate,
    open_read,
    stat,
)
from backend.stores.errors import store_error
from backend.stores.remote import BLOCK

from .conftest import FIXTURES

ROLLING = next((FIXTURES / "spark" / "batch_shuffle").glob("eventlog_v2_*"))


def test_urls_walk_like_paths():
    url = locate("s3a://bucket/spark-events/eventlog_v2_app/")
    assert isinstance(url, StoreUrl) and str(url) == "s3a://bucket/spark-events/eventlog_v2_app"
    assert url.name == "eventlog_v2_app" and str(url.parent) == "s3a://bucket/spark-events"
    assert str(url / "events_1_app.zstd") == "s3a://bucket/spark-events/eventlog_v2_app/events_1_app.zstd"
    assert str((url / "a.inprogress").with_name("a")) == "s3a://bucket/spark-events/eventlog_v2_app/a"
    assert locate("s3://bucket").name == "bucket" and str(locate("s3://bucket") / "k") == "s3://bucket/k"
    assert pickle.loads(pickle.dumps(url)) == url  # handed to the readers' child processes
    assert not is_url("/tmp/x") and not is_url("file:///tmp/x") and is_url("gs://b/k") and is_url("hdfs://nn:8020/x")
    assert str(locate("file:///tmp/x")) == "/tmp/x"


def test_local_paths_list_stat_and_open(tmp_path):
    (tmp_path / "b.txt").write_bytes(b"12345")
    (tmp_path / "a").mkdir()
    entries = list_dir(tmp_path)
    assert [(e.name, e.is_dir) for e in entries] == [("a", True), ("b.txt", False)]
    b = stat(tmp_path / "b.txt")
    assert (b.size, b.is_dir, b.url) == (5, False, str(tmp_path / "b.txt"))
    assert b.mtime == pytest.approx(os.stat(tmp_path / "b.txt").st_mtime)
    with open_read(str(tmp_path / "b.txt")) as fh:
        fh.seek(2)
        assert fh.read() == b"345"
    with pytest.raises(StoreNotFound) as missing:
        stat(tmp_path / "nope")
    assert str(missing.value) == f"{tmp_path / 'nope'}: no such file or directory"
    assert isinstance(missing.value, FileNotFoundError) and not exists(tmp_path / "nope")
    with pytest.raises(StoreError, match="not a directory"):
        list_dir(tmp_path / "b.txt")


def test_a_bucket_lists_stats_and_streams_as_the_disk_does(s3):
    url = s3.put_tree(ROLLING, f"{s3.bucket('logs')}/events/{ROLLING.name}")
    local = [(e.name, e.size, e.is_dir) for e in list_dir(ROLLING)]
    remote = list_dir(url)
    assert [(e.name, e.size, e.is_dir) for e in remote] == local
    assert all(e.url == f"{url}/{e.name}" and e.mtime is not None for e in remote)
    parent = list_dir(f"{s3.bucket('logs')}/events")
    assert [(e.name, e.is_dir) for e in parent] == [(ROLLING.name, True)]
    assert stat(url).is_dir and exists(url)
    part = next(e for e in remote if e.name.startswith("events_"))
    assert stat(part.url).size == (ROLLING / part.name).stat().st_size
    with open_read(part.location) as fh:
        fh.seek(5)
        assert fh.read(100) == (ROLLING / part.name).read_bytes()[5:105]


def test_a_large_object_is_read_in_ranges_not_fetched_whole(s3):
    data = os.urandom(BLOCK) * 8
    url = f"{s3.bucket('big')}/log.bin"
    s3.put_bytes(url, data)
    with open_read(url) as fh:
        assert fh.read(1000) == data[:1000]
        cached = len(fh._fh.cache.cache)  # type: ignore[attr-defined]  # what fsspec fetched so far
        assert cached < len(data) / 2, f"{cached} of {len(data)} bytes fetched for the first 1000"
        fh.seek(len(data) - 10)
        assert fh.read() == data[-10:]


def test_a_bucket_reads_and_follows_as_the_disk_does(s3):
    url = s3.put_tree(ROLLING, f"{s3.bucket('logs')}/read/{ROLLING.name}")
    on_disk = [e.event for e in EventLogReader(ROLLING)]
    assert [e.event for e in EventLogReader(url)] == on_disk and len(on_disk) > 50
    follower = EventLogFollower(url)
    followed: list = []
    for _ in range(10 * len(on_disk)):  # a few events a poll: the object is kept open between polls
        followed += [e.event for e in follower.poll(7)]
        if follower.finalized:
            break
    assert followed == on_disk and follower.errors == []
    assert [str(p) for p in find_logs(f"{s3.bucket('logs')}/read")[0].files] == \
        [f"{url}/{p.name}" for p in find_logs(ROLLING.parent)[0].files]


def test_new_objects_are_listed_at_once(s3):
    url = f"{s3.bucket('growing')}/app"
    s3.put_bytes(f"{url}/events_1_app", b"1")
    assert [e.name for e in list_dir(url)] == ["events_1_app"]
    s3.put_bytes(f"{url}/events_2_app", b"2")
    assert [e.name for e in list_dir(url)] == ["events_1_app", "events_2_app"]  # no listing cached in between


def test_missing_bucket_and_key_are_one_line_errors(s3):
    with pytest.raises(StoreNotFound) as no_bucket:
        stat("s3://no-such-bucket/spark-events/app")
    assert str(no_bucket.value) == "s3://no-such-bucket/spark-events/app: no such bucket"
    with pytest.raises(StoreNotFound) as no_key:
        open_read(f"{s3.bucket('logs')}/no/such/key")
    assert str(no_key.value) == "s3://logs/no/such/key: no such file or directory"
    with pytest.raises(StoreNotFound):
        list_dir("s3a://no-such-bucket/x")
    with pytest.raises(StoreError, match="a directory, not a file"):
        s3.put_bytes(f"{s3.bucket('logs')}/d/f", b"x")
        open_read("s3://logs/d")
    assert not exists(f"{s3.bucket('logs')}/nothing")


def test_each_cause_is_said_in_one_line():
    """What the stores' libraries raise, said as the user reads it (the real failures are the commands' tests)."""
    assert str(store_error("gs://b/x", "gs", ImportError("Install gcsfs to access Google Storage"))) == \
        "gs://b/x: reading gs:// needs gcsfs: pip install 'flowscope[gcs]'"
    assert "pip install 'flowscope[azure]'" in str(store_error("az://c/x", "az", ImportError("adlfs")))
    denied = store_error("s3://b/x", "s3", PermissionError("Access Denied"))
    assert str(denied).startswith("s3://b/x: access denied (Access Denied)")
    libhdfs = store_error("hdfs://nn:8020/x", "hdfs", OSError("Unable to load libhdfs: libhdfs.so: cannot open\n"))
    assert str(libhdfs).startswith("hdfs://nn:8020/x: hdfs:// needs Hadoop's libhdfs, which pyarrow could not load")
    assert "HADOOP_HOME" in str(libhdfs) and "ARROW_LIBHDFS_DIR" in str(libhdfs)
    tried = "".join(f"dlopen(/usr/lib/jvm/{n}/libjvm.so) failed: cannot open shared object file\n" for n in range(99))
    libjvm = str(store_error("hdfs://nn:8020/x", "hdfs", OSError("Unable to load libjvm " + tried)))
    assert "could not load libjvm (no JDK)" in libjvm and "JAVA_HOME" in libjvm and len(libjvm) < 300
    long = str(store_error("s3://b/x", "s3", RuntimeError("x" * 5000)))
    assert "\n" not in long and len(long) < 450
    assert str(store_error("s3://b/x", "s3", TimeoutError("timed out"))) == \
        "s3://b/x: cannot reach the store's endpoint (timed out)"
    assert isinstance(store_error("s3://b/x", "s3", FileNotFoundError("NoSuchBucket")), StoreNotFound)


def _read_object(put, url):
    put(b"started")
    with open_read(url) as fh:
        put(fh.read())


def test_a_store_failure_in_a_child_process_comes_back_as_one_line(s3):
    """The readers' child processes (a large log is read in one) open the store themselves: what fails there is
    raised in the parent as the same one-line error, not as a child's traceback."""
    stream = ChildStream(_read_object, (f"{s3.bucket('logs')}/gone/events_1_app",))
    got = []
    with pytest.raises(StoreNotFound) as failed:
        for message in stream:
            got.append(message)
    assert got == [b"started"] and str(failed.value) == "s3://logs/gone/events_1_app: no such file or directory"
    s3.put_bytes("s3://logs/there", b"bytes in the bucket")
    assert list(ChildStream(_read_object, ("s3://logs/there",))) == [b"started", b"bytes in the bucket"]
