"""`flowscope fleet` on a cluster as the README says: `flowscope fleet --build-zip` makes the zip of the project's
packages, and `spark-submit --py-files flowscope.zip backend/fleet/submit.py DIR -o OUT` runs the job, a real
spark-submit (the one pyspark ships) in local mode. Its Python runs without site-packages' .pth files (`-S`), so
the editable install is invisible: the driver and the workers import flowscope from the zip or not at all."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pyspark

from backend.fleet.analyze import analyze_log
from backend.fleet.pyfiles import ZIP_PACKAGES

from .conftest import REPO
from .test_fleet import fixture_log

APPS = ("batch_shuffle", "streaming_stall", "iterative_pagerank")  # a batch job, a stream, a driver loop


def _spark_submit() -> Path:
    """pyspark's own bin/spark-submit (SPARK_HOME when set, as find-spark-home decides; else the package)."""
    home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    return home / "bin" / "spark-submit"


def _isolated_python(tmp_path: Path) -> tuple[Path, str]:
    """A Python that sees the dependencies (site-packages on PYTHONPATH) but no .pth file, so not flowscope's
    editable install: `python -S`, as a script Spark can run."""
    wrapper = tmp_path / "python-S"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, sysconfig.get_paths()["purelib"]


def test_build_zip_holds_the_packages_the_job_imports(tmp_path: Path) -> None:
    from flowscope.cli import main

    target = tmp_path / "flowscope.zip"
    assert main(["fleet", "--build-zip", str(target)]) == 0
    names = zipfile.ZipFile(target).namelist()
    assert {"backend/fleet/job.py", "backend/fleet/analyze.py", "tracker/progress_log/replay.py"} <= set(names)
    assert all(n.endswith(".py") and n.split("/")[0] in ZIP_PACKAGES for n in names)
    python, deps = _isolated_python(tmp_path)
    env = {**os.environ, "PYTHONPATH": f"{target}{os.pathsep}{deps}"}
    run = subprocess.run([str(python), "-c", "import backend.fleet.job as j, backend.fleet.report; print(j.__file__)"],
                         env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"{target}/backend/fleet/job.py"
    # without the zip, the launcher says what is missing instead of a traceback
    env["PYTHONPATH"] = deps
    run = subprocess.run([str(python), str(REPO / "backend" / "fleet" / "submit.py"), "x", "-o", "y"], env=env,
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 1 and "--py-files flowscope.zip" in run.stderr and "Traceback" not in run.stderr


def test_spark_submit_with_the_zip_writes_the_tables(tmp_path: Path, spark) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in APPS:
        shutil.copytree(fixture_log(name), logs / fixture_log(name).name)
    target = tmp_path / "flowscope.zip"
    from flowscope.cli import main

    assert main(["fleet", "--build-zip", str(target)]) == 0
    python, deps = _isolated_python(tmp_path)
    env = {**os.environ, "PYTHONPATH": deps, "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python),
           "SPARK_LOCAL_IP": "127.0.0.1"}
    out = tmp_path / "out"
    run = subprocess.run(
        [str(_spark_submit()), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "--py-files", str(target), str(REPO / "backend" / "fleet" / "submit.py"), str(logs), "-o", str(out)],
        env=env, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    # spark-submit passes on the Python driver's stderr as its own stdout
    assert f"flowscope: {len(APPS)} applications (0 unreadable)" in run.stdout

    expected = {name: analyze_log(fixture_log(name)) for name in APPS}
    apps = {r["app_id"]: r.asDict(recursive=True) for r in spark.read.parquet(str(out / "applications")).collect()}
    assert apps.keys() == {rows.application["app_id"] for rows in expected.values()}
    times = [r.asDict() for r in spark.read.parquet(str(out / "times")).collect()]
    for rows in expected.values():
        app_id = rows.application["app_id"]
        assert apps[app_id]["readable"] and apps[app_id]["jobs"] == rows.application["jobs"] > 0
        mine = sorted((t["scope"], t["time"], t["end_batch"]) for t in times if t["app_id"] == app_id)
        assert mine == sorted((t["scope"], t["time"], t["end_batch"]) for t in rows.times) and mine
    # each signature names its longest run; the report opens the slowest time where it completed
    stages = [r.asDict() for r in spark.read.parquet(str(out / "stages")).collect()]
    for sig in spark.read.parquet(str(out / "stage_signatures")).collect():
        runs = [s for s in stages if s["signature"] == sig["signature"]]
        longest = max(runs, key=lambda s: s["held_s"])
        assert sig["longest"]["held_s"] == longest["held_s"] and sig["longest"]["app_id"] in apps
    slowest = max(times, key=lambda t: t["latency_s"])
    page = (out / "report.html").read_text()
    scope = ",".join(map(str, slowest["scope"]))
    assert f"{apps[slowest['app_id']]['log']} --at {slowest['end_batch']} --scope {scope}" in page


def test_under_spark_submit_the_console_progress_bar_is_off_unless_its_conf_sets_it(tmp_path: Path) -> None:
    """Under spark-submit the session `flowscope fleet` builds turns Spark's console progress bar off, unless
    spark-submit's --conf sets it."""
    script = tmp_path / "show.py"
    script.write_text("from backend.fleet.job import build_session\n"
                      "s = build_session(None)\n"
                      "print('VALUE=' + s.sparkContext.getConf().get('spark.ui.showConsoleProgress', 'unset'))\n"
                      "s.stop()\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_SUBMIT_ARGS", None)

    def value(*conf: str) -> str:
        run = subprocess.run([str(_spark_submit()), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
                              *conf, str(script)], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        return run.stdout.split("VALUE=")[1].strip()

    assert value() == "false"
    assert value("--conf", "spark.ui.showConsoleProgress=true") == "true"
