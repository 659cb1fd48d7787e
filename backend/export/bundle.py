"""A post-mortem you can hand over: one self-contained HTML file holding the browser view and the answers it needs.

The log is opened in an in-process server (``create_app``, no network) and run to completion; then the GET routes
the page asks are answered for a set of moments (the head, every mark's and finding's batch, where the page opens a
straggler finding, every blame segment's, and up to ``spaced`` evenly spaced batches) and stored in one JSON object
keyed by path and parameters (``answer_key``, which frontend/js/api.js computes too). Per-session and per-scope
answers are asked of the app itself; a scope's state and explanations at each moment come from the routes' own
functions over one replay restored per moment, in increasing order, and only until the scope has settled (after
which its head answer stands, ``settled``). The page is the one the server serves (``backend/web/page.py``) with
plotly inlined. The browser still never computes progress: in bundle mode api.js answers from the stored object,
choosing the nearest stored moment for a seek and saying so.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import orjson
from fastapi import FastAPI, HTTPException

from backend.feeds.progress_feeds import FeedError
from backend.stores import StoreError, StoreUrl
from backend.views.projections import finding_opens_at, finding_port, session_info
from backend.web.api.deps import encode
from backend.web.api.scopes import explain_answer, state_answer
from backend.web.page import inline_page, script_json
from tracker.reachability import Location

if TYPE_CHECKING:
    from backend.sessions.history import History
    from backend.sessions.manager import SessionManager
    from backend.sessions.session import Session
    from tracker.progress_log.replay import Replay

__all__ = ["answer_key", "build_bundle", "BundleError"]

# most explanations stored; the rest of a big log's ports say they were not precomputed
DEFAULT_MAX_EXPLAIN = 4000
# the Blame tab lists a scope's 50 slowest times (``top=50``); the segments of this many of them get their moments
DEFAULT_BLAME_TIMES = 50


class BundleError(Exception):
    """The log could not be opened or did not finish loading."""


def answer_key(path: str, params: dict[str, Any]) -> str:
    """The stored answer's key.

    The path, then the parameters (as strings) sorted by name, as compact JSON. Must match ``answerKey`` in
    frontend/js/api.js."""
    pairs = sorted([k, str(v)] for k, v in params.items() if v is not None)
    return path + "\n" + json.dumps(pairs, separators=(",", ":"), ensure_ascii=False)


def _finding_batch(finding: dict) -> int | None:
    """The batch a contract finding was found at, as the timeline places it (after the batch it names)."""
    b = finding.get("batch")
    index = b.get("index") if isinstance(b, dict) else None
    return index + 1 if isinstance(index, int) else None


def _marked_moments(marks: list[dict], findings: list[dict]) -> set[tuple[int, str]]:
    """(batch, scope) of every mark and finding: the moments someone points at, in the scope they point into."""
    out = {(int(m["after"]), ",".join(map(str, m.get("scope") or []))) for m in marks if m.get("after") is not None}
    for f in findings:
        b = _finding_batch(f)
        if b is not None:
            out.add((b, ",".join(map(str, f.get("scope") or []))))
    return out


def _where_findings_open(history: History, head: int,
                         marks: list[dict]) -> list[tuple[int, tuple, list | None, str | None]]:
    """Where the page opens each finding mark it does not open at its own batch.

    That is a straggler's, just before its end: (batch, scope, port, time as JSON), the batch as ``GET .../state?at=``
    counts it (``batch_at_time``, at most the head) and the port and time it explains there."""
    out = []
    for m in marks:
        at = finding_opens_at(m)
        if at is None:
            continue
        t = m.get("time")
        out.append((min(history.batch_at_time(at), head), tuple(m.get("scope") or []), finding_port(m),
                    None if t is None else json.dumps(t, separators=(",", ":"))))
    return out


def _moments(head: int, pointed: Iterable[tuple[int, str]], spaced: int) -> list[int]:
    batches = {head}
    batches.update(b for b, _ in pointed)
    if head > 0 and spaced > 0:
        batches.update(round(i * head / spaced) for i in range(spaced + 1))
    return sorted(b for b in batches if 0 <= b <= head)


def _seek_time_after(history: History, batch: int, head: int) -> float | None:
    """The wall time from which a seek by time lands after ``batch``; None at the head.

    The next batch's, as ``batch_at_time`` counts: the running maximum. frontend/js/api.js reads it to tell a stored
    moment from a nearest one."""
    return history.at_max[batch] if batch < head else None


def _scopes(tree: dict) -> Iterable[list[int]]:
    yield list(tree.get("path", []))
    for child in tree.get("scopes", []):
        yield from _scopes(child)


class _Answers:
    """The answers kept under their keys.

    Per-session and per-scope ones are asked of the app itself, in process (one ASGI call each, no network and no test
    client); the ones asked at many moments are made by the routes' own functions (``state_answer``, ``explain_answer``)
    from one restored replay per moment, and kept as the routes send them (``deps.encode``)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.answers: dict[str, Any] = {}

    async def get(self, path: str, **params: Any) -> Any:
        params = {k: v for k, v in params.items() if v is not None}
        status, body = await _asgi_get(self.app, path, params)
        if status != 200:
            return None
        answer = orjson.loads(body)
        self.answers[answer_key(path, params)] = answer
        return answer

    def put(self, path: str, params: dict[str, Any], content: Any) -> Any:
        answer = orjson.loads(encode(content))
        self.answers[answer_key(path, params)] = answer
        return answer


async def _asgi_get(app: FastAPI, path: str, params: dict[str, Any]) -> tuple[int, bytes]:
    """GET ``path`` of the ASGI ``app`` in this process, as a browser on this machine would."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "root_path": "",
             "query_string": urlencode({k: str(v) for k, v in params.items()}).encode(),
             "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 80)}
    status, body = 500, []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            body.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(body)


async def _wait_done(manager: SessionManager, timeout: float) -> Session:
    deadline = time.monotonic() + timeout
    while True:
        sessions = list(manager.sessions.values())
        if sessions and sessions[0].status in ("done", "failed", "stopped"):
            s = sessions[0]
            if s.status != "done":
                info = session_info(s)
                raise BundleError(f"{info.get('name')}: loading {s.status}: "
                                  f"{info.get('error') or 'see the errors tab of flowscope replay'}")
            return s
        if time.monotonic() > deadline:
            raise BundleError(f"the log did not finish loading in {timeout:.0f} s")
        await asyncio.sleep(0.02)


def _last_changes(session: Session, paths: list[tuple]) -> dict[tuple, int]:
    """The last batch that may have changed each scope, from the batch index.

    The index says which scope each batch was applied to. A batch reaches its scope's ancestors and descendants through
    their ports, so it may change every scope under the innermost enclosing scope without ports (nothing crosses that
    one's boundary), or the root."""
    root = session.replay.root
    history = session.history

    def enclosure(path: tuple) -> tuple:
        while path:
            try:
                scope = root.find(path)
            except KeyError:  # not kept: the root encloses it
                return ()
            if not (scope.inputs or scope.outputs):
                return path
            path = path[:-1]
        return path

    enclosures: dict[int, tuple] = {}  # the batch index's scope id -> its enclosure
    last: dict[tuple, int] = {}
    for b, sid in enumerate(history.scope, start=1):
        u = enclosures.get(sid)
        if u is None:
            u = enclosures[sid] = enclosure(history.scope_path(sid))
        last[u] = b
    return {p: max(last.get(p[:n], 0) for n in range(len(p) + 1)) for p in paths}


class _Moments:
    """Answers every scope at each moment from one replay restored there, in increasing order.

    A restored replay is advanced to the next moment, never rebuilt. A scope is answered within its lifetime only: from
    the first moment it exists (before, the route says 404) until it has settled, that is, no batch can have changed it
    since and its ports are as at the head with no frontier left; from then on its answers are the head's, with the
    moment's batch and time (``settled``, which frontend/js/api.js reads so).

    States are stored at every moment; explanations (of each port with a frontier; at the head of every port; a
    straggler finding's stage output for its time where the page opens it) are chosen first, by rank, and made in a
    second pass, so that under ``--max-explain`` each mark and finding has its own scope explained at its moment
    before anything else."""

    # ranks of an explanation: a mark's or finding's scope at its moment; a port with a frontier at the head; the
    # other scopes at those moments; a port without a frontier at the head; the evenly spaced and blame moments
    MARKED, HEAD_HELD, AT_MARK, HEAD_FREE, SPACED = range(5)

    def __init__(self, session: Session, rec: _Answers, base: str, scopes: list[list[int]],
                 pointed: set[tuple[int, str]]) -> None:
        self.session, self.rec, self.base = session, rec, base
        self.scopes = [(tuple(p), ",".join(map(str, p))) for p in scopes]
        self.head = session.head
        self.pointed = pointed
        self.pointed_batches = {b for b, _ in pointed}
        self.final: dict[str, bytes] = {}  # scope -> its head rows, encoded, when no port has a frontier
        self.last_change = _last_changes(session, [path for path, _ in self.scopes])
        self.settled: dict[str, int] = {}  # scope -> the first stored moment at which it had settled
        self.blamed: dict[int, list[tuple[tuple, str, list, str]]] = {}  # batch -> (scope, key, port, time)
        # (rank, batch, scope, key, port, time as JSON or None: the least in the port's frontier)
        self.candidates: list[tuple[int, int, tuple, str, list, str | None]] = []
        self.explained = 0
        self.capped = False

    def head_state(self, path: tuple, key: str) -> dict:
        """The scope's state at the head (stored as GET .../state without a batch answers it)."""
        st = self.rec.put(f"{self.base}/state", {"scope": key},
                          state_answer(self.session, self.session.replay, self.session.scope(path), self.head))
        if not any(row[3] for row in st["ports"]):
            self.final[key] = encode(st["ports"])
        for row in st["ports"]:
            self.candidates.append((self.HEAD_HELD if row[3] else self.HEAD_FREE, self.head, path, key, row[:3],
                                    None))
        return st

    def opened(self, openings: list[tuple[int, tuple, list | None, str | None]]) -> None:
        """The explanations the page asks where it opens a finding, ranked with the marks'.

        Where it opens one is ``_where_findings_open``'s."""
        for b, path, port, t_json in openings:
            if port is not None:
                self.candidates.append((self.MARKED, b, path, ",".join(map(str, path)), port, t_json))

    def explain(self, replay: Replay, path: tuple, key: str, port: list, batch: int, graphs: dict,
                time_json: str | None = None) -> None:
        live = batch >= self.head
        answer = explain_answer(self.session, replay, path, Location.from_json(port), time_json,
                                self.head if live else batch, live, graphs)
        # at the head an explanation is asked without a batch; a blame segment's always names its batch
        keyed = batch if time_json is not None or not live else None
        params = {"scope": key, "port": ",".join(map(str, port)), "time": time_json, "batch": keyed}
        self.rec.put(f"{self.base}/explain", {k: v for k, v in params.items() if v is not None}, answer)

    def _replays(self, moments: Iterable[int]) -> Iterator[tuple[int, Any]]:
        """Each moment's replay: the live one at the head, else one restored there (advanced from the last)."""
        for b in sorted(moments):
            if b >= self.head:
                yield b, self.session.replay
            else:
                with self.session.history.at_batch(b) as replay:
                    yield b, replay

    def states(self, moments: list[int]) -> None:
        """Every scope's state at each moment of its lifetime; the blame segments' explanations on the way."""
        for b, replay in self._replays(moments):
            graphs: dict = {}  # port graphs of this replay's scopes, shared by their explanations
            for path, key, port, t_json in self.blamed.get(b, ()):
                try:
                    replay.root.find(path)
                except KeyError:
                    continue
                self.explain(replay, path, key, port, b, graphs, t_json)
            if b >= self.head:
                continue
            for path, key in self.scopes:
                if self.settled.get(key, b + 1) <= b:
                    continue
                try:
                    scope = replay.root.find(path)
                except KeyError:
                    continue  # not declared yet
                answer = state_answer(self.session, replay, scope, b)
                if b >= self.last_change[path] and encode(answer["ports"]) == self.final.get(key):
                    self.settled[key] = b
                    continue
                st = self.rec.put(f"{self.base}/state", {"scope": key, "batch": b}, answer)
                rank = (self.MARKED if (b, key) in self.pointed else
                        self.AT_MARK if b in self.pointed_batches else self.SPACED)
                for row in st["ports"]:
                    if row[3]:  # a port with a frontier: something may hold it
                        self.candidates.append((rank, b, path, key, row[:3], None))

    def explanations(self, max_explain: int) -> None:
        """The ``max_explain`` first-ranked explanations (earlier moments first within a rank), one pass again."""
        self.candidates.sort(key=lambda c: c[:2])
        # a finding's opening may ask what a marked moment's port or a blame segment asks already
        blamed = {(b, key, tuple(port), t) for b, segs in self.blamed.items() for _, key, port, t in segs}
        unique: dict[tuple, tuple] = {}
        for c in self.candidates:
            ident = (c[1], c[3], tuple(c[4]), c[5])
            if ident not in blamed:
                unique.setdefault(ident, c)
        chosen = list(unique.values())[:max(0, max_explain)]
        self.capped = len(unique) > len(chosen)
        self.explained = len(chosen)
        at: dict[int, list[tuple[tuple, str, list, str | None]]] = {}
        for _, b, path, key, port, t_json in chosen:
            at.setdefault(b, []).append((path, key, port, t_json))
        for b, replay in self._replays(at):
            graphs: dict = {}
            for path, key, port, t_json in at[b]:
                try:
                    self.explain(replay, path, key, port, b, graphs, t_json)
                except HTTPException:  # a finding's scope or stage not there yet where it opens: the route's 404
                    self.explained -= 1


def collect_answers(log: Path | StoreUrl, spaced: int = 40, max_explain: int = DEFAULT_MAX_EXPLAIN,
                    timeout: float = 600.0, progress: Callable[[str], None] | None = None,
                    blame_times: int = DEFAULT_BLAME_TIMES) -> dict:
    """Open LOG in an in-process server, run it to completion and store the answers the page asks for.

    The server gets an event loop of its own, in a thread of its own: a caller may be running one (playwright's sync
    API). ``blame_times``: how many of each scope's slowest times have their blame segments' moments stored."""
    with ThreadPoolExecutor(1, thread_name_prefix="flowscope-bundle") as pool:
        return pool.submit(asyncio.run, _collect(log, spaced, max_explain, timeout, progress, blame_times)).result()


async def _collect(log: Path | StoreUrl, spaced: int, max_explain: int, timeout: float,
                   progress: Callable[[str], None] | None, blame_times: int) -> dict:
    from backend.web.app import Settings, create_app

    # a bundle is a one-shot reader: it keeps every finished scope, so each one's answers are stored
    if isinstance(log, StoreUrl):
        settings = Settings(allowed_dirs=[], allowed_urls=[log], open_paths=[str(log)], keep_finished=None)
    else:
        log = log.resolve()
        settings = Settings(allowed_dirs=[log.parent], open_paths=[str(log)], keep_finished=None)
    app = create_app(settings)
    async with AsyncExitStack() as stack:
        try:
            await stack.enter_async_context(app.router.lifespan_context(app))  # opens the log
        except (FeedError, StoreError) as e:  # not a log flowscope reads: said as the server says it, no traceback
            raise BundleError(str(e).removeprefix(f"{log}: ")) from None
        session = await _wait_done(app.state.manager, timeout)
        if progress:
            progress(f"loaded: {session.head} batches")
        sid = session.id
        rec = _Answers(app)
        base = f"/api/sessions/{sid}"
        await rec.get("/api/sessions")
        await rec.get(base)
        tree = await rec.get(f"{base}/scopes") or {"path": [], "scopes": []}
        marks = (await rec.get(f"{base}/marks", limit=20000) or {}).get("marks", [])
        findings = (await rec.get(f"{base}/findings", limit=20000) or {}).get("findings", [])
        await rec.get(f"{base}/marks", limit=2000)
        await rec.get(f"{base}/findings", limit=500)
        await rec.get(f"{base}/marks", finding="true", limit=500)  # the Findings tab's stragglers and skew
        await rec.get(f"{base}/errors", limit=500)
        workers = await rec.get(f"{base}/workers") or {}
        for w in workers.get("workers", []):
            if isinstance(w, dict) and "worker" in w:
                await rec.get(f"{base}/batches", worker=w["worker"], limit=200)
        await rec.get(f"{base}/tasks")
        await rec.get(f"{base}/streaming")
        await rec.get(f"{base}/overview")  # the Overview the page opens with, and its what-if chart
        await rec.get(f"{base}/cores-whatif")
        head = session.head
        scopes = list(_scopes(tree))
        # a straggler finding opens just before its end: that moment, in its scope, is pointed at too
        openings = _where_findings_open(session.history, head, marks)
        pointed = _marked_moments(marks, findings) | {(b, ",".join(map(str, path))) for b, path, _, _ in openings}
        walk = _Moments(session, rec, base, scopes, pointed)
        walk.opened(openings)
        heads: dict[str, Any] = {}
        for path in scopes:
            scope = ",".join(map(str, path))
            await rec.get(f"{base}/graph", scope=scope, compact=1)  # the form the browser asks for
            await rec.get(f"{base}/series", scope=scope)
            st = walk.head_state(tuple(path), scope)
            heads[scope] = dict(st, type="snapshot", status="done", marks_total=len(marks))
            # a blame segment opens the view in its middle, explaining its holder for the blamed time: store those
            # (as the Blame tab asks: a nested scope's list holds the times of the scopes inside it, "true" as the
            # page's String(true) writes it in the key)
            nested = "true" if scope else None
            blame = await rec.get(f"{base}/blame", top=50, scope=scope or None, nested=nested) or {}
            await rec.get(f"{base}/blame", top=1, scope=scope or None, nested=nested)  # the executor timeline's
            for t in blame.get("times", [])[:max(0, blame_times)]:
                for seg in t.get("blame", []):
                    port = (seg.get("holder") or {}).get("port")
                    if not port or seg.get("from") is None or seg.get("to") is None:
                        continue
                    b = min(session.history.batch_at_time((seg["from"] + seg["to"]) / 2), head)
                    walk.blamed.setdefault(b, []).append((tuple(t["scope"]), ",".join(map(str, t["scope"])), port,
                                                          json.dumps(t["time"], separators=(",", ":"))))
        blamed = sum(len(v) for v in walk.blamed.values())
        moments = sorted(set(_moments(head, pointed, spaced)) | set(walk.blamed))
        walk.states(moments)
        walk.explanations(max_explain)
        return {
            "sid": sid, "log": log.name, "made_at": time.time(), "head": head,
            "moments": [[b, session.history.time_of(b), _seek_time_after(session.history, b, head)] for b in moments],
            "spaced": spaced,
            "settled": walk.settled, "explains": walk.explained + blamed, "explains_capped": walk.capped,
            "heads": heads, "answers": rec.answers,
        }


def render_html(data: dict, frontend: Path, plotly: Path) -> str:
    """The page (``backend/web/page.py``: stylesheets and modules inlined) with plotly and the answers inlined too."""
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


def build_bundle(log: Path | StoreUrl, out: Path, spaced: int = 40, max_explain: int = DEFAULT_MAX_EXPLAIN,
                 progress: Callable[[str], None] | None = None, blame_times: int = DEFAULT_BLAME_TIMES) -> dict:
    """Write the post-mortem of LOG to OUT; returns a summary (moments, explanations, bytes)."""
    from backend.web.app import locate_frontend, plotly_js

    data = collect_answers(log, spaced=spaced, max_explain=max_explain, progress=progress, blame_times=blame_times)
    if progress:
        progress(f"{len(data['answers'])} answers at {len(data['moments'])} moments")
    page = render_html(data, locate_frontend(), plotly_js())
    out.write_text(page, encoding="utf-8")
    return {"moments": len(data["moments"]), "answers": len(data["answers"]), "explains": data["explains"],
            "explains_capped": data["explains_capped"], "bytes": len(page.encode())}
