"""flowscope's Spark listener: how a running Spark application's events reach flowscope.

The primary path runs no Python on Spark's listener thread: ``FlowscopeListener.java``, a small JVM listener built
from its source with the JDK on the machine (`build`), put into a running driver through Py4J (`jvm`) or named in
``spark.extraListeners`` by configuration alone. The fallback, when nothing else can load, is a Python listener
Spark calls through Py4J (`py4j_listener`): the same protocol, slower. Both send the event-log JSON lines Spark
itself writes to a flowscope server's Spark ingest socket (``backend.spark.live.socket_feed``).

``flowscope listener-jar`` (flowscope/commands/listener_jar.py) builds the jar if needed and prints its path
(for ``spark.jars``).
"""

from backend.spark.live.listener.build import LISTENER_CLASS, ListenerBuildError, cache_dir, find_javac, listener_jar
from backend.spark.live.listener.jvm import QUEUE, new_jvm_listener, register, unregister
from backend.spark.live.listener.py4j_listener import Py4JListener

__all__ = [
    "LISTENER_CLASS",
    "ListenerBuildError",
    "Py4JListener",
    "QUEUE",
    "cache_dir",
    "find_javac",
    "listener_jar",
    "new_jvm_listener",
    "register",
    "unregister",
]
