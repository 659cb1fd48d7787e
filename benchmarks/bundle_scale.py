"""Time `flowscope bundle` as the log grows: is a post-mortem's cost proportional to the log?

The log: `fixtures/spark/batch_shuffle` (7 jobs: three lone jobs and one SQL execution, a reused shuffle) copied
until it holds about the asked number of jobs (ids renumbered, times shifted: `replay_vs_history_server.py`'s
replicator, written once to `benchmarks/out/`). Each size is bundled in a fresh process (start-up included, as a
user meets it) with the command's defaults (`--spaced 40`, `--max-explain 4000`) unless told otherwise.

Reported per size: jobs, the log's MB, wall seconds of the whole bundle, of which loading the log (the session run
to completion) and answering; the moments, answers and explanations stored; the HTML file's MB.

Run::

    .venv/bin/python benchmarks/bundle_scale.py                    # about 10 / 100 / 400 jobs
    .venv/bin/python benchmarks/bundle_scale.py --jobs 35 105 --max-explain 500
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

from replay_vs_history_server import ensure_log  # noqa: E402  (one log replicator for every benchmark)

SOURCE = next((REPO / "fixtures" / "spark" / "batch_shuffle").glob("eventlog_v2_*"))
JOBS_PER_COPY = 7

# One bundle in a fresh process; prints its summary as JSON.
MEASURE = r"""
import json, sys, time
from pathlib import Path
import backend.export.bundle as bundle
log, out, spaced, max_explain = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
phases = {}
t0 = time.perf_counter()
summary = bundle.build_bundle(log, out, spaced=spaced, max_explain=max_explain,
                              progress=lambda text: phases.setdefault(text.split(":")[0], time.perf_counter() - t0))
summary["seconds"] = time.perf_counter() - t0
summary["phases"] = phases
print(json.dumps(summary))
"""


def measure(log: Path, spaced: int, max_explain: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run([sys.executable, "-c", MEASURE, str(log), str(Path(tmp) / "postmortem.html"),
                              str(spaced), str(max_explain)], cwd=REPO, capture_output=True, text=True,
                             timeout=timeout, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    if res.returncode != 0:
        raise SystemExit(res.stderr)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[10, 100, 400], help="about this many jobs per log")
    ap.add_argument("--spaced", type=int, default=40)
    ap.add_argument("--max-explain", type=int, default=4000)
    ap.add_argument("--timeout", type=float, default=900.0, help="give up on one size after this many seconds")
    args = ap.parse_args()
    print(f"{'jobs':>5} {'log MB':>7} {'total s':>8} {'load s':>7} {'answer s':>9} {'moments':>8} {'answers':>8} "
          f"{'explains':>9} {'HTML MB':>8}")
    for jobs in args.jobs:
        copies = max(1, math.ceil(jobs / JOBS_PER_COPY))
        log, meta = ensure_log(SOURCE, copies, regen=False)
        s = measure(log, args.spaced, args.max_explain, args.timeout)
        loaded = s["phases"].get("loaded", 0.0)
        capped = "+" if s["explains_capped"] else ""
        print(f"{meta['jobs']:>5} {meta['bytes'] / 1e6:>7.1f} {s['seconds']:>8.1f} {loaded:>7.1f} "
              f"{s['seconds'] - loaded:>9.1f} {s['moments']:>8} {s['answers']:>8} {str(s['explains']) + capped:>9} "
              f"{s['bytes'] / 1e6:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
