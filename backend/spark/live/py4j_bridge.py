"""The one place that touches PySpark's Py4J handles.

A classic PySpark ``SparkContext`` reaches its driver JVM through three attributes PySpark does not publish:
``_jsc`` (the JavaSparkContext), ``_jvm`` (the JVM view) and ``_gateway`` (the Py4J gateway). flowscope needs them
to put its listener on Spark's listener bus, so this module reads them, and every other module asks this one through
the public functions below. If PySpark ever renames them, this file is the only one to change.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["has_jvm", "jvm", "gateway", "scala_context", "cached_listener_class", "cache_listener_class"]

# SparkContext -> the listener's java.lang.Class loaded in its driver (loading it twice would make a second copy)
_listener_classes: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def has_jvm(sc: Any) -> bool:
    """True if ``sc`` is a classic PySpark SparkContext with a driver JVM in this process (not Spark Connect)."""
    return getattr(sc, "_jsc", None) is not None


def jvm(sc: Any) -> Any:
    """The driver JVM's Py4J view (``jvm.java.lang.Class`` ...)."""
    return sc._jvm


def gateway(sc: Any) -> Any:
    """The Py4J gateway to the driver JVM (arrays, the callback server)."""
    return sc._gateway


def scala_context(sc: Any) -> Any:
    """The driver's Scala ``SparkContext`` (its listener bus, DAG scheduler)."""
    return sc._jsc.sc()


def cached_listener_class(sc: Any) -> Any | None:
    """The listener class already loaded into ``sc``'s driver, if any."""
    try:
        return _listener_classes.get(sc)
    except TypeError:  # not weakly referenceable: never cached
        return None


def cache_listener_class(sc: Any, cls: Any) -> None:
    """Remember the listener class loaded into ``sc``'s driver for as long as ``sc`` lives."""
    try:
        _listener_classes[sc] = cls
    except TypeError:  # pragma: no cover - a SparkContext is weakly referenceable
        pass
