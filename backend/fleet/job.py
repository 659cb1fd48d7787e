"""`flowscope fleet DIR -o OUT`: every application's event log in a directory, analysed on Spark, as Parquet tables.

A platform team keeps thousands of event logs a day in one directory (local, HDFS, S3). The job lists them through
Spark (the `binaryFile` source, so any filesystem Hadoop reads works) or, for a store's URL (`s3://`, `s3a://`,
`gs://`, `abfs://`, `az://`), through `backend.stores` (each task then reads its applications' files from the store
itself, with no Hadoop connector), groups each application's files, deals the
applications round-robin to a few tasks per core (`task_count`: a task's fixed cost is spread over many; Python
workers are reused, so imports happen once per worker) and shuffles each file's bytes to its application's task.
The task copies them to a local temporary directory, so the project's own readers read it as any log, and runs
`analyze.analyze_log`. A log that cannot be read becomes an application row with its problem; the job never fails
for a bad log. The analysis is one row per application, cached in the JVM; the tables (`applications/`, `times/`,
`stages/`, `stage_signatures/`) are column selections of it, written without going back to Python, beside
`report.html` (`report.py`). On a cluster spark-submit runs `submit.py`, never this module as a script.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from backend.eventlog.codecs import strip_codec
from backend.fleet.analyze import APPLICATION_COLUMNS, STAGE_COLUMNS, TIME_COLUMNS, analyze_log
from backend.spark.recording.subcommand import run_subcommand
from backend.stores import StoreError, is_url, list_dir, stat

__all__ = [
    "FleetApp", "FleetSummary", "analysis_schema", "analyze_app", "analyze_task", "build_session", "canonical_path",
    "group_applications", "main", "register", "run_fleet", "schemas", "task_count",
]

ROLLING_PREFIX = "eventlog_v2_"
INPROGRESS = ".inprogress"


@dataclass(frozen=True)
class FleetApp:
    """One application's log as Spark listed it.

    `path` is the file or the rolling directory, `files` every file that makes it up (the status marker and other empty
    files included), `index` its partition."""

    index: int
    path: str
    rolling: bool
    files: tuple[str, ...]


@dataclass
class FleetSummary:
    applications: int
    unreadable: int
    times: int
    stages: int
    signatures: int
    skipped_files: int
    seconds: float
    out: str
    report: str | None


def _is_single_log_name(name: str) -> bool:
    """Is this file name a single-file Spark log's?

    Such a log is named after its application id (`local-...`, `app-...`, `application_..._...`, plus `_<attempt>`),
    maybe with a codec suffix and `.inprogress`: no other dot. READMEs, JSON sidecars and Hadoop's checksum files are
    not logs."""
    if name.startswith((".", "_")):
        return False
    base = strip_codec(name.removesuffix(INPROGRESS))
    return bool(base) and "." not in base


def group_applications(files: Iterable[str]) -> tuple[list[FleetApp], int]:
    """Spark's file listing -> applications (sorted by path) and the number of files that belong to none.

    A file inside a directory named `eventlog_v2_*` belongs to that rolling log; any other file is a log of its
    own if its name looks like one (`_is_single_log_name`)."""
    rolling: dict[str, list[str]] = {}
    singles: list[str] = []
    skipped = 0
    for path in files:
        parent, _, name = path.rstrip("/").rpartition("/")
        if parent.rpartition("/")[2].startswith(ROLLING_PREFIX):
            rolling.setdefault(parent, []).append(path)
        elif _is_single_log_name(name):
            singles.append(path)
        else:
            skipped += 1
    entries = [(p, True, tuple(sorted(fs))) for p, fs in rolling.items()]
    entries += [(p, False, (p,)) for p in singles]
    entries.sort(key=lambda e: e[0])
    return [FleetApp(i, p, r, fs) for i, (p, r, fs) in enumerate(entries)], skipped


def analyze_app(app: FleetApp, contents: Iterable[tuple[str, bytes]]) -> dict:
    """Analyse one application in a task, from a local copy of its files.

    The copy is a temporary directory with the same names (empty files from the listing).
    Returns `{"applications": [row], "times": [...], "stages": [...]}`."""
    data = dict(contents)
    with tempfile.TemporaryDirectory(prefix="flowscope-fleet-") as tmp:
        root = Path(tmp)
        if app.rolling:
            root = root / app.path.rstrip("/").rpartition("/")[2]
            root.mkdir()
        for path in app.files:
            (root / path.rpartition("/")[2]).write_bytes(bytes(data.get(path, b"")))
        local = root if app.rolling else root / app.path.rpartition("/")[2]
        rows = analyze_log(local, log_name=_display(app.path))
    return {"applications": [rows.application], "times": rows.times, "stages": rows.stages}


def canonical_path(path: str) -> str:
    """One file, however Spark spells it (`file:/x`, `file:///x`, percent-encoded or not): `file:///x`."""
    parsed = urlparse(path)
    if not parsed.scheme:
        return path
    return f"{parsed.scheme}://{parsed.netloc}{unquote(parsed.path)}"


def _display(path: str) -> str:
    """A listed path as people type it: `file:/x/y` -> `/x/y`; other schemes (hdfs://, s3a://) unchanged."""
    parsed = urlparse(path)
    return unquote(parsed.path) if parsed.scheme == "file" else path


def schemas() -> dict[str, Any]:
    """The Spark schemas of the tables written per application (columns in analyze's *_COLUMNS order)."""
    from pyspark.sql.types import (
        ArrayType,
        BooleanType,
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    s, d, i, b, lng = StringType(), DoubleType(), LongType(), BooleanType(), LongType()
    ints = ArrayType(IntegerType())
    types = {
        "applications": {"app_id": s, "name": s, "spark_version": s, "start": d, "end": d, "duration_s": d,
                         "jobs": i, "failed_jobs": i, "stages": i, "tasks": i, "times": i, "events": i,
                         "corrupt_lines": i, "state": s, "log": s, "readable": b, "problems": ArrayType(s)},
        "times": {"app_id": s, "scope": ints, "scope_name": s, "region_kind": s, "time": lng, "job_ids": ints,
                  "batch_id": lng, "start": d, "end": d, "latency_s": d, "end_batch": lng, "status": s,
                  "culprit": s, "culprit_signature": s},
        "stages": {"app_id": s, "app_start": d, "scope": ints, "region_kind": s, "time": lng, "signature": s,
                   "name": s, "stage_ids": ints, "attempts": i, "failed_attempts": i, "start": d, "held_s": d,
                   "tasks": i, "median_task_s": d, "max_task_s": d, "skew": d, "stragglers": i, "straggler": s},
    }
    columns = {"applications": APPLICATION_COLUMNS, "times": TIME_COLUMNS, "stages": STAGE_COLUMNS}
    return {name: StructType([StructField(c, types[name].get(c, d), True) for c in columns[name]])
            for name in columns}


APPS_PER_TASK = 64  # at most this many applications per task: a lost task redoes little, a big fleet many tasks
TASKS_PER_CORE = 3  # at least this many tasks per core (while applications last): the scheduler evens them out


def task_count(applications: int, cores: int) -> int:
    """How many tasks analyse `applications` on `cores`.

    Enough for every core to take several (so a task of big logs does not leave the others idle), few enough that a
    task's fixed cost (scheduling, a shuffle block, a Python worker's round trip) is spread over many applications."""
    if applications <= 0:
        return 1
    return min(applications, max(cores * TASKS_PER_CORE, -(-applications // APPS_PER_TASK)))


def analysis_schema() -> Any:
    """The analysis's schema: one row per application.

    Its application row, and its times and stages as arrays (analysis once, then the three tables are column selections
    of this in the JVM)."""
    from pyspark.sql.types import ArrayType, StructField, StructType

    tables = schemas()
    return StructType([StructField("application", tables["applications"], False),
                       StructField("times", ArrayType(tables["times"], False), False),
                       StructField("stages", ArrayType(tables["stages"], False), False)])


def analyze_task(apps: Sequence[FleetApp], task: int, tasks: int,
                 items: Iterable[tuple[int, tuple[str, bytes]]] | None) -> Iterator[tuple]:
    """Task `task` of `tasks`: the applications dealt to it (`apps[task::tasks]`).

    With `items` ((application index, (path, bytes)), sorted by index: what Spark read), each from its files' bytes
    through `analyze_app`; an application none of whose files has bytes (only empty files) is analysed as well: it
    becomes a row with its problem. Without (`items=None`: logs on the local filesystem, which the task reads itself),
    each from its path, as one process would. Yields one `analysis_schema` tuple per application (columns in the
    *_COLUMNS order)."""
    columns = {name: tuple(f.name for f in schema.fields) for name, schema in schemas().items()}
    grouped = groupby(items or (), key=itemgetter(0))
    current = next(grouped, None)
    for app in apps[task::tasks]:
        if items is None:
            where = app.path if is_url(app.path) else unquote(urlparse(app.path).path)
            rows = analyze_log(where, log_name=_display(app.path))
            result = {"applications": [rows.application], "times": rows.times, "stages": rows.stages}
        else:
            files: Iterable[tuple[int, tuple[str, bytes]]] = ()
            if current is not None and current[0] == app.index:
                files, current = current[1], None
            result = analyze_app(app, (item for _, item in files))
            if current is None:
                current = next(grouped, None)
        (app_row,) = result["applications"]
        yield (tuple(app_row.get(c) for c in columns["applications"]),
               [tuple(r.get(c) for c in columns["times"]) for r in result["times"]],
               [tuple(r.get(c) for c in columns["stages"]) for r in result["stages"]])


SCAN_OPEN_COST = 64 * 1024  # bytes a file counts for when Spark packs files into the scan's partitions


@contextmanager
def _session_conf(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """The session's SQL settings changed for what runs inside, and restored after."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _list_and_scan(spark: Any, directory: str) -> tuple[list[str], Any]:
    """Every file under `directory` and their (path, content) rows as an RDD.

    The listing is Spark's, empty files included. Two of Spark's defaults are set for this job while the listing and the
    scan are planned: listing more than 32 directories (rolling logs) is a Spark job of one task per directory, here one
    per core (`parallelPartitionDiscovery.parallelism`); and every file counts as at least 4 MB when files are packed
    into the scan's partitions (`openCostInBytes`), which makes a directory of small logs one scan task per two files,
    each costing more than reading them: the scan only routes bytes to the analysis, so a file counts as
    `SCAN_OPEN_COST` and the scan has about one partition per core."""
    settings = {"spark.sql.sources.parallelPartitionDiscovery.parallelism": str(spark.sparkContext.defaultParallelism),
                "spark.sql.files.openCostInBytes": str(SCAN_OPEN_COST)}
    with _session_conf(spark, settings):
        found = spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(directory)
        return found.inputFiles(), found.select("path", "content").rdd  # `.rdd` plans the scan


def store_files(directory: str) -> list[str]:
    """Every file under a store's `directory` (`s3://...`), listed through backend.stores, empty files included."""
    found: list[str] = []
    for entry in list_dir(directory):
        if entry.is_dir:
            found.extend(store_files(entry.url))
        else:
            found.append(entry.url)
    return found


def reads_through_stores(directory: str) -> bool:
    """A store's URL (`s3://`, `s3a://`, `gs://`, `abfs://`, `az://`) is listed and read through backend.stores, so
    the fleet needs no Hadoop connector for it; `hdfs://` and local paths are Spark's own to list."""
    return is_url(directory) and str(directory).partition("://")[0].lower() != "hdfs"


def run_fleet(spark: Any, directory: str, out: str, *, report: bool = True,
              read_locally: bool | None = None) -> FleetSummary:
    """Analyse every application log under `directory` on `spark`; write the tables (and report) under `out`.

    The tasks get each application's bytes from Spark's scan (any filesystem Spark reads), or with
    `read_locally` read the files themselves by path: the default when Spark runs in local mode over local
    files, where the scan and its shuffle would only copy bytes the task can read.

    Spark jobs, in order: the analysis (read every file once, shuffle each application's bytes to the task
    that analyses it, several applications per task, one row per application cached in the JVM) as part of the
    first table's write; the other writes and the signature aggregate from that cache; the few small queries
    the summary and the report need."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.perf_counter()
    sc = spark.sparkContext
    out = out.rstrip("/")
    # the names come from the file index (empty files such as a status marker included); the scan reads the
    # non-empty files' bytes. A store's directory is listed here, and each task reads its applications' files
    if reads_through_stores(directory):
        listed, scan, read_locally = store_files(directory), None, True
    else:
        listed, scan = _list_and_scan(spark, directory)
        listed = [canonical_path(p) for p in listed]
    apps, skipped = group_applications(listed)
    tasks = task_count(len(apps), sc.defaultParallelism)
    shared = sc.broadcast(apps)
    owner = sc.broadcast({path: app.index for app in apps for path in app.files})

    def owned(r: Any) -> Iterator[tuple[int, tuple[str, bytes]]]:
        path = canonical_path(r.path)
        index = owner.value.get(path)
        if index is not None:
            yield index, (path, r.content)

    def one_task(task: int, items: Iterator[tuple[int, tuple[str, bytes]]]) -> Iterator[tuple]:
        return analyze_task(shared.value, task, tasks, items)

    # applications dealt round-robin to tasks and sorted by index inside each (spilling to disk past the Python
    # worker's memory), so a task meets each application's files together
    if read_locally is None:  # local mode over local files: the tasks see the files the driver listed
        read_locally = sc.master.startswith("local") and all(p.startswith("file:") for p in listed)
    if read_locally:
        rdd = sc.parallelize(range(tasks), tasks).mapPartitionsWithIndex(
            lambda task, _: analyze_task(shared.value, task, tasks, None))
    else:
        assert scan is not None
        rdd = (scan.flatMap(owned).repartitionAndSortWithinPartitions(tasks, lambda index: index % tasks)
               .mapPartitionsWithIndex(one_task))
    analysed = spark.createDataFrame(rdd, analysis_schema(), verifySchema=False).persist(StorageLevel.MEMORY_AND_DISK)
    frames = {
        "applications": analysed.select("application.*"),
        "times": analysed.select(F.explode("times").alias("row")).select("row.*"),
        "stages": analysed.select(F.explode("stages").alias("row")).select("row.*"),
    }
    for name, frame in frames.items():
        frame.write.mode("overwrite").parquet(f"{out}/{name}")
    # the aggregates shuffle into as many partitions as there are cores, whatever spark.sql.shuffle.partitions
    # says (its default of 200 costs more than the whole analysis of a small fleet)
    signatures = frames["stages"].repartition(sc.defaultParallelism, "signature").groupBy("signature").agg(
        F.first("name").alias("name"), F.first("region_kind").alias("region_kind"),
        F.size(F.collect_set("app_id")).alias("applications"), F.count("*").alias("runs"),
        F.sum("held_s").alias("held_s"), F.avg("held_s").alias("mean_held_s"), F.max("held_s").alias("max_held_s"),
        F.sum("tasks").alias("tasks"), F.avg("median_task_s").alias("mean_median_task_s"),
        F.max("skew").alias("max_skew"), F.sum("stragglers").alias("stragglers"),
        F.sum("failed_attempts").alias("failed_attempts"),
        F.min("app_start").alias("first_seen"), F.max("app_start").alias("last_seen"),
        # where to look: the run that held longest (its application, region and moment)
        F.max_by(F.struct("app_id", "scope", "start", "held_s"), "held_s").alias("longest")).cache()
    signatures.write.mode("overwrite").parquet(f"{out}/stage_signatures")
    # what the summary and the report need of each application, and its times and stages counted, in one job
    overview = analysed.select("application.app_id", "application.name", "application.log",
                               "application.readable", "application.problems",
                               F.size("times").alias("times"), F.size("stages").alias("stages")).collect()
    applications = [r.asDict(recursive=True) for r in overview]
    report_path = None
    if report:
        report_path, n_signatures = _write_report(frames, signatures, out, applications, sc.defaultParallelism)
    else:
        n_signatures = signatures.count()
    signatures.unpersist()
    analysed.unpersist()
    shared.destroy()
    owner.destroy()
    return FleetSummary(
        applications=len(applications), unreadable=sum(1 for a in applications if not a["readable"]),
        times=sum(a["times"] for a in applications), stages=sum(a["stages"] for a in applications),
        signatures=n_signatures, skipped_files=skipped,
        seconds=time.perf_counter() - started, out=out, report=report_path)


def _write_report(frames: dict[str, Any], signatures: Any, out: str, applications: list[dict],
                  partitions: int) -> tuple[str, int]:
    """Write OUT/report.html from the job's cached frames.

    It shows every signature, the slowest times and the top signatures' series; for an OUT that is not on the local
    filesystem the page goes to ./fleet-report.html instead. Returns the page's path and the number of signatures."""
    from pyspark.sql import functions as F

    from backend.fleet.report import REGRESSION_SIGNATURES, TOP_SIGNATURES, TOP_TIMES, render_report

    every = [r.asDict(recursive=True) for r in signatures.collect()]
    top = sorted(every, key=lambda r: -(r["held_s"] or 0.0))[:TOP_SIGNATURES]
    by_app = {a["app_id"]: a for a in applications}
    for row in top:
        longest = row.get("longest") or {}
        longest["log"] = (by_app.get(longest.get("app_id")) or {}).get("log")
    slow = [r.asDict() for r in frames["times"].where(F.col("latency_s").isNotNull())
            .orderBy(F.desc("latency_s")).limit(TOP_TIMES).collect()]
    for row in slow:
        app = by_app.get(row["app_id"]) or {}
        row["log"], row["name"] = app.get("log"), app.get("name")
    wanted = [r["signature"] for r in top[:REGRESSION_SIGNATURES]]
    series = [r.asDict() for r in frames["stages"].where(F.col("signature").isin(wanted))
              .repartition(partitions, "signature").groupBy("signature", "app_id", "app_start")
              .agg(F.sum("held_s").alias("held_s"), F.min(F.struct("start", "scope")).alias("first"))
              .orderBy("app_start").collect()]
    for row in series:  # a point opens its application where the signature's stage first held a time
        first = row.pop("first")
        row["log"], row["start"], row["scope"] = (by_app.get(row["app_id"]) or {}).get("log"), first.start, first.scope
    problems = sorted((a for a in applications if a["problems"]), key=lambda a: (a["readable"], a["app_id"]))[:200]
    totals = {"applications": len(applications), "unreadable": sum(1 for a in applications if not a["readable"])}
    html = render_report(top, slow, series, problems, totals, out)
    local = _local_path(out)
    target = (local / "report.html") if local is not None else Path("fleet-report.html").resolve()
    target.write_text(html, encoding="utf-8")
    return str(target), len(every)


def _local_path(out: str) -> Path | None:
    parsed = urlparse(out)
    if parsed.scheme in ("", "file"):
        return Path(unquote(parsed.path) if parsed.scheme else out)
    return None


# --- command line ---------------------------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add `fleet` to the `flowscope` CLI's subparsers."""
    p = subparsers.add_parser(
        "fleet",
        help="analyse a directory of Spark event logs on Spark: Parquet tables and an HTML report",
        description="Run the Spark model and the tracker over every application's event log under DIR (any "
                    "path Spark reads: local, hdfs://, s3a://), one application per Spark task, and write "
                    "Parquet tables (applications/, times/, stages/, stage_signatures/) and report.html under "
                    "OUT. Unreadable logs become application rows with their problems.")
    p.add_argument("directory", nargs="?", metavar="DIR",
                   help="the directory of event logs (files and eventlog_v2_ dirs): a path Spark reads (local, "
                        "hdfs://), or a store's URL (s3://, s3a://, gs://, abfs://, az://) listed and read through "
                        "fsspec")
    p.add_argument("-o", "--output", metavar="OUT", help="where the tables and report.html go (required with DIR)")
    p.add_argument("--master", metavar="URL",
                   help="Spark master (default local[*]; under spark-submit, spark-submit's)")
    p.add_argument("--no-report", action="store_true", help="write the tables only")
    p.add_argument("--build-zip", metavar="PATH",
                   help="instead of running: write flowscope's packages to the zip PATH for spark-submit's "
                        "--py-files, and print the spark-submit command")
    p.set_defaults(func=cmd_fleet)


# A local-mode JVM that this job starts runs briefly and does little of the work (the Python workers do): its C2
# compiler's warm-up costs more CPU than it saves (benchmarks/README.md has the figures), so it compiles with C1 only.
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


# Spark's console progress bar would be drawn over the job's own lines on stderr: off unless the user set it
CONSOLE_PROGRESS = "spark.ui.showConsoleProgress"


def user_configured(key: str, launching: bool) -> bool:
    """Whether the user set the Spark property `key` for this application.

    Under spark-submit (the JVM already started) Spark's own conf holds every --conf and spark-defaults.conf value; a
    JVM this job starts reads PYSPARK_SUBMIT_ARGS and spark-defaults.conf (in SPARK_CONF_DIR, else SPARK_HOME/conf, else
    pyspark's)."""
    if not launching:
        from pyspark.java_gateway import launch_gateway

        gateway = launch_gateway()  # connects to spark-submit's JVM: its system properties hold the user's conf
        try:
            return gateway.jvm.java.lang.System.getProperty(key) is not None
        finally:
            gateway.close()
    if any(arg.startswith(f"{key}=") for arg in shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", ""))):
        return True
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir:
        import pyspark

        conf_dir = str(Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent) / "conf")
    try:
        lines = (Path(conf_dir) / "spark-defaults.conf").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    return any(line.strip().replace("=", " ", 1).split(None, 1)[:1] == [key] for line in lines)


def build_session(master: str | None, conf: dict[str, str] | None = None) -> Any:
    """A SparkSession for the job.

    `master` if given; under spark-submit (which starts the gateway) whatever it set; otherwise local[*]. A local JVM
    started here gets `LOCAL_JVM_OPTIONS`; `conf` is set on the builder, and the console progress bar is off unless
    `conf` or the user's Spark configuration sets it."""
    from pyspark.sql import SparkSession

    launching = "PYSPARK_GATEWAY_PORT" not in os.environ  # no JVM yet: this builder starts it
    conf = dict(conf or {})
    if CONSOLE_PROGRESS not in conf and not user_configured(CONSOLE_PROGRESS, launching):
        conf[CONSOLE_PROGRESS] = "false"
    builder = SparkSession.builder.appName("flowscope fleet")
    for key, value in conf.items():
        builder = builder.config(key, value)
    if master:
        builder = builder.master(master)
    elif launching:
        builder = builder.master("local[*]")
        master = "local[*]"
    if (master or "").startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # local workers need this environment's packages
        if launching:
            builder = builder.config("spark.driver.extraJavaOptions", LOCAL_JVM_OPTIONS)
    return builder.getOrCreate()


def cmd_fleet(args: argparse.Namespace) -> int:
    if args.build_zip:
        return _build_zip(args.build_zip)
    if args.directory is None or args.output is None:
        print("flowscope fleet: DIR and -o OUT are required (or --build-zip PATH)", file=sys.stderr)
        return 2
    local = _local_path(args.directory)
    if local is not None and not local.exists():
        print(f"flowscope: {args.directory}: no such directory", file=sys.stderr)
        return 2
    if reads_through_stores(args.directory):
        try:
            stat(args.directory)
        except StoreError as exc:  # no such bucket or directory, a store that cannot be reached: one line
            print(f"flowscope: {exc}", file=sys.stderr)
            return 2
    from pyspark.errors import AnalysisException

    spark = build_session(args.master)
    try:
        summary = run_fleet(spark, args.directory, args.output, report=not args.no_report)
    except AnalysisException as exc:  # e.g. a remote directory that does not exist
        print(f"flowscope: {args.directory}: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print(f"flowscope: {summary.applications} applications ({summary.unreadable} unreadable), {summary.times} "
          f"completed times, {summary.stages} stage runs of {summary.signatures} signatures in "
          f"{summary.seconds:.1f} s -> {summary.out}", file=sys.stderr)
    if summary.skipped_files:
        print(f"flowscope: {summary.skipped_files} files are not event logs by their names and were skipped",
              file=sys.stderr)
    if summary.report:
        print(f"flowscope: report {summary.report}", file=sys.stderr)
    return 0


def _build_zip(target: str) -> int:
    from backend.fleet.pyfiles import build_zip, launcher_path

    try:
        names = build_zip(target)
    except OSError as exc:
        print(f"flowscope: {target}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"flowscope: {len(names)} modules -> {target}; run the fleet on a cluster with", file=sys.stderr)
    print(f"spark-submit --py-files {shlex.quote(target)} {shlex.quote(str(launcher_path()))} DIR -o OUT")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The same command without the flowscope CLI.

    What `backend/fleet/submit.py` (the script spark-submit runs) calls, so that everything the job pickles belongs to
    this importable module, never to `__main__`."""
    return run_subcommand("fleet", register, argv)


if __name__ == "__main__":  # pragma: no cover
    # run as a script this module would be `__main__`, whose classes the executors cannot unpickle
    sys.exit("flowscope fleet: run backend/fleet/submit.py, not job.py: spark-submit --py-files flowscope.zip "
             "backend/fleet/submit.py DIR -o OUT")
