"""The applications index of a followed directory (backend/history/): listed without replaying, kept across restarts,
replayed when opened, at most --retain replayed at once.

Every directory here is copies of a real PySpark application's log (fixtures/spark/batch_shuffle), each under its
own App ID (tests/e2e/app_copies.py), served by a real server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import zstandard

from backend.eventlog import EventLogReader
from backend.eventlog.codecs import make_decoder
from backend.eventlog.encoders import encode
from backend.history import app_listing, storage
from backend.history.app_listing import read_listing
from backend.history.entry_points import unit_starts
from backend.history.index_db import INDEX_FILE
from backend.web.app import Settings
from tests.conftest import REPO, wait_until
from tests.e2e.app_copies import SOURCE, copy_id, source_text, write_copies, write_copy
from tests.e2e.server import running_server

MANY = 2000


def _source_facts() -> dict:
    events = [ev.event for ev in EventLogReader(SOURCE)]
    start = next(e for e in events if e["Event"] == "SparkListenerApplicationStart")
    end = next(e for e in events if e["Event"] == "SparkListenerApplicationEnd")
    version = next(e for e in events if e["Event"] == "SparkListenerLogStart")["Spark Version"]
    return {"start": start["Timestamp"] / 1000, "end": end["Timestamp"] / 1000, "user": start["User"],
            "spark_version": version, "jobs": sum(e["Event"] == "SparkListenerJobStart" for e in events)}


def _settings(logs: Path, data: Path, retain: int = 50) -> Settings:
    return Settings(allowed_dirs=[logs], follow_dirs=[logs], data_dir=data, retain=retain, poll=0.1)


def _health(srv) -> dict:
    return httpx.get(srv.url + "/api/health", timeout=10).json()["applications"]


def _scanned(srv, scans: int = 1) -> dict:
    """The index's figures once ``scans`` more whole scans finished."""
    target = _health(srv)["scans"] + scans
    return wait_until(lambda: (h := _health(srv))["scans"] >= target and h, "a whole scan of the directory", 120)


def _rows(srv) -> dict[str, dict]:
    return {r["id"]: r for r in httpx.get(srv.url + "/api/sessions", timeout=30).json()}


def test_thousands_of_applications_are_listed_from_their_start_and_end(tmp_path):
    logs = tmp_path / "logs"
    ids = write_copies(logs, MANY, name=lambda i: f"nightly-{i}")
    (logs / "README.md").write_text("not a log\n")
    text, source_id, _ = source_text()
    running = copy_id(source_id, MANY)  # in progress: its end is not there yet
    write_copy(logs, text.split(b'{"Event":"SparkListenerJobEnd"')[0], source_id, running, in_progress=True)
    facts = _source_facts()
    with running_server(_settings(logs, tmp_path / "data")) as srv:
        figures = _scanned(srv)
        rows = _rows(srv)
        assert figures["listed"] == MANY + 1 and figures["read"] == MANY + 1, figures
        assert set(rows) == {*ids, running}, "README.md listed, or an application missing"
        for i in (0, 1, MANY // 2, MANY - 1):
            row = rows[ids[i]]
            app = row["application"]
            assert row["status"] == "listed" and not srv.manager.get(ids[i]), "listed without being replayed"
            assert (app["name"], app["status"], app["user"], app["spark_version"]) == (
                f"nightly-{i}", "finished", facts["user"], facts["spark_version"])
            assert app["start"] == pytest.approx(facts["start"]) and app["end"] == pytest.approx(facts["end"])
            assert app["duration_s"] == pytest.approx(facts["end"] - facts["start"])
            assert app["rest"] == f"/api/v1/applications/{ids[i]}"
        live = rows[running]["application"]
        assert live["status"] == "in_progress" and live["end"] is None and rows[running]["live"] is True
        assert srv.manager.sessions == {}, "a listed application was replayed"
        listed = httpx.get(srv.url + "/api/sessions", timeout=30)  # megabytes: sent compressed, once
        assert listed.headers["content-encoding"] == "gzip" and len(listed.json()) == MANY + 1
        again = httpx.get(srv.url + "/api/sessions", headers={"If-None-Match": listed.headers["etag"]}, timeout=30)
        assert again.status_code == 304


def test_a_restart_lists_at_once_and_reads_only_what_changed(tmp_path):
    logs, data = tmp_path / "logs", tmp_path / "data"
    ids = write_copies(logs, 40)
    text, source_id, _ = source_text()
    running = copy_id(source_id, 40)
    head = text.split(b'{"Event":"SparkListenerJobEnd"')[0]
    write_copy(logs, head, source_id, running, in_progress=True)
    with running_server(_settings(logs, data)) as srv:
        assert _scanned(srv)["read"] == 41
        before = _rows(srv)
    # while the server is down: a new application, a finished one removed, the running one rolls to events_2
    added = copy_id(source_id, 41)
    write_copy(logs, text, source_id, added)
    shutil.rmtree(logs / f"eventlog_v2_{ids[0]}")
    rolled = logs / f"eventlog_v2_{running}" / f"events_2_{running}.zstd"
    rolled.write_bytes(zstandard.ZstdCompressor().compress(text[len(head):].replace(source_id.encode(),
                                                                                     running.encode())))
    with running_server(_settings(logs, data)) as srv:
        at_once = _rows(srv)  # the first request: every application, though at most the new one was read
        assert set(before) - {ids[0]} <= set(at_once) and _health(srv)["read"] <= 1
        assert at_once[ids[5]]["application"] == before[ids[5]]["application"]
        figures = _scanned(srv, 2)
        after = _rows(srv)
        assert figures["read"] == 1, "a scan after the restart read logs that had not changed"
        assert set(after) == (set(before) - {ids[0]}) | {added}
        grown = after[running]["application"]
        assert grown["status"] == "in_progress" and grown["size"] > before[running]["application"]["size"]
        assert after[added]["application"]["status"] == "finished"
        version = srv.app.state.applications.version
        _scanned(srv, 2)  # nothing changed: the list (and the page's ETag) stays as it is, the running log too
        assert srv.app.state.applications.version == version


def test_opened_applications_beyond_retain_are_closed_least_recently_used_first(tmp_path):
    logs = tmp_path / "logs"
    ids = write_copies(logs, 4)
    jobs = _source_facts()["jobs"]
    with running_server(_settings(logs, tmp_path / "data", retain=2)) as srv:
        _scanned(srv)
        for sid in ids[:2]:
            srv.wait_for(sid)  # GET /api/sessions/{id} opens (replays) it
        httpx.get(f"{srv.url}/api/sessions/{ids[0]}/overview", timeout=30)  # ids[0] used last: ids[1] is older
        overview = httpx.get(f"{srv.url}/api/sessions/{ids[2]}/overview", timeout=30)  # a third, by any route
        assert overview.status_code == 200
        srv.wait_for(ids[2])
        wait_until(lambda: srv.manager.get(ids[1]) is None, "the least recently used application to be closed")
        assert srv.manager.get(ids[0]) is not None and srv.manager.get(ids[2]) is not None
        assert _health(srv)["opened"] == 2
        rows = _rows(srv)
        closed = rows[ids[1]]
        assert closed["status"] == "listed", "a closed application is still listed"
        summary = closed["application"]["summary"]
        assert summary is not None and summary["jobs"] == jobs, "the replayed answer was not kept in the list"
        assert rows[ids[3]]["application"]["summary"] is None
        # and opened again on demand, the same answer as before
        assert srv.wait_for(ids[1])["status"] == "done"
        wait_until(lambda: len([s for s in ids if srv.manager.get(s) is not None]) == 2, "retain 2 again")


def test_the_replayed_seam_opens_an_application_by_id_and_waits_for_its_whole_log(tmp_path):
    logs = tmp_path / "logs"
    ids = write_copies(logs, 2)
    with running_server(_settings(logs, tmp_path / "data")) as srv:
        _scanned(srv)
        applications = srv.app.state.applications
        session = asyncio.run_coroutine_threadsafe(applications.replayed(ids[1]), srv.loop).result(60)
        assert session.id == ids[1] and session.status == "done"
        assert len(session.schedule.jobs) == _source_facts()["jobs"]
        with pytest.raises(KeyError):
            asyncio.run_coroutine_threadsafe(applications.replayed("app-nope"), srv.loop).result(10)


@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd", "gz", None])
def test_a_finished_log_s_end_is_read_from_its_last_units_in_every_codec(tmp_path, codec, monkeypatch):
    text, source_id, _ = source_text()
    lines = text.splitlines(keepends=True)
    flushes = [b"".join(lines[i : i + 7]) for i in range(0, len(lines), 7)]  # as Spark's writer flushes
    name = source_id + (f".{codec}" if codec else "")
    path = tmp_path / name
    path.write_bytes(encode(codec, flushes))
    with open(path, "rb") as fh:
        starts = unit_starts(codec, fh, path.stat().st_size)
        if codec in ("lz4", "snappy", "zstd"):
            assert starts is not None and len(starts) >= len(flushes), "the container's units were not all found"
            fh.seek(starts[-2])  # the end decoded alone, from a unit's start
            end = make_decoder(codec).decode(fh.read())
            assert end.rstrip().endswith(lines[-1].rstrip()) and len(end) < len(text) // 4
        else:
            assert starts is None  # plain is read by a seek; gzip has no boundaries, it is decoded whole
    monkeypatch.setattr(app_listing, "TAIL_TEXT", 4096)
    entry = next(e for e in storage.list_entries(str(tmp_path)) if e.name == name)
    listing = read_listing(entry, str(tmp_path))
    facts = _source_facts()
    assert listing is not None and listing.error is None, listing
    assert (listing.app_id, listing.status, listing.user) == (source_id, "finished", facts["user"])
    assert listing.end == pytest.approx(facts["end"]) and listing.start == pytest.approx(facts["start"])


def test_a_followed_directory_lists_no_fifo_and_no_link_leading_outside(tmp_path):
    logs, outside = tmp_path / "logs", tmp_path / "outside"
    ids = write_copies(logs, 2)
    text, source_id, _ = source_text()
    secret = copy_id(source_id, 7)
    write_copy(outside, text, source_id, secret)
    (logs / f"eventlog_v2_{secret}").symlink_to(outside / f"eventlog_v2_{secret}")
    os.mkfifo(logs / "local-1795290599999.inprogress")  # reading it would block the scan for ever
    with running_server(_settings(logs, tmp_path / "data")) as srv:
        _scanned(srv, 2)
        assert set(_rows(srv)) == set(ids)
        assert httpx.get(f"{srv.url}/api/sessions/{secret}", timeout=10).status_code == 404


def test_a_running_application_grows_in_the_list_and_turns_finished_when_spark_ends_it(tmp_path):
    logs = tmp_path / "logs"
    text, source_id, _ = source_text()
    running = copy_id(source_id, 3)
    head = text.split(b'{"Event":"SparkListenerJobEnd"')[0]
    directory = write_copy(logs, head, source_id, running, in_progress=True)
    quiet = time.time_ns() - 60 * 10**9
    os.utime(logs, ns=(quiet, quiet))  # a directory nothing was added to for a minute: its scans are light
    with running_server(_settings(logs, tmp_path / "data")) as srv:
        _scanned(srv, 3)
        assert srv.app.state.applications.light_scans >= 1, "the quiet directory was listed whole every time"
        first = _rows(srv)[running]["application"]
        assert first["status"] == "in_progress" and first["end"] is None
        rest = text[len(head):].replace(source_id.encode(), running.encode())
        (directory / f"events_2_{running}.zstd").write_bytes(zstandard.ZstdCompressor().compress(rest))
        grown = wait_until(lambda: (a := _rows(srv)[running]["application"])["size"] > first["size"] and a,
                           "the rolled file in the list")
        assert grown["status"] == "in_progress" and grown["duration_s"] >= first["duration_s"]
        os.rename(directory / f"appstatus_{running}.inprogress", directory / f"appstatus_{running}")
        done = wait_until(lambda: (a := _rows(srv)[running]["application"])["status"] == "finished" and a,
                          "the application's end in the list")
        assert done["end"] == pytest.approx(_source_facts()["end"])


def test_serve_follow_keeps_its_index_in_the_user_cache_and_takes_retain(tmp_path):
    """The command line's wiring: --follow lists, --retain and --poll reach the index, which lives in the user's
    cache directory when no --data-dir is given."""
    logs = tmp_path / "logs"
    ids = write_copies(logs, 3)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), TMPDIR=str(tmp_path), PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "flowscope.cli", "serve", "--port", "0", "--follow", str(logs),
                             "--retain", "2", "--poll", "0.2"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        base = line.removeprefix("flowscope: serving ").strip().rstrip("/")
        assert base.startswith("http://127.0.0.1:"), line
        health = wait_until(lambda: (h := httpx.get(base + "/api/health", timeout=10).json()["applications"])
                            ["listed"] == 3 and h, "the applications listed")
        assert health["retain"] == 2
        assert {r["id"] for r in httpx.get(base + "/api/sessions", timeout=10).json()} == set(ids)
        assert (tmp_path / "cache" / "flowscope" / INDEX_FILE).is_file()
    finally:
        proc.terminate()
        proc.wait(20)
