"""Putting the JVM listener into a driver that is already running, through Py4J.

A running JVM cannot add a jar to its application class loader, but it can load classes through a new
``URLClassLoader`` whose parent is the one that loaded Spark: the listener class then sees the very
``SparkListenerInterface`` Spark calls, and Py4J calls its methods by reflection like any other object. If the class
is already on the driver's class path (``spark.jars`` given at session creation), that copy is used.

The listener is registered on a listener-bus queue of its own (``flowscope``; Spark gives every queue a thread and
a bounded buffer, ``spark.scheduler.listenerbus.eventqueue.flowscope.capacity``), so a slow moment in flowscope's
listener never holds up Spark's other listeners and Spark's drop counter for that queue is flowscope's alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backend.spark.live import py4j_bridge
from backend.spark.live.listener.build import LISTENER_CLASS

__all__ = ["QUEUE", "load_listener_class", "new_jvm_listener", "register", "unregister"]

QUEUE = "flowscope"


def load_listener_class(sc: Any, jar: Path) -> Any:
    """The listener's java.lang.Class in the driver JVM of SparkContext ``sc``."""
    jvm, gateway = py4j_bridge.jvm(sc), py4j_bridge.gateway(sc)
    cached = py4j_bridge.cached_listener_class(sc)
    if cached is not None:
        return cached
    spark_loader = py4j_bridge.scala_context(sc).getClass().getClassLoader()
    try:
        cls = jvm.java.lang.Class.forName(LISTENER_CLASS, True, spark_loader)
    except Exception:  # not on the class path: load it from the jar
        urls = gateway.new_array(jvm.java.net.URL, 1)
        urls[0] = jvm.java.io.File(str(jar)).toURI().toURL()
        loader = jvm.java.net.URLClassLoader(urls, spark_loader)
        cls = loader.loadClass(LISTENER_CLASS)
    py4j_bridge.cache_listener_class(sc, cls)
    return cls


def new_jvm_listener(sc: Any, jar: Path, host: str, port: int, token: str = "", capacity: int = 100_000,
                     app_name: str | None = None) -> Any:
    """A FlowscopeListener object in the driver JVM, already connecting to ``host:port`` (not yet registered)."""
    jvm, gateway = py4j_bridge.jvm(sc), py4j_bridge.gateway(sc)
    cls = load_listener_class(sc, jar)
    string = jvm.java.lang.Class.forName("java.lang.String")
    integer = jvm.java.lang.Integer.TYPE
    types = gateway.new_array(jvm.java.lang.Class, 6)
    for i, t in enumerate((string, integer, string, integer, string, string)):
        types[i] = t
    args = gateway.new_array(jvm.java.lang.Object, 6)
    for i, v in enumerate((host, int(port), token or "", int(capacity), app_name or sc.appName or "",
                             sc.applicationId or "")):
        args[i] = v
    return cls.getConstructor(types).newInstance(args)


def register(sc: Any, listener: Any) -> str:
    """Add ``listener`` to Spark's listener bus; the name of the queue it went to."""
    jsc = py4j_bridge.scala_context(sc)
    try:
        jsc.listenerBus().addToQueue(listener, QUEUE)
        return QUEUE
    except Exception:  # an older or stricter Spark: the public way, on the shared queue
        jsc.addSparkListener(listener)
        return "shared"


def unregister(sc: Any, listener: Any) -> None:
    py4j_bridge.scala_context(sc).removeSparkListener(listener)
