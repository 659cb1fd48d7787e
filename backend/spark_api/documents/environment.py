"""``/environment``: Spark's ``ApplicationEnvironmentInfo``: the JVM, the properties, the resource profiles."""

from __future__ import annotations

import re

from backend.spark.redaction.rules import REDACTED
from backend.spark_api.app_state import AppState

__all__ = ["environment_doc"]


def _profile(rid: int, p: dict) -> dict:
    return {"id": rid,
            "executorResources": {k: {"resourceName": r.get("Resource Name", k), "amount": r.get("Amount"),
                                      "discoveryScript": r.get("Discovery Script", ""), "vendor": r.get("Vendor", "")}
                                  for k, r in p["executor"].items()},
            "taskResources": {k: {"resourceName": r.get("Resource Name", k), "amount": float(r.get("Amount") or 0)}
                              for k, r in p["task"].items()}}


# Spark's spark.redaction.regex default: a property whose name or value matches is shown redacted
SPARK_REDACTION = re.compile(r"(?i)secret|password|token|access[.]?key|credential")


def _redacted(pairs: list) -> list:
    return [[k, REDACTED] if SPARK_REDACTION.search(str(k)) or SPARK_REDACTION.search(str(v)) else [k, v]
            for k, v in pairs]


def environment_doc(state: AppState) -> dict:
    env = state.environment
    jvm = dict(env.get("JVM Information", ()))
    runtime = {k: v for k, v in (("javaVersion", jvm.get("Java Version")), ("javaHome", jvm.get("Java Home")),
                                 ("scalaVersion", jvm.get("Scala Version"))) if v is not None}
    return {"runtime": runtime,
            "sparkProperties": _redacted(env.get("Spark Properties", [])),
            "hadoopProperties": _redacted(env.get("Hadoop Properties", [])),
            "systemProperties": _redacted(env.get("System Properties", [])),
            "metricsProperties": _redacted(env.get("Metrics Properties", [])),
            "classpathEntries": env.get("Classpath Entries", []),
            "resourceProfiles": [_profile(rid, p) for rid, p in sorted(state.resource_profiles.items())]}
