"""A store's files through fsspec: its file system for a URL, ranged reads, fresh listings.

fsspec finds the implementation for the scheme (s3fs for s3:// and s3a://, gcsfs, adlfs, pyarrow's HDFS), and
each takes its credentials and endpoint the store's standard way: environment, config files, instance roles
(botocore reads `AWS_ENDPOINT_URL` and `AWS_ENDPOINT_URL_S3` for an S3-compatible store such as MinIO). Listings
are never cached: a followed directory is polled for objects that appear, and a cached listing would hide them.
A file is read in ranged requests of `BLOCK` bytes as the reader asks, so the first events come before the rest of
the log is fetched and memory stays a few blocks whatever the log's size.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from backend.stores.errors import StoreError, store_error
from backend.stores.urls import StoreUrl

__all__ = ["BLOCK", "RemoteFile", "file_system", "remote_info", "remote_list", "remote_open"]

BLOCK = 1 << 20  # bytes per ranged read; fsspec's read-ahead cache holds about two

T = TypeVar("T")


@contextmanager
def translated(url: StoreUrl) -> Iterator[None]:
    """Any failure inside becomes the one-line :class:`StoreError` naming `url`."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        raise store_error(str(url), url.scheme, exc) from exc


def file_system(url: StoreUrl) -> tuple[Any, str]:
    """fsspec's file system for `url` (one per store and options, kept by fsspec) and the path it names there."""
    with translated(url):
        from fsspec.core import url_to_fs

        return url_to_fs(str(url), use_listings_cache=False)


def _call(url: StoreUrl, fn: Callable[[Any, str], T]) -> T:
    fs, path = file_system(url)
    with translated(url):
        return fn(fs, path)


def _mtime(info: dict) -> float | None:
    for key in ("mtime", "LastModified", "last_modified", "updated", "modificationTime"):
        value = info.get(key)
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, int | float):
            return float(value) / (1000 if value > 1e11 else 1)  # milliseconds (HDFS) or seconds
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def _entry(url: StoreUrl, info: dict) -> tuple[StoreUrl, int, float | None, bool]:
    return url, int(info.get("size") or 0), _mtime(info), info.get("type") == "directory"


def remote_info(url: StoreUrl) -> tuple[StoreUrl, int, float | None, bool]:
    """`(url, size, mtime, is_dir)` of one entry; :class:`StoreNotFound` when there is none."""
    return _entry(url, _call(url, lambda fs, path: fs.info(path)))


def remote_list(url: StoreUrl) -> list[tuple[StoreUrl, int, float | None, bool]]:
    """The entries directly in the directory `url`, as :func:`remote_info` gives them, freshly listed."""
    def ls(fs: Any, path: str) -> list[dict]:
        infos = fs.ls(path, detail=True)
        if len(infos) == 1 and infos[0].get("type") != "directory" and \
                infos[0]["name"].rstrip("/") == path.rstrip("/"):
            raise NotADirectoryError(path)  # `ls` of a file lists the file itself
        return infos

    return [_entry(url / info["name"].rstrip("/").rpartition("/")[2], info) for info in _call(url, ls)]


class RemoteFile:
    """A store's file open for reading: `read`, `seek`, `tell`, as a local file, its failures one-line errors."""

    def __init__(self, url: StoreUrl, fh: Any) -> None:
        self.url = url
        self.name = str(url)
        self._fh = fh

    def read(self, size: int = -1) -> bytes:
        with translated(self.url):
            return self._fh.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        with translated(self.url):
            return self._fh.seek(offset, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    @property
    def size(self) -> int:
        return int(self._fh.size)

    @property
    def closed(self) -> bool:
        return bool(self._fh.closed)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RemoteFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def remote_open(url: StoreUrl) -> RemoteFile:
    """`url` open for streaming reads (ranged requests of `BLOCK` bytes, read ahead as a reader goes on)."""
    def open_file(fs: Any, path: str) -> Any:
        fh = fs.open(path, "rb", block_size=BLOCK, cache_type="readahead")
        if (getattr(fh, "details", None) or {}).get("type") == "directory":  # a key prefix opens as an empty file
            fh.close()
            raise IsADirectoryError(path)
        return fh

    return RemoteFile(url, _call(url, open_file))
