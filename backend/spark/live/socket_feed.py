"""The live feed: Spark events arriving over a socket while the application runs, turned into progress records.

A Spark driver streams its listener events here, one JSON line per event, exactly as Spark writes them to event
logs (the JVM listener ``flowscope.FlowscopeListener``, attached at run time by ``flowscope.attach`` or by
configuration alone, or the slower Py4J fallback). :class:`SparkIngestServer` accepts those connections on a TCP
port, one application per connection, each starting with a hello line (protocol version, token, application);
every accepted connection becomes a :class:`SparkLiveFeed` handed to the caller (a server adds it as a session).

Threads and bounds: the socket is read on a thread of its own into the feed's bounded buffer of lines. When the
buffer is full the reading thread waits, TCP pushes back, and the listener's own bounded queue in the driver fills
and drops, counting what it dropped: memory stays bounded everywhere and every loss is counted in one place, the
listener, which reports it in order (``flowscope.Dropped`` lines) with Spark's own listener-bus drop counters.
The feed parses and models on the consumer's side (``poll``, the session's ingest loop), so the reading thread
does no JSON work.

Uncertainty: a drop counter that moves, a gap in the events themselves (:mod:`backend.spark.model.gaps`), or a
connection that closes before the application ended marks the session uncertain from that point (the model's
``uncertain`` mark), instead of showing frontiers that may be wrong.

Outages: a connection that closes before the application ended (or the listener detached) leaves its feed waiting
for the same listener (the hello's ``instance``) to reconnect, for ``resume_window`` seconds. The reconnection's hello
says how many lines the listener had taken off its queue (``seq``) and dropped before it; those the feed never
received and the new drops are one "events lost" mark (``SparkModel.note_lost``) with the count, and the session
goes on. A listener that never comes back ends the feed as before.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import IO, Any

import orjson

from backend.feeds.progress_feeds import Feed
from backend.spark.model.gaps import GapDetector
from backend.spark.model.retention import SESSION_RETAINED_JOBS
from backend.spark.model.spark_model import SparkModel
from backend.spark.sql_plan.plans import SqlPlans
from backend.web.security import is_loopback
from tracker.progress_log.jsonl import DAMAGED_EVENT, DEFAULT_LIMITS, LINE_TOO_LONG, JsonLines, LineError, LineSplitter

__all__ = ["DISCONNECTED_AT", "FINAL_LINES", "PROTOCOL", "SparkIngestServer", "SparkLiveFeed", "IngestRefused",
           "ingest_label"]

log = logging.getLogger("flowscope.spark.live")

PROTOCOL = 1
# what the ingest thread puts in place of a line over the length limit (it never holds such a line whole)
TOO_LONG = b'{"Event":"flowscope.LineTooLong"}'
# the lines after which a listener will not reconnect: its connection may then simply end
FINAL_LINES = (b'{"Event":"SparkListenerApplicationEnd"', b'{"Event":"flowscope.Detach"')
# what the ingest thread puts in the feed when the listener's connection ends early (% the wall-clock time)
DISCONNECTED_AT = b'{"Event":"flowscope.Disconnected","at":%.3f}'
# how long a listener's new connection waits for its earlier one to be done with the feed (then shuts it, and waits
# as long again)
SUPERSEDE_WAIT_S = 5.0
# control lines the listener does not take from its queue (not counted against its "seq")
_UNCOUNTED = ("flowscope.Hello", "flowscope.Dropped", "flowscope.Disconnected")
Record = tuple[int | None, dict]


class SparkLiveFeed(Feed):
    """One application's live events (see the module docstring). Producers call ``put``/``end``; the consumer
    calls ``poll`` (the session's ingest loop) or ``take`` (a thread)."""

    kind = "spark-live"
    live = True

    def __init__(self, label: str = "spark (live)", capacity: int = 20_000, *, tee: IO[bytes] | None = None) -> None:
        super().__init__()
        self.label = label
        self.capacity = max(1, capacity)
        self.model = SparkModel(retain_jobs=SESSION_RETAINED_JOBS)  # a session: Spark's job list stays bounded
        self.gaps = GapDetector()
        self.hello: dict = {}
        self.queue_name = "shared"  # the listener-bus queue the listener sits on (told by flowscope.Queue)
        self.events = 0  # Spark events modelled
        self.lines = 0  # lines received, control lines included
        self.listener_dropped = 0  # as the listener last reported
        self.spark_dropped: dict[str, int] = {}  # Spark's counters, as last reported
        self.detached = False
        self.received = 0  # lines the listener took from its queue that arrived here (its "seq" counts the same)
        self.connected = True
        self.connections = 0  # hellos received
        self.outages: list[dict] = []  # each reconnection: {"lost": events, "since", "until": wall-clock s}
        self.final_seen = False  # the socket thread saw the application end or a detach: no reconnect to wait for
        self.journal: Any = None  # a live_journal.LiveJournal when the server keeps live sessions (--data-dir)
        self.session_id: str | None = None  # the id the journal's session has
        self._disconnected_at: float | None = None
        self.task_end_times: list[float] | None = None  # set to a list to collect TaskEnd 'Finish Time's (ms)
        self.tee = tee  # every Spark event line received is also written here (a replayable event log)
        # the application's SQL plans as they grow (the Plan tab's GET .../plan), fed here and read by the server's
        # threads under plans_lock
        self.plans = SqlPlans()
        self.plans_lock = threading.Lock()
        self._lines: collections.deque[bytes] = collections.deque()
        self._cond = threading.Condition()
        self._ended = False  # no more lines will come
        self._finished = False  # the end-of-stream records were returned
        self._closed = False  # the consumer is gone
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Future | None = None
        self._waiting = False
        self._parser = JsonLines(label, self.errors.append, _ignore)  # lines to events, problems reported
        self.model.on_damaged = self._damaged

    # --- producer side (the socket thread) ------------------------------------------------------------------

    def put(self, lines: list[bytes]) -> bool:
        """Append lines, waiting while the buffer is full; False once the consumer has closed the feed."""
        i = 0
        while i < len(lines):
            with self._cond:
                while len(self._lines) >= self.capacity and not self._closed:
                    self._cond.wait(0.5)
                if self._closed:
                    return False
                was_empty = not self._lines
                room = self.capacity - len(self._lines)
                self._lines.extend(lines[i:i + room])
                i += room
                self._cond.notify_all()
            if was_empty:
                self._wake()
        return True

    @property
    def ending(self) -> bool:
        """The producer has said no more lines will come (some may still be waiting to be polled)."""
        return self._ended

    def end(self) -> None:
        with self._cond:
            self._ended = True
            self._cond.notify_all()
        self._wake()

    def _wake(self) -> None:
        loop, waiter = self._loop, self._event
        if loop is None or waiter is None or not self._waiting:
            return
        try:
            loop.call_soon_threadsafe(_resolve, waiter)
        except RuntimeError:  # the loop is closed
            pass

    # --- consumer side ---------------------------------------------------------------------------------------

    def poll(self, limit: int) -> list[Record] | None:
        """The records from the lines received so far (up to ``limit`` lines at a time, more while they make no
        records: an empty answer means nothing to show yet); None once the stream has ended."""
        out: list[Record] = []
        for _ in range(16):  # read on while lines make no records (bounded: the caller's slice is short)
            if out:
                break
            with self._cond:
                n = min(limit, len(self._lines))
                batch = [self._lines.popleft() for _ in range(n)]
                ended = self._ended and not self._lines
                if n:
                    self._cond.notify_all()
            for raw in batch:
                self._line(raw, out)
            if not batch:
                if ended:
                    if self._finished:
                        return None
                    self._finished = True
                    self._finish(out)
                break
        if self.tee is not None:
            self.tee.flush()
        return out

    def take(self, limit: int, timeout: float) -> list[Record] | None:
        """``poll`` for a thread: waits up to ``timeout`` seconds for lines first."""
        with self._cond:
            if not self._lines and not self._ended:
                self._cond.wait(timeout)
        return self.poll(limit)

    async def wait(self, timeout: float) -> None:
        """Until lines arrive (or the stream ends), at most ``timeout`` seconds. A bare future and a timer, not
        ``asyncio.wait_for`` (a task per call): a live session waits once per burst of events."""
        if self._lines or self._ended:
            return
        loop = self._loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._event = waiter
        timer = loop.call_later(timeout, _resolve, waiter)
        self._waiting = True
        try:
            if not (self._lines or self._ended):
                await waiter
        finally:
            self._waiting = False
            timer.cancel()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._lines.clear()
            self._cond.notify_all()
        if self.journal is not None:
            self.journal.close()

    # --- lines to records -------------------------------------------------------------------------------------

    def _line(self, raw: bytes, out: list[Record]) -> None:
        self.lines += 1
        event = self._parser.parse(raw)
        if event is None:
            self.received += 1
            return
        kind = event.get("Event")
        if kind not in _UNCOUNTED:
            self.received += 1
        if isinstance(kind, str) and kind.startswith("flowscope."):
            self._control(kind, event, out)
            return
        if self.tee is not None:
            self.tee.write(raw.rstrip(b"\r\n") + b"\n")
        self.events += 1
        model = self.model
        reason = self.gaps.check(event)
        if reason is not None:
            out.extend((None, r) for r in model.note_gap(reason))
        records = model.feed(event, self.events)
        if records:
            out.extend((None, r) for r in records)
        with self.plans_lock:
            self.plans.feed(event, self.events)
        if self.task_end_times is not None and kind == "SparkListenerTaskEnd":
            info = event.get("Task Info")
            finish = info.get("Finish Time") if type(info) is dict else None
            if finish:
                self.task_end_times.append(finish)

    def _damaged(self, line: int | None, kind: str, problem: str) -> None:
        self.errors.append(LineError(self.label, self.lines, DAMAGED_EVENT, f"{kind} skipped: {problem}"))

    def _control(self, kind: str, event: dict, out: list[Record]) -> None:
        if kind == "flowscope.Hello":
            self._hello(event, out)
        elif kind == "flowscope.Disconnected":
            self.connected = False
            at = event.get("at")
            self._disconnected_at = float(at) if isinstance(at, (int, float)) else time.time()
        elif kind == "flowscope.Queue":
            self.queue_name = str(event.get("name") or "shared")
        elif kind == "flowscope.Dropped":
            own = _count(event.get("count"))
            if own > self.listener_dropped:
                lost = own - self.listener_dropped
                reason = f"the listener dropped {lost} events (its queue was full)"
                out.extend((None, r) for r in self.model.note_lost(lost, reason))
            self.listener_dropped = max(own, self.listener_dropped)
            spark = event.get("spark") or {}
            for key, value in spark.items():
                before = self.spark_dropped.get(key, 0)
                if value > before and key == f"queue.{self.queue_name}.numDroppedEvents":
                    reason = (f"Spark dropped {value - before} events before the listener saw them "
                              f"(spark.scheduler.listenerbus.eventqueue.{self.queue_name}.capacity is too small)")
                    out.extend((None, r) for r in self.model.note_gap(reason))
                self.spark_dropped[key] = max(value, before)
        elif kind == "flowscope.Note":
            label = str(event.get("label") or "")
            if event.get("uncertain"):
                out.extend((None, r) for r in self.model.note_gap(label))
            else:
                out.append((None, self.model.note(label)))
        elif kind == "flowscope.LineTooLong":
            limit = DEFAULT_LIMITS.max_line_bytes
            self.errors.append(LineError(self.label, self.lines, LINE_TOO_LONG,
                                         f"longer than {limit} bytes (FLOWSCOPE_MAX_LINE_BYTES); skipped"))
            out.extend((None, r) for r in self.model.note_gap(f"an event over {limit} bytes was skipped"))
        elif kind == "flowscope.Detach":
            self.detached = True
            if not self.model.ended:
                out.append((None, self.model.note("flowscope detached")))

    def _hello(self, hello: dict, out: list[Record]) -> None:
        """A connection's first line; on a reconnection (or a listener that had sent lines before this server heard
        from it) the events it never received are one "events lost" mark."""
        self.hello = {k: v for k, v in hello.items() if k != "token"}
        self.connections += 1
        self.connected = True
        seq, dropped = _count(hello.get("seq")), _count(hello.get("dropped"))
        lost = max(0, seq - self.received) + max(0, dropped - self.listener_dropped)
        self.listener_dropped = max(dropped, self.listener_dropped)
        self.received = max(seq, self.received)
        arrived = hello.get("received_at")
        now = float(arrived) if isinstance(arrived, (int, float)) else time.time()
        since = self._disconnected_at
        self._disconnected_at = None
        if self.connections == 1 and not lost:
            return
        if since is None:
            reason = f"the listener had sent {seq} lines before it connected here"
        else:
            reason = f"the listener was disconnected for {now - since:.0f} s"
        self.outages.append({"lost": lost, "since": since, "until": now})
        out.extend((None, r) for r in self.model.note_lost(lost, reason, now))

    @property
    def events_lost(self) -> int:
        """Events the listener took from Spark that this feed never modelled (outages, full queues)."""
        return self.model.events_lost

    def _finish(self, out: list[Record]) -> None:
        for reason in self.gaps.finish():
            out.extend((None, r) for r in self.model.note_gap(reason))
        if not self.model.ended and not self.detached and self.events:
            reason = "the connection closed before the application ended"
            out.extend((None, r) for r in self.model.note_gap(reason))

    def stats(self) -> dict:
        return {"events": self.events, "lines": self.lines, "queued": len(self._lines),
                "listener_dropped": self.listener_dropped, "spark_dropped": dict(self.spark_dropped),
                "uncertain": list(self.model.uncertain), "listener": self.hello.get("listener"),
                "connected": self.connected, "connections": self.connections, "events_lost": self.events_lost,
                "outages": [dict(o) for o in self.outages]}


def _count(value: Any) -> int:
    """A counter from a listener's line (a hostile or broken one counts as 0)."""
    return value if type(value) is int and value > 0 else 0


def _ignore(line: int, event: dict) -> None:
    """Parsed events are taken from ``JsonLines.parse``'s answer, not from its callback."""


def _resolve(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


class IngestRefused(ValueError):
    """A connection that is not a flowscope listener, or carries the wrong token."""



class SparkIngestServer:
    """Accepts Spark listeners on ``host:port`` (port 0: a free one; see ``address``). Each connection that says
    hello with the right token becomes a :class:`SparkLiveFeed`, passed to ``on_feed`` on the connection's thread
    (hop to your event loop there). Binding beyond loopback needs a token, as the HTTP server does."""

    def __init__(self, on_feed: Callable[[SparkLiveFeed], Any], host: str = "127.0.0.1", port: int = 0, *,
                 token: str | None = None, capacity: int = 20_000,
                 feed_factory: Callable[[dict], SparkLiveFeed] | None = None, resume_window: float = 600.0) -> None:
        if not is_loopback(host) and not token:
            raise ValueError(f"a Spark ingest port on {host} accepts listeners from beyond this machine: "
                             "give a token too (spark.flowscope.token on the Spark side)")
        self.on_feed = on_feed
        self.token = token
        self.capacity = capacity
        self.feed_factory = feed_factory
        self.feeds: list[SparkLiveFeed] = []
        self.refused: list[str] = []
        self.resume_window = resume_window
        # listener instance -> its feed, while the application may still reconnect (its connection ended early)
        self._waiting: dict[str, tuple[SparkLiveFeed, threading.Timer]] = {}
        # listener instance -> its connection being served, and set once that connection is done with its feed
        self._serving: dict[str, tuple[socket.socket, threading.Event]] = {}
        self._lock = threading.Lock()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.create_server((host, port), family=family, reuse_port=False)
        self.address: tuple[str, int] = self._sock.getsockname()[:2]
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="flowscope-spark-ingest", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed = True
        try:
            self._sock.close()
        except OSError:
            pass
        with self._lock:
            waiting, self._waiting = list(self._waiting.values()), {}
        for feed, timer in waiting:
            timer.cancel()
            feed.end()

    def _accept(self) -> None:
        earlier = threading.Event()  # set once the connection accepted before has read its hello (or given up)
        earlier.set()
        while not self._closed:
            try:
                conn, peer = self._sock.accept()
            except OSError:
                return
            hello_read = threading.Event()
            threading.Thread(target=self._serve, args=(conn, peer, earlier, hello_read), name="flowscope-spark-conn",
                             daemon=True).start()
            earlier = hello_read

    def _serve(self, conn: socket.socket, peer: Any, earlier: threading.Event | None = None,
               hello_read: threading.Event | None = None) -> None:
        """One listener connection. Connections take their turn at registering in the order they were accepted
        (``earlier``, then ``hello_read``): a reconnection's thread that ran before its earlier connection's would
        otherwise find nothing to supersede or resume, and start a second session."""
        feed = None
        instance = None
        done = threading.Event()
        try:
            conn.settimeout(10)
            buf = b""
            while b"\n" not in buf:
                data = conn.recv(65536)
                if not data or len(buf) > 1 << 20:
                    return
                buf += data
            first, _, rest = buf.partition(b"\n")
            hello = self._check_hello(first)
            conn.settimeout(None)
            instance = hello.get("instance") if type(hello.get("instance")) is str else None
            if earlier is not None:
                earlier.wait(SUPERSEDE_WAIT_S)
            if instance:
                self._supersede(instance, conn, done)
            if hello_read is not None:
                hello_read.set()
            stamped = orjson.dumps({**{k: v for k, v in hello.items() if k != "token"}, "received_at": time.time()})
            with self._lock:
                waiting = self._waiting.pop(instance, None) if instance else None
            if waiting is not None:
                feed = waiting[0]
                waiting[1].cancel()
                if not self._put(feed, [stamped]):
                    return  # the session was closed meanwhile
            else:
                factory = self.feed_factory
                feed = factory(hello) if factory else SparkLiveFeed(ingest_label(hello), self.capacity)
                self._put(feed, [stamped])
                self.feeds.append(feed)
                self.on_feed(feed)
            splitter = LineSplitter()  # bounded: an over-long line is dropped as it arrives, and said so
            data = rest
            while True:
                lines = [TOO_LONG if raw is None else raw for raw in splitter.feed(data)]
                if lines and not self._put(feed, lines):
                    return  # the session was closed
                data = conn.recv(1 << 20)
                if not data:
                    break
            last = splitter.rest()
            if last is not None and last.strip():
                self._put(feed, [last])
        except IngestRefused as e:
            self.refused.append(f"{peer}: {e}")
            log.warning("refused a Spark listener from %s: %s", peer, e)
        except OSError as e:
            log.info("Spark listener connection from %s ended: %s", peer, e)
        finally:
            if hello_read is not None:
                hello_read.set()  # a connection refused or broken before its hello holds no later one up
            if feed is not None:
                self._connection_ended(feed, instance)
            if instance:
                with self._lock:
                    if self._serving.get(instance, (None,))[0] is conn:
                        del self._serving[instance]
            done.set()
            try:
                conn.close()
            except OSError:
                pass

    def _supersede(self, instance: str, conn: socket.socket, done: threading.Event) -> None:
        """A listener that connects again has left its earlier connection: let that one finish with the feed first.

        The earlier connection's last lines are still read (the listener closed it, so its end is near), then its
        feed waits to be resumed, which this connection does: one session, its lines in order. A connection that
        never ends (a listener gone without closing it) is shut after a few seconds."""
        with self._lock:
            earlier = self._serving.get(instance)
            self._serving[instance] = (conn, done)
        if earlier is None:
            return
        earlier_conn, earlier_done = earlier
        if not earlier_done.wait(SUPERSEDE_WAIT_S):
            try:
                earlier_conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            earlier_done.wait(SUPERSEDE_WAIT_S)

    @staticmethod
    def _put(feed: SparkLiveFeed, lines: list[bytes]) -> bool:
        """Into the feed (and its journal, if kept), noting the lines after which no reconnection will come."""
        if not feed.final_seen and any(line.startswith(FINAL_LINES) for line in lines):
            feed.final_seen = True
        if feed.journal is not None:
            feed.journal.write(lines)
        return feed.put(lines)

    def _connection_ended(self, feed: SparkLiveFeed, instance: str | None) -> None:
        """The feed ends with its connection, unless the application may still come back: then it waits for the
        same listener instance to reconnect."""
        if feed.final_seen or instance is None or self._closed or self.resume_window <= 0:
            feed.end()
        elif self._put(feed, [DISCONNECTED_AT % time.time()]):
            self.wait_for(instance, feed)

    def wait_for(self, instance: str, feed: SparkLiveFeed) -> None:
        """Let listener ``instance`` resume ``feed`` when it reconnects, ``resume_window`` seconds at most (then the
        feed ends: the connection closed before the application ended)."""

        def give_up() -> None:
            with self._lock:
                if self._waiting.get(instance, (None,))[0] is not feed:
                    return  # it came back
                del self._waiting[instance]
            feed.end()

        timer = threading.Timer(self.resume_window, give_up)
        timer.daemon = True
        with self._lock:
            self._waiting[instance] = (feed, timer)
        timer.start()

    def _check_hello(self, line: bytes) -> dict:
        try:
            hello = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise IngestRefused("the first line is not a flowscope hello") from None
        if type(hello) is not dict or hello.get("Event") != "flowscope.Hello":
            raise IngestRefused("the first line is not a flowscope hello")
        if hello.get("protocol") != PROTOCOL:
            raise IngestRefused(f"listener protocol {hello.get('protocol')!r}; this server speaks {PROTOCOL}")
        if self.token and not hmac.compare_digest(str(hello.get("token") or "").encode(), self.token.encode()):
            raise IngestRefused("wrong or missing token (spark.flowscope.token)")
        return hello


def ingest_label(hello: dict) -> str:
    """A live session's name: the application's name and id, as the listener's hello gives them."""
    name = hello.get("app") or "spark"
    app_id = hello.get("appId")
    return f"{name} ({app_id})" if app_id else name
