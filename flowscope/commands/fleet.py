"""``flowscope fleet DIR -o OUT``: many applications' event logs analysed on Spark (``backend/fleet/job.py``).

The job module owns the arguments because ``spark-submit backend/fleet/submit.py`` runs the same command without
this CLI; here it is only registered, and imported when the CLI needs it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    from backend.fleet.job import register as register_fleet

    register_fleet(subparsers)
