"""The zip of flowscope's packages that `spark-submit --py-files` ships to a cluster's driver and executors.

On a cluster the fleet job's tasks import the project (`backend.fleet.job` and everything the analysis reads a
log with) on executors where flowscope is not installed. Spark puts a `--py-files` zip on every Python process's
path, so the packages go there as plain `.py` files, from wherever this installation's packages are (a checkout
or an installed wheel). The third-party dependencies (zstandard, lz4, cramjam, python-lzf, orjson, msgspec) are
not in it: they hold compiled code, so the executors' Python must have them installed.
"""

from __future__ import annotations

import importlib
import zipfile
from pathlib import Path

__all__ = ["ZIP_PACKAGES", "build_zip", "launcher_path"]

# what the job imports on the driver and the executors (backend never imports the `flowscope` CLI package)
ZIP_PACKAGES = ("backend", "tracker")


def build_zip(target: str | Path) -> list[str]:
    """Write the `.py` files of `ZIP_PACKAGES` to the zip `target`, replaced if it exists.

    Each goes under its import path (`backend/fleet/job.py`). Returns the names written."""
    names = []
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for package in ZIP_PACKAGES:
            root = Path(importlib.import_module(package).__file__ or "").parent
            for path in sorted(root.rglob("*.py")):
                name = (Path(package) / path.relative_to(root)).as_posix()
                if "__pycache__" in name:
                    continue
                zf.write(path, name)
                names.append(name)
    return names


def launcher_path() -> Path:
    """The script spark-submit runs (`backend/fleet/submit.py` of this installation)."""
    return Path(__file__).resolve().parent / "submit.py"
