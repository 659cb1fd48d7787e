"""Follow mode and restarts as a user expects them: a followed file rotated, truncated and rewritten, or deleted
ends its session with a message (and the new content becomes a new session); uploads kept in ``--data-dir`` come
back under the same ids after ``kill -9``; without ``--data-dir`` nothing is left in the temporary directory."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import orjson
import pytest

from backend.feeds.followed_file import DELETED, REPLACED, TRUNCATED, FileWatch
from backend.web.app import Settings
from tests.conftest import LOOP_LOG, REPO, SPARK_EVENTS, wait_until
from tests.e2e.server import running_server

LINES = LOOP_LOG.read_bytes().split(b"\n")
FULL = 91  # batches in the whole loop log



def _wait_for_scans(srv, directory, n: int) -> None:
    """Until the server has finished ``n`` whole scans of ``directory`` that began after this call."""
    seen = srv.manager.scans_done[directory]
    wait_until(lambda: srv.manager.scans_done[directory] >= seen + n + 1, f"{n} scans of {directory}")


def _sessions(srv) -> list[dict]:
    return httpx.get(srv.url + "/api/sessions", timeout=5).json()


def _errors(srv, sid: str) -> list[dict]:
    return httpx.get(f"{srv.url}/api/sessions/{sid}/errors", timeout=5).json()["errors"]


def _follow(srv, path: Path) -> str:
    r = httpx.post(srv.url + "/api/sessions", json={"path": str(path), "follow": True}, timeout=10)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _info(srv, sid: str) -> dict:
    return httpx.get(f"{srv.url}/api/sessions/{sid}", timeout=5).json()


@pytest.fixture()
def server(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    with running_server(Settings(allowed_dirs=[logs], data_dir=tmp_path / "data")) as srv:
        srv.logs = logs
        yield srv


def test_a_rotated_file_ends_its_session_and_the_new_file_becomes_a_new_one(server):
    path = server.logs / "a.jsonl"
    path.write_bytes(b"\n".join(LINES[:30]) + b"\n")
    sid = _follow(server, path)
    wait_until(lambda: _info(server, sid)["records"] == 30, "the first 30 records")
    with open(path, "ab") as f:  # written just before the rotation: the old session still reads it
        f.write(b"\n".join(LINES[30:40]) + b"\n")
    os.rename(path, server.logs / "a.jsonl.1")
    path.write_bytes(b"\n".join(LINES[:-1]) + b"\n")
    old = wait_until(lambda: (i := _info(server, sid))["status"] == "done" and i, "the old session to end")
    assert old["live"] is False and old["records"] == 40
    reasons = [e["reason"] for e in _errors(server, sid)]
    assert any("replaced by a new file (rotated) after line 40" in r for r in reasons), reasons
    new = wait_until(lambda: [s for s in _sessions(server) if s["id"] != sid], "a session for the new file")
    assert len(new) == 1 and new[0]["name"] == old["name"]
    assert any(new[0]["id"] in r for r in reasons), reasons
    wait_until(lambda: _info(server, new[0]["id"])["batches"] == FULL, "the new file read whole")
    assert _info(server, new[0]["id"])["live"] is True  # still followed


def test_a_file_truncated_and_rewritten_in_place_starts_a_new_session(server):
    path = server.logs / "t.jsonl"
    path.write_bytes(b"\n".join(LINES[:50]) + b"\n")
    sid = _follow(server, path)
    wait_until(lambda: _info(server, sid)["records"] == 50, "the first 50 records")
    with open(path, "r+b") as f:  # in place: same inode, shorter content, then the rest
        f.truncate(0)
        f.write(b"\n".join(LINES[:10]) + b"\n")
    old = wait_until(lambda: (i := _info(server, sid))["status"] == "done" and i, "the old session to end")
    assert old["live"] is False and old["records"] == 50  # nothing from the middle of the new content
    assert any("truncated (rewritten in place) after line 50" in e["reason"] for e in _errors(server, sid))
    new = wait_until(lambda: [s for s in _sessions(server) if s["id"] != sid], "a session for the rewritten file")
    with open(path, "ab") as f:
        f.write(b"\n".join(LINES[10:-1]) + b"\n")
    wait_until(lambda: _info(server, new[0]["id"])["batches"] == FULL, "the rewritten file read whole")
    assert not _errors(server, new[0]["id"])


def test_a_deleted_file_ends_its_session(server):
    path = server.logs / "d.jsonl"
    path.write_bytes(b"\n".join(LINES[:20]) + b"\n")
    sid = _follow(server, path)
    wait_until(lambda: _info(server, sid)["records"] == 20, "the first 20 records")
    path.unlink()
    info = wait_until(lambda: (i := _info(server, sid))["status"] == "done" and i, "the session to end", timeout=10)
    assert info["live"] is False and info["records"] == 20
    assert any("was deleted after line 20" in e["reason"] for e in _errors(server, sid))
    # a successor is added in the same step of the event loop that ends the session (Session.on_finish), before any
    # request sees it "done": nothing replaced it, or it would be listed now
    assert [s["id"] for s in _sessions(server)] == [sid]


def test_a_followed_directory_does_not_turn_a_rotated_file_into_a_duplicate(tmp_path):
    followed = tmp_path / "followed"
    followed.mkdir()
    path = followed / "a.jsonl"
    path.write_bytes(b"\n".join(LINES[:30]) + b"\n")
    settings = Settings(allowed_dirs=[followed], follow_dirs=[followed], data_dir=tmp_path / "data")
    with running_server(settings) as srv:
        first = wait_until(lambda: _sessions(srv), "the followed file's session")[0]["id"]
        wait_until(lambda: _info(srv, first)["records"] == 30, "the first 30 records")
        os.rename(path, followed / "a.jsonl.1")
        path.write_bytes(b"\n".join(LINES[:-1]) + b"\n")
        wait_until(lambda: len(_sessions(srv)) == 2, "the new file's session")
        _wait_for_scans(srv, followed, 2)  # two more whole scans of the directory, which see a.jsonl.1
        sessions = _sessions(srv)
        assert len(sessions) == 2, [s["name"] for s in sessions]  # no third session for a.jsonl.1
        new = next(s["id"] for s in sessions if s["id"] != first)
        wait_until(lambda: _info(srv, new)["batches"] == FULL, "the new file read whole")
        assert _info(srv, first)["status"] == "done"


def test_a_file_deleted_from_a_followed_directory_is_followed_again_when_it_comes_back(tmp_path):
    followed = tmp_path / "followed"
    followed.mkdir()
    path = followed / "b.jsonl"
    path.write_bytes(b"\n".join(LINES[:20]) + b"\n")
    settings = Settings(allowed_dirs=[followed], follow_dirs=[followed], data_dir=tmp_path / "data")
    with running_server(settings) as srv:
        first = wait_until(lambda: _sessions(srv), "the followed file's session")[0]["id"]
        wait_until(lambda: _info(srv, first)["records"] == 20, "the first 20 records")
        path.unlink()
        wait_until(lambda: _info(srv, first)["status"] == "done", "the session to end")
        path.write_bytes(b"\n".join(LINES[:-1]) + b"\n")
        again = wait_until(lambda: [s for s in _sessions(srv) if s["id"] != first], "a session for the new b.jsonl")
        wait_until(lambda: _info(srv, again[0]["id"])["batches"] == FULL, "the new file read whole")


def test_the_watch_tells_growth_from_truncation_replacement_and_deletion(tmp_path):
    path = tmp_path / "w.jsonl"
    path.write_bytes(b"a" * 100)
    watch = FileWatch(path)
    with open(path, "rb") as fh:
        watch.attach(fh.fileno())
    assert watch.check(100) is None
    with open(path, "ab") as f:
        f.write(b"a" * 50)
    assert watch.check(150) is None  # grown: still the same file
    with open(path, "r+b") as f:  # rewritten in place, already longer than what was read, another start
        f.truncate(0)
        f.write(b"b" * 300)
    assert watch.check(150) == TRUNCATED
    path.write_bytes(b"a" * 10)
    assert watch.check(150) == TRUNCATED  # shorter than what was read
    os.rename(path, tmp_path / "w.jsonl.1")
    assert watch.check(10) == DELETED
    path.write_bytes(b"a" * 10)
    assert watch.check(10) == REPLACED


# --- followed Spark event logs ---------------------------------------------------------------------------------

SHUFFLE = SPARK_EVENTS / "pyspark-4.3" / "spark430_1000tasks_shuffle.jsonl.gz"


def _spark_lines() -> list[bytes]:
    from backend.eventlog import EventLogReader

    return [orjson.dumps(ev.event) + b"\n" for ev in EventLogReader(SHUFFLE)]


@pytest.mark.spark_events
def test_a_spark_log_truncated_while_followed_starts_a_new_session(server):
    lines = _spark_lines()
    cut = len(lines) // 2
    log = server.logs / "local-7.inprogress"
    log.write_bytes(b"".join(lines[:cut]))
    sid = _follow(server, log)
    wait_until(lambda: _info(server, sid)["records"] > 0, "the first records")
    wait_until(lambda: not _sessions(server)[0]["status"] == "loading", "the session to go live")
    with open(log, "r+b") as f:  # Spark restarted the application under the same name: a shorter file
        f.truncate(0)
        f.write(b"".join(lines[:10]))
    old = wait_until(lambda: (i := _info(server, sid))["status"] == "done" and i, "the old session to end")
    assert old["live"] is False
    assert any("was truncated (rewritten in place)" in e["reason"] for e in _errors(server, sid))
    new = wait_until(lambda: [s for s in _sessions(server) if s["id"] != sid], "a session for the new content")[0]
    with open(log, "ab") as f:
        f.write(b"".join(lines[10:]))
    log.rename(server.logs / "local-7")  # the application ended
    replayed = _follow(server, server.logs / "local-7")  # the whole log, read at once, to compare with
    done = wait_until(lambda: (i := _info(server, new["id"]))["status"] == "done" and i, "the new session to finish")
    whole = wait_until(lambda: (i := _info(server, replayed))["status"] == "done" and i, "the whole log")
    assert done["batches"] == whole["batches"] > 0 and done["live"] is False


@pytest.mark.spark_events
def test_a_spark_log_deleted_while_followed_ends_its_session(server):
    lines = _spark_lines()
    log = server.logs / "local-8.inprogress"
    log.write_bytes(b"".join(lines[: len(lines) // 2]))
    sid = _follow(server, log)
    wait_until(lambda: _info(server, sid)["records"] > 0, "the first records")
    log.unlink()
    info = wait_until(lambda: (i := _info(server, sid))["status"] == "done" and i, "the session to end", timeout=10)
    assert info["live"] is False
    assert any("disappeared" in e["reason"] for e in _errors(server, sid))
    assert [s["id"] for s in _sessions(server)] == [sid]


# --- restarts ---------------------------------------------------------------------------------------------------


def _start(args: list[str], env: dict) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "flowscope.cli", "serve", "--port", "0", *args], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    m = re.match(r"flowscope: serving (http://127\.0\.0\.1:\d+)/", line)
    if not m:
        proc.kill()
        raise AssertionError(f"no URL: {line!r} {proc.stderr.read()}")
    return proc, m.group(1)


def _env(tmp: Path) -> dict:
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(REPO))
    return env


def _upload(base: str, name: str) -> str:
    r = httpx.post(f"{base}/api/sessions/upload", params={"filename": name}, content=LOOP_LOG.read_bytes(),
                   timeout=20)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _runs(tmp: Path) -> list[Path]:
    """The servers' temporary data directories, and their parent once no run directory is left in it."""
    return sorted(tmp.glob("flowscope-*/run-*")) or sorted(tmp.glob("flowscope-*"))


def test_uploads_come_back_under_their_ids_after_kill_9(tmp_path):
    data, tmp = tmp_path / "data", tmp_path / "tmp"
    tmp.mkdir()
    proc, base = _start(["--data-dir", str(data)], _env(tmp))
    try:
        sids = {_upload(base, "first.jsonl"): "first.jsonl", _upload(base, "second.jsonl"): "second.jsonl"}
        created = {s["id"]: s["created"] for s in httpx.get(f"{base}/api/sessions").json()}
    finally:
        proc.kill()  # SIGKILL: no shutdown at all
        proc.wait(10)
    # an upload cut short by the kill: a directory without its session.json
    (data / "sessions" / "0123456789").mkdir()
    (data / "sessions" / "0123456789" / "half.jsonl").write_bytes(LOOP_LOG.read_bytes()[:100])
    proc, base = _start(["--data-dir", str(data)], _env(tmp))
    try:
        for sid, name in sids.items():
            info = wait_until(lambda sid=sid: (i := httpx.get(f"{base}/api/sessions/{sid}").json())
                              .get("status") == "done" and i, f"session {sid} back")
            assert info["name"] == name and info["batches"] == FULL and info["created"] == created[sid]
        assert {s["id"] for s in httpx.get(f"{base}/api/sessions").json()} == set(sids)
        assert not (data / "sessions" / "0123456789").exists()
    finally:
        proc.send_signal(signal.SIGTERM)  # a normal shutdown keeps the uploads too
        proc.wait(10)
    assert {p.name for p in (data / "sessions").iterdir()} == set(sids) | {f"{sid}.json" for sid in sids}
    assert not _runs(tmp)  # --data-dir given: no temporary directory was made


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_without_a_data_dir_nothing_is_left_after_exit(tmp_path, stop):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc, base = _start([], _env(tmp))
    try:
        _upload(base, "up.jsonl")
        runs = _runs(tmp)
        assert len(runs) == 1 and list(runs[0].rglob("up.jsonl"))
    finally:
        proc.send_signal(stop)
        proc.wait(10)
    assert not _runs(tmp)


def test_without_a_data_dir_a_failed_start_leaves_nothing(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = _env(tmp)
    missing = subprocess.run([sys.executable, "-m", "flowscope.cli", "serve", "--port", "0",
                              str(tmp_path / "missing.jsonl")], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 2 and "missing.jsonl" in missing.stderr
    assert not _runs(tmp)
    with running_server_port() as port:  # the port is taken: the server cannot listen
        busy = subprocess.run([sys.executable, "-m", "flowscope.cli", "serve", "--port", str(port)], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=60)
    assert busy.returncode == 2 and "cannot listen" in busy.stderr
    assert not _runs(tmp)


def test_what_a_kill_9_leaves_is_removed_at_the_next_start(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc, base = _start([], _env(tmp))
    _upload(base, "up.jsonl")
    proc.kill()
    proc.wait(10)
    left = _runs(tmp)
    assert len(left) == 1  # SIGKILL: the process could not clean up
    proc, base = _start([], _env(tmp))
    try:
        assert left[0] not in _runs(tmp) and len(_runs(tmp)) == 1  # only the new server's own directory
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
    assert not _runs(tmp)
    shutil.rmtree(tmp, ignore_errors=True)


class running_server_port:
    """A listening socket on a free loopback port, for as long as the ``with`` lasts."""

    def __enter__(self) -> int:
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        return self.sock.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self.sock.close()
