"""A real S3 API server for the tests: moto's server mode, its own process on 127.0.0.1 at a free port.

The fixture `s3` starts it once per test session and points this process at it the standard way
(`AWS_ENDPOINT_URL` and the AWS credential variables), so `backend.stores` reaches it as it would reach MinIO;
`s3.env` is the same environment for a `flowscope` command run as a child process. `s3.put_tree(local, url)`
uploads a local file or directory, keeping the names. `moto_server(**env)` starts another one (moto reads its
settings from its environment: `INITIAL_NO_AUTH_ACTION_COUNT=0` makes it check every request's credentials).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = ["S3Server", "client_env", "free_port", "moto_server", "s3"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class S3Server:
    endpoint: str
    env: dict[str, str]
    process: subprocess.Popen
    buckets: set[str] = field(default_factory=set)

    def fs(self):
        import s3fs

        return s3fs.S3FileSystem(endpoint_url=self.endpoint, key="testing", secret="testing",
                                 use_listings_cache=False, skip_instance_cache=True)

    def bucket(self, name: str) -> str:
        """The URL of a bucket, created on first use."""
        if name not in self.buckets:
            self.fs().mkdir(name)
            self.buckets.add(name)
        return f"s3://{name}"

    def put_tree(self, local: Path, url: str) -> str:
        """Upload `local` (a file, or a directory with everything in it) to `url`; returns `url`."""
        fs = self.fs()
        target = url.removeprefix("s3://").removeprefix("s3a://")
        if local.is_dir():
            for path in sorted(local.rglob("*")):
                if path.is_file():
                    fs.pipe_file(f"{target}/{path.relative_to(local).as_posix()}", path.read_bytes())
        else:
            fs.pipe_file(target, local.read_bytes())
        return url

    def put_bytes(self, url: str, data: bytes) -> None:
        self.fs().pipe_file(url.removeprefix("s3://").removeprefix("s3a://"), data)


@contextmanager
def moto_server(**env: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """moto's S3 server in its own process at a free port (its environment plus `env`): its endpoint."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = tempfile.TemporaryFile()  # its request log: a pipe nobody reads would fill and stop the server
    process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                               stdout=log, stderr=log, env={**os.environ, **env})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"moto's S3 server did not start: {log.read().decode()}") from None
                assert time.monotonic() < deadline, "moto's S3 server did not listen within 60 s"
                time.sleep(0.1)
        yield endpoint, process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def client_env(endpoint: str) -> dict[str, str]:
    """The standard AWS variables that point a client at `endpoint` (botocore's retries: one attempt)."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "1"}


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    with moto_server() as (endpoint, process):
        env = client_env(endpoint)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield S3Server(endpoint, {**os.environ, **env}, process)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
