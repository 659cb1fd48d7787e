"""The cores what-if: how long each job, micro-batch and the application would have taken with more or fewer cores.

Not the release what-if of ``tracker/analysis/whatif.py`` (which frontiers a released pointstamp would move): this one
re-runs Spark's scheduling of the recorded tasks on another number of task slots. The model (``docs/cores-whatif.md``):

* every recorded task attempt runs again for exactly the time it took (launch to end), failed and killed ones too;
* a stage attempt may start once the stage attempts it reads have completed (its recorded parents' latest
  attempts, and its own previous attempt), plus the delay the driver took then (its submission after the later of
  those completions and its job's start, as recorded), plus the scheduler's (its first task's launch after its
  submission, when a slot was free then);
* free slots go first-in-first-out, as Spark's default FIFO pool does: the ready stage of the lowest job id, then
  the lowest stage id, takes the next slot, its tasks in the order they were launched;
* the jobs that overlapped in the log (a *group*) start at the same offsets from the group's first as recorded;
  the driver's time between groups is kept, so a group that runs faster moves every later one earlier;
* a job ends when its last stage attempt completes, plus the time its end took after that in the log.

Per completed time (a job or micro-batch, as blame lists them) the estimate is its recorded latency with the span
of its jobs replaced by their simulated span; per application, the wall time with each group's span replaced. The
critical path is the same simulation with unbounded slots (every task starts as soon as its stage may); the
perfect-parallelism bound is the time outside jobs plus the total task time spread evenly over the slots.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from heapq import heappop, heappush
from typing import Any

from backend.spark.diagnosis.recorded_schedule import RecordedSchedule
from backend.spark.diagnosis.task_timeline import TaskTimeline

__all__ = ["ASSUMPTIONS", "parse_cores", "default_cores", "cores_whatif", "CoresSpec", "Rescheduler"]

ASSUMPTIONS = [
    "Tasks take the time they took: more cores make no task faster and fewer make none slower (no contention for "
    "CPU, memory, disk or network is modelled); shuffle fetch, GC and spill costs are taken as recorded.",
    "Every recorded task attempt runs again for its recorded duration, failed and killed ones included: retries, "
    "speculation and executor losses happen as they did.",
    "Slots are handed out first-in-first-out (lowest job id, then lowest stage id), any task on any free slot; a "
    "stage's first task waits as long after its submission as it did in the log while a slot was free, later ones "
    "not at all: locality waits, spark.task.cpus, the FAIR scheduler, executor start-up and dynamic allocation are "
    "not modelled otherwise; 'cores' are task slots in all (E executors x C cores = E*C).",
    "The driver's time is kept as recorded: before, between and after jobs and between a job's stages; jobs that "
    "overlapped in the log start at the same offsets from each other.",
    "A stage waits for the stages whose shuffle output it reads, as the log lists them; a stage whose output was "
    "reused (skipped) costs nothing.",
]


@dataclass(frozen=True)
class CoresSpec:
    """One core count asked for: ``label`` as given (``8`` or ``2x4``, executors x cores) and its task slots."""

    label: str
    slots: int


def parse_cores(text: str) -> list[CoresSpec]:
    """``2,4,8`` or ``2x4,4x4`` (executors x cores each): the core counts to simulate. A ValueError names the bad
    item."""
    out: list[CoresSpec] = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        try:
            parts = [int(p) for p in item.lower().split("x")]
        except ValueError:
            raise ValueError(f"{item!r}: give a number of cores (8) or executors x cores (2x4)") from None
        if len(parts) > 2 or any(p < 1 for p in parts):
            raise ValueError(f"{item!r}: give a positive number of cores (8) or executors x cores (2x4)")
        slots = parts[0] * (parts[1] if len(parts) == 2 else 1)
        out.append(CoresSpec(item.lower(), slots))
    if not out:
        raise ValueError("no core count given: e.g. 2,4,8,16")
    return out


def default_cores(recorded: int | None) -> list[CoresSpec]:
    """Half the recorded cores, the recorded count, twice and four times (2, 4, 8, 16 when the log names none)."""
    base = recorded or 4
    return [CoresSpec(str(n), n) for n in sorted({max(1, base // 2), base, base * 2, base * 4})]


class _Plan:
    """The recorded application, indexed for simulation: stage attempts as nodes with their task durations, their
    dependencies and driver delays, and the jobs grouped by overlap."""

    def __init__(self, schedule: RecordedSchedule, timeline: TaskTimeline) -> None:
        stages = schedule.stages
        keys = sorted(stages, key=lambda k: stages[k].order)
        self.index = {k: i for i, k in enumerate(keys)}
        n = len(keys)
        durations: list[list[float]] = [[] for _ in range(n)]
        rows: list[list[int]] = [[] for _ in range(n)]  # the task bar of each duration
        last_end = [-math.inf] * n
        end_of_data = schedule.last_at if schedule.last_at is not None else 0.0
        bars = timeline.index.bars
        launched, ended, stage_col, attempt_col = bars.launched, bars.ended, bars.stage, bars.stage_attempt
        order = sorted(range(len(launched)), key=launched.__getitem__)
        index = self.index
        first_launch = [math.inf] * n
        launches: list[float] = []  # every attempt's launch and end, sorted: how many ran at a moment
        ends: list[float] = []
        for row in order:
            end = ended[row]
            if end != end:  # still running: it has run at least until the last record
                end = max(end_of_data, launched[row])
            launches.append(launched[row])
            ends.append(end)
            i = index.get((stage_col[row], attempt_col[row]))
            if i is None:
                continue
            durations[i].append(max(0.0, end - launched[row]))
            rows[i].append(row)
            if end > last_end[i]:
                last_end[i] = end
            if launched[row] < first_launch[i]:
                first_launch[i] = launched[row]
        ends.sort()
        self.durations = durations
        self.rows = rows
        self.task_seconds = sum(map(sum, durations))
        self.tasks = sum(map(len, durations))
        jobs = schedule.jobs
        self.job_of = [stages[k].job for k in keys]
        self.priority = [(stages[k].job, k[0], k[1]) for k in keys]
        # dependencies: the latest attempt of each parent submitted before it, and its own previous attempt
        latest: dict[int, int] = {}
        deps: list[list[int]] = [[] for _ in range(n)]
        for i, k in enumerate(keys):
            st = stages[k]
            ds = {latest[p] for p in st.parents if p in latest}
            if k[1] > 0 and (k[0], k[1] - 1) in index:
                ds.add(index[(k[0], k[1] - 1)])
            deps[i] = sorted(ds)
            latest[k[0]] = i
        self.deps = deps
        children: list[list[int]] = [[] for _ in range(n)]
        for i, needed in enumerate(deps):
            for d in needed:
                children[d].append(i)
        self.children = children
        completed = [stages[k].completed for k in keys]
        # when each attempt completed: as recorded, else at its last task's end, else when it was submitted
        done_at: list[float] = [
            c if c is not None else (last_end[i] if last_end[i] > -math.inf else stages[k].submitted)
            for i, (k, c) in enumerate(zip(keys, completed, strict=True))]
        self.tail = [max(0.0, done_at[i] - last_end[i]) if last_end[i] > -math.inf else 0.0 for i in range(n)]
        # the driver's delay before each attempt (its submission after what it waited for), and the scheduler's:
        # from its submission to its first task's launch while a slot was free then (the recorded slots: the
        # executors' cores, else the most attempts that ran at once)
        slots = self.slots = schedule.peak_cores or _most_at_once(launches, ends)
        delay = []
        for i, k in enumerate(keys):
            st = stages[k]
            job = jobs.get(st.job)
            after = max([done_at[d] for d in deps[i]] + ([job.submitted] if job is not None else []), default=None)
            wait = max(0.0, st.submitted - after) if after is not None else 0.0
            first = first_launch[i]
            if first < math.inf and first > st.submitted:
                running = bisect_right(launches, st.submitted) - bisect_right(ends, st.submitted)
                if running < slots:
                    wait += first - st.submitted
            delay.append(wait)
        self.delay = delay
        # jobs and their groups: jobs whose recorded spans overlap run together
        self.job_nodes: dict[int, list[int]] = {}
        for i, j in enumerate(self.job_of):
            self.job_nodes.setdefault(j, []).append(i)
        spans = []
        for j, job in jobs.items():
            nodes = self.job_nodes.get(j, [])
            end = job.ended if job.ended is not None else max([done_at[i] for i in nodes] + [job.submitted])
            spans.append((job.submitted, end, j))
        spans.sort()
        self.job_span = {j: (s, e) for s, e, j in spans}
        # a job's tail: its end after its last stage attempt completed
        self.job_tail = {}
        for s, e, j in spans:
            nodes = self.job_nodes.get(j, [])
            last = max((done_at[i] for i in nodes), default=None)
            self.job_tail[j] = max(0.0, e - last) if last is not None else e - s
        groups: list[list[int]] = []
        group_span: list[list[float]] = []
        for s, e, j in spans:
            if groups and s < group_span[-1][1]:
                groups[-1].append(j)
                group_span[-1][1] = max(group_span[-1][1], e)
            else:
                groups.append([j])
                group_span.append([s, e])
        self.groups = groups
        self.group_of = {j: g for g, js in enumerate(groups) for j in js}
        self.group_span = [(s, e) for s, e in group_span]
        self.group_tasks = [sum(len(durations[i]) for j in js for i in self.job_nodes.get(j, ())) for js in groups]
        self._unbounded: dict[int, dict[int, float]] = {}  # group -> its jobs' ends with unbounded slots
        self.jobs_s = sum(e - s for s, e in self.group_span)
        self.job_task_s = {j: sum(sum(durations[i]) for i in nodes) for j, nodes in self.job_nodes.items()}

    def simulate(self, slots: int | None) -> dict[int, tuple[float, float]]:
        """Each job's (start, end) on the application's clock with ``slots`` task slots (None: unbounded). A group
        with no more tasks than slots runs as with unbounded slots: that answer is made once and reused."""
        out: dict[int, tuple[float, float]] = {}
        shift = 0.0
        unbounded, tasks = self._unbounded, self.group_tasks
        for g, jobs in enumerate(self.groups):
            g_start, g_end = self.group_span[g]
            if slots is None or slots >= tasks[g]:
                ends = unbounded.get(g)
                if ends is None:
                    ends = unbounded[g] = self._group(jobs, g_start, None)
            else:
                ends = self._group(jobs, g_start, slots)
            new_start = g_start + shift
            sim_end = 0.0
            for j in jobs:
                rel_start = self.job_span[j][0] - g_start
                rel_end = ends[j]
                out[j] = (new_start + rel_start, new_start + rel_end)
                sim_end = max(sim_end, rel_end)
            shift += sim_end - (g_end - g_start)
        return out

    def _group(self, jobs: list[int], g_start: float, slots: int | None,
               changed: dict[int, list[float]] | None = None) -> dict[int, float]:
        """Simulate one group from its start (0): each job's end, relative to the group's start (``changed``: other
        task durations for some stage attempts, by node)."""
        durations, deps, children, delay, tail, priority = (self.durations, self.deps, self.children, self.delay,
                                                            self.tail, self.priority)
        nodes = [i for j in jobs for i in self.job_nodes.get(j, [])]
        if changed:
            durations = {i: changed.get(i, durations[i]) for i in nodes}  # type: ignore[assignment]
        member = set(nodes)
        waiting = {i: sum(1 for d in deps[i] if d in member) for i in nodes}
        job_start = {j: self.job_span[j][0] - g_start for j in jobs}
        events: list[tuple[float, int, int, int]] = []  # (time, seq, kind, node): 0 ready, 1 task end, 2 done
        seq = 0
        for i in nodes:
            if not waiting[i]:
                heappush(events, (job_start[self.job_of[i]] + delay[i], seq, 0, i))
                seq += 1
        remaining = {i: len(durations[i]) for i in nodes}
        next_task = dict.fromkeys(nodes, 0)
        done: dict[int, float] = {}
        ready: list[tuple[tuple, int]] = []
        free = math.inf if slots is None else slots
        while events:
            t = events[0][0]
            while events and events[0][0] <= t:
                _, _, kind, i = heappop(events)
                if kind == 0:
                    if remaining[i]:
                        heappush(ready, (priority[i], i))
                    else:
                        heappush(events, (t + tail[i], seq, 2, i))
                        seq += 1
                elif kind == 1:
                    free += 1
                    remaining[i] -= 1
                    if not remaining[i]:
                        heappush(events, (t + tail[i], seq, 2, i))
                        seq += 1
                else:
                    done[i] = t
                    for c in children[i]:
                        if c in waiting:
                            waiting[c] -= 1
                            if not waiting[c]:
                                heappush(events, (max(t, job_start[self.job_of[c]]) + delay[c], seq, 0, c))
                                seq += 1
            while free > 0 and ready:
                _, i = ready[0]
                k = next_task[i]
                heappush(events, (t + durations[i][k], seq, 1, i))
                seq += 1
                free -= 1
                k += 1
                next_task[i] = k
                if k == len(durations[i]):
                    heappop(ready)
        ends: dict[int, float] = {}
        for j in jobs:
            ns = self.job_nodes.get(j, [])
            s0, e0 = self.job_span[j]
            if ns:
                ends[j] = max(done.get(i, job_start[j]) for i in ns) + self.job_tail[j]
            else:
                ends[j] = job_start[j] + (e0 - s0)
        return ends


def _most_at_once(launches: list[float], ends: list[float]) -> int:
    """The most task attempts running at once, from their sorted launches and ends (an end frees its slot before
    a launch at the same moment takes it)."""
    most = running = j = 0
    for t in launches:
        while j < len(ends) and ends[j] <= t:
            j += 1
            running -= 1
        running += 1
        most = max(most, running)
    return most


def _span(jobs: list[int], placed: dict[int, tuple[float, float]]) -> float | None:
    got = [placed[j] for j in jobs if j in placed]
    if not got:
        return None
    return max(e for _, e in got) - min(s for s, _ in got)


def cores_whatif(schedule: RecordedSchedule, timeline: TaskTimeline, cores: list[CoresSpec],
                 times: list[Any] | None = None, rescheduler: Rescheduler | None = None) -> dict:
    """The answer of ``flowscope whatif`` and ``GET .../cores-whatif`` (``docs/cores-whatif.md``): per completed
    time (``times``: blame's :class:`~backend.spark.diagnosis.blame.TimeBlame` list) and for the application, the
    estimated latency at each core count, the critical path and the perfect-parallelism bound (``rescheduler``:
    one made for the same schedule, whose indexed plan is reused)."""
    plan = rescheduler.plan if rescheduler is not None else _Plan(schedule, timeline)
    recorded = schedule.peak_cores or None
    by_slots: dict[int | None, dict[int, tuple[float, float]]] = {}
    for n in [c.slots for c in cores] + [None] + ([recorded] if recorded else []):
        if n not in by_slots:
            by_slots[n] = plan.simulate(n)
    runs = {c.label: by_slots[c.slots] for c in cores}
    unbounded = by_slots[None]
    at_recorded = by_slots[recorded] if recorded else None
    wall = schedule.wall_s
    outside = max(0.0, wall - plan.jobs_s)

    def app_estimate(placed: dict[int, tuple[float, float]]) -> float:
        shift = 0.0
        for g, jobs in enumerate(plan.groups):
            s0, e0 = plan.group_span[g]
            shift += max(placed[j][1] for j in jobs) - min(placed[j][0] for j in jobs) - (e0 - s0)
        return round(wall + shift, 6)

    out_times = []
    for b in times or []:
        jobs = [j for j in b.job_ids if j in plan.job_span]
        rec = _span(jobs, {j: plan.job_span[j] for j in jobs})
        row: dict[str, Any] = {"scope": b.scope, "name": b.name, "time": b.time, "job_ids": b.job_ids,
                               "batch_id": b.batch_id, "latency_s": b.latency_s}
        if rec is None:
            row["estimates_s"] = {c.label: None for c in cores}
            row["critical_path_s"] = None
            row["perfect_parallelism_s"] = {c.label: None for c in cores}
        else:
            base = b.latency_s - rec

            def est(placed: dict[int, tuple[float, float]], base: float = base, jobs: list[int] = jobs) -> float:
                return round(max(0.0, base + (_span(jobs, placed) or 0.0)), 6)

            row["estimates_s"] = {c.label: est(runs[c.label]) for c in cores}
            row["critical_path_s"] = est(unbounded)
            work = sum(plan.job_task_s.get(j, 0.0) for j in jobs)
            row["perfect_parallelism_s"] = {c.label: round(max(0.0, base) + work / c.slots, 6) for c in cores}
        out_times.append(row)
    application = {
        "wall_s": round(wall, 6),
        "estimates_s": {c.label: app_estimate(runs[c.label]) for c in cores},
        "critical_path_s": app_estimate(unbounded),
        "perfect_parallelism_s": {c.label: round(outside + plan.task_seconds / c.slots, 6) for c in cores},
        "slots": {c.label: c.slots for c in cores},
        "recorded_cores": recorded,
        "simulated_at_recorded_cores_s": app_estimate(at_recorded) if at_recorded is not None else None,
        "jobs": len(plan.job_span),
        "tasks": plan.tasks,
        "task_seconds": round(plan.task_seconds, 6),
        "outside_jobs_s": round(outside, 6),
    }
    assumptions = list(ASSUMPTIONS)
    if not plan.tasks:
        assumptions.insert(0, "No task was recorded (not a Spark application, or none ran yet): there is nothing to "
                              "simulate, every estimate is the recorded time.")
    if schedule.dropped_jobs:
        assumptions.append(f"Only the latest {len(schedule.jobs):,} jobs are simulated: the "
                           f"{schedule.dropped_jobs:,} before them are taken as recorded.")
    if recorded is None and plan.tasks:
        assumptions.append("The log names no executor cores: the recorded core count is unknown.")
    return {"cores": [c.slots if c.label.isdigit() else c.label for c in cores], "times": out_times,
            "application": application, "assumptions": assumptions}


class Rescheduler:
    """The recorded application rescheduled with some stage attempts' tasks taking other times, at the recorded
    cores: how much earlier a job or micro-batch would have ended (what a finding's impact is, from the same model
    and assumptions as the what-if). Each job group's recorded schedule is simulated once and kept."""

    def __init__(self, schedule: RecordedSchedule, timeline: TaskTimeline) -> None:
        self.plan = _Plan(schedule, timeline)
        self.bars = timeline.index.bars
        self._baseline: dict[int, dict[int, float]] = {}

    def task_rows(self, stage: int, attempt: int) -> list[int] | None:
        """The task bars of a stage attempt, in the order the simulation runs them (None: not simulated, such as
        a stage whose job the schedule dropped)."""
        i = self.plan.index.get((stage, attempt))
        return None if i is None else self.plan.rows[i]

    def durations(self, stage: int, attempt: int) -> list[float]:
        """The recorded durations of a stage attempt's tasks (launch to end), as the simulation runs them."""
        i = self.plan.index.get((stage, attempt))
        return [] if i is None else list(self.plan.durations[i])

    def gain(self, job_ids: list[int], stage: int, attempt: int, durations: list[float]) -> float | None:
        """Seconds by which the time of ``job_ids`` would end earlier had the stage attempt's tasks taken
        ``durations`` (None: the attempt or its job is not in the simulation). Never below 0: a list schedule can
        end later with shorter tasks (Graham's anomalies), which no change a finding recommends is meant to do."""
        plan = self.plan
        i = plan.index.get((stage, attempt))
        if i is None:
            return None
        g = plan.group_of.get(plan.job_of[i])
        if g is None:
            return None
        jobs, start = plan.groups[g], plan.group_span[g][0]
        slots = plan.slots or None
        before = self._baseline.get(g)
        if before is None:
            before = self._baseline[g] = plan._group(jobs, start, slots)
        after = plan._group(jobs, start, slots, {i: durations})
        mine = [j for j in job_ids if plan.group_of.get(j) == g]
        last = max((j for j in job_ids if j in plan.job_span), key=lambda j: plan.job_span[j][1], default=None)
        if mine and last in mine:  # the time ends in this group: its own jobs' ends
            earlier = max(before[j] for j in mine) - max(after[j] for j in mine)
        else:  # it ends in a later group, which starts earlier by what this group's span lost
            earlier = max(before.values()) - max(after.values())
        return round(max(0.0, earlier), 6)
