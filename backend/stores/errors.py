"""The one error a path or URL gives: one line naming it and the cause, whatever the store.

The stores' libraries fail in their own words (botocore's endpoint errors, fsspec's "Install s3fs to access S3",
pyarrow's libhdfs loader, a bucket's `NoSuchBucket`); a user reads one line that names the URL and says what is
wrong and, where it can, what to do. :func:`store_error` makes that line from whatever was raised.
"""

from __future__ import annotations

from backend.stores.urls import SCHEMES

__all__ = ["StoreError", "StoreNotFound", "missing_library", "store_error"]

MAX_CAUSE = 400  # characters of a cause: some libraries' messages list everything they tried

_LIBRARIES = {"s3": "s3fs", "gcs": "gcsfs", "azure": "adlfs", "hdfs": "pyarrow"}


class StoreError(OSError):
    """A path or URL that cannot be read: ``str(e)`` is one line, ``<url>: <cause>``."""

    def __init__(self, url: str, cause: str) -> None:
        self.url = url
        cause = " ".join(cause.split())  # one line, whatever the library's message held
        self.cause = cause if len(cause) <= MAX_CAUSE else cause[:MAX_CAUSE - 5] + " ..."
        super().__init__(f"{url}: {self.cause}")

    def __str__(self) -> str:
        return f"{self.url}: {self.cause}"


class StoreNotFound(StoreError, FileNotFoundError):
    """Nothing at that path or URL (no such file, directory or bucket): a `FileNotFoundError` too."""


def missing_library(scheme: str) -> str:
    """What to install to read `scheme://` URLs."""
    extra = SCHEMES.get(scheme)
    if extra is None:
        return f"flowscope cannot read {scheme}:// URLs (it reads s3://, s3a://, gs://, abfs://, az://, hdfs://)"
    return f"reading {scheme}:// needs {_LIBRARIES[extra]}: pip install 'flowscope[{extra}]'"


_HADOOP_SETUP = ("HADOOP_HOME (or ARROW_LIBHDFS_DIR, the directory of libhdfs.so), JAVA_HOME, and CLASSPATH set to "
                 "`hadoop classpath --glob`")


def _hdfs_cause(message: str) -> str | None:
    """What of Hadoop's client pyarrow could not find, said in a line (its own message lists every path it tried)."""
    if "libjvm" in message:
        return f"hdfs:// needs Java and Hadoop's libhdfs: pyarrow could not load libjvm (no JDK): set {_HADOOP_SETUP}"
    if "libhdfs" in message:
        return f"hdfs:// needs Hadoop's libhdfs, which pyarrow could not load: set {_HADOOP_SETUP}"
    if any(name in message for name in ("HADOOP_HOME", "JAVA_HOME", "CLASSPATH")):
        return f"hdfs:// needs Hadoop's client set up ({message.strip()[:200]}): set {_HADOOP_SETUP}"
    return None


def store_error(url: str, scheme: str, exc: BaseException) -> StoreError:
    """The one-line error for `exc`, raised while reading `url` (a URL of `scheme`)."""
    if isinstance(exc, StoreError):
        return exc
    text = str(exc) or type(exc).__name__
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, ImportError):
        return StoreError(url, missing_library(scheme))
    if scheme == "hdfs" and (cause := _hdfs_cause(text)) is not None:
        return StoreError(url, cause)
    if isinstance(exc, FileNotFoundError) or "NoSuchKey" in text:
        if "bucket does not exist" in text or "NoSuchBucket" in text or "ContainerNotFound" in text:
            return StoreNotFound(url, "no such bucket")
        return StoreNotFound(url, "no such file or directory")
    if isinstance(exc, NotADirectoryError):
        return StoreError(url, "not a directory")
    if isinstance(exc, IsADirectoryError):
        return StoreError(url, "a directory, not a file")
    if isinstance(exc, PermissionError) or "AccessDenied" in text or "Forbidden" in text:
        return StoreError(url, f"access denied ({text}): check the credentials the store is given")
    if "NoCredentialsError" in names or "DefaultCredentialsError" in names:
        return StoreError(url, f"no credentials found ({text}): give them the store's standard way "
                               "(environment, config file, instance role)")
    if (isinstance(exc, ConnectionError | TimeoutError) or any("Connect" in n or "Timeout" in n for n in names)):
        return StoreError(url, f"cannot reach the store's endpoint ({text})")
    return StoreError(url, f"{type(exc).__name__}: {text}")
