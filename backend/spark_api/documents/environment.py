"""``/environment``: Spark's ``ApplicationEnvironmentInfo``: the JVM, the properties, the resource profiles."""

from __future__ import annotations

from backend.spark_api.app_state import AppState

__all__ = ["environment_doc"]


def _profile(rid: int, p: dict) -> dict:
    return {"id": rid,
            "executorResources": {k: {"resourceName": r.get("Resource Name", k), "amount": r.get("Amount"),
                                      "discoveryScript": r.get("Discovery Script", ""), "vendor": r.get("Vendor", "")}
                                  for k, r in p["executor"].items()},
            "taskResources": {k: {"resourceName": r.get("Resource Name", k), "amount": float(r.get("Amount") or 0)}
                              for k, r in p["task"].items()}}


def environment_doc(state: AppState) -> dict:
    env = state.environment
    jvm = dict(env.get("JVM Information", ()))
    runtime = {k: v for k, v in (("javaVersion", jvm.get("Java Version")), ("javaHome", jvm.get("Java Home")),
                                 ("scalaVersion", jvm.get("Scala Version"))) if v is not None}
    return {"runtime": runtime,
            "sparkProperties": env.get("Spark Properties", []),
            "hadoopProperties": env.get("Hadoop Properties", []),
            "systemProperties": env.get("System Properties", []),
            "metricsProperties": env.get("Metrics Properties", []),
            "classpathEntries": env.get("Classpath Entries", []),
            "resourceProfiles": [_profile(rid, p) for rid, p in sorted(state.resource_profiles.items())]}
