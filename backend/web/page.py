"""The page as the browser loads it: ``frontend/index.html`` with its stylesheets and ES modules inlined.

Served as files, the page's thirty-odd modules and 2 stylesheets cost the browser six rounds of requests over its six
connections to a host before anything runs, most of a first render.
Inlined, the page is one response. Nothing is built or rewritten beyond that: each module stays its own module (a
data: URL behind an import map, its relative imports named by their path under frontend/js, ``flowscope/PATH.js``,
which the map resolves), read from the files as they are now, so an edited file shows at the next reload.
``/static/`` still serves every file (``/static/index.html`` is the page with its modules as files, for a debugger).
The post-mortem bundle (``backend/export/bundle.py``) is this page with the stored answers and plotly added.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import posixpath
import re
import threading
from pathlib import Path
from typing import Any

__all__ = ["module_map", "inline_page", "script_json", "InlinePage", "MODULE_PREFIX"]

MODULE_PREFIX = "flowscope/"  # the import map's name for frontend/js/PATH.js (e.g. flowscope/graph/canvas.js)
STYLESHEETS = ("app.css", "diagnosis.css", "overview.css", "plan.css")


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no ``</`` can close it."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


# a relative specifier in an import or export statement, or in a dynamic import(): "./x.js", "../graph/x.js"
RELATIVE_IMPORT = re.compile(r'((?:from|import)\s*\(?\s*)"(\.\.?/[\w./-]+\.js)"')


def page_modules(js_dir: Path) -> list[Path]:
    """Every module of the page: the .js files under ``js_dir``, its subfolders included, in path order."""
    return sorted(js_dir.rglob("*.js"), key=lambda f: f.relative_to(js_dir).as_posix())


def module_map(js_dir: Path) -> dict[str, str]:
    """Every module of the page as a data: URL, by its name in the import map (``flowscope/`` and its path).

    Its relative imports are rewritten to those bare names, resolved against the importing module's folder
    (``../times.js`` in ``graph/canvas.js`` is ``flowscope/times.js``): a data: URL is no base for a relative one."""
    out = {}
    for f in page_modules(js_dir):
        name = f.relative_to(js_dir).as_posix()
        text = f.read_text(encoding="utf-8")

        def bare(m: re.Match, f: Path = f, folder: str = posixpath.dirname(name), text: str = text) -> str:
            target = posixpath.normpath(posixpath.join(folder, m[2]))
            if target.startswith("../"):
                line = text.count("\n", 0, m.start()) + 1
                raise ValueError(f"{f}:{line}: the import {m[2]!r} reaches outside {js_dir}")
            return f'{m[1]}"{MODULE_PREFIX}{target}"'

        src = RELATIVE_IMPORT.sub(bare, text)
        out[MODULE_PREFIX + name] = "data:text/javascript;base64," + base64.b64encode(src.encode()).decode()
    return out


def inline_page(frontend: Path) -> str:
    """index.html with the stylesheets and the modules inlined.

    The stylesheets in a <style>, the modules in an import map; the entry module imported by name."""
    html = (frontend / "index.html").read_text(encoding="utf-8")
    html = re.sub(r'<link rel="modulepreload"[^>]*>\n?', "", html)
    css = "\n".join((frontend / "css" / name).read_text(encoding="utf-8")
                    for name in STYLESHEETS if (frontend / "css" / name).is_file())
    html = re.sub(r'<link rel="stylesheet"[^>]*>\n?', "", html)
    imports = script_json({"imports": module_map(frontend / "js")})
    html = html.replace("</head>", f'<style>\n{css}\n</style>\n<script type="importmap">{imports}</script>\n</head>',
                        1)
    entry = f'<script type="module">import "{MODULE_PREFIX}app.js";</script>'
    html, n = re.subn(r'<script type="module" src="[^"]*app\.js"></script>', entry, html)
    if n != 1:
        raise ValueError(f"{frontend / 'index.html'}: no <script type=\"module\" src=\".../app.js\"> to inline")
    return html


class InlinePage:
    """The inlined page as bytes (and gzipped), with an ETag.

    Made again when a file of the page changes (by modification time and size, looked at on every request: a few dozen
    stat calls)."""

    def __init__(self, frontend: Path) -> None:
        self.frontend = frontend
        self._lock = threading.Lock()
        self._stamp: tuple | None = None
        self._page: tuple[bytes, bytes, str] = (b"", b"", "")

    def _files(self) -> list[Path]:
        return [self.frontend / "index.html", *(self.frontend / "css" / n for n in STYLESHEETS),
                *page_modules(self.frontend / "js")]

    def get(self) -> tuple[bytes, bytes, str]:
        """``(html, gzipped html, etag)`` of the page as the files are now."""
        stamp = tuple((str(p), st.st_mtime_ns, st.st_size) for p in self._files() if (st := _stat(p)) is not None)
        with self._lock:
            if stamp != self._stamp:
                raw = inline_page(self.frontend).encode()
                self._page = (raw, gzip.compress(raw, 6), '"' + hashlib.sha256(raw).hexdigest()[:32] + '"')
                self._stamp = stamp
            return self._page


def _stat(path: Path):
    try:
        return path.stat()
    except OSError:
        return None
