"""A post-mortem you can hand over: one self-contained HTML file holding the browser view and the answers it needs.

The log is opened in an in-process server (``create_app`` behind FastAPI's TestClient, so every answer is exactly
what the routes serve) and run to completion; then the GET routes the page asks are answered for a set of moments
(the head, every mark's batch, every finding's batch, and up to ``spaced`` evenly spaced batches) and stored as one
JSON object keyed by path and parameters (``answer_key``; frontend/js/api.js computes the same key). The page is
the one the server serves (``backend/page.py``: modules as data: URLs behind an import map, which a page opened from
file:// needs anyway, and the CSS inlined) with plotly.min.js inlined too. The browser still never computes
progress: in bundle mode api.js answers from the stored object, choosing the nearest stored moment for a seek and
saying so.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from html import escape
from pathlib import Path
from typing import Any

from .page import inline_page, script_json

__all__ = ["answer_key", "build_bundle", "BundleError"]

# most explanations stored; the rest of a big log's ports say they were not precomputed
DEFAULT_MAX_EXPLAIN = 4000


class BundleError(Exception):
    """The log could not be opened or did not finish loading."""


def answer_key(path: str, params: dict[str, Any]) -> str:
    """The stored answer's key: the path, then the parameters (as strings) sorted by name, as compact JSON. Must
    match ``answerKey`` in frontend/js/api.js."""
    pairs = sorted([k, str(v)] for k, v in params.items() if v is not None)
    return path + "\n" + json.dumps(pairs, separators=(",", ":"), ensure_ascii=False)


def _moments(head: int, marks: list[dict], findings: list[dict], spaced: int) -> list[int]:
    batches = {head}
    batches.update(int(m["after"]) for m in marks if m.get("after") is not None)
    batches.update(int(f["batch"]) for f in findings if isinstance(f.get("batch"), int))
    if head > 0 and spaced > 0:
        batches.update(round(i * head / spaced) for i in range(spaced + 1))
    return sorted(b for b in batches if 0 <= b <= head)


def _scopes(tree: dict) -> Iterable[list[int]]:
    yield list(tree.get("path", []))
    for child in tree.get("scopes", []):
        yield from _scopes(child)


class _Recorder:
    """Asks the in-process server and keeps each answer under its key."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.answers: dict[str, Any] = {}

    def get(self, path: str, **params: Any) -> Any:
        params = {k: v for k, v in params.items() if v is not None}
        res = self.client.get(path, params=params)
        if res.status_code != 200:
            return None
        body = res.json()
        self.answers[answer_key(path, params)] = body
        return body


def _wait_done(client: Any, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        sessions = client.get("/api/sessions").json()
        if sessions and sessions[0]["status"] in ("done", "failed", "stopped"):
            if sessions[0]["status"] != "done":
                raise BundleError(f"{sessions[0].get('name')}: loading {sessions[0]['status']}: "
                                  f"{sessions[0].get('error') or 'see the errors tab of flowscope replay'}")
            return sessions[0]
        if time.monotonic() > deadline:
            raise BundleError(f"the log did not finish loading in {timeout:.0f} s")
        time.sleep(0.05)


def collect_answers(log: Path, spaced: int = 40, max_explain: int = DEFAULT_MAX_EXPLAIN,
                    timeout: float = 600.0) -> dict:
    """Open LOG in an in-process server, run it to completion and store the answers the page asks for."""
    from fastapi.testclient import TestClient

    from .app import Settings, create_app

    log = log.resolve()
    # a bundle is a one-shot reader: it keeps every finished scope, so each one's answers are stored
    settings = Settings(allowed_dirs=[log.parent], open_paths=[str(log)], keep_finished=None)
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        info = _wait_done(client, timeout)
        sid = info["id"]
        rec = _Recorder(client)
        base = f"/api/sessions/{sid}"
        rec.get("/api/sessions")
        rec.get(base)
        tree = rec.get(f"{base}/scopes") or {"path": [], "scopes": []}
        marks = (rec.get(f"{base}/marks", limit=20000) or {}).get("marks", [])
        findings = (rec.get(f"{base}/findings", limit=20000) or {}).get("findings", [])
        rec.get(f"{base}/marks", limit=2000)
        rec.get(f"{base}/findings", limit=500)
        rec.get(f"{base}/errors", limit=500)
        workers = rec.get(f"{base}/workers") or {}
        for w in workers.get("workers", []):
            if isinstance(w, dict) and "worker" in w:
                rec.get(f"{base}/batches", worker=w["worker"], limit=200)
        rec.get(f"{base}/tasks")
        rec.get(f"{base}/streaming")
        head_state = rec.get(f"{base}/state", scope="")
        head = int(head_state["head"]) if head_state else 0
        moments = _moments(head, marks, findings, spaced)
        scopes = list(_scopes(tree))
        # a blame segment opens the view in its middle, explaining its holder for the blamed time: store those
        blamed: list[tuple[int, str, str, str]] = []
        for path in scopes:
            scope = ",".join(map(str, path))
            # as the Blame tab asks: a nested scope's list holds the times of the scopes inside it ("true" as the
            # page's String(true) writes it in the key)
            nested = "true" if scope else None
            blame = rec.get(f"{base}/blame", top=50, scope=scope or None, nested=nested) or {}
            rec.get(f"{base}/blame", top=1, scope=scope or None, nested=nested)  # the executor timeline's overlay
            for t in blame.get("times", []):
                for seg in t.get("blame", []):
                    port = (seg.get("holder") or {}).get("port")
                    if not port or seg.get("from") is None or seg.get("to") is None:
                        continue
                    st = client.get(f"{base}/state", params={"scope": ",".join(map(str, t["scope"])),
                                                             "at": (seg["from"] + seg["to"]) / 2})
                    if st.status_code == 200:
                        blamed.append((st.json()["batch"], ",".join(map(str, t["scope"])), ",".join(map(str, port)),
                                       json.dumps(t["time"], separators=(",", ":"))))
        moments = sorted(set(moments) | {b for b, *_ in blamed})
        for b, scope, port, t_json in blamed:
            rec.get(f"{base}/explain", scope=scope, port=port, time=t_json, batch=b)
        heads: dict[str, Any] = {}
        at_of: dict[int, Any] = {}
        explains = 0
        for path in scopes:
            scope = ",".join(map(str, path))
            rec.get(f"{base}/graph", scope=scope, compact=1)  # the form the browser asks for
            rec.get(f"{base}/series", scope=scope)
            st = rec.get(f"{base}/state", scope=scope)
            if st is None:
                continue
            heads[scope] = dict(st, type="snapshot", status="done", marks_total=len(marks))
            for row in st["ports"]:
                if explains < max_explain:
                    rec.get(f"{base}/explain", scope=scope, port=",".join(map(str, row[:3])))
                    explains += 1
            for b in moments:
                past = rec.get(f"{base}/state", scope=scope, batch=b)
                if past is None:
                    continue
                at_of[b] = past.get("at")
                for row in past["ports"]:
                    if explains < max_explain and row[3]:  # a port with a frontier: something may hold it
                        rec.get(f"{base}/explain", scope=scope, port=",".join(map(str, row[:3])), batch=b)
                        explains += 1
        return {
            "sid": sid, "log": log.name, "made_at": time.time(), "head": head,
            "moments": [[b, at_of.get(b)] for b in moments], "spaced": spaced,
            "explains": explains + len(blamed), "explains_capped": explains >= max_explain,
            "heads": heads, "answers": rec.answers,
        }


def render_html(data: dict, frontend: Path, plotly: Path) -> str:
    """The page (``backend/page.py``: stylesheets and modules inlined) with plotly and the answers inlined too."""
    html = inline_page(frontend)
    plotly_src = plotly.read_text(encoding="utf-8").replace("</script", "<\\/script")
    head = (f'<script type="application/json" id="flowscope-bundle">{script_json(data)}</script>\n'
            '<script>window.__FLOWSCOPE_BUNDLE__ = '
            'JSON.parse(document.getElementById("flowscope-bundle").textContent);</script>\n'
            f"<script>{plotly_src}</script>\n")
    # before the import map: the answers and plotly are there when the first module runs
    html = html.replace('<script type="importmap">', head + '<script type="importmap">', 1)
    made = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(data["made_at"]))
    about = (f"Made {made} by flowscope bundle. Stored: the head, every mark, finding and blame segment, and "
             f"{data['spaced']} evenly spaced batches ({len(data['moments'])} moments); a seek elsewhere shows the "
             f"nearest stored moment. What-if, search and diff need a server.")
    html = html.replace("<title>flowscope</title>", f"<title>flowscope post-mortem: {escape(data['log'])}</title>", 1)
    html = html.replace('<span id="session-status"',
                        f'<span id="postmortem" class="pill" title="{escape(about)}">post-mortem of '
                        f'{escape(data["log"])} · {len(data["moments"])} stored moments</span>\n    '
                        '<span id="session-status"', 1)
    return html


def build_bundle(log: Path, out: Path, spaced: int = 40, max_explain: int = DEFAULT_MAX_EXPLAIN,
                 progress: Callable[[str], None] | None = None) -> dict:
    """Write the post-mortem of LOG to OUT; returns a summary (moments, explanations, bytes)."""
    from .app import locate_frontend, plotly_js

    data = collect_answers(log, spaced=spaced, max_explain=max_explain)
    if progress:
        progress(f"{len(data['answers'])} answers at {len(data['moments'])} moments")
    page = render_html(data, locate_frontend(), plotly_js())
    out.write_text(page, encoding="utf-8")
    return {"moments": len(data["moments"]), "answers": len(data["answers"]), "explains": data["explains"],
            "explains_capped": data["explains_capped"], "bytes": len(page.encode())}
