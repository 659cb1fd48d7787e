"""``flowscope frontiers --json`` of every log as digests, to show a change to how the replay or the Spark model is
computed changed no answer (a check, not a timing); ``--command report`` digests ``flowscope report`` instead (its
JSON and its text).

The logs: every progress log under ``fixtures/`` and ``benchmarks/out/`` (the generated ones the benchmarks time),
then every Spark event log of the fixtures and of the shared corpus (``blame_answers.logs``), and any ``--log``
given. Each command runs as a user runs it (a subprocess of the venv's ``flowscope``), and its exit code, stdout and
stderr are hashed together.

``--save FILE`` writes the digests; ``--against FILE`` compares with saved ones and exits 1 on any difference.

    .venv/bin/python benchmarks/frontiers_answers.py --save benchmarks/out/frontiers-before.json
    .venv/bin/python benchmarks/frontiers_answers.py --against benchmarks/out/frontiers-before.json
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from answer_digests import save_and_compare  # noqa: E402
from blame_answers import logs as spark_logs  # noqa: E402
from replay_vs_json import flowscope_command  # noqa: E402

PROGRESS_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst")


def progress_logs() -> list[Path]:
    """The progress logs of the fixtures and the generated benchmark logs (whatever exists)."""
    found = sorted(p for p in (REPO / "fixtures").rglob("*") if p.name.endswith(PROGRESS_SUFFIXES))
    out = HERE / "out"
    if out.exists():
        found += sorted(p for p in out.iterdir() if p.name.endswith(PROGRESS_SUFFIXES) and p.is_file())
    return found


COMMANDS = {"frontiers": (["--json"],), "report": (["--json"], [])}  # each command's runs, by their options


def digest(log: Path, command: str = "frontiers") -> str:
    """sha256 (first 16 hex digits) of ``flowscope COMMAND LOG``'s exit code, stdout and stderr, for each of the
    command's runs (``COMMANDS``)."""
    h = hashlib.sha256()
    for options in COMMANDS[command]:
        cmd = [*flowscope_command(sys.executable), command, str(log), *options]
        proc = subprocess.run(cmd, capture_output=True, cwd=REPO)
        h.update(f"{proc.returncode}\n".encode())
        h.update(proc.stdout)
        h.update(b"\n--stderr--\n")
        h.update(proc.stderr)
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="flowscope frontiers --json of every log, as digests")
    ap.add_argument("--save", type=Path, help="write the digests to this file")
    ap.add_argument("--against", type=Path, help="compare with digests saved earlier; exit 1 on a difference")
    ap.add_argument("--log", action="append", default=[], help="one more log (repeatable)")
    ap.add_argument("--command", choices=sorted(COMMANDS), default="frontiers",
                    help="the command whose answers are digested (frontiers)")
    args = ap.parse_args(argv)

    logs = progress_logs() + spark_logs() + [Path(p) for p in args.log]
    digests: dict[str, str] = {}
    for log in logs:
        name = os.path.relpath(log, REPO)
        digests[name] = digest(log, args.command)
        print(f"{digests[name]}  {name}", flush=True)
    print(f"{len(digests)} logs")
    return save_and_compare(digests, args.save, args.against)

if __name__ == "__main__":
    sys.exit(main())
