"""Scopes nested past the documented limit (``Limits.max_scope_depth``, 100) are refused at their line, as other
hostile records are: ``flowscope frontiers`` and the server read a log nesting 1,500 scopes deep (which used to end
in a RecursionError) without a traceback, and a log at the limit works everywhere, the server's views included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from backend.web.app import Settings
from tracker.progress_log.records import DEFAULT_LIMITS

from .e2e.server import running_server

ROOT = Path(__file__).resolve().parents[1]


def nested_log(path: Path, depth: int) -> Path:
    """A log of ``depth`` scopes, each inside the one before, and an operator holding a capability in the deepest."""
    lines = [{"type": "header", "format": "flowscope-progress", "version": 1},
             {"type": "operator", "scope": [], "node": 1, "name": "in", "inputs": 0, "outputs": 1,
              "capabilities": [[0]]}]
    scope: list[int] = []
    for i in range(depth):
        scope = scope + [2]
        lines.append({"type": "scope", "path": scope, "name": f"s{i}", "inputs": 0, "outputs": 0, "depth": 1})
    lines.append({"type": "operator", "scope": scope, "node": 1, "name": "deepest", "inputs": 0, "outputs": 1,
                  "capabilities": [[0]]})
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return path


def frontiers(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flowscope.cli", "frontiers", str(path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_the_limit_is_the_documented_one():
    assert DEFAULT_LIMITS.max_scope_depth == 100
    assert "Scopes nest at most 100 deep" in (ROOT / "docs" / "progress-log.md").read_text()


def test_scopes_past_the_limit_are_refused_at_their_line(tmp_path):
    limit = DEFAULT_LIMITS.max_scope_depth
    log = nested_log(tmp_path / "deep.jsonl", 1500)
    proc = frontiers(log)
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    first = limit + 3  # the header, the root's operator, then scope k on line k + 2
    assert (f"deep.jsonl:{first}: rejected-record: scope record rejected: path nests {limit + 1} scopes deep; "
            f"the limit is {limit}") in proc.stderr
    assert f"s{limit - 1}" in proc.stdout and f"'s{limit}'" not in proc.stdout  # the scopes within it are kept
    assert "deepest" not in proc.stdout  # its scope was refused, so is the operator


def test_a_log_at_the_limit_works_in_the_cli_and_the_server(tmp_path):
    log = nested_log(tmp_path / "limit.jsonl", DEFAULT_LIMITS.max_scope_depth)
    proc = frontiers(log)
    assert proc.returncode == 0 and "rejected" not in proc.stderr and "deepest" in proc.stdout
    with running_server(Settings(allowed_dirs=[tmp_path])) as srv:
        client = httpx.Client(base_url=srv.url, timeout=30)
        sid = client.post("/api/sessions", json={"path": str(log)}).json()["id"]
        info = srv.wait_for(sid, client=client)
        assert info["errors"] == 0 and info["scopes"] == DEFAULT_LIMITS.max_scope_depth + 1
        for view in ("scopes", "state"):
            assert client.get(f"/api/sessions/{sid}/{view}").status_code == 200
        deepest = ",".join(["2"] * DEFAULT_LIMITS.max_scope_depth)
        for view in ("graph", "state"):
            assert client.get(f"/api/sessions/{sid}/{view}", params={"scope": deepest}).status_code == 200
        r = client.get(f"/api/sessions/{sid}/explain", params={"scope": deepest, "port": "out,1,0"})
        assert r.status_code == 200, r.text
