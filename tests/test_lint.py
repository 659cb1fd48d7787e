"""The tools that keep the code honest, run by the suite: ruff, mypy, and no reaching into other objects' insides.

A private name (``_x``) belongs to its module: another module that needs it gets a public, documented name instead.
The AST check below enforces that in the product's packages (tests may look inside what they test).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tracker", "backend", "flowscope")


def _tool(name: str) -> list[str]:
    """Run a tool from the same environment as the tests (the README's venv), else from PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return [str(local)]
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: the README's test install ('.[test]') provides it")
    return [found]


def test_ruff_finds_nothing() -> None:
    """The whole checkout, not only the packages: tests, benchmarks, examples and fixtures keep the same rules."""
    run = subprocess.run([*_tool("ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_mypy_finds_nothing() -> None:
    """The whole checkout as pyproject's ``[tool.mypy] files`` lists it: tests and benchmarks too."""
    import re
    import tomllib

    run = subprocess.run(_tool("mypy"), cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    assert {"tests", "benchmarks", *PACKAGES} <= set(folders)
    checked = re.search(r"in (\d+) source files", run.stdout)
    assert checked and int(checked.group(1)) == sum(len(list((ROOT / f).rglob("*.py"))) for f in folders), run.stdout


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


# pyspark publishes no public name for its Py4J handles; one module (the bridge) may use them, nobody else.
PY4J_BRIDGE = "backend/spark/live/py4j_bridge.py"
PY4J_HANDLES = {"_jsc", "_jvm", "_gateway"}


def defined_private_names(tree: ast.Module) -> set[str]:
    """Private names a module defines itself: its functions, classes, class attributes and ``self._x`` fields.

    Such a name is the module's own, so ``other._x`` between two instances of the module's class is not a reach.
    """
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
                        names.add(sub.attr)
                    elif isinstance(sub, ast.Name):
                        names.add(sub.id)
    return {n for n in names if _is_private(n)}


def private_reaches(path: Path) -> list[str]:
    """Every ``x._name`` (x not self/cls, _name not the module's own) and every ``from m import _name``, in one file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    own = defined_private_names(tree)
    rel = path.relative_to(ROOT).as_posix()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            base = node.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            if node.attr in own or (rel == PY4J_BRIDGE and node.attr in PY4J_HANDLES):
                continue
            found.append(f"{rel}:{node.lineno}: .{node.attr} of {ast.unparse(base)}")
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"{rel}:{node.lineno}: imports {alias.name} from {node.module}")
    return found


def test_no_module_reaches_into_private_names() -> None:
    found = [hit for pkg in PACKAGES for path in sorted((ROOT / pkg).rglob("*.py")) for hit in private_reaches(path)]
    assert not found, "private names used outside their owner:\n" + "\n".join(found)


def test_every_package_is_in_the_wheel_list() -> None:
    """pyproject lists the packages (the frontend mapping rules out discovery): a new one must be listed."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    inits = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("__init__.py")]
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in inits}
    assert on_disk <= listed, f"packages missing from [tool.setuptools] packages: {sorted(on_disk - listed)}"
