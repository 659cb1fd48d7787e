"""The script spark-submit runs: `spark-submit --py-files flowscope.zip backend/fleet/submit.py DIR -o OUT`.

It only imports the job and runs it. Spark pickles the job's classes and functions by their module's name, and
the module of a script spark-submit runs is `__main__`, which executors cannot import: so the job is never the
script itself, and everything it sends to the executors lives in `backend.fleet.job`, importable from the
`--py-files` zip (`flowscope fleet --build-zip flowscope.zip` makes it).
"""

import os
import sys

# Python puts this script's directory first on the path, which would make `job`, `analyze`, `report` top-level
# modules of their own; the packages come from the zip (or an installation) instead.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]

try:
    from backend.fleet.job import main
except ImportError as exc:
    if exc.name in ("backend", "tracker"):
        sys.exit(f"flowscope fleet: cannot import flowscope's packages ({exc}); pass them to spark-submit with "
                 "--py-files flowscope.zip (made by `flowscope fleet --build-zip flowscope.zip`)")
    sys.exit(f"flowscope fleet: a dependency of flowscope is missing from this Python ({exc}): install it where "
             "the driver and the executors run")

if __name__ == "__main__":
    sys.exit(main())
