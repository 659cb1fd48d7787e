"""A store's URL as a path: its name, its parent, a child by name, without touching the store.

Spark writes an application's log under a directory URL (`spark.eventLog.dir=s3a://bucket/spark-events`), and the
readers walk it as they walk a local directory: the parts of a rolling log are its children, a log's final name is
its in-progress name with a suffix dropped. :class:`StoreUrl` does those name operations on a URL as
:class:`pathlib.Path` does them on a local path, so the readers keep one shape of code for both; only what touches
the files (opening, listing, stat) goes through :mod:`backend.stores.access`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SCHEMES", "PathOrUrl", "StoreUrl", "is_url", "locate"]

#: The URL schemes read through fsspec, and the extra that installs each one's implementation.
SCHEMES: dict[str, str] = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "abfs": "azure",
    "abfss": "azure",
    "az": "azure",
    "hdfs": "hdfs",
}


@dataclass(frozen=True, slots=True)
class StoreUrl:
    """`scheme://netloc/key`: a bucket (container, name node) and a key of `/`-separated names.

    `str()` is the URL; `name`, `parent`, `/` and `with_name` work on the key as Path's do on a path."""

    scheme: str
    netloc: str
    key: str = ""  # no leading or trailing "/"

    @classmethod
    def parse(cls, url: str) -> StoreUrl:
        scheme, sep, rest = url.partition("://")
        if not sep or not scheme:
            raise ValueError(f"{url}: not a URL (scheme://bucket/key)")
        netloc, _, key = rest.partition("/")
        return cls(scheme.lower(), netloc, "/".join(p for p in key.split("/") if p))

    def __str__(self) -> str:
        return f"{self.scheme}://{self.netloc}/{self.key}" if self.key else f"{self.scheme}://{self.netloc}"

    @property
    def name(self) -> str:
        """The last name of the key (the bucket's name for the bucket itself)."""
        return self.key.rpartition("/")[2] if self.key else self.netloc

    @property
    def parent(self) -> StoreUrl:
        return StoreUrl(self.scheme, self.netloc, self.key.rpartition("/")[0])

    def __truediv__(self, name: str) -> StoreUrl:
        key = "/".join(p for p in (self.key, *name.split("/")) if p)
        return StoreUrl(self.scheme, self.netloc, key)

    def with_name(self, name: str) -> StoreUrl:
        if not self.key:
            raise ValueError(f"{self} has no name to replace")
        return self.parent / name


PathOrUrl = str | os.PathLike[str] | StoreUrl


def is_url(path: PathOrUrl) -> bool:
    """True for a store's URL (any `scheme://` but `file://`), whose files are read through fsspec."""
    if isinstance(path, StoreUrl):
        return True
    if isinstance(path, Path):
        return False
    text = os.fspath(path)
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.isascii() and scheme.replace("+", "").isalnum() and scheme.lower() != "file"


def locate(path: PathOrUrl) -> Path | StoreUrl:
    """A local path (`file://` URLs included) as a :class:`Path`, a store's URL as a :class:`StoreUrl`."""
    if isinstance(path, StoreUrl | Path):
        return path
    text = os.fspath(path)
    if is_url(text):
        return StoreUrl.parse(text)
    if text.startswith("file://"):
        return Path(text.removeprefix("file://"))
    return Path(text)
