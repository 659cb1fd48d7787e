"""``flowscope listener-jar``: build flowscope's Spark listener (once) and print the jar's path.

For ``spark.jars`` or ``spark-submit --jars`` in applications that attach by configuration alone.
``register(subparsers)`` adds the command to the ``flowscope`` CLI."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register", "cmd_listener_jar"]


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "listener-jar", help="build flowscope's Spark listener jar (once) and print its path",
        description="Build flowscope's JVM listener from its source with the JDK on this machine (cached by "
                    "content) and print the jar's path. Attach any Spark application (Scala, Java, Python) without "
                    "changing it: --jars JAR --conf spark.extraListeners=flowscope.FlowscopeListener "
                    "--conf spark.flowscope.port=PORT (a `flowscope serve --spark-port PORT`).")
    p.add_argument("--rebuild", action="store_true", help="build again even if a jar for this source is cached")
    p.set_defaults(func=cmd_listener_jar)


def cmd_listener_jar(args: argparse.Namespace) -> int:
    from backend.spark.live.listener.build import ListenerBuildError, listener_jar

    try:
        print(listener_jar(rebuild=args.rebuild))
    except ListenerBuildError as e:
        print(f"flowscope: {e}", file=sys.stderr)
        return 2
    return 0
