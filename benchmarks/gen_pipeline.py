"""Generate a large, contract-valid progress log: a long root-scope pipeline with a feedback loop.

What it writes (format v1, see docs/progress-log.md), for ``operators = N`` nodes in the root scope::

    1 input --> 2 concat --> 3 --> 4 --> ... --> N-2 (loop exit) --> N-1 sink
                  ^ in 1                            | out 1
                  +-------- N feedback (+1) <-------+

* ``input`` holds a capability; starting epoch ``e`` is one batch that sends a record at ``e`` and downgrades the
  capability from ``e`` to ``e + 1`` (the last batch drops it).
* ``concat`` has two inputs: fresh records from ``input`` and records fed back by ``feedback``.
* Stages ``3 .. N-3`` are maps (consume at ``in(k)`` and produce at ``in(k+1)`` in one batch), except every
  ``stateful_every``-th stage, a "reduce" that holds a capability: one batch consumes the record and takes a
  capability at the same time, a later batch produces downstream and drops the capability.
* The loop exit ``N-2`` sends every record on to the sink; a *fresh* record is also sent round the loop, through
  ``feedback`` (summary ``+1``: the record re-enters ``concat`` at ``e + 1`` as state carried into the next
  epoch, and runs through the loop body once more, then only to the sink). So each epoch's data crosses the loop
  twice, which gives about ``2 * N`` batches per epoch: ~120k batches for 200 operators x 300 epochs.

Why this shape: epochs *march* through it. A new epoch starts every ``ceil(loop length / in_flight)`` steps, so
about ``in_flight`` fresh records (plus as many fed-back ones) are spread along the pipeline at any moment, and
in each step every live record moves exactly one operator (one batch, oldest epoch first). A batch therefore
changes the frontier at a handful of ports around the record it moves, whatever the pipeline's length: the
point the scaling benchmark makes. The feedback edge makes the root scope cyclic (every port in the loop is
held at ``e + 1`` by any record of epoch ``e`` inside it), which is the case incremental propagation must get
right, and it is why the log is contract-valid only if the feedback's summary is really ``+1``.

Every batch keeps the progress contract (consume and capture together, produce only under a capability or a
consumed message), every count returns to zero, and every frontier ends empty:
``flowscope frontiers LOG --check`` reports zero findings.

Usage::

    .venv/bin/python benchmarks/gen_pipeline.py OUT.jsonl [--operators 200] [--epochs 300] [--in-flight 4]
    .venv/bin/python benchmarks/gen_pipeline.py benchmarks/out/p.jsonl.zst   # compressed by suffix (.gz, .zst)

or ``from gen_pipeline import write_pipeline`` (returns counts of what was written).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tracker.progress_log.log_file import ProgressLogWriter  # noqa: E402

__all__ = ["write_pipeline", "default_path"]

ROOT: list[int] = []
T0 = 1_767_225_600.0  # fixed wall clock, so the file is reproducible byte for byte
TICK = 0.001  # seconds of "wall clock" per batch


def default_path(operators: int, epochs: int, in_flight: int = 4, suffix: str = ".jsonl") -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "out", f"pipeline_{operators}x{epochs}_f{in_flight}{suffix}")


def write_pipeline(
    path: str,
    operators: int = 200,
    epochs: int = 300,
    in_flight: int = 4,
    stateful_every: int = 25,
    marks: bool = True,
) -> dict:
    """Write the pipeline log to ``path`` (compressed by suffix); return counts (batches, lines, steps, ...)."""
    n = operators
    if n < 5:
        raise ValueError("the pipeline needs at least 5 operators (input, concat, one stage, sink, feedback)")
    if epochs < 1 or in_flight < 1:
        raise ValueError("epochs and in_flight must be at least 1")
    INPUT, CONCAT, EXIT, SINK, FEEDBACK = 1, 2, n - 2, n - 1, n
    stages = range(3, EXIT)  # maps and reduces, then the loop exit
    stateful = {k for k in stages if stateful_every and (k - 2) % stateful_every == 0}
    names = {INPUT: "input", CONCAT: "concat", EXIT: "loop exit", SINK: "sink", FEEDBACK: "feedback"}
    for k in stages:
        names[k] = f"reduce {k}" if k in stateful else f"map {k}"
    causes = {k: {"operator": name, "node": k} for k, name in names.items()}

    counts: dict[str, Any] = {"operators": n, "epochs": epochs, "in_flight": in_flight, "batches": 0, "marks": 0,
                              "steps": 0}
    with ProgressLogWriter(path, source=f"benchmarks/gen_pipeline.py {n} operators x {epochs} epochs",
                           created="2026-01-01T00:00:00Z") as log:
        def batch(updates: list, node: int) -> None:
            log.progress(ROOT, updates, worker=0, at=round(T0 + counts["batches"] * TICK, 3), cause=causes[node])
            counts["batches"] += 1

        def mark(label: str) -> None:
            if marks:
                log.mark(label, at=round(T0 + counts["batches"] * TICK, 3), scope=ROOT)
                counts["marks"] += 1

        # --- structure ---
        log.operator(ROOT, INPUT, names[INPUT], inputs=0, outputs=1, capabilities=[[0]], attrs={"kind": "source"})
        log.operator(ROOT, CONCAT, names[CONCAT], inputs=2, outputs=1)
        for k in stages:
            log.operator(ROOT, k, names[k], attrs={"kind": "reduce" if k in stateful else "map"})
        log.operator(ROOT, EXIT, names[EXIT], inputs=1, outputs=2)
        log.operator(ROOT, SINK, names[SINK], inputs=1, outputs=0)
        log.operator(ROOT, FEEDBACK, names[FEEDBACK], summary=[[[1]]], attrs={"kind": "feedback"})
        log.edge(ROOT, ("out", INPUT, 0), ("in", CONCAT, 0))
        log.edge(ROOT, ("out", CONCAT, 0), ("in", 3, 0))
        for k in stages:
            log.edge(ROOT, ("out", k, 0), ("in", k + 1, 0))
        log.edge(ROOT, ("out", EXIT, 0), ("in", SINK, 0))
        log.edge(ROOT, ("out", EXIT, 1), ("in", FEEDBACK, 0))
        log.edge(ROOT, ("out", FEEDBACK, 0), ("in", CONCAT, 1))

        # --- progress: each live record is a generator that writes one batch per step ---
        def record(t: int, port: int, fresh: bool) -> Iterator[None]:
            """A record at time t entering concat's input ``port``; fresh records also go round the loop."""
            batch([(("in", CONCAT, port), t, -1), (("in", 3, 0), t, 1)], CONCAT)
            yield
            for k in stages:
                if k in stateful:
                    batch([(("in", k, 0), t, -1), (("out", k, 0), t, 1)], k)  # consume, hold a capability
                    yield
                    batch([(("out", k, 0), t, -1), (("in", k + 1, 0), t, 1)], k)  # produce, release it
                else:
                    batch([(("in", k, 0), t, -1), (("in", k + 1, 0), t, 1)], k)
                yield
            if fresh:
                batch([(("in", EXIT, 0), t, -1), (("in", SINK, 0), t, 1), (("in", FEEDBACK, 0), t, 1)], EXIT)
                spawn.append(sink(t))
                yield
                batch([(("in", FEEDBACK, 0), t, -1), (("in", CONCAT, 1), t + 1, 1)], FEEDBACK)
                yield
                yield from record(t + 1, 1, False)
            else:
                batch([(("in", EXIT, 0), t, -1), (("in", SINK, 0), t, 1)], EXIT)
                yield
                yield from sink(t)

        def sink(t: int) -> Iterator[None]:
            batch([(("in", SINK, 0), t, -1)], SINK)
            yield

        loop_length = EXIT - CONCAT + 1 + len(stateful)  # steps a record spends in the loop body
        spacing = max(1, -(-loop_length // in_flight))
        running: list[Iterator[None]] = []
        spawn: list[Iterator[None]] = []
        next_epoch, step = 0, 0
        while next_epoch < epochs or running:
            if next_epoch < epochs and step >= next_epoch * spacing:
                e = next_epoch
                batch([(("out", INPUT, 0), e, -1), (("out", INPUT, 0), e + 1, 1), (("in", CONCAT, 0), e, 1)], INPUT)
                mark(f"epoch {e} started")
                running.append(record(e, 0, True))
                next_epoch += 1
                if next_epoch == epochs:
                    batch([(("out", INPUT, 0), epochs, -1)], INPUT)
                    mark("input closed")
            # Oldest first: records were appended in start order, so downstream records move first.
            alive = []
            for gen in running:
                if next(gen, StopIteration) is not StopIteration:
                    alive.append(gen)
                if spawn:
                    alive.extend(spawn)
                    spawn.clear()
            running = alive
            step += 1
        counts["steps"] = step
    counts["lines"] = 1 + 2 * n + counts["batches"] + counts["marks"]  # header, n operators, n edges, ...
    counts["path"] = path
    counts["bytes"] = os.path.getsize(path)
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("output", nargs="?", help="output path (.jsonl, .jsonl.gz, .jsonl.zst); default benchmarks/out/...")
    ap.add_argument("--operators", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--in-flight", type=int, default=4, help="fresh epochs spread along the loop at once (default 4)")
    ap.add_argument("--stateful-every", type=int, default=25, help="every k-th stage holds a capability (0: none)")
    ap.add_argument("--no-marks", action="store_true", help="write no mark records")
    args = ap.parse_args(argv)
    path = args.output or default_path(args.operators, args.epochs, args.in_flight)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    start = time.perf_counter()
    c = write_pipeline(path, args.operators, args.epochs, args.in_flight, args.stateful_every, not args.no_marks)
    print(f"wrote {path}: {c['batches']} batches, {c['marks']} marks, {c['bytes'] / 1e6:.1f} MB "
          f"({c['operators']} operators, {c['epochs']} epochs, {c['steps']} steps) "
          f"in {time.perf_counter() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
