"""`flowscope replay LOG --at MOMENT --scope PATH`, run as the fleet report prints it for a row: the CLI starts a
real server on 127.0.0.1, prints the page's deep link once the log has been read that far, and headless chromium
opened there shows that region at that moment. The moment is checked against the server's own state: the slow
time has completed at the batch the report names and not one batch before; a wall-clock moment is the last batch
stamped at or before it."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from backend.fleet.analyze import analyze_log
from backend.fleet.report import replay_command
from tests.test_browser_view import wait_batch

from .conftest import REPO
from .test_fleet import fixture_log

SINK_INPUT = ["in", 2, 0]  # the driver (results) operator's input in every region


@contextmanager
def replayed(command: str) -> Iterator[tuple[str, str, str]]:
    """Run a `flowscope replay ...` command line (this checkout's CLI, a free port); yields the printed URL, the
    server's base URL and the session id."""
    words = shlex.split(command)
    assert words[:2] == ["flowscope", "replay"], command
    proc = subprocess.Popen([sys.executable, "-m", "flowscope.cli", *words[1:], "--port", "0"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        m = re.match(r"flowscope: serving ((http://127\.0\.0\.1:\d+)/#/s/(\w+)\S*)", line)
        assert m, line + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        yield m.group(1), m.group(2), m.group(3)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)


def _state(base: str, sid: str, scope: list[int], **moment) -> dict:
    r = httpx.get(f"{base}/api/sessions/{sid}/state", params={"scope": ",".join(map(str, scope)), **moment})
    assert r.status_code == 200, r.text
    return r.json()


def _sink_frontier(state: dict) -> list:
    (row,) = [r for r in state["ports"] if r[:3] == SINK_INPUT]
    return row[3]


@pytest.fixture(scope="module")
def stall():
    log = fixture_log("streaming_stall")
    return log, analyze_log(log)


def test_the_slowest_times_command_opens_its_region_where_it_completed(stall, page) -> None:
    log, rows = stall
    slow = max((t for t in rows.times if t["region_kind"] == "streaming query"), key=lambda t: t["latency_s"])
    command = replay_command(str(log), batch=slow["end_batch"], scope=slow["scope"])
    scope = ",".join(map(str, slow["scope"]))
    assert command.endswith(f" --at {slow['end_batch']} --scope {scope}")
    with replayed(command) as (url, base, sid):
        assert url.endswith(f"#/s/{sid}?scope={scope}&batch={slow['end_batch']}")
        # the server counts batches as the fleet does: the time completed at exactly that batch
        done = _sink_frontier(_state(base, sid, slow["scope"], batch=slow["end_batch"]))
        before = _sink_frontier(_state(base, sid, slow["scope"], batch=slow["end_batch"] - 1))
        assert all(t > slow["time"] for t in done) and any(t <= slow["time"] for t in before)

        page.goto(url)
        wait_batch(page, slow["end_batch"])
        page.wait_for_function("(document.querySelector('#crumbs a.current') || {}).textContent === "
                               f"{slow['scope_name']!r}")
        assert f"batch={slow['end_batch']}" in page.evaluate("location.hash")


def test_a_wall_clock_moment_opens_the_last_batch_stamped_at_or_before_it(stall, page) -> None:
    log, rows = stall
    slow = max((t for t in rows.times if t["region_kind"] == "streaming query"), key=lambda t: t["latency_s"])
    stage = next(s for s in rows.stages if s["signature"] == slow["culprit_signature"] and s["time"] == slow["time"])
    command = replay_command(str(log), at=stage["start"], scope=stage["scope"])
    assert re.search(r" --at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z --scope ", command), command
    with replayed(command) as (url, base, sid):
        batch = int(re.search(r"&batch=(\d+)$", url).group(1))  # type: ignore[union-attr]
        assert _state(base, sid, stage["scope"], batch=batch)["at"] <= stage["start"]
        assert _state(base, sid, stage["scope"], batch=batch + 1)["at"] > stage["start"]
        page.goto(url)
        wait_batch(page, batch)


def test_a_batch_past_the_end_opens_the_last(stall) -> None:
    log, _ = stall
    with replayed(f"flowscope replay {log} --at 99999") as (url, base, sid):
        batches = httpx.get(f"{base}/api/sessions/{sid}").json()["batches"]
        assert 0 < batches < 99999 and url.endswith(f"#/s/{sid}?batch={batches}")


def test_a_moment_that_is_neither_a_batch_nor_a_time_is_refused(capsys) -> None:
    from flowscope.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["replay", str(fixture_log("streaming_stall")), "--at", "yesterday"])
    assert exit_.value.code == 2
    assert "'yesterday' is neither a batch number (1234) nor an ISO 8601 wall-clock time" in capsys.readouterr().err
