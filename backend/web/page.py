"""The page as the browser loads it: ``frontend/index.html`` with its stylesheets and ES modules inlined.

Served as files, the page's thirty-odd modules and 2 stylesheets cost the browser six rounds of requests over its six
connections to a host before anything runs, most of a first render.
Inlined, the page is one response. Nothing is built or rewritten beyond that: each module stays its own module (a
data: URL behind an import map, its relative imports named ``flowscope/NAME.js``, which the map resolves), read
from the files as they are now, so an edited file shows at the next reload. ``/static/`` still serves every file
(``/static/index.html`` is the page with its modules as files, for a debugger). The post-mortem bundle
(``backend/export/bundle.py``) is this page with the stored answers and plotly added.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

__all__ = ["module_map", "inline_page", "script_json", "InlinePage", "MODULE_PREFIX"]

MODULE_PREFIX = "flowscope/"  # the import map's name for frontend/js/NAME.js
STYLESHEETS = ("app.css", "diagnosis.css", "overview.css", "plan.css")


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no ``</`` can close it."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def module_map(js_dir: Path) -> dict[str, str]:
    """Every module of the page as a data: URL.

    Its relative imports are rewritten to bare ``flowscope/NAME.js`` specifiers the import map resolves (a data: URL is
    no base for ``./NAME.js``)."""
    out = {}
    for f in sorted(js_dir.glob("*.js")):
        src = re.sub(r'(from\s+|import\s*\(?\s*)"\./([\w-]+\.js)"', rf'\1"{MODULE_PREFIX}\2"',
                     f.read_text(encoding="utf-8"))
        out[MODULE_PREFIX + f.name] = "data:text/javascript;base64," + base64.b64encode(src.encode()).decode()
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
                *sorted((self.frontend / "js").glob("*.js"))]

    def get(self) -> tuple[bytes, bytes, str]:
        """``(html, gzipped html, etag)`` of the page as the files are now."""
        stamp = tuple((p.name, st.st_mtime_ns, st.st_size) for p in self._files() if (st := _stat(p)) is not None)
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
