"""Where logs live: local paths and object-store URLs (s3://, s3a://, gs://, abfs://, az://, hdfs://) read through
fsspec.

The one way the rest of the code reaches a path or URL: `open_read` (streaming, seekable), `list_dir` and `stat`
(`Entry`: name, url, size, mtime, is_dir), `exists`, `is_dir`, and `StoreError`, whose message is one line naming
the URL and the cause. `locate` turns a path or URL into a `Path` or a `StoreUrl`, which the readers use as a path
(`name`, `parent`, `/`, `with_name`). Local paths take the operating system's calls; a store's implementation
(s3fs, gcsfs, adlfs, pyarrow) is imported only when a URL of its scheme is read.
"""

from backend.stores.access import STORE_POLL_SECONDS, Entry, exists, is_dir, list_dir, open_read, stat
from backend.stores.errors import StoreError, StoreNotFound
from backend.stores.urls import SCHEMES, PathOrUrl, StoreUrl, is_url, locate

__all__ = [
    "SCHEMES",
    "STORE_POLL_SECONDS",
    "Entry",
    "PathOrUrl",
    "StoreError",
    "StoreNotFound",
    "StoreUrl",
    "exists",
    "is_dir",
    "is_url",
    "list_dir",
    "locate",
    "open_read",
    "stat",
]
