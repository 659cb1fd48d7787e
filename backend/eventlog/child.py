"""A producer run in a child process, its messages streamed back over a pipe: how one log uses two cores.

Reading a large log, decoding it and modelling it is a pipeline: :class:`ChildStream` runs one stage of it (a
function given ``put``) in a child process and hands its messages (bytes, in order) to this one, so the child works
on the next part while this process handles the previous one. A thread of the child writes to the pipe, so the
producer never waits for a busy consumer (the messages queue up in the child instead), and the pipe is widened to
what the system allows so each side needs the other to be scheduled less often.

The child is forked where that is safe (a process that runs no other thread: the CLI) and spawned otherwise (a
server's threads would be copied half-way through whatever they were doing), so the producer and its arguments
must then be importable and picklable: pass module-level functions, not closures. A producer that raises ends the
stream with its traceback, raised here as ``RuntimeError``; a log that cannot be read from its store
(``backend.stores.StoreError``: a bucket gone, an endpoint unreachable mid-read) is raised here as itself, one line.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.connection
import multiprocessing.util  # registers its exit handler now, so that this module's runs before it
import threading
import traceback
import weakref
from collections.abc import Callable, Iterator
from queue import Queue
from typing import Any

from backend.stores import StoreError, StoreNotFound

__all__ = ["ChildStream", "Put"]

Put = Callable[[bytes], None]  # what a producer sends: one message

_DATA, _FAILED, _STORE_FAILED = b"m", b"x", b"s"
_HELD: list[Any] = []  # the pipe ends this process holds (a forked child closes its copies)
# Streams not closed yet. A child is not a daemon, and at exit multiprocessing waits for every such child: one whose
# stream was abandoned unclosed (still referenced, say by a traceback) blocks on a pipe nobody reads, and the exit
# would wait forever. They are closed first (atexit runs this before multiprocessing's own handler, registered
# earlier: multiprocessing.util is imported above).
_OPEN: weakref.WeakSet[ChildStream] = weakref.WeakSet()
QUEUED = 16  # messages a child holds for a parent that is busy: a few MB (a batch is up to ~1 MB)


class ChildStream:
    """``for message in ChildStream(produce, args): ...``: the messages ``produce(put, *args)`` put, in a child.

    The child starts at construction. Iterating ends when the producer returns; ``close()`` (also when the
    iteration is abandoned) stops a child that still runs."""

    def __init__(self, produce: Callable[..., None], args: tuple = (), *, name: str = "flowscope-child") -> None:
        method = "fork" if _fork_is_safe() else "spawn"
        ctx: Any = multiprocessing.get_context(method)
        self._receive, send = ctx.Pipe(duplex=False)
        _widen(send.fileno())
        # A forked child holds a copy of every pipe end this process holds: it closes them (its own read end too),
        # or a pipe whose reader went away would never break, and a reader would never see its writer's end.
        inherited = [*_HELD, self._receive] if method == "fork" else []
        # not a daemon, so that it may have a child of its own: close() ends it, and so does a broken pipe
        self._child = ctx.Process(target=_run, args=(produce, args, send, inherited), daemon=False, name=name)
        self._child.start()
        send.close()
        _HELD.append(self._receive)
        _OPEN.add(self)
        self.method = method

    def __iter__(self) -> Iterator[bytes]:
        receive = self._receive.recv_bytes
        try:
            while True:
                try:
                    message = receive()
                except EOFError:
                    return
                if message[:1] == _DATA:
                    yield message[1:]
                elif message[:1] == _STORE_FAILED:
                    url, _, cause = message[2:].decode("utf-8", "replace").partition("\n")
                    raise (StoreNotFound if message[1:2] == b"1" else StoreError)(url, cause)
                else:
                    raise RuntimeError(f"the {self._child.name} process failed:\n"
                                       f"{message[1:].decode('utf-8', 'replace')}")
        finally:
            self.close()

    @property
    def running(self) -> bool:
        """The child process still runs."""
        return self._child.is_alive()

    def close(self) -> None:
        """Stop the child (if it still runs) and release the pipe."""
        _OPEN.discard(self)
        self._receive.close()
        if self._receive in _HELD:
            _HELD.remove(self._receive)
        if self._child.is_alive():
            self._child.terminate()
        self._child.join()


@atexit.register
def _close_open_streams() -> None:
    for stream in list(_OPEN):
        stream.close()


def _fork_is_safe() -> bool:
    """Fork only a process with one thread and a platform that forks.

    A fork copies no other thread, so whatever lock another thread held stays held in the child."""
    return threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()


def _widen(fd: int) -> None:
    """Let the pipe hold as much as the system allows (Linux: 1 MB by default, not 64 KB)."""
    try:
        import fcntl

        with open("/proc/sys/fs/pipe-max-size") as fh:
            size = int(fh.read())
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (OSError, ValueError, ImportError):
        pass


def _run(produce: Callable[..., None], args: tuple, send: multiprocessing.connection.Connection,
         inherited: list) -> None:
    """The child: run the producer, its messages queued for a sender thread.

    Producing never waits for the pipe (up to ``QUEUED`` messages: memory stays bounded when the parent is the slower
    side). The thread starts with the first message, so a producer may start a child of its own (forked) before it
    sends. A parent that went away (the pipe broke) ends the producer at its next message."""
    for end in inherited:
        end.close()
    _HELD[:] = [send]  # what a child of this child must close
    queue: Queue[bytes | None] = Queue(QUEUED)
    broken = threading.Event()
    sender = threading.Thread(target=_send_all, args=(queue, send, broken), name="flowscope-child-sender")
    started = False

    def put(message: bytes) -> None:
        nonlocal started
        if not started:
            started = True
            sender.start()
        if broken.is_set():
            raise BrokenPipeError("the parent process stopped reading")
        queue.put(_DATA + message)

    try:
        produce(put, *args)
    except StoreError as exc:  # the store, not a bug: said in one line by the parent
        if not broken.is_set():
            missing = b"1" if isinstance(exc, StoreNotFound) else b"0"
            queue.put(_STORE_FAILED + missing + f"{exc.url}\n{exc.cause}".encode())
    except BaseException:  # noqa: BLE001 - whatever it was, the parent says so
        if not broken.is_set():
            queue.put(_FAILED + traceback.format_exc().encode())
    finally:
        if not started:
            sender.start()
        queue.put(None)
        sender.join()


def _send_all(queue: Queue[bytes | None], send: multiprocessing.connection.Connection, broken: threading.Event) -> None:
    """Write the queued messages to the pipe until the end (None).

    A parent that went away ends it too (the rest of the queue is drained, so the producer never blocks on it)."""
    try:
        while (message := queue.get()) is not None:
            send.send_bytes(message)
    except OSError:  # the parent closed its end: nobody reads any more
        broken.set()
        while queue.get() is not None:
            pass
    finally:
        send.close()
