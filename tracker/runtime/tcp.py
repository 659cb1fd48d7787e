"""Workers in different processes (or machines): data and progress over TCP, one connection per pair of workers.

Each worker listens, learns every worker's address from its host (for Spark barrier tasks:
``BarrierTaskContext.allGather``), connects to the workers with a higher index and accepts the others, so every
pair shares one connection. Messages are pickled and length-prefixed; a reader thread per connection fills the
worker's inbox, so ``recv`` never blocks on the network. Progress batches still go to every worker, the sender
included (its own copy takes a shortcut through the inbox), and arrive in whatever order the network gives.
"""

from __future__ import annotations

import pickle
import socket
import struct
import threading

__all__ = ["TcpFabric"]

_LEN = struct.Struct("!I")


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class TcpFabric:
    """A :class:`~tracker.runtime.fabric.Fabric` over TCP, for worker ``index`` of ``peers``."""

    def __init__(self, index: int, peers: int, host: str = "127.0.0.1"):
        self.index = index
        self.peers = peers
        self.global_view = None
        self._listener = socket.create_server((host, 0))
        self.address = f"{host}:{self._listener.getsockname()[1]}"
        self._socks: dict[int, socket.socket] = {}
        self._send_locks: dict[int, threading.Lock] = {}
        self._inbox: list = []
        self._cond = threading.Condition()
        self._readers: list[threading.Thread] = []
        self._closed = False

    def connect(self, addresses: list[str], timeout: float = 60.0) -> None:
        """Connect to every other worker (``addresses[i]`` is worker i's ``host:port``)."""
        self._listener.settimeout(timeout)
        for j in range(self.index + 1, self.peers):
            host, port = addresses[j].rsplit(":", 1)
            sock = socket.create_connection((host, int(port)), timeout=timeout)
            sock.sendall(_LEN.pack(self.index))
            self._add(j, sock)
        for _ in range(self.index):
            sock, _addr = self._listener.accept()
            raw = _read_exact(sock, _LEN.size)
            if raw is None:
                raise ConnectionError(f"worker {self.index}: a peer connected and went away before saying who it was")
            self._add(_LEN.unpack(raw)[0], sock)
        self._listener.close()

    def _add(self, peer: int, sock: socket.socket) -> None:
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socks[peer] = sock
        self._send_locks[peer] = threading.Lock()
        reader = threading.Thread(target=self._read, args=(sock,), name=f"flowscope-tcp-{self.index}<-{peer}",
                                  daemon=True)
        reader.start()
        self._readers.append(reader)

    def _read(self, sock: socket.socket) -> None:
        while True:
            try:
                raw = _read_exact(sock, _LEN.size)
                if raw is None:
                    return
                payload = _read_exact(sock, _LEN.unpack(raw)[0])
            except OSError:
                return
            if payload is None:
                return
            msg = pickle.loads(payload)
            with self._cond:
                self._inbox.append(msg)
                self._cond.notify()

    def send(self, src: int, dst: int, msg: tuple) -> None:
        if dst == self.index:
            with self._cond:
                self._inbox.append(msg)
                self._cond.notify()
            return
        payload = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        with self._send_locks[dst]:
            self._socks[dst].sendall(_LEN.pack(len(payload)) + payload)

    def broadcast(self, src: int, msg: tuple) -> None:
        for dst in range(self.peers):
            self.send(src, dst, msg)

    def recv(self, index: int, timeout: float = 0.0) -> list:
        with self._cond:
            if not self._inbox and timeout > 0:
                self._cond.wait(timeout)
            msgs, self._inbox = self._inbox, []
        return msgs

    def close(self) -> None:
        for sock in self._socks.values():
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self._socks.clear()
