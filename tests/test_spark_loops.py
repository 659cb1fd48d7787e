"""Driver loops in the Spark model (backend/spark/model/loops.py, docs/spark-model.md "Loops"): the detection rule on
stage DAGs shaped like real ones, and the model's loop scope on small event sequences, replayed with the contract
checks. The real PageRank run is tests/test_fixtures_spark.py's."""

from __future__ import annotations

import json
import re

import pytest

from backend.eventlog import EventLogReader, find_logs
from backend.fleet.analyze import analyze_log
from backend.spark.diagnosis.blame import blame_log
from backend.spark.model.loops import JobCode, chain_positions, loop_key, plan_iteration, repeats, shuffle_writes
from backend.spark.model.spark_model import SparkModel
from backend.spark.recording.convert import SparkLogConversion
from flowscope.cli import main as cli
from tracker.progress_log.replay import Replay
from tracker.reachability import IN, OUT, Location

from .conftest import REPO, tracker_of

FIXTURES = REPO / "fixtures" / "spark"


def stage(sid: int, name: str, parents: tuple = (), rdds: tuple = (), scopes: tuple = (), tasks: int = 1) -> dict:
    """A JobStart ``Stage Infos`` entry: its RDDs are ``(id, call site)`` or ``(id, call site, parent RDD ids)``,
    each with the stage's scopes."""
    return {"Stage ID": sid, "Stage Attempt ID": 0, "Stage Name": name, "Parent IDs": list(parents),
            "Number of Tasks": tasks,
            "RDD Info": [{"RDD ID": rdd[0], "Name": "PythonRDD", "Callsite": rdd[1],
                          **({"Parent IDs": list(rdd[2])} if len(rdd) > 2 else {}),
                          "Scope": json.dumps({"id": str(rdd[0]), "name": scopes[i % len(scopes)]}) if scopes else None}
                         for i, rdd in enumerate(rdds)]}


def plan(infos: list[dict], skipped: set, known: tuple = ()):
    by_id = {i["Stage ID"]: i for i in infos}
    parents = {s: [p for p in i["Parent IDs"] if p in by_id] for s, i in by_id.items()}
    keys = {s: loop_key(i) for s, i in by_id.items()}
    return plan_iteration(keys, chain_positions(keys, parents), parents, skipped, set(known))


LINKS = stage(1, "groupByKey at pr.py:4", rdds=((3, "groupByKey at pr.py:4"),))
# iteration 1's reduce pipelines fewer RDDs than later ones (its ranks come from mapValues, not a reduce): the same
# lines of code, so the same loop key
REDUCE_1 = stage(2, "reduceByKey at pr.py:9", (1,), ((14, "reduceByKey at pr.py:9"), (8, "union at pr.py:8")))
REDUCE_2 = stage(3, "reduceByKey at pr.py:9", (1, 2),
                 ((23, "reduceByKey at pr.py:9"), (22, "reduceByKey at pr.py:9"), (21, "union at pr.py:8")))
COUNT_2 = stage(4, "count at pr.py:10", (3,), ((27, "count at pr.py:10"),))


def test_a_stage_applied_to_its_own_previous_output_is_a_loop_step():
    got = plan([LINKS, REDUCE_1, REDUCE_2, COUNT_2], skipped={1, 2})
    assert got is not None and got.key == loop_key(REDUCE_2)
    assert got.iteration == 1 and got.members == {2, 3}
    assert got.in_loop == {2: 0, 3: 1, 4: 1}  # the count runs in iteration 1 too; the cached links stay outside


def test_one_job_running_every_iteration_counts_them_all():
    r3 = stage(5, "reduceByKey at pr.py:9", (1, 3), ((32, "reduceByKey at pr.py:9"), (31, "union at pr.py:8")))
    c3 = stage(6, "count at pr.py:10", (5,), ((36, "count at pr.py:10"),))
    got = plan([LINKS, REDUCE_1, REDUCE_2, r3, c3], skipped=set())
    assert got is not None and got.iteration == 2
    assert got.in_loop == {2: 0, 3: 1, 5: 2, 6: 2}


def test_chained_stages_of_one_query_are_not_a_loop():
    """A DataFrame job names every stage after its action: the same name, other operators (scopes)."""
    scan = stage(1, "collect at q.py:3", rdds=((5, "collect at q.py:3"),), scopes=("Exchange", "Scan parquet"))
    agg = stage(2, "collect at q.py:3", (1,), ((9, "collect at q.py:3"),), scopes=("HashAggregate", "Exchange"))
    assert plan([scan, agg], skipped=set()) is None


def test_a_job_that_only_reads_the_loops_result_is_not_an_iteration():
    take = stage(5, "takeOrdered at pr.py:12", (3,), ((46, "takeOrdered at pr.py:12"),))
    assert plan([LINKS, REDUCE_1, REDUCE_2, take], skipped={1, 2, 3}, known=(loop_key(REDUCE_2),)) is None


def test_a_known_loop_started_again_is_its_iteration_zero():
    reduce_again = stage(7, "reduceByKey at pr.py:9", (1,), ((60, "reduceByKey at pr.py:9"), (58, "union at pr.py:8")))
    count = stage(8, "count at pr.py:10", (7,), ((62, "count at pr.py:10"),))
    assert plan([LINKS, reduce_again, count], skipped={1}) is None  # the first run: nothing repeats yet
    got = plan([LINKS, reduce_again, count], skipped={1}, known=(loop_key(REDUCE_2),))
    assert got is not None and got.iteration == 0 and got.in_loop == {7: 0, 8: 0}


def test_a_long_lineage_is_counted_without_recursion():
    n = 5000
    infos = [stage(i, "map at it.py:2", (i - 1,) if i else (), ((i, "map at it.py:2"),)) for i in range(n)]
    keys = {i["Stage ID"]: loop_key(i) for i in infos}
    parents = {i["Stage ID"]: list(i["Parent IDs"]) for i in infos}
    assert chain_positions(keys, parents)[n - 1] == n - 1


# --- the model, on small event sequences ------------------------------------------------------------------------


def job_start(job: int, at: int, infos: list[dict]) -> dict:
    return {"Event": "SparkListenerJobStart", "Job ID": job, "Submission Time": at, "Stage Infos": infos,
            "Properties": {"spark.jobGroup.id": "loop"}}


def run_stage(sid: int, at: int, task: int) -> list[dict]:
    info = {"Stage ID": sid, "Stage Attempt ID": 0, "Number of Tasks": 1}
    task_info = {"Task ID": task, "Index": 0, "Attempt": 0, "Launch Time": at + 1, "Finish Time": at + 5,
                 "Executor ID": "1", "Host": "h"}
    return [{"Event": "SparkListenerStageSubmitted", "Stage Info": {**info, "Submission Time": at}},
            {"Event": "SparkListenerTaskStart", "Stage ID": sid, "Stage Attempt ID": 0, "Task Info": task_info},
            {"Event": "SparkListenerTaskEnd", "Stage ID": sid, "Stage Attempt ID": 0,
             "Task End Reason": {"Reason": "Success"}, "Task Info": task_info},
            {"Event": "SparkListenerStageCompleted", "Stage Info": {**info, "Completion Time": at + 6}}]


def job_end(job: int, at: int) -> dict:
    return {"Event": "SparkListenerJobEnd", "Job ID": job, "Completion Time": at,
            "Job Result": {"Result": "JobSucceeded"}}


def replayed(events: list[dict]) -> tuple[SparkModel, Replay, list[dict]]:
    model = SparkModel()
    replay = Replay("loops", check_contracts=True)
    records = []
    for line, e in enumerate(events, start=1):
        for rec in model.feed(e, line):
            assert replay.apply(rec, line), replay.errors
            records.append(rec)
    replay.finish()
    return model, replay, records


def driver_loop(iterations: int) -> list[dict]:
    """A PageRank-shaped driver loop: job 0 builds the links and runs iteration 0; job k (1 <= k < iterations)
    lists the whole lineage again, with new stage ids, and runs only its own reduce and count."""
    events: list[dict] = [{"Event": "SparkListenerApplicationStart", "Timestamp": 1}]
    sid, at = 0, 1000
    for k in range(iterations):
        links = stage(sid, "groupByKey at pr.py:4", rdds=((3, "groupByKey at pr.py:4"),))
        infos, reduces = [links], []
        for i in range(k + 1):  # iteration i's reduce: reads the links (RDD 3) through RDD 8, the previous
            # iteration's output (RDD 10 + i - 1) through RDD 30 + i, and writes RDD 10 + i
            parents = (sid,) if i == 0 else (sid, sid + i)
            reads = [(8, "partitionBy at pr.py:9", [3])] + ([(30 + i, "partitionBy at pr.py:9", [10 + i - 1])] if i
                                                             else [])
            infos.append(stage(sid + 1 + i, "reduceByKey at pr.py:9", parents,
                               ((10 + i, "reduceByKey at pr.py:9", [9]), (9, "union at pr.py:8", [8]), *reads)))
            reduces.append(sid + 1 + i)
        count = sid + k + 2
        infos.append(stage(count, "count at pr.py:10", (reduces[-1],), (
            (100 + k, "count at pr.py:10", [30 + k + 1]), (30 + k + 1, "partitionBy at pr.py:9", [10 + k]))))
        events.append(job_start(k, at, infos))
        for s in ([sid] if k == 0 else []) + [reduces[-1], count]:
            events += run_stage(s, at, task=s)
            at += 10
        events.append(job_end(k, at))
        sid, at = count + 1, at + 10
    events.append({"Event": "SparkListenerApplicationEnd", "Timestamp": at})
    return events


@pytest.mark.parametrize("iterations", [3, 6])
def test_a_driver_loop_becomes_a_loop_scope_that_keeps_the_contract(iterations):
    model, replay, records = replayed(driver_loop(iterations))
    assert replay.errors == [] and replay.findings == [], [str(f) for f in replay.findings]
    (loop,) = [r for r in records if r["type"] == "scope" and r["depth"] == 2]
    assert loop["name"] == "loop: reduceByKey at pr.py:9" and loop["outputs"] == 1
    assert [model.jobs[k].iteration for k in range(iterations)] == [None, *range(1, iterations)]
    feedback = [r for r in records if r["type"] == "operator" and r.get("summary") == [[[[0, 1]]]]]
    assert len(feedback) == 1 and feedback[0]["scope"] == loop["path"]
    # the loop's operators do not grow with the iterations: driver, feedback, the reduce and the count
    assert len([r for r in records if r["type"] == "operator" and r["scope"] == loop["path"]]) == 4
    # every task of iteration i of job k runs at [k, i]
    times = {tuple(r["updates"][0][1]) for r in records
             if r["type"] == "progress" and r["scope"] == loop["path"] and (r.get("cause") or {}).get("task")}
    assert times == {(k, k) for k in range(1, iterations)}
    for scope in replay.state()["scopes"]:
        assert all(p["frontier"] == [] and p["pointstamps"] == [] for p in scope["ports"]), scope["name"]


def test_an_iteration_completes_with_its_last_task_and_blame_names_it():
    """The earlier iterations a job lists are skipped (their output RDDs were written): nothing of theirs holds
    the iteration, which completes when its count's last task ends, before the job's end."""
    events = driver_loop(4)
    _, _, records = replayed(events)
    count_done = {e["Stage ID"]: e["Task Info"]["Finish Time"] / 1000 for e in events
                  if e["Event"] == "SparkListenerTaskEnd"}
    job_of_count = {e["Job ID"]: e["Stage Infos"][-1]["Stage ID"] for e in events
                    if e["Event"] == "SparkListenerJobStart"}
    job_ends = {e["Job ID"]: e["Completion Time"] / 1000 for e in events if e["Event"] == "SparkListenerJobEnd"}
    loop_path = next(r["path"] for r in records if r["type"] == "scope" and r["depth"] == 2)
    blamed = {b.time: b for b in blame_log(records) if b.scope == loop_path}
    assert sorted(blamed) == [(k, k) for k in range(1, 4)]
    for (k, i), b in blamed.items():
        assert b.job_ids == [k] and b.iteration == i == b.to_json()["iteration"]
        assert b.end == pytest.approx(count_done[job_of_count[k]]) and b.end < job_ends[k]
        assert [s["kind"] for s in b.blame].count("task") == 2  # the reduce's task, then the count's
        assert all(tuple(s["holder"]["time"]) == (k, i) for s in b.blame)


# --- the real PageRank run (fixtures/spark/iterative_pagerank, made by make_fixtures.py) -------------------------

STEP = "reduceByKey at make_fixtures.py:109"


def pagerank_log():
    (log,) = find_logs(FIXTURES / "iterative_pagerank")
    return log


class PageRank:
    """The fixture converted and replayed with the contract checks; at each job's end, the loop's output frontier
    and what holds it."""

    def __init__(self) -> None:
        self.events = [ev.event for ev in EventLogReader(pagerank_log())]
        self.conversion = SparkLogConversion(pagerank_log())
        self.replay = Replay("pagerank", check_contracts=True)
        self.records: list[dict] = []
        self.job_ends: dict[int, tuple[int, int, list, list]] = {}  # job -> (epoch, iteration, frontier, holders)
        for rec in self.conversion:
            assert self.replay.apply(rec), self.replay.errors
            self.records.append(rec)
            if rec["type"] == "mark" and "status" in rec and "loop" in rec:
                self.replay.settle()
                loop = self.replay.root.find(rec["loop"])
                holders = [tuple(p["port"]) for p in loop.port_state() if p["pointstamps"]]
                self.job_ends[rec["job"]] = (rec["epoch"], rec["iteration"],
                                             list(tracker_of(loop).frontier(Location(0, IN, 0))), holders)
        self.replay.finish()
        self.model = self.conversion.model


_pagerank: list[PageRank] = []


def pagerank() -> PageRank:
    if not _pagerank:
        _pagerank.append(PageRank())
    return _pagerank[0]


def test_the_pagerank_iterations_are_counted_as_the_log_says():
    """The driver ran 4 iterations (the job group's description says so), one job each, and then one job reading
    the ranks. Job k lists the reduce of every iteration up to its own (the lineage) and runs only its own: the
    model numbers it k (the position of its reduce in that chain). Job 0, the first, repeats nothing yet: it stays
    in the region; jobs 1-3 are iterations 1-3 of the loop; the last job is none."""
    p = pagerank()
    starts = [e for e in p.events if e["Event"] == "SparkListenerJobStart"]
    said_match = re.search(r"(\d+) iterations", starts[0]["Properties"]["spark.job.description"])
    assert said_match is not None
    said = int(said_match.group(1))
    submitted = {e["Stage Info"]["Stage ID"] for e in p.events if e["Event"] == "SparkListenerStageSubmitted"}
    runs_step = [e["Job ID"] for e in starts
                 if any(i["Stage Name"] == STEP and i["Stage ID"] in submitted for i in e["Stage Infos"])]
    assert len(runs_step) == said == 4
    listed = {e["Job ID"]: sum(i["Stage Name"] == STEP for i in e["Stage Infos"]) for e in starts}
    iterations = {j: job.iteration for j, job in p.model.jobs.items()}
    assert iterations == {j: (listed[j] - 1 if j in runs_step[1:] else None) for j in listed}
    assert [iterations[j] for j in runs_step] == [None, 1, 2, 3]
    marks = [m for m in p.replay.marks if m["label"].startswith("job ") and " started " in m["label"]]
    assert [m["label"] for m in marks][1:4] == [f"job {j} started (epoch {j}, iteration {j})" for j in (1, 2, 3)]
    assert p.replay.findings == [] and p.model.uncertain == []


def test_the_pagerank_loop_scope_and_its_feedback():
    p = pagerank()
    region = next(s for s in p.replay.root.scopes() if s.name == "job group pagerank")
    (loop,) = [s for s in p.replay.root.scopes() if s.domain.depth == 2]
    assert loop.path[:-1] == region.path and loop.name == f"loop: {STEP}" and (loop.inputs, loop.outputs) == (0, 1)
    names = sorted(op.name for op in loop.children.values())
    assert names == sorted(["driver (next iteration)", "feedback (next iteration)", STEP,
                            "count at make_fixtures.py:110"])  # one operator per stage, whatever the iterations
    step = next(n for n, op in loop.children.items() if op.name == STEP)
    feedback = next(n for n, op in loop.children.items() if op.attrs.get("role") == "feedback")
    summaries = loop.path_summaries_to(Location(step, IN, 1))
    assert list(summaries[Location(step, OUT, 0)]) == [(0, 1)]  # around the loop: one iteration on
    assert loop.targets_of(Location(feedback, OUT, 0)) == [Location(step, IN, 1)]
    # the loop's results go to the region's driver: the region's view of the loop is one operator
    assert region.targets_of(Location(loop.path[-1], OUT, 0)) == [Location(2, IN, 0)]


def test_the_pagerank_frontiers_pass_each_iteration_at_its_end():
    p = pagerank()
    assert sorted(p.job_ends) == [1, 2, 3]
    for job, (epoch, iteration, frontier, holders) in p.job_ends.items():
        assert (epoch, iteration) == (job, job)
        # only the loop's driver holds: the next job's epoch, iteration 0; nothing of [epoch, iteration] is left
        assert frontier == [(epoch + 1, 0)] and holders == [("out", 1, 0)], (job, frontier, holders)
    # every task ran at its job's [epoch, iteration], in the loop
    loop_path = next(r["path"] for r in p.records if r["type"] == "scope" and r["depth"] == 2)
    stage_job = {r["value"]["stage"]: r["value"]["job"] for r in p.records
                 if r["type"] == "detail" and (r["value"] or {}).get("kind") == "stage"}
    tasks = [r for r in p.records if r["type"] == "detail" and (r["value"] or {}).get("kind") == "task"
             and r["scope"] == loop_path]
    assert len(tasks) == 3 * 4  # three iterations, each a 2-task reduce and a 2-task count
    for r in tasks:
        job = stage_job[r["value"]["stage"]]
        assert r["time"] == [job, p.model.jobs[job].iteration]


def test_pagerank_blame_and_explain_name_the_iteration(tmp_path, capsys):
    p = pagerank()
    loop_path = next(r["path"] for r in p.records if r["type"] == "scope" and r["depth"] == 2)
    blamed = blame_log(p.records)
    in_loop = {b.time: b for b in blamed if b.scope == loop_path}
    assert sorted(in_loop) == [(1, 1), (2, 2), (3, 3)]
    for (epoch, iteration), b in in_loop.items():
        assert b.job_ids == [epoch] and b.iteration == iteration
        tasks = [s for s in b.blame if s["kind"] == "task"]
        stages = {s["holder"]["stage"] for s in tasks}
        runs = {e["Stage Info"]["Stage ID"] for e in p.events if e["Event"] == "SparkListenerStageSubmitted"}
        job_stages = next(e["Stage Infos"] for e in p.events
                          if e["Event"] == "SparkListenerJobStart" and e["Job ID"] == epoch)
        assert stages == {i["Stage ID"] for i in job_stages if i["Stage ID"] in runs}  # its reduce, its count
    # the region blames the jobs outside the loop only: the first iteration and the last read
    assert sorted(b.time for b in blamed if b.scope == loop_path[:1]) == [0, 4]

    assert cli(["blame", str(pagerank_log().path)]) == 0
    out = capsys.readouterr().out
    assert "time [2, 2] (job 2, iteration 2) took" in out
    assert cli(["blame", str(pagerank_log().path), "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["times"]
    assert sorted((e["time"], e["iteration"]) for e in entries if e["scope"] == loop_path) == [
        ([1, 1], 1), ([2, 2], 2), ([3, 3], 3)]

    progress = tmp_path / "pagerank.jsonl"
    assert cli(["record", "-q", str(pagerank_log().path), "-o", str(progress)]) == 0
    capsys.readouterr()
    # the batch after iteration 2's reduce started its tasks: explain the loop's output there
    at = next(i for i, r in enumerate((r for r in p.records if r["type"] == "progress"), start=1)
              if (r.get("cause") or {}).get("event") == "TaskEnd" and r["scope"] == loop_path
              and r["updates"][0][1] == [2, 2])
    assert cli(["explain", str(progress), "--scope", json.dumps(loop_path), "--port", "in,0,0",
                "--at", str(at - 1)]) == 0
    text = capsys.readouterr().out
    assert "time [2,2]" in text and f"({STEP}) at [2,2] (job 2, iteration 2): 2 running" in text, text


def test_the_fleet_rows_of_pagerank_iterations_carry_the_loops_blame():
    """The fleet's time rows are the region's jobs; an iteration's blame and stages are in the loop's scope, at
    [epoch, iteration]: they are the row's of the job's epoch."""
    rows = analyze_log(pagerank_log())
    by_job = {t["job_ids"][0]: t for t in rows.times}
    loop_stages = [s for s in rows.stages if s["region_kind"] == "loop"]
    assert sorted((s["time"], s["name"]) for s in loop_stages) == sorted(
        (k, name) for k in (1, 2, 3) for name in (STEP, "count at make_fixtures.py:110"))
    for k in (1, 2, 3):
        row = by_job[k]
        assert row["culprit"].startswith("task: ") and ("reduceByKey" in row["culprit"] or "count" in row["culprit"])
        assert 0 < row["blame_task_s"] <= row["latency_s"]


def test_two_shuffles_of_one_rdd_are_two_outputs():
    """Scala's ``pairs.reduceByKey`` and then ``pairs.groupByKey``: both map stages end at ``pairs`` (RDD 5) but
    write different shuffles (read through RDDs 6 and 7): the second job's map stage is not skipped, runs, and keeps
    the contract; the first job's again (the same shuffle, read through RDD 6) is skipped."""
    def job(j: int, sid: int, reduce_rdd: int, run: bool) -> list[dict]:
        infos = [stage(sid, "map at p.scala:3", rdds=((5, "map at p.scala:3", [4]), (4, "textFile at p.scala:2"))),
                 stage(sid + 1, f"collect at p.scala:{reduce_rdd}", (sid,),
                       ((reduce_rdd, "reduce at p.scala:4", [5]),))]
        at = 1000 * (j + 1)
        return [job_start(j, at, infos), *(run_stage(sid, at, sid) if run else []),
                *run_stage(sid + 1, at + 10, sid + 1), job_end(j, at + 20)]
    events = [*job(0, 0, 6, True), *job(1, 2, 7, True), *job(2, 4, 6, False),
              {"Event": "SparkListenerApplicationEnd", "Timestamp": 9000}]
    assert shuffle_writes(events[0]["Stage Infos"][0], events[0]["Stage Infos"][1:]) == {(5, 6)}
    model, replay, _ = replayed(events)
    assert replay.findings == [] and replay.errors == [] and model.uncertain == []
    assert model.summary().stages[(4, 0)] == "SKIPPED" and model.summary().stages[(2, 0)] == "COMPLETE"
    assert all(j.iteration is None for j in model.jobs.values())


def test_cli_blame_of_a_region_with_nested_lists_its_loops_iterations(capsys):
    p = pagerank()
    loop_path = next(r["path"] for r in p.records if r["type"] == "scope" and r["depth"] == 2)
    log = str(pagerank_log().path)
    assert cli(["blame", log, "--scope", json.dumps(loop_path[:1]), "--json"]) == 0
    assert sorted(e["time"] for e in json.loads(capsys.readouterr().out)["times"]) == [0, 4]
    assert cli(["blame", log, "--scope", json.dumps(loop_path[:1]), "--nested", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)["times"]
    assert sorted((e["scope"], e["iteration"]) for e in entries if e["iteration"] is not None) == [
        (loop_path, 1), (loop_path, 2), (loop_path, 3)]
    assert len(entries) == 5


# --- loops that do not chain: iterations by repetition (k-means) -------------------------------------------------


def kmeans_loop(iterations: int, overlap: bool = False, same_data: bool = False) -> list[dict]:
    """A k-means-shaped driver loop in one job group: job 0 caches the points (RDD 0); job k (1 <= k <= iterations)
    maps them with the driver's centers and reduces (new RDDs each time, none read from another iteration), then
    collects. ``overlap``: each job starts before the previous one ends; ``same_data``: every job computes the same
    RDDs (the same action on the same data again: from the second on, the map stage's shuffle is there, skipped)."""
    events: list[dict] = [{"Event": "SparkListenerApplicationStart", "Timestamp": 1}]
    at = 1000
    events.append(job_start(0, at, [stage(0, "count at km.py:3", rdds=((1, "count at km.py:3"), (0, "parallelize")))]))
    events += run_stage(0, at, task=0)
    at += 10
    events.append(job_end(0, at))
    pending_end = None
    for k in range(1, iterations + 1):
        r = 10 if same_data else 10 * k
        infos = [stage(2 * k, "reduceByKey at km.py:8", rdds=((r + 2, "reduceByKey at km.py:8"),
                                                               (r + 1, "map at km.py:7"), (0, "parallelize"))),
                 stage(2 * k + 1, "collectAsMap at km.py:9", (2 * k,),
                       ((r + 5, "collectAsMap at km.py:9"), (r + 4, "partitionBy at km.py:8")))]
        at += 10
        events.append(job_start(k, at, infos))
        if pending_end is not None:
            events.append(pending_end)
        for s in (2 * k, 2 * k + 1) if not (same_data and k > 1) else (2 * k + 1,):  # Spark skips a shuffle
            events += run_stage(s, at, task=s)                                         # it has already written
            at += 10
        pending_end = job_end(k, at)
        if not overlap:
            events.append(pending_end)
            pending_end = None
    if pending_end is not None:
        events.append(pending_end)
    events.append({"Event": "SparkListenerApplicationEnd", "Timestamp": at + 10})
    return events


def test_a_loop_whose_iterations_do_not_chain_is_a_loop_by_repetition():
    model, replay, records = replayed(kmeans_loop(4))
    assert replay.errors == [] and replay.findings == [], [str(f) for f in replay.findings]
    (loop,) = [r for r in records if r["type"] == "scope" and r["depth"] == 2]
    assert loop["name"] == "loop: reduceByKey at km.py:8"
    # job 0 caches, job 1 is the first iteration (nothing repeats yet: it stays in the region), 2-4 repeat it
    assert [model.jobs[k].iteration for k in range(5)] == [None, None, 1, 2, 3]
    assert sorted(r["name"] for r in records if r["type"] == "operator" and r["scope"] == loop["path"]) == [
        "collectAsMap at km.py:9", "driver (next iteration)", "feedback (next iteration)", "reduceByKey at km.py:8"]
    times = {tuple(r["updates"][0][1]) for r in records
             if r["type"] == "progress" and r["scope"] == loop["path"] and (r.get("cause") or {}).get("task")}
    assert times == {(2, 1), (3, 2), (4, 3)}
    for scope in replay.state()["scopes"]:
        assert all(p["frontier"] == [] and p["pointstamps"] == [] for p in scope["ports"]), scope["name"]
    blamed = {b.time: b for b in blame_log(records) if b.scope == loop["path"]}
    assert sorted(blamed) == [(2, 1), (3, 2), (4, 3)] and all(b.job_ids == [b.time[0]] for b in blamed.values())


@pytest.mark.parametrize("shape", [{"overlap": True}, {"same_data": True}])
def test_concurrent_jobs_and_the_same_data_again_are_not_a_loop(shape):
    """Jobs that overlap (threads) are not a driver's sequence; the same RDDs computed again are a re-run, not an
    iteration (adaptive SQL's jobs list their earlier query stage again, writing the same RDD)."""
    model, replay, records = replayed(kmeans_loop(4, **shape))
    assert replay.errors == [] and replay.findings == []
    assert not [r for r in records if r["type"] == "scope" and r["depth"] == 2]
    assert all(job.iteration is None for job in model.jobs.values())


def test_a_repetition_needs_the_same_code_new_data_and_something_shared():
    base = JobCode(frozenset({"k1", "k2"}), frozenset({3, 6}), frozenset({0, 1, 2, 3, 4, 5, 6}))
    assert repeats(base, JobCode(base.keys, frozenset({8, 11}), frozenset({0, 7, 8, 9, 10, 11})))
    assert not repeats(None, base)
    assert not repeats(base, JobCode(frozenset({"k1"}), frozenset({8}), frozenset({0, 8})))  # other code
    assert not repeats(base, JobCode(base.keys, frozenset({6, 11}), frozenset({0, 6, 11})))  # an output again
    assert not repeats(base, JobCode(base.keys, frozenset({8, 11}), frozenset({7, 8, 9, 10, 11})))  # nothing shared


def test_the_real_kmeans_run_iterates_by_repetition(capsys):
    """fixtures/spark/iterative_kmeans (make_fixtures.py): job 0 caches the points, jobs 1-4 are the 4 iterations
    (each reads the cached points; the driver carries the centers), job 5 counts the centers. Jobs 2-4 are
    iterations 1-3 of the loop; the contract checker finds nothing; blame names each iteration in the loop."""
    (log,) = find_logs(FIXTURES / "iterative_kmeans")
    events = [ev.event for ev in EventLogReader(log)]
    starts = [e for e in events if e["Event"] == "SparkListenerJobStart"]
    said_match = re.search(r"(\d+) iterations", starts[0]["Properties"]["spark.job.description"])
    assert said_match is not None
    said = int(said_match.group(1))
    runs = [e["Job ID"] for e in starts if any(i["Stage Name"].startswith("reduceByKey") for i in e["Stage Infos"])]
    assert runs == [1, 2, 3, 4] and len(runs) == said
    records = list(SparkLogConversion(log))
    model_jobs = {}
    replay = Replay("kmeans", check_contracts=True)
    for rec in records:
        assert replay.apply(rec), replay.errors
        if rec["type"] == "mark" and "job" in rec and " started " in rec["label"]:
            model_jobs[rec["job"]] = rec.get("iteration")
    replay.finish()
    assert replay.findings == []
    assert model_jobs == {0: None, 1: None, 2: 1, 3: 2, 4: 3, 5: None}
    (loop,) = [r for r in records if r["type"] == "scope" and r["depth"] == 2]
    assert loop["name"] == "loop: reduceByKey at make_fixtures.py:138"
    blamed = blame_log(records)
    in_loop = sorted((b.time, b.iteration, b.job_ids) for b in blamed if b.scope == loop["path"])
    assert in_loop == [((2, 1), 1, [2]), ((3, 2), 2, [3]), ((4, 3), 3, [4])]
    assert cli(["blame", str(log.path), "--scope", json.dumps(loop["path"][:1]), "--nested"]) == 0
    assert "(job 3, iteration 2) took" in capsys.readouterr().out


def test_a_nested_loop_is_its_inner_loop_restarting_each_outer_step():
    """A loop in a loop (for each of 2 outer steps: 3 k-means iterations, then an evaluation job): the events are a
    flat sequence of jobs, so the inner loop is the loop scope and each outer step starts it again at iteration 0
    (docs/spark-model.md, "Loops", limits); the outer steps are the region's epochs in between."""
    events: list[dict] = [{"Event": "SparkListenerApplicationStart", "Timestamp": 1}]
    at, job, sid, rdd = 1000, 0, 0, 10

    def run(infos: list[dict]) -> None:
        nonlocal at, job, sid
        events.append(job_start(job, at, infos))
        for info in infos:
            events.extend(run_stage(info["Stage ID"], at, task=info["Stage ID"]))
            at += 10
        events.append(job_end(job, at))
        job, sid, at = job + 1, sid + len(infos), at + 10

    run([stage(0, "count at km.py:3", rdds=((1, "count at km.py:3"), (0, "parallelize")))])
    for _outer in range(2):
        for _inner in range(3):
            run([stage(sid, "reduceByKey at km.py:8", rdds=((rdd + 2, "reduceByKey at km.py:8"),
                                                            (rdd + 1, "map at km.py:7"), (0, "parallelize"))),
                 stage(sid + 1, "collectAsMap at km.py:9", (sid,), ((rdd + 5, "collectAsMap at km.py:9"),))])
            rdd += 10
        run([stage(sid, "count at km.py:12", rdds=((rdd + 1, "count at km.py:12"), (0, "parallelize")))])
        rdd += 10
    events.append({"Event": "SparkListenerApplicationEnd", "Timestamp": at})
    model, replay, records = replayed(events)
    assert replay.errors == [] and replay.findings == []
    assert [model.jobs[j].iteration for j in range(job)] == [None, None, 1, 2, None, 0, 1, 2, None]
    assert len([r for r in records if r["type"] == "scope" and r["depth"] == 2]) == 1  # one loop, not nested
