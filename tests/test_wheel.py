"""A non-editable install carries the whole product: the wheel, installed into a fresh virtual environment and run
from outside the checkout, serves the full browser view (the page, every ES module it loads, plotly.js) and builds
the Spark listener's jar.

The wheel is built from a copy of the sources (``pip wheel`` builds in place and would leave ``build/`` behind). The
fresh environment gets the wheel alone (``--no-deps``); its dependencies (FastAPI, plotly, pyspark, ...) come from the
environment running the tests, made visible by a ``.pth`` line instead of being downloaded again. A ``.pth`` line
does not run that environment's own ``.pth`` files, so its editable flowscope stays invisible: what runs is the
wheel, which the test checks.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import site
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest

from .conftest import LOOP_LOG, REPO

PACKAGES = ("tracker", "backend", "flowscope")
# What the build reads: the project's metadata, its packages and the browser view.
SOURCES = ("pyproject.toml", "README.md", *PACKAGES, "frontend")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=IGNORE)
        else:
            shutil.copy2(path, src / name)
    dist = tmp_path_factory.mktemp("dist")
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(dist)],
                         cwd=src, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    (built,) = dist.glob("flowscope-*.whl")
    return built


def source_files(root: str, suffixes: tuple[str, ...]) -> set[str]:
    base = REPO / root
    return {p.relative_to(REPO).as_posix() for p in base.rglob("*")
            if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts}


def test_the_wheel_carries_every_module_the_frontend_and_the_listener_source(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = set().union(*(source_files(pkg, (".py",)) for pkg in PACKAGES))
    missing = sorted(modules - names)
    assert not missing, (f"modules missing from the wheel: {missing[:5]}; a new package must be added to "
                         "[tool.setuptools] packages in pyproject.toml")
    frontend = {"backend/" + f for f in source_files("frontend", (".html", ".css", ".js"))}
    assert "backend/frontend/index.html" in frontend and any(f.endswith(".js") for f in frontend)
    assert not sorted(frontend - names), "frontend files missing from the wheel"
    assert "backend/spark/live/listener/FlowscopeListener.java" in names


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_line(proc: subprocess.Popen, timeout: float) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            return proc.stdout.readline()
        if proc.poll() is not None:
            break
    raise AssertionError(f"no output from the server (exit code {proc.poll()})")


def module_imports(text: str) -> list[str]:
    """Relative module specifiers an ES module imports (static, bare side-effect and dynamic imports)."""
    return re.findall(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}/[^"']+)["']""", text)


def test_the_installed_wheel_serves_the_view_and_builds_the_listener(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    venv_site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                    capture_output=True, text=True, check=True).stdout.strip())
    (venv_site / "dependencies.pth").write_text("".join(f"{d}\n" for d in site.getsitepackages()))
    run = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                          "--no-compile", "-q", str(wheel)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr

    work = tmp_path / "elsewhere"  # outside the checkout: nothing of the sources is importable from here
    (work / "fixtures" / "progress").mkdir(parents=True)
    shutil.copy2(LOOP_LOG, work / "fixtures" / "progress" / "loop.jsonl")
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(FLOWSCOPE_CACHE=str(cache), PYTHONDONTWRITEBYTECODE="1")
    where = subprocess.run([str(python), "-c", "import backend, flowscope, tracker; "
                            "print(backend.__file__, flowscope.__file__, tracker.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout.split()
    assert all(Path(f).is_relative_to(venv_site) for f in where), where

    flowscope = str(venv / "bin" / "flowscope")
    port = free_port()
    with open(tmp_path / "stderr", "w+") as stderr:
        server = subprocess.Popen([flowscope, "replay", "fixtures/progress/loop.jsonl", "--port", str(port)],
                                  cwd=work, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
        try:
            line = read_line(server, 60)
            assert line.startswith(f"flowscope: serving http://127.0.0.1:{port}/#/s/"), line
            base, sid = f"http://127.0.0.1:{port}", line.strip().rsplit("/", 1)[-1]
            with httpx.Client(base_url=base, timeout=30) as client:
                page = client.get("/")  # the modules inlined (backend/web/page.py), read from the installed files
                assert page.status_code == 200 and "<html" in page.text.lower()
                assert re.search(r'<script type="importmap">\{"imports":\{"flowscope/[\w/]+\.js":"data:', page.text)
                page = client.get("/static/index.html")  # the page with its modules as files
                assert page.status_code == 200 and "<html" in page.text.lower()
                pending = re.findall(r"""(?:src|href)=["'](/static/[^"']+)["']""", page.text)
                assert any(p.endswith(".js") for p in pending), page.text[:500]
                fetched: set[str] = set()
                while pending:  # the page's files, and every module the modules import
                    url = pending.pop()
                    if url in fetched:
                        continue
                    fetched.add(url)
                    r = client.get(url)
                    assert r.status_code == 200 and r.content, url
                    if url.endswith(".js"):
                        assert "javascript" in r.headers["content-type"], (url, r.headers["content-type"])
                        pending += [urljoin(url, spec) for spec in module_imports(r.text)]
                assert sum(u.endswith(".js") for u in fetched) >= 2, fetched
                assert any(u.startswith("/static/js/graph/") for u in fetched), fetched  # the subfolders ship too
                plotly = client.get("/vendor/plotly.min.js")
                assert plotly.status_code == 200 and len(plotly.content) > 1_000_000
                assert "plotly" in plotly.text[:2000].lower()
                deadline = time.monotonic() + 30
                while (info := client.get(f"/api/sessions/{sid}").json())["status"] == "loading":
                    assert time.monotonic() < deadline, info
                    time.sleep(0.05)
                assert info["status"] == "done" and info["batches"] > 0, info
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
            stderr.seek(0)
            errors = stderr.read()
        assert "Traceback" not in errors, errors

    jar = subprocess.run([flowscope, "listener-jar"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert jar.returncode == 0, jar.stderr
    path = Path(jar.stdout.strip())
    assert path.is_relative_to(cache) and path.suffix == ".jar"
    assert "flowscope/FlowscopeListener.class" in zipfile.ZipFile(path).namelist()
