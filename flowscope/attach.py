"""``flowscope.attach(spark)``: one line in a PySpark driver streams its scheduler events into flowscope, live.

Where the events go (``url``):

* ``None``: a flowscope server starts in the background of the driver (the web app, on a free loopback port) and
  the application becomes a live session in it; the URL is printed. The server lives as long as the driver.
* ``"http://host:port"`` (``?token=T`` if the server has one): a running ``flowscope serve --spark-port N``; the
  server tells its Spark ingest port, and the listener connects to it directly.
* ``"tcp://host:port"``: a Spark ingest port given directly.
* a file path (``live.jsonl``, ``.jsonl.gz``, ``.jsonl.zst``): the session's progress log is written there as it
  happens (``flowscope replay`` opens it later; a plain ``.jsonl`` can be followed while it grows).

How the events get out of Spark: the JVM listener (``backend/spark/live/listener``) built from its source with the JDK
on the machine and put into the running driver JVM through Py4J: no Python runs on Spark's listener thread. If it
cannot be built or loaded, a Python listener called through Py4J takes its place (slower: a round trip per event)
and ``Attachment.path`` and the printed line say so. If the application was started with the listener configured
(``spark.extraListeners=flowscope.FlowscopeListener``) it is already streaming and nothing is added.

When the server is down, stalled or not started yet, the application is not affected: the listener keeps a bounded
queue of events (dropping and counting beyond it), reconnects with backoff, warns once per outage on stderr, and the
server marks the stretch it never received as "events lost" in the session (see docs/architecture.md).
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import urllib.parse  # light; urllib.request and asyncio load only when a server is involved
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from backend.spark.live import py4j_bridge

if TYPE_CHECKING:
    import socket

__all__ = ["attach", "Attachment", "AttachError"]


class AttachError(RuntimeError):
    """flowscope cannot attach; the message says why and what to do."""


class Attachment:
    """What ``attach`` did: ``path`` ("jvm", "py4j" or "config"), ``url`` (the session's page, or where events go),
    ``reason`` (why the JVM listener was not used, if it was not), and for an in-driver server its ``session``."""

    def __init__(self, sc: Any, path: str, url: str, listener: Any = None, reason: str | None = None,
                 target: Any = None) -> None:
        self.sc = sc
        self.path = path
        self.url = url
        self.listener = listener
        self.reason = reason
        self.queue = "shared"
        self._target = target
        self._detached = False

    @property
    def feed(self):
        """The live feed (in-driver server or file sink): its ``stats()``, ``model``, ``task_end_times``."""
        return getattr(self._target, "feed", None)

    @property
    def session(self):
        """The session in the in-driver server (None for a remote server or a file)."""
        return getattr(self._target, "session", None)

    @property
    def server(self):
        return getattr(self._target, "server", None)

    def stats(self) -> dict:
        """The listener's counters: events sent and dropped, events still queued."""
        lis = self.listener
        if lis is None:
            return {"path": self.path}
        return {"path": self.path, "sent": int(lis.sent()), "dropped": int(lis.dropped()),
                "queued": int(lis.queued()), "failed": int(lis.failed()), "connected": bool(lis.connected()),
                "reconnects": int(lis.reconnects()), "connect_failures": int(lis.connectFailures())}

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until the listener has sent everything Spark gave it so far (and a local sink has received it)."""
        if self.listener is None:
            return True
        try:  # first, Spark hands the listener what it has posted (jobs end before their events are delivered)
            py4j_bridge.scala_context(self.sc).listenerBus().waitUntilEmpty(int(timeout * 1000))
        except Exception:
            pass  # a stopped context has nothing left to deliver
        ok = bool(self.listener.flush(int(timeout * 1000)))
        target = self._target
        if ok and hasattr(target, "drained"):
            ok = target.drained(timeout)
        return ok

    def detach(self, timeout: float = 5.0) -> None:
        """Stop streaming: the listener leaves Spark's bus after sending what it has (at most ``timeout`` s)."""
        if self._detached:
            return
        self._detached = True
        atexit.unregister(self.detach)
        lis = self.listener
        if lis is not None:
            try:
                from backend.spark.live.listener import unregister

                unregister(self.sc, lis)
            except Exception:
                pass  # the context is stopped: nothing to leave
            try:
                lis.send('{"Event":"flowscope.Detach"}')
                lis.close(int(timeout * 1000))
            except Exception:
                pass
        target = self._target
        if target is not None and hasattr(target, "close"):
            target.close(timeout)

    def serve_forever(self) -> None:
        """Keep the driver (and its flowscope server) running until Ctrl-C, to look at the session afterwards."""
        print(f"flowscope: serving {self.url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass

    def __repr__(self) -> str:
        return f"<flowscope attachment {self.path} -> {self.url}>"


def attach(spark: Any, url: str | os.PathLike[str] | None = None, *, listener: str = "auto",
           name: str | None = None, capacity: int = 100_000, save_events: str | os.PathLike[str] | None = None,
           quiet: bool = False) -> Attachment:
    """Stream this driver's Spark events into flowscope (see the module docstring).

    ``spark``: a SparkSession or SparkContext. ``listener``: "auto" (the JVM listener, else the Py4J fallback),
    "jvm" (only the JVM listener) or "py4j" (only the fallback). ``capacity``: the listener's queue of events.
    ``save_events``: also write every event received to this file (a Spark event log ``flowscope replay`` reads;
    in-driver server and file targets only). ``name``: the session's name (default: the application's name).
    """
    sc = getattr(spark, "sparkContext", spark)
    if not py4j_bridge.has_jvm(sc):
        raise AttachError("attach needs a running SparkSession or SparkContext in this (classic PySpark) driver; "
                          "for Spark Connect or other drivers use the configuration-only listener (see the README)")
    if listener not in ("auto", "jvm", "py4j"):
        raise AttachError(f"listener={listener!r}: choose 'auto', 'jvm' or 'py4j'")
    conf = sc.getConf()
    configured = conf.get("spark.extraListeners", "") or ""
    if "flowscope.FlowscopeListener" in configured:
        where = f"tcp://{conf.get('spark.flowscope.host', '127.0.0.1')}:{conf.get('spark.flowscope.port', '7337')}"
        _say(quiet, f"flowscope: already attached by configuration (spark.extraListeners), streaming to {where}")
        return Attachment(sc, "config", where)

    target = _open_target(url, save_events, quiet)
    host, port, token = target.address
    try:
        lis, path, reason = _new_listener(sc, listener, host, port, token, name, capacity)
    except BaseException:
        target.close(0)
        raise
    att = Attachment(sc, path, target.url, lis, reason, target)
    lis.send(_app_start(sc, name))
    lis.send(_environment(sc))
    earlier = _jobs_before(sc)
    if earlier:
        lis.send(orjson.dumps({"Event": "flowscope.Note", "label": f"attached while running: the {earlier} "
                               "earlier jobs are not shown"}).decode())
    from backend.spark.live.listener import register

    try:
        target.connected(lis, timeout=10)
    except BaseException:
        lis.close(0)
        target.close(0)
        raise
    lis.send('{"Event":"flowscope.Queue","name":"' + ("flowscope" if path == "jvm" else "shared") + '"}')
    if path == "jvm":
        att.queue = register(sc, lis)
        if att.queue != "flowscope":
            lis.send('{"Event":"flowscope.Queue","name":"' + att.queue + '"}')
    else:
        py4j_bridge.scala_context(sc).addSparkListener(lis)
    att.url = target.url
    how = {"jvm": "JVM listener", "py4j": "Py4J Python listener (slower)"}[path]
    note = f" [{reason}]" if reason else ""
    _say(quiet, f"flowscope: {sc.appName} attached ({how}){note}: {att.url}")
    atexit.register(att.detach, 3.0)
    return att


# --- listeners --------------------------------------------------------------------------------------------------


def _new_listener(sc: Any, which: str, host: str, port: int, token: str, name: str | None,
                  capacity: int) -> tuple[Any, str, str | None]:
    from backend.spark.live.listener import ListenerBuildError, Py4JListener, listener_jar, new_jvm_listener

    reason = None
    if which in ("auto", "jvm"):
        try:
            jar = listener_jar()
            return new_jvm_listener(sc, jar, host, port, token, capacity, app_name=name), "jvm", None
        except ListenerBuildError as e:
            reason = f"JVM listener not built: {e}"
        except Exception as e:  # Py4J: the class would not load or construct
            reason = f"JVM listener not loaded: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        if which == "jvm":
            raise AttachError(reason)
    return Py4JListener(sc, host, port, token, capacity, app_name=name), "py4j", reason


def _app_start(sc: Any, name: str | None) -> str:
    """The application start the listener missed (Spark posted it before attach ran)."""
    try:
        user = sc.sparkUser()
    except Exception:
        user = ""
    return orjson.dumps({"Event": "SparkListenerApplicationStart", "App Name": name or sc.appName,
                         "App ID": sc.applicationId, "Timestamp": sc.startTime, "User": user,
                         "flowscope.synthetic": True}).decode()


def _environment(sc: Any) -> str:
    """The configuration the listener missed (Spark posted it before attach ran): only the properties that say
    the application's task slots, which the Overview and the cores what-if read when no executor event does."""
    from backend.spark.model.event_shape import CORES_PROPERTIES

    conf = sc.getConf()
    props = {k: conf.get(k) for k in CORES_PROPERTIES if conf.contains(k)}
    return orjson.dumps({"Event": "SparkListenerEnvironmentUpdate", "Spark Properties": props,
                         "flowscope.synthetic": True}).decode()


def _jobs_before(sc: Any) -> int:
    try:
        return int(py4j_bridge.scala_context(sc).dagScheduler().nextJobId().get())
    except Exception:
        return 0


def _say(quiet: bool, text: str) -> None:
    if not quiet:
        print(text, flush=True)


# --- where the events go -------------------------------------------------------------------------------------------


def _open_target(url: Any, save_events: Any, quiet: bool):
    if url is None:
        return _LocalServer(save_events)
    text = os.fspath(url)
    parsed = urllib.parse.urlsplit(text)
    if parsed.scheme in ("http", "https"):
        if save_events is not None:
            raise AttachError("save_events works with the in-driver server or a file target, not a remote server")
        return _RemoteServer(text)
    if parsed.scheme == "tcp":
        token = urllib.parse.parse_qs(parsed.query).get("token", [""])[0]
        if not parsed.hostname or not parsed.port:
            raise AttachError(f"{text}: give tcp://HOST:PORT")
        return _Remote(parsed.hostname, parsed.port, token, text)
    if parsed.scheme == "file":
        text = urllib.parse.unquote(parsed.path)
    elif parsed.scheme and len(parsed.scheme) > 1:
        raise AttachError(f"{text}: a URL must be http://, https:// or tcp://; anything else is a file path")
    return _FileSink(Path(text), save_events)


class _Remote:
    """A Spark ingest port elsewhere: the listener connects to it directly."""

    def __init__(self, host: str, port: int, token: str, url: str) -> None:
        self.address = (host, port, token)
        self.url = url

    def connected(self, listener: Any, timeout: float) -> None:
        """Wait for the first connection or the first failure (the listener itself warns once about an outage and
        goes on trying in the background: the driver never waits for a server that is down)."""
        end = time.monotonic() + min(timeout, 5)
        while not listener.connected() and not listener.connectFailures() and time.monotonic() < end:
            time.sleep(0.02)

    def close(self, timeout: float) -> None:
        pass


class _RemoteServer(_Remote):
    """A running flowscope server: its /api/health says where its Spark ingest port is."""

    def __init__(self, url: str) -> None:
        import urllib.error
        import urllib.request

        parsed = urllib.parse.urlsplit(url)
        token = urllib.parse.parse_qs(parsed.query).get("token", [""])[0]
        base = f"{parsed.scheme}://{parsed.netloc}"
        request = urllib.request.Request(base + "/api/health")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                health = orjson.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise AttachError(f"no flowscope server answers at {base}: {e}") from None
        ingest = health.get("spark_ingest") if isinstance(health, dict) else None
        if not ingest or not ingest.get("port"):
            raise AttachError(f"the flowscope server at {base} takes no live Spark events: start it with "
                              "`flowscope serve --spark-port 7337`, or attach to tcp://HOST:PORT")
        host = ingest.get("host") or parsed.hostname or "127.0.0.1"
        if host in ("0.0.0.0", "::", ""):
            host = parsed.hostname
        super().__init__(host, int(ingest["port"]), token, base + "/" + (f"?token={token}" if token else ""))


class _Local:
    """Receives the listener on a loopback port of this process; ``feed`` is the application's live feed."""

    def __init__(self, save_events: Any) -> None:
        from backend.spark.live.socket_feed import SparkIngestServer

        self.feed = None
        self._ready = threading.Event()
        self._events_file = open(save_events, "wb") if save_events is not None else None
        import secrets  # (here, like the server's imports: the command line starts without them)

        token = secrets.token_hex(16)  # only this driver's listener gets in, not another local process
        self.ingest = SparkIngestServer(self._on_feed, "127.0.0.1", 0, token=token)
        self.address = (*self.ingest.address, token)

    def _on_feed(self, feed) -> None:
        if self.feed is not None:  # one application per attach: a second connection is refused
            feed.close()
            return
        feed.tee = self._events_file
        self.feed = feed
        self._accepted(feed)
        self._ready.set()

    def _accepted(self, feed) -> None:
        raise NotImplementedError

    def connected(self, listener: Any, timeout: float) -> None:
        if not self._ready.wait(timeout):
            raise AttachError(f"the listener did not connect to 127.0.0.1:{self.address[1]} within {timeout:.0f} s")

    def drained(self, timeout: float) -> bool:
        """Everything received so far has been taken by the consumer."""
        end = time.monotonic() + timeout
        feed = self.feed
        while feed is not None and feed.stats()["queued"] and time.monotonic() < end:
            time.sleep(0.01)
        return feed is None or not feed.stats()["queued"]

    def close(self, timeout: float) -> None:
        self.ingest.close()


class _LocalServer(_Local):
    """flowscope's web server on a free loopback port, in a thread of the driver; the application is a session."""

    def __init__(self, save_events: Any) -> None:
        try:
            import uvicorn

            from backend.web.app import Settings, create_app
        except ImportError as e:
            raise AttachError(f"the flowscope server cannot start here ({e}); attach to a file path or to a "
                              "server started elsewhere instead") from None
        self.session = None
        self.app = create_app(Settings(host="127.0.0.1", port=0, allowed_dirs=[Path.cwd()]))
        import socket

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self.port = sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", lifespan="on"))
        import asyncio

        self.loop = asyncio.new_event_loop()
        thread = threading.Thread(target=self._serve, args=(sock,), name="flowscope-server", daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise AttachError("the flowscope server did not start")
            time.sleep(0.01)
        self.manager = self.app.state.manager
        self.url = f"http://127.0.0.1:{self.port}/"
        super().__init__(save_events)

    def _serve(self, sock: socket.socket) -> None:
        import asyncio

        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.server.serve(sockets=[sock]))

    def _accepted(self, feed) -> None:
        import asyncio

        async def add():
            return self.manager.add(feed, feed.label)

        session = asyncio.run_coroutine_threadsafe(add(), self.loop).result(10)
        self.session = session
        self.url = f"http://127.0.0.1:{self.port}/#/s/{session.id}"

    def close(self, timeout: float) -> None:
        super().close(timeout)  # the server keeps serving the session until the driver exits


class _FileSink(_Local):
    """The session's progress log, written to a file as records come (a thread drains the feed)."""

    def __init__(self, path: Path, save_events: Any) -> None:
        self.path = path
        self.url = str(path)
        self._thread: threading.Thread | None = None
        super().__init__(save_events)

    def _accepted(self, feed) -> None:
        from tracker.progress_log.log_file import ProgressLogWriter

        writer = ProgressLogWriter(self.path, source=f"spark live: {feed.label}")
        self._thread = threading.Thread(target=self._drain, args=(feed, writer), name="flowscope-file-sink",
                                        daemon=True)
        self._thread.start()

    @staticmethod
    def _drain(feed, writer) -> None:
        try:
            while True:
                records = feed.take(4096, 0.2)
                if records is None:
                    break
                for _, record in records:
                    writer.write(record)
                if records:
                    writer.flush()
        finally:
            writer.close()

    def close(self, timeout: float) -> None:
        """Once the listener has closed its connection: write the rest and close the file."""
        feed = self.feed
        if feed is not None:
            end = time.monotonic() + max(timeout, 0.5)
            while not feed.ending and time.monotonic() < end:
                time.sleep(0.02)
            feed.end()
            if self._thread is not None:
                self._thread.join(max(0.5, end - time.monotonic()))
        if self._events_file is not None:
            self._events_file.close()
        super().close(timeout)
