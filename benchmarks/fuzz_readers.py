"""Seeded mutation fuzz of every public entry point: many damaged progress logs and Spark event logs, counting per
entry point what ran to the end, what was refused with a clear error, and what crashed, hung or lost lines silently.

The mutations are tests/fuzz_inputs.py's (bit flips, truncation, wrong-typed fields, huge numbers, deep nesting,
damaged gzip/zstd streams, over the shipped fixtures); the entry points and verdicts are tests/fuzz_entry_points.py's:
progress logs through ``flowscope frontiers``, a server session and follow mode (the file written in pieces while
followed); Spark logs through ``flowscope record``, a server session, follow mode (``.inprogress`` written in pieces,
then finalized), the live feed and the ingest port (a real TCP connection on 127.0.0.1). tests/test_hardening.py
runs a few dozen of the same in the suite. Each case has ``--case-seconds`` at most (then it counts as hung).

Run (about 2 minutes each on a quiet machine; vary the seed for more)::

    .venv/bin/python benchmarks/fuzz_readers.py                     # 400 progress logs, 100 Spark logs, seed 0
    .venv/bin/python benchmarks/fuzz_readers.py --progress 1000 --spark 0 --seed 7
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz_entry_points import (  # noqa: E402
    PROGRESS_ENTRY_POINTS,
    SPARK_ENTRY_POINTS,
    Hung,
    IngestPort,
    run_checked,
)
from tests.fuzz_inputs import progress_mutation, spark_mutation  # noqa: E402

VERDICTS = ("ok", "refused", "crashed", "hung", "lost")


def _alarm(signum: int, frame: Any) -> None:
    raise Hung()


def run(progress: int, spark: int, seed: int, case_seconds: float) -> int:
    rng = random.Random(seed)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    crashes: Counter[str] = Counter()
    seconds: dict[str, float] = defaultdict(float)
    signal.signal(signal.SIGALRM, _alarm)
    wall, cpu = time.perf_counter(), time.process_time()

    def one(entry_point: str, fn: Any, path: Path, data: bytes, n: int) -> None:
        started = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, case_seconds)
        try:
            verdict = run_checked(fn, path, data, random.Random(seed * 1_000_003 + n))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        seconds[entry_point] += time.perf_counter() - started
        kind = verdict.split(":", 1)[0]
        counts[entry_point][kind] += 1
        if kind != "ok" and kind != "refused":
            crashes[f"{entry_point}: {verdict}"] += 1

    port = IngestPort()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            d = Path(tmp)
            for n in range(progress):
                name, data, blob = progress_mutation(rng, n)
                path = d / name
                path.write_bytes(blob)
                for entry_point, fn in PROGRESS_ENTRY_POINTS.items():
                    one(f"progress {entry_point}", fn, path, data, n)
                path.unlink()
            for n in range(spark):
                name, data = spark_mutation(rng, n)
                path = d / name
                path.write_bytes(data)
                entry_points: dict[str, Any] = {**SPARK_ENTRY_POINTS, "ingest port": port}
                for entry_point, fn in entry_points.items():
                    one(f"spark {entry_point}", fn, path, data, n)
                path.unlink()
    finally:
        port.close()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"seed {seed}: {progress} mutated progress logs, {spark} mutated Spark logs; {wall:.1f} s wall, "
          f"{cpu:.1f} s CPU")
    print(f"{'entry point':<22}" + "".join(f"{v:>9}" for v in VERDICTS) + f"{'seconds':>9}")
    for entry_point in counts:
        c = counts[entry_point]
        print(f"{entry_point:<22}" + "".join(f"{c[v]:>9}" for v in VERDICTS) + f"{seconds[entry_point]:>9.1f}")
    for what, count in crashes.most_common():
        print(f"  {count:5d}  {what}")
    return 1 if crashes else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--progress", type=int, default=400)
    parser.add_argument("--spark", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--case-seconds", type=float, default=60.0, help="a case taking longer is hung")
    args = parser.parse_args()
    return run(args.progress, args.spark, args.seed, args.case_seconds)


if __name__ == "__main__":
    sys.exit(main())
