"""Save answers (digests per log) to a file, or compare them with ones saved before a change.

What ``frontiers_answers.py`` and ``record_answers.py`` share: a change to the replay or the Spark model is shown to
leave every answer alone by saving them before and comparing after.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["save_and_compare"]


def save_and_compare(answers: dict[str, Any], save: Path | None, against: Path | None) -> int:
    """Write ``answers`` to ``save``; compare them with ``against``, print each log that differs and return 1 if
    any does (0 otherwise)."""
    if save is not None:
        save.parent.mkdir(parents=True, exist_ok=True)
        save.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    if against is None:
        return 0
    saved = json.loads(against.read_text())
    differ = sorted(k for k in saved.keys() | answers.keys() if saved.get(k) != answers.get(k))
    for name in differ:
        print(f"DIFFERS: {name}: {saved.get(name)} -> {answers.get(name)}")
    print("identical" if not differ else f"{len(differ)} of {len(answers)} logs differ")
    return 1 if differ else 0
