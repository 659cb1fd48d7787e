"""Building the JVM listener's jar from its Java source, with the JDK on the machine, once per source version.

`FlowscopeListener.java` sits beside this file. `listener_jar()` compiles it with ``javac --release 8`` against the
jars of the installed pyspark (``<pyspark>/jars/*``: Spark's API is spread over several jars) and zips the classes
into ``flowscope-listener-<hash>.jar`` in the user's cache directory (``$FLOWSCOPE_CACHE``, else
``$XDG_CACHE_HOME/flowscope``, else ``~/.cache/flowscope``). The hash covers the source and the javac options, so an
edited source builds a new jar and an unchanged one is never rebuilt; the jar appears atomically, so two drivers
starting at once do not see half a file. Release 8 bytecode runs on every JVM Spark 3.x and 4.x support.

Building takes a few seconds (javac starts a JVM); a cached jar costs a file lookup. `ListenerBuildError` says why
a build is impossible (no javac, no pyspark jars, a compile error) so the caller can fall back.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

__all__ = ["ListenerBuildError", "LISTENER_CLASS", "SOURCE", "WARMUP", "cache_dir", "find_javac", "listener_jar",
           "spark_jars_dir"]

LISTENER_CLASS = "flowscope.FlowscopeListener"
SOURCE = Path(__file__).resolve().parent / "FlowscopeListener.java"
# a few real scheduler events (from fixtures/spark/batch_shuffle), parsed and serialized once by a new listener so
# that the JVM's first real ones are not the slow ones (class loading, JIT); in the jar as flowscope/warmup.jsonl
WARMUP = SOURCE.with_name("warmup.jsonl")
_RELEASES = ("8", "11", "17")  # the first one this javac accepts


class ListenerBuildError(RuntimeError):
    """The JVM listener's jar cannot be built here; the message says why and what to do."""


def cache_dir() -> Path:
    env = os.environ.get("FLOWSCOPE_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "flowscope"


def find_javac() -> str | None:
    """javac from $JAVA_HOME, else from PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "javac"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("javac")


def spark_jars_dir() -> Path:
    """The `jars/` directory of the Spark the driver runs: $SPARK_HOME's if set, else the pyspark package's."""
    candidates = []
    if os.environ.get("SPARK_HOME"):
        candidates.append(Path(os.environ["SPARK_HOME"]) / "jars")
    try:
        import pyspark

        candidates.append(Path(pyspark.__file__).resolve().parent / "jars")
    except ImportError:
        pass
    for c in candidates:
        if c.is_dir() and any(c.glob("spark-core_*.jar")):
            return c
    raise ListenerBuildError("no Spark jars found (neither $SPARK_HOME/jars nor the pyspark package's jars/)")


def listener_jar(*, rebuild: bool = False, javac: str | None = None) -> Path:
    """The path of the listener's jar, building it first if this source has not been built yet."""
    source = SOURCE.read_bytes()
    warmup = WARMUP.read_bytes()
    key = hashlib.sha256(source + b"\0" + warmup + b"\0release=" + ",".join(_RELEASES).encode()).hexdigest()[:16]
    target = cache_dir() / f"flowscope-listener-{key}.jar"
    if target.is_file() and not rebuild:
        return target
    javac = javac or find_javac()
    if javac is None:
        raise ListenerBuildError("javac not found (install a JDK, or set JAVA_HOME)")
    classpath = str(spark_jars_dir() / "*")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flowscope-javac-") as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        errors = []
        for release in _RELEASES:
            cmd = [javac, "--release", release, "-nowarn", "-Xlint:-options", "-encoding", "UTF-8",
                   "-cp", classpath, "-d", str(classes), str(SOURCE)]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise ListenerBuildError(f"javac failed to run: {e}") from None
            if proc.returncode == 0:
                break
            errors.append(f"--release {release}: {(proc.stderr or proc.stdout).strip()[:2000]}")
        else:
            raise ListenerBuildError("javac could not compile the listener:\n" + "\n".join(errors))
        staging = Path(tmp) / "listener.jar"
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nCreated-By: flowscope\r\n\r\n")
            for cls in sorted(classes.rglob("*.class")):
                jar.write(cls, cls.relative_to(classes).as_posix())
            jar.writestr("flowscope/warmup.jsonl", warmup)
        fd, partial = tempfile.mkstemp(prefix=target.name, suffix=".part", dir=target.parent)
        os.close(fd)
        shutil.copyfile(staging, partial)
        os.replace(partial, target)  # atomic: concurrent builders each write a whole jar
    return target
