"""The fallback: a Python object Spark calls through Py4J, for when the JVM listener cannot be built or loaded.

It speaks the JVM listener's protocol (a hello line, one event-log JSON line per event, ``flowscope.Dropped`` lines
when a drop counter moves) over the same kind of socket, so everything downstream is the same. But every event is a
round trip from Spark's listener thread into Python and back into the JVM for the JSON (measured on this project's
machines: about 2.8k events/s, a 20,000-task job 20% slower, and Spark dropping events once the listener lags), so
flowscope uses it only when it must and says so. It behaves as the JVM listener does when the server is down or
slow: its queue is bounded (in lines and in bytes) and never blocks Spark's thread, the sending thread reconnects
with backoff and warns once per outage, and nothing on Spark's thread waits for the network (at the application
end, ``Attachment.detach`` at exit sends the rest). Spark's drop counters are read once a second from the sending
thread.
"""

from __future__ import annotations

import json
import queue
import socket
import sys
import threading
import time
import uuid
from typing import Any

from backend.spark.live import py4j_bridge
from backend.spark.live.listener.build import WARMUP

__all__ = ["Py4JListener"]

_SKIPPED = ('{"Event":"SparkListenerExecutorMetricsUpdate"', '{"Event":"SparkListenerBlockUpdated"')
_IGNORED = frozenset({"onExecutorMetricsUpdate", "onBlockUpdated"})  # heartbeats, block updates
# the same bounds and delays as FlowscopeListener.java's
CONNECT_TIMEOUT_S = 1.0
BACKOFF_FIRST_S = 0.2
BACKOFF_MAX_S = 5.0
DEFAULT_QUEUE_BYTES = 64 << 20
DEFERRED_SIZE = 4096  # what an event not yet serialized counts for in the byte bound


class Py4JListener:
    """Implements Spark's ``SparkListenerInterface`` in Python; register it with ``addSparkListener`` on the Scala
    context (``py4j_bridge.scala_context``)."""

    class Java:
        implements = ["org.apache.spark.scheduler.SparkListenerInterface"]

    def __init__(self, sc: Any, host: str, port: int, token: str = "", capacity: int = 100_000,
                 app_name: str | None = None, max_bytes: int = DEFAULT_QUEUE_BYTES) -> None:
        from pyspark.java_gateway import ensure_callback_server_started

        ensure_callback_server_started(py4j_bridge.gateway(sc))
        self._sc = sc
        self._json = py4j_bridge.jvm(sc).org.apache.spark.util.JsonProtocol
        self._address = (host, port)
        self._token = token or ""
        self._hello = {"Event": "flowscope.Hello", "protocol": 1, "listener": "py4j", "token": self._token,
                       "app": app_name or sc.appName or "", "appId": sc.applicationId or "",
                       "instance": str(uuid.uuid4())}
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(16, capacity))  # lines, or events to serialize
        self._max_bytes = max(1 << 16, max_bytes)
        self._queued_bytes = 0  # approximate (characters); updated under _count_lock
        self._count_lock = threading.Lock()
        self._dropped = 0
        self._accepted = 0
        self._failed = 0
        self._sent = 0
        self._taken = 0  # lines taken off the queue: sent, or lost with a connection
        self._polled = 0  # items taken off the queue (a line each, unless it could not be serialized)
        self._handled = 0  # items polled and sent or lost: what flush() waits for
        self._connections = 0
        self._connect_failures = 0
        self._closed = False
        self._lock = threading.Condition()
        self._sock: socket.socket | None = None
        threading.Thread(target=self._run, name="flowscope-py4j-listener", daemon=True).start()

    # --- called by Spark (through Py4J, on Spark's listener thread) ----------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name in _IGNORED:  # what Spark's event log leaves out: answered without a round trip into the JVM
            return _ignore_event
        if name == "onOtherEvent":  # SQL, streaming: immutable, serialized on the sending thread
            return self._on_other_event
        if name.startswith("on"):  # onTaskEnd, onJobStart, ...: serialized at once, as Spark's event log does
            return self._on_event
        raise AttributeError(name)

    def _on_other_event(self, event: Any) -> None:
        self._offer(event, DEFERRED_SIZE)

    def _on_event(self, event: Any) -> None:
        try:
            line = self._json.sparkEventToJsonString(event)
        except Exception:
            self._failed += 1
            return
        if line.startswith(_SKIPPED):
            return
        self.send(line)  # nothing waits here, not even at the application end: atexit's detach sends the rest

    # --- the same surface as the JVM listener --------------------------------------------------------------

    def send(self, line: str) -> bool:
        return self._offer(line, len(line))

    def _offer(self, item: Any, size: int) -> bool:
        with self._count_lock:
            if self._closed or self._queued_bytes + size > self._max_bytes:
                self._dropped += 1
                return False
            try:
                self._queue.put_nowait(item)
            except queue.Full:
                self._dropped += 1
                return False
            self._queued_bytes += size
            self._accepted += 1
        return True

    def flush(self, timeout_ms: int) -> bool:
        """Wait (at most ``timeout_ms``) until everything queued so far is sent; False at once when not connected."""
        end = time.monotonic() + timeout_ms / 1000
        target = self._accepted
        with self._lock:
            while self._handled < target:
                left = end - time.monotonic()
                if left <= 0 or self._closed or self._sock is None:
                    return False
                self._lock.wait(min(left, 0.02))
        return True

    def close(self, timeout_ms: int) -> None:
        self.flush(timeout_ms)
        self._closed = True

    def dropped(self) -> int:
        return self._dropped

    def sent(self) -> int:
        return self._sent

    def failed(self) -> int:
        return self._failed

    def queued(self) -> int:
        return self._queue.qsize()

    def queuedBytes(self) -> int:  # noqa: N802 - the JVM listener's name
        return self._queued_bytes

    def connected(self) -> bool:
        return self._sock is not None

    def connectFailures(self) -> int:  # noqa: N802 - the JVM listener's name
        return self._connect_failures

    def reconnects(self) -> int:
        return max(0, self._connections - 1)

    # --- the sending thread --------------------------------------------------------------------------------

    def _warm_up(self) -> None:
        """Parse and serialize a few real scheduler events once in the driver JVM (``build.WARMUP``), so that the
        first real ones on Spark's thread do not pay for class loading and JIT. Best effort."""
        try:
            for line in WARMUP.read_text().splitlines():
                self._json.sparkEventToJsonString(self._json.sparkEventFromJson(line))
        except Exception:
            pass  # another Spark version's parser: no warm-up

    def _run(self) -> None:
        self._warm_up()
        backoff = BACKOFF_FIRST_S
        outage_since: float | None = None
        dropped_at_outage = 0
        reported: tuple[int, dict] = (0, {})
        spark: dict = {}
        last_check = 0.0
        while not self._closed:
            problem = None
            if self._sock is None:
                try:
                    sock = socket.create_connection(self._address, timeout=CONNECT_TIMEOUT_S)
                    sock.settimeout(None)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    told = self._dropped
                    hello = dict(self._hello, connection=self._connections + 1, seq=self._taken, dropped=told)
                    sock.sendall(json.dumps(hello).encode() + b"\n")
                except OSError as e:
                    problem = f"{type(e).__name__}: {e}"
                else:
                    self._sock = sock
                    self._connections += 1
                    reported = (told, reported[1])
                    backoff = BACKOFF_FIRST_S
                    if outage_since is not None:
                        print(f"flowscope: the listener reconnected to {self._address[0]}:{self._address[1]} after "
                              f"{time.monotonic() - outage_since:.0f} s ({self._dropped - dropped_at_outage} events "
                              "dropped meanwhile)", file=sys.stderr, flush=True)
                        outage_since = None
            if self._sock is not None:
                try:
                    now = time.monotonic()
                    if now - last_check >= 1.0:
                        last_check = now
                        spark = self._spark_drops()
                    reported = self._pump(self._sock, reported, spark)
                    continue
                except OSError as e:
                    self._disconnect()
                    problem = f"the connection broke: {type(e).__name__}: {e}"
            self._connect_failures += 1
            if outage_since is None:
                outage_since = time.monotonic()
                dropped_at_outage = self._dropped
                print(f"flowscope: warning: the listener {'lost' if self._connections else 'cannot reach'} the "
                      f"flowscope server at {self._address[0]}:{self._address[1]} ({problem}); the application is "
                      f"not affected. It reconnects on its own (backoff up to {BACKOFF_MAX_S:.0f} s) and keeps at "
                      f"most {self._queue.maxsize - self._queue.qsize()} events meanwhile; events beyond that are "
                      "dropped and counted.", file=sys.stderr, flush=True)
            end = time.monotonic() + backoff
            while not self._closed and time.monotonic() < end:
                time.sleep(0.05)
            backoff = min(backoff * 2, BACKOFF_MAX_S)
        self._disconnect()

    def _pump(self, sock: socket.socket, reported: tuple[int, dict], spark: dict) -> tuple[int, dict]:
        """Send up to 512 queued lines (waiting 0.1 s for the first), after a flowscope.Dropped line if a counter
        moved; the counters now reported."""
        items = []
        try:
            items.append(self._queue.get(timeout=0.1))
            while len(items) < 512:
                items.append(self._queue.get_nowait())
        except queue.Empty:
            pass
        self._polled += len(items)
        with self._count_lock:
            self._queued_bytes -= sum(len(i) if type(i) is str else DEFERRED_SIZE for i in items)
        lines = [line for i in items if (line := i if type(i) is str else self._serialize(i)) is not None]
        self._taken += len(lines)
        if (self._dropped, spark) != reported:
            reported = (self._dropped, spark)
            sock.sendall(json.dumps({"Event": "flowscope.Dropped", "count": self._dropped, "sent": self._sent,
                                     "spark": spark}).encode() + b"\n")
        if lines:
            sock.sendall(("\n".join(lines) + "\n").encode())
            self._sent += len(lines)
        with self._lock:
            self._handled = self._polled
            self._lock.notify_all()
        return reported

    def _serialize(self, event: Any) -> str | None:
        try:
            return self._json.sparkEventToJsonString(event)
        except Exception:
            self._failed += 1
            return None

    def _disconnect(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
        with self._lock:
            self._handled = self._polled  # sent or lost: flush() stops waiting for it
            self._lock.notify_all()

    def _spark_drops(self) -> dict:
        try:
            counters = py4j_bridge.scala_context(self._sc).listenerBus().metrics().metricRegistry().getCounters()
            out = {}
            for name in list(counters.keySet()):
                if str(name).endswith("numDroppedEvents"):
                    n = int(counters.get(name).getCount())
                    if n:
                        out[str(name)] = n
            return out
        except Exception:
            return {}


def _ignore_event(event: Any) -> None:
    """A heartbeat or block update: Spark's event log leaves them out, and so does the listener."""
