"""The fallback: a Python object Spark calls through Py4J, for when the JVM listener cannot be built or loaded.

It speaks the JVM listener's protocol (a hello line, one event-log JSON line per event, ``flowscope.Dropped`` lines
when a drop counter moves) over the same kind of socket, so everything downstream is the same. But every event is a
round trip from Spark's listener thread into Python and back into the JVM for the JSON (measured on this project's
machines: about 2.8k events/s, a 20,000-task job 20% slower, and Spark dropping events once the listener lags), so
flowscope uses it only when it must and says so. Its own queue is bounded and never blocks Spark's thread; Spark's
drop counters are read once a second from the sending thread.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
from typing import Any

from backend.spark import py4j_bridge

__all__ = ["Py4JListener"]

_SKIPPED = ('{"Event":"SparkListenerExecutorMetricsUpdate"', '{"Event":"SparkListenerBlockUpdated"')
_APP_END = '{"Event":"SparkListenerApplicationEnd"'


class Py4JListener:
    """Implements Spark's ``SparkListenerInterface`` in Python; register it with ``addSparkListener`` on the Scala
    context (``py4j_bridge.scala_context``)."""

    class Java:
        implements = ["org.apache.spark.scheduler.SparkListenerInterface"]

    def __init__(self, sc: Any, host: str, port: int, token: str = "", capacity: int = 100_000,
                 app_name: str | None = None) -> None:
        from pyspark.java_gateway import ensure_callback_server_started

        ensure_callback_server_started(py4j_bridge.gateway(sc))
        self._sc = sc
        self._json = py4j_bridge.jvm(sc).org.apache.spark.util.JsonProtocol
        self._address = (host, port)
        self._token = token or ""
        self._hello = {"Event": "flowscope.Hello", "protocol": 1, "listener": "py4j", "token": self._token,
                       "app": app_name or sc.appName or "", "appId": sc.applicationId or ""}
        self._queue: queue.Queue[str] = queue.Queue(maxsize=max(16, capacity))
        self._dropped = 0
        self._accepted = 0
        self._failed = 0
        self._sent = 0
        self._flushed = 0
        self._closed = False
        self._lock = threading.Condition()
        self._connected = False
        threading.Thread(target=self._run, name="flowscope-py4j-listener", daemon=True).start()

    # --- called by Spark (through Py4J, on Spark's listener thread) ----------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on"):  # onTaskEnd, onJobStart, ... onOtherEvent: all the same
            return self._on_event
        raise AttributeError(name)

    def _on_event(self, event: Any) -> None:
        try:
            line = self._json.sparkEventToJsonString(event)
        except Exception:
            self._failed += 1
            return
        if line.startswith(_SKIPPED):
            return
        self.send(line)
        if line.startswith(_APP_END):
            self.flush(5000)

    # --- the same surface as the JVM listener --------------------------------------------------------------

    def send(self, line: str) -> bool:
        if self._closed:
            self._dropped += 1
            return False
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self._dropped += 1
            return False
        self._accepted += 1
        return True

    def flush(self, timeout_ms: int) -> bool:
        end = time.monotonic() + timeout_ms / 1000
        target = self._accepted
        with self._lock:
            while self._flushed < target:
                left = end - time.monotonic()
                if left <= 0 or self._closed:
                    return False
                self._lock.wait(min(left, 0.05))
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

    def connected(self) -> bool:
        return self._connected

    # --- the sending thread --------------------------------------------------------------------------------

    def _run(self) -> None:
        sock = None
        reported: tuple[int, dict] = (0, {})
        last_check = 0.0
        spark = {}
        try:
            while not self._closed:
                if sock is None:
                    try:
                        sock = socket.create_connection(self._address, timeout=2)
                        sock.settimeout(None)
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        sock.sendall(json.dumps(self._hello).encode() + b"\n")
                        self._connected = True
                    except OSError:
                        sock = None
                        time.sleep(0.5)
                        continue
                lines = []
                try:
                    lines.append(self._queue.get(timeout=0.1))
                    while len(lines) < 512:
                        lines.append(self._queue.get_nowait())
                except queue.Empty:
                    pass
                now = time.monotonic()
                if now - last_check >= 1.0:
                    last_check = now
                    spark = self._spark_drops()
                if (self._dropped, spark) != reported:
                    reported = (self._dropped, spark)
                    sock.sendall(json.dumps({"Event": "flowscope.Dropped", "count": self._dropped, "sent": self._sent,
                                             "spark": spark}).encode() + b"\n")
                if lines:
                    sock.sendall(("\n".join(lines) + "\n").encode())
                    self._sent += len(lines)
                    with self._lock:
                        self._flushed = self._sent
                        self._lock.notify_all()
        except OSError:
            pass  # the server went away; what is still queued is lost
        finally:
            self._closed = True
            self._connected = False
            if sock is not None:
                sock.close()
            with self._lock:
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
