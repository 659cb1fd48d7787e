"""What ``flowscope record`` writes for each Spark log, as digests, to show a change to the Spark model changed no
record (a check, not a timing).

For each log (every fixture under ``fixtures/spark`` and every event log of the shared corpus, as
``blame_answers.py`` lists them, plus any ``--log`` given): the progress log ``flowscope record LOG -o -`` prints,
what it reports on stderr and its exit code, run in a fresh process; the header's ``created`` time and the seconds
the summary on stderr reports are left out (they differ from run to run).

``--save FILE`` writes the digests; ``--against FILE`` compares with saved ones and exits 1 on any difference.

    .venv/bin/python benchmarks/record_answers.py --save benchmarks/out/records-before.json
    .venv/bin/python benchmarks/record_answers.py --against benchmarks/out/records-before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))


def digest(log: Path) -> dict:
    """The digest of what ``flowscope record`` prints for ``log``, its stderr and exit code."""
    proc = subprocess.run([str(Path(sys.executable).with_name("flowscope")), "record", str(log), "-o", "-"], cwd=REPO,
                          capture_output=True, check=False)
    first, _, rest = proc.stdout.partition(b"\n")
    if first.startswith(b'{"type":"header"'):
        header = json.loads(first)
        header.pop("created", None)
        first = json.dumps(header, sort_keys=True).encode()
    stderr = re.sub(rb" in \d+(\.\d+)? s", b" in _ s", proc.stderr)
    return {"stdout": hashlib.sha256(first + b"\n" + rest).hexdigest()[:16], "lines": proc.stdout.count(b"\n"),
            "stderr": hashlib.sha256(stderr).hexdigest()[:16], "rc": proc.returncode}


def main(argv: list[str] | None = None) -> int:
    from answer_digests import save_and_compare
    from blame_answers import logs

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--save", type=Path)
    ap.add_argument("--against", type=Path)
    ap.add_argument("--log", type=Path, action="append", default=[], help="another log to check (repeatable)")
    args = ap.parse_args(argv)
    answers = {}
    for log in logs() + args.log:
        key = str(log.relative_to(REPO)) if log.is_relative_to(REPO) else str(log)
        answers[key] = digest(log)
        print(f"{answers[key]['stdout']} {answers[key]['lines']:>8} rc={answers[key]['rc']} {key}", flush=True)
    return save_and_compare(answers, args.save, args.against)

if __name__ == "__main__":
    sys.exit(main())
