"""Seeded mutation fuzz of the readers: many damaged progress logs and Spark event logs through the public entry
points, counting what crashed (a traceback instead of a reported error).

The mutations are tests/fuzz_inputs.py's (bit flips, truncation, wrong-typed fields, huge numbers, deep nesting,
damaged gzip/zstd streams, over the shipped fixtures); tests/test_hardening.py runs a few hundred of them in the
suite. Entry points: the replay behind ``flowscope frontiers`` (``replay_file`` and ``state``), the server's
progress-log feed (``ProgressLogFeed``), ``flowscope record`` (``record``) and the followed Spark log feed
(``SparkLogFeed``).

Run::

    .venv/bin/python benchmarks/fuzz_readers.py                    # 1000 progress logs, 200 Spark logs, seed 0
    .venv/bin/python benchmarks/fuzz_readers.py --progress 5000 --spark 1000 --seed 7
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backend.feeds import ProgressLogFeed  # noqa: E402
from backend.spark.follow_feed import SparkLogFeed  # noqa: E402
from backend.spark.convert import record  # noqa: E402
from tests.fuzz_inputs import progress_case, spark_case  # noqa: E402
from tracker.progress_log import ProgressLogError  # noqa: E402
from tracker.replay import replay_file  # noqa: E402


def run(progress: int, spark: int, seed: int) -> int:
    rng = random.Random(seed)
    crashes: Counter[str] = Counter()
    refused = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        for n in range(progress):
            path = progress_case(rng, d, n)
            try:
                try:
                    replay_file(path).state()
                except ProgressLogError:
                    refused += 1  # the damage hit the header: a clear error
                feed = ProgressLogFeed(path)
                while feed.poll(512):
                    pass
            except Exception:
                crashes["progress: " + traceback.format_exc().strip().splitlines()[-1][:100]] += 1
            path.unlink()
        for n in range(spark):
            src = spark_case(rng, d, n)
            try:
                record(src, d / "out.jsonl")
                feed = SparkLogFeed(src, follow=False)
                while feed.poll(512) is not None:
                    pass
            except Exception:
                crashes["spark: " + traceback.format_exc().strip().splitlines()[-1][:100]] += 1
            src.unlink()
    seconds = time.perf_counter() - started
    print(f"{progress} mutated progress logs (frontiers replay + server feed), {spark} mutated Spark logs "
          f"(record + feed), seed {seed}, {seconds:.1f} s")
    print(f"refused as not a progress log (header damaged): {refused}")
    print(f"crashed: {sum(crashes.values())}")
    for what, count in crashes.most_common():
        print(f"  {count:5d}  {what}")
    return 1 if crashes else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--progress", type=int, default=1000)
    parser.add_argument("--spark", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    return run(args.progress, args.spark, args.seed)


if __name__ == "__main__":
    sys.exit(main())
