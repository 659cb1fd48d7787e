"""The live path under faults, with real Spark and real server processes: flowscope never hurts the application.

One PySpark application (``tests/e2e/fault_driver.py``: the JVM listener by configuration, the Py4J listener by
``flowscope.attach``, each with a queue of 100 events) lives through, in order:

1. nothing listening on the Spark ingest port at first (the network refuses): a job runs, and Spark's listener bus
   empties while its events wait in the listeners' queues;
2. a ``flowscope serve --spark-port P --data-dir D`` process starts: both listeners connect on their own;
3. the server is stopped (SIGSTOP) while a job runs, the listener bus empties while it is stopped, then it is
   continued (SIGCONT);
4. the server is killed (SIGKILL) while a job runs (once the driver says a task is done and tasks are still to go),
   a second job runs while it is down, and it is restarted with the same ``--data-dir``;
5. it is killed again while a streaming query runs (once a micro-batch after the first is done), restarted again;
   a last job; Spark stops.

Each job's result is checked as it comes; afterwards the application's sessions, the listeners' counters, Spark's own
drop counters, and the driver's stderr. Nothing here is timed: how long the listeners take per event is
``benchmarks/listener_bus.py``'s figure. Signals go to the server's own PID.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from backend.spark.live.listener import listener_jar

REPO = Path(__file__).resolve().parents[1]
QUEUE = 100


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expected_sum(n: int) -> int:
    return sum(range(n * 10))


class Server:
    """``flowscope serve`` in a process of its own."""

    def __init__(self, spark_port: int, data_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flowscope.cli", "serve", "--port", "0", "--spark-port", str(spark_port),
             "--data-dir", str(data_dir)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=dict(os.environ, PYTHONPATH=str(REPO)))
        assert self.proc.stdout is not None  # piped above
        line = self.proc.stdout.readline()
        m = re.match(r"flowscope: serving (http://127\.0\.0\.1:\d+)/", line)
        if not m:
            self.proc.kill()
            raise AssertionError(f"the server did not start: {line!r}")
        self.url = m.group(1)

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        self.proc.kill()  # SIGKILL, to its own PID
        self.proc.wait(10)

    def sessions(self) -> list[dict]:
        return httpx.get(f"{self.url}/api/sessions", timeout=10).json()

    def marks(self, sid: str) -> list[dict]:
        body = httpx.get(f"{self.url}/api/sessions/{sid}/marks", timeout=10).json()
        return body if isinstance(body, list) else body["marks"]


class Driver:
    """The fault driver, steered over stdin; its stdout lines arrive in a queue, its stderr is kept."""

    def __init__(self, port: int) -> None:
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONUNBUFFERED="1", PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.e2e.fault_driver", str(listener_jar()), str(port),
                                      str(QUEUE)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr.append), daemon=True).start()
        self.expect("READY", timeout=180)

    @staticmethod
    def _read(stream, put) -> None:
        for line in stream:
            put(line.rstrip("\n"))

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None  # piped when the driver starts
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def expect(self, prefix: str, timeout: float = 120) -> str:
        end = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                stderr = "\n".join(self.stderr[-40:])
                raise AssertionError(f"no {prefix!r} from the driver; stderr:\n{stderr}") from None
            if line.startswith(prefix):
                return line[len(prefix):].strip()
            if time.monotonic() > end:
                raise AssertionError(f"no {prefix!r} from the driver")

    def drain(self) -> bool:
        """Whether Spark's listener bus empties (every listener returned from every event posted so far)."""
        self.send("drain")
        return self.expect("DRAINED") == "true"

    def batch(self, n: int, during=None) -> None:
        self.send(f"batch {n}")
        self.expect("RUNNING batch")
        if during is not None:
            during()
        assert int(self.expect("DONE batch")) == expected_sum(n)

    def stats(self) -> dict:
        self.send("stats")
        return json.loads(self.expect("STATS"))

    def wait_connected(self, timeout: float = 30) -> dict:
        end = time.monotonic() + timeout
        while True:
            stats = self.stats()
            if all(s["connected"] and not s["queued"] for s in stats.values()):
                return stats
            assert time.monotonic() < end, f"the listeners did not reconnect: {stats}"
            time.sleep(0.5)


STALL_S = 30.0  # how long the server is stopped (SIGSTOP) before it goes on (SIGCONT), as the issue asks


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """The whole story (see the module docstring); what each step saw."""
    data = tmp_path_factory.mktemp("faults") / "data"
    port = free_port()
    seen: dict = {}
    driver = Driver(port)
    servers: list[Server] = []
    try:
        driver.batch(4)  # 1. nothing listens yet
        seen["refused_drained"] = driver.drain()
        seen["refused"] = driver.stats()
        servers.append(Server(port, data))  # 2. the server comes up
        seen["connected"] = driver.wait_connected()
        seen["first_sessions"] = _wait_sessions(servers[-1], 2)

        server = servers[-1]  # 3. stalled for STALL_S while a job runs
        stopped = time.monotonic()
        server.signal(signal.SIGSTOP)
        try:
            driver.batch(30)
            seen["stalled_drained"] = driver.drain()
            seen["stalled"] = driver.stats()
            time.sleep(max(0.0, STALL_S - (time.monotonic() - stopped)))
        finally:
            server.signal(signal.SIGCONT)
        driver.batch(2)
        seen["after_stall"] = driver.wait_connected()

        def kill_while_running() -> None:
            seen["batch_at_kill"] = tuple(map(int, driver.expect("PROGRESS batch").split()))  # (done, tasks)
            server.kill()

        driver.batch(50, during=kill_while_running)  # 4. killed while a job runs
        driver.batch(60)  # and down for another job: the listeners' queues overflow
        seen["while_down"] = driver.stats()
        servers.append(Server(port, data))
        seen["reconnected"] = driver.wait_connected()

        server = servers[-1]  # 5. killed while a streaming query runs
        driver.send("stream 30")
        driver.expect("RUNNING stream")
        seen["stream_at_kill"] = int(driver.expect("PROGRESS stream"))  # a micro-batch after the first is done
        server.kill()
        batches, rows = map(int, driver.expect("DONE stream").split())
        seen["stream"] = (batches, rows)
        servers.append(Server(port, data))
        driver.wait_connected()
        driver.batch(3)
        driver.send("stop")
        seen["result"] = json.loads(driver.expect("RESULT"))
        driver.proc.wait(60)
        seen["returncode"] = driver.proc.returncode
        seen["stderr"] = list(driver.stderr)
        server = servers[-1]
        seen["sessions"] = _wait_sessions(server, 2, done=True)
        seen["marks"] = {s["id"]: server.marks(s["id"]) for s in seen["sessions"]}
        if os.environ.get("FLOWSCOPE_FAULTS_DUMP"):  # to look at what a failing run saw
            Path(os.environ["FLOWSCOPE_FAULTS_DUMP"]).write_text(json.dumps(seen, indent=1, default=str))
        yield seen
    finally:
        if driver.proc.poll() is None:
            driver.proc.kill()
            driver.proc.wait(10)
        for s in servers:
            if s.proc.poll() is None:
                s.signal(signal.SIGCONT)
                s.kill()


def _wait_sessions(server: Server, n: int, done: bool = False, timeout: float = 60) -> list[dict]:
    end = time.monotonic() + timeout
    while True:
        rows = [s for s in server.sessions() if s["kind"] == "spark-live"]
        if len(rows) >= n and (not done or all(s["status"] == "done" for s in rows)):
            return rows
        assert time.monotonic() < end, rows
        time.sleep(0.3)


def test_the_application_runs_on_and_ends_normally_whatever_happens_to_the_server(faults):
    assert faults["returncode"] == 0
    batches, rows = faults["stream"]
    assert batches >= 30 and rows == 5  # the streaming query went on while its server was killed
    # the kills came while the work still ran: the driver had said so just before
    done, tasks = faults["batch_at_kill"]
    assert 0 < done < tasks
    assert 2 <= faults["stream_at_kill"] < 30 <= batches


def test_nothing_listening_at_first_the_listeners_wait_and_connect_on_their_own(faults):
    # Spark's listener bus emptied while the first job's events waited in the listeners' bounded queues: Spark's
    # listener threads never waited for the network
    assert faults["refused_drained"] is True
    for name, s in faults["refused"].items():
        assert not s["connected"] and s["connect_failures"] >= 1 and s["dropped"] == 0, (name, s)
        assert s["queued"] > 0  # the first job's events wait in the bounded queue
    for name, s in faults["connected"].items():
        assert s["connected"] and s["queued"] == 0 and s["dropped"] == 0, (name, s)
    # nothing was lost: the sessions begin with the first job
    assert {s["events_lost"] for s in faults["first_sessions"]} == {0}


def test_while_the_server_is_down_memory_stays_bounded_and_drops_are_counted(faults):
    for name, s in faults["while_down"].items():
        assert not s["connected"] and s["queued"] <= QUEUE and s["dropped"] > 0, (name, s)
    for name, s in faults["reconnected"].items():
        assert s["connected"] and s["reconnects"] == 1 and s["queued"] == 0, (name, s)
    for name, s in faults["result"]["stats"].items():
        assert s["reconnects"] == 2 and s["dropped"] > faults["while_down"][name]["dropped"], (name, s)


def test_the_session_continues_under_its_id_with_the_gaps_marked(faults):
    first = {s["id"] for s in faults["first_sessions"]}
    final = {s["id"]: s for s in faults["sessions"]}
    assert set(final) == first  # restarted twice with --data-dir: the same two sessions, not new ones
    for sid, info in final.items():
        lost = [m for m in faults["marks"][sid] if m["label"].startswith("events lost: ")]
        assert len(lost) >= 2, (sid, [m["label"] for m in faults["marks"][sid]])  # one per kill at least
        assert info["events_lost"] >= faults["result"]["stats"]["jvm" if "py4j" not in info["name"] else "py4j"][
            "dropped"] > 0
        labels = [m["label"] for m in faults["marks"][sid]]
        assert any(label.startswith("application ") and "ended" in label for label in labels), labels


def test_spark_never_waited_for_flowscope(faults):
    result = faults["result"]
    # the configured listener moved from Spark's shared queue to its own, and no queue dropped an event
    assert "queue.flowscope.numDroppedEvents" in result["spark_dropped"]
    assert set(result["spark_dropped"].values()) == {0}, result["spark_dropped"]
    # the listener bus emptied while the server was stopped (it read nothing), the connection held
    assert faults["stalled_drained"] is True
    assert all(s["connected"] for s in faults["stalled"].values()), faults["stalled"]


def test_a_stalled_server_costs_no_event_and_no_connection(faults):
    """The listeners went on over the same connection and wrote out the stall's job and the next, dropping nothing
    (the socket's buffers hold a small job's events while the server reads none)."""
    for name, s in faults["after_stall"].items():
        before = faults["connected"][name]
        assert s["connected"] and s["queued"] == 0 and s["dropped"] == 0, (name, s)
        assert s["reconnects"] == 0 and s["connect_failures"] == before["connect_failures"], (name, s)
        assert s["sent"] > before["sent"], (name, s)


def test_the_drivers_log_has_a_few_clear_warnings_not_one_per_event(faults):
    warnings = [line for line in faults["stderr"] if line.startswith("flowscope: warning:")]
    # one per outage and listener: nothing listening, the two kills (a stall need not break the connection)
    assert 2 <= len(warnings) <= 8, warnings
    assert all("the application is not affected" in w for w in warnings)
    assert not [line for line in faults["stderr"] if "Traceback" in line or line.startswith("\tat flowscope")]
