"""Blame, explain and holder details of Spark logs as digests, to show a change to how they are computed changed no
answer (a check, not a timing).

For each log (every fixture under ``fixtures/spark`` and every event log of the shared corpus):

* ``blame``: what ``flowscope blame LOG --json`` prints (and what it reports on stderr), run in this process;
* ``blame_session``: the same JSON from a lazy ``BlameTracker`` fed by a replay that takes records as a session does
  (``checked_records`` from the feed, every batch propagated);
* ``details``: after every progress batch of that replay, every holder detail present (scope, pointstamp, key,
  value, the batch it was set at, its ``at``), as :meth:`HolderDetails.of` returns them;
* ``explain``: after every progress batch (every ``--explain-every``-th on long logs), explain's late holders
  (``late_json``, as ``flowscope explain`` and the REST answer build them) at the least frontier time of every
  port with a non-empty frontier, in every scope.

``--save FILE`` writes the digests (short hashes per batch, so a difference names the first batch that differs);
``--against FILE`` compares with saved ones and exits 1 on any difference.

    .venv/bin/python benchmarks/blame_answers.py --save benchmarks/out/answers-before.json
    .venv/bin/python benchmarks/blame_answers.py --against benchmarks/out/answers-before.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

CORPUS = Path(os.environ.get("FLOWSCOPE_SPARK_EVENTS", REPO.parent / "shared" / "spark-events"))
if not CORPUS.exists():
    CORPUS = Path("/work/shared/spark-events")


def logs() -> list[Path]:
    """The fixtures' event logs, then the corpus's (files and rolling directories; not its expectations)."""
    out = sorted(p for d in (REPO / "fixtures" / "spark").iterdir() if d.is_dir()
                 for p in d.iterdir() if p.name.startswith(("eventlog", "app", "local", "application")))
    if CORPUS.exists():
        for p in sorted(CORPUS.rglob("*")):
            rel = p.relative_to(CORPUS)
            if "expectations" in rel.parts or rel.name in ("README.md", "SHA256SUMS"):
                continue
            if p.is_dir() and p.name.startswith("eventlog_v2_"):
                out.append(p)
            elif p.is_file() and not any(q.name.startswith("eventlog_v2_") for q in p.parents):
                out.append(p)
    return out


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _dump(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=repr)


def cli_blame(log: Path) -> str:
    from flowscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["blame", str(log), "--json"])
    return f"{code}\n{out.getvalue()}\n{err.getvalue()}"


def session_answers(log: Path, explain_every: int) -> dict:
    from backend.feeds.progress_feeds import default_registry
    from backend.spark.diagnosis.blame import spark_blame
    from tracker.analysis.details import late_json
    from tracker.analysis.explain import explain
    from tracker.progress_log.replay import Replay

    feed = default_registry().open(log)
    details_digests: list[str] = []
    explain_digests: list[str] = []
    replay = Replay(str(log), observer=lambda *a: None, checked_records=feed.checked_records)
    blame = spark_blame(replay, lazy=True)

    def details_now() -> str:
        # which pointstamps have entries: the snapshot's keys; what the entries are: as ``of`` gives them to readers
        rows = []
        for path, pointstamps in replay.details.snapshot().items():
            for loc, t in pointstamps:
                rows.append([list(path), loc.to_json(), t, [[e.key, e.value, e.batch, e.at]
                                                            for e in replay.details.of(path, loc, t)]])
        return _dump(sorted(rows, key=_dump))

    def explain_now() -> str:
        rows = []
        for scope in replay.root.scopes():
            if scope.tracker is None:
                continue
            for loc in sorted(scope.tracker.index, key=lambda x: _dump(x.to_json())):
                frontier = scope.tracker.frontier(loc)
                if not frontier:
                    continue
                answer = explain(scope, loc, min(frontier))
                late = late_json(answer, scope, replay.details, replay.state_until)
                rows.append([list(scope.path), loc.to_json(), late])
        return _dump(rows)

    while True:
        chunk = feed.poll(4096)
        if not chunk:
            break
        for line, rec in chunk:
            if replay.apply(rec, line):
                blame.record(rec, line)
                if rec.get("type") == "progress":
                    details_digests.append(_h(details_now()))
                    if replay.batches_applied % explain_every == 0:
                        explain_digests.append(_h(explain_now()))
    replay.finish()
    details_digests.append(_h(details_now()))
    explain_digests.append(_h(explain_now()))
    return {"blame_session": _h(_dump({"times": [b.to_json() for b in blame.times()]})),
            "details": details_digests, "explain": explain_digests,
            "errors": _h(_dump([str(e) for e in replay.errors]))}


def answers(log: Path, explain_every: int) -> dict:
    try:
        cli = cli_blame(log)
        out = {"blame": _h(cli), "blame_times": cli.count('"latency_s"')}
        out.update(session_answers(log, explain_every))
        return out
    except Exception as e:  # a log the registry cannot open: say so, the same before and after
        return {"unopenable": f"{type(e).__name__}: {e}"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--save", type=Path)
    ap.add_argument("--against", type=Path)
    ap.add_argument("--explain-every", type=int, default=1, help="explain after every Nth batch (default: every)")
    args = ap.parse_args(argv)
    result = {}
    for log in logs():
        name = str(log.relative_to(REPO) if log.is_relative_to(REPO) else log.relative_to(CORPUS.parent))
        result[name] = answers(log, args.explain_every)
        r = result[name]
        print(f"{name}: " + (r["unopenable"] if "unopenable" in r else
                             f"{r['blame_times']} times blamed, {len(r['details'])} batches"), flush=True)
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(result, indent=1))
    if args.against:
        before = json.loads(args.against.read_text())
        differ = 0
        for name in sorted(set(before) | set(result)):
            a, b = before.get(name), result.get(name)
            if a == b:
                continue
            differ += 1
            if a is None or b is None:
                print(f"DIFFERS {name}: only {'after' if a is None else 'before'}")
                continue
            for key in sorted(set(a) | set(b)):
                if a.get(key) != b.get(key):
                    va, vb = a.get(key), b.get(key)
                    if isinstance(va, list) and isinstance(vb, list):
                        i = next((i for i, (x, y) in enumerate(zip(va, vb, strict=False)) if x != y),
                                 min(len(va), len(vb)))
                        print(f"DIFFERS {name}: {key} from entry {i} ({len(va)} before, {len(vb)} after)")
                    else:
                        print(f"DIFFERS {name}: {key}")
        checked = len(result)
        print(f"{checked - differ} of {checked} logs identical" + (f", {differ} differ" if differ else ""))
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
