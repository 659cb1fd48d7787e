"""Print the path of the JVM listener's jar, building it first if needed (for spark.jars / spark-submit --jars)."""

import sys

from .build import ListenerBuildError, listener_jar

try:
    print(listener_jar(rebuild="--rebuild" in sys.argv[1:]))
except ListenerBuildError as e:
    print(f"flowscope: {e}", file=sys.stderr)
    sys.exit(1)
