"""The design docs name only files, folders and modules that exist, so a move or a rename cannot leave them behind.

Checked in docs/architecture.md, spark-model.md, blame.md and progress-log.md: names in backticks that end in
``.py``, ``.js``, ``.css``, ``.html`` or ``/``; paths that start with one of the checkout's top-level folders; and
dotted names under ``backend``, ``tracker`` and ``flowscope`` (the longest prefix that is a module must exist, and
the name after it must be defined there). A table names a module relative to its section's folder, so a path
counts when a tracked file or folder ends with it.
"""

from __future__ import annotations

import ast
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["docs/architecture.md", "docs/spark-model.md", "docs/blame.md", "docs/progress-log.md"]
# URL paths and placeholders that look like files
NOT_FILES = {"/static/", "/static/index.html", "/vendor/plotly.min.js", "flowscope/NAME.js",
             "flowscope/commands/NAME.py", "backend/frontend/"}


@cache
def tracked() -> tuple[set[str], set[str]]:
    """The checkout's files (as git tracks them, else every file below it) and folders."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True).stdout
        files = set(out.split())
    except (OSError, subprocess.CalledProcessError):
        files = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts}
    folders = {"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 1)}
    return files, folders


def path_exists(name: str) -> bool:
    files, folders = tracked()
    wanted = name.strip("/").removeprefix("./")
    return any(p == wanted or p.endswith("/" + wanted) for p in files | folders)


def defined_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names |= {alias.asname or alias.name for alias in node.names}
    return names


def module_exists(dotted: str) -> bool:
    files, folders = tracked()
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        base = "/".join(parts[:i])
        for candidate in (base + ".py", base + "/__init__.py"):
            if candidate in files:
                rest = parts[i:]
                return not rest or rest[0] in defined_names(ROOT / candidate) or f"{base}/{rest[0]}.py" in files
        if base in folders:
            return i == len(parts)
    return False


def named(text: str) -> tuple[set[str], set[str]]:
    """The file and folder names, and the dotted module names, that ``text`` mentions."""
    paths = set(re.findall(r"`([\w./-]+(?:\.py|\.js|\.css|\.html|/))`", text))
    paths |= set(re.findall(r"(?<![\w`/.])((?:backend|tracker|flowscope|frontend|benchmarks|tests|fixtures|docs)"
                            r"/[\w./-]*\w/?)", text))
    modules = set(re.findall(r"(?<![\w/.])((?:backend|tracker|flowscope)(?:\.\w+)+)", text))
    return paths - NOT_FILES, modules


@pytest.mark.parametrize("doc", DOCS)
def test_every_file_and_module_a_design_doc_names_exists(doc):
    paths, modules = named((ROOT / doc).read_text())
    assert paths, f"{doc} names no file: the pattern no longer matches how it names them"
    missing = sorted(p for p in paths if not path_exists(p)) + sorted(m for m in modules if not module_exists(m))
    assert not missing, f"{doc} names what the checkout does not have: {missing}"


def test_the_check_sees_a_stale_name():
    paths, modules = named("`views.py` moved; `backend.sessions.stream` and `backend.views.projections.port_rows`")
    assert not path_exists("views.py") and not module_exists("backend.sessions.stream")
    assert module_exists("backend.views.projections.port_rows") and {"views.py"} == paths
