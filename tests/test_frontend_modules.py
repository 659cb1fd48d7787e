"""The page's ES modules (frontend/js/**/*.js) import one way and do nothing when imported.

A circle of imports makes a module's functions depend on evaluation order (one side sees the other's bindings
uninitialised) and hides which module is the higher one; a module that touches the DOM or starts a timer when it is
imported runs before page.js's start() has made the components. app.js, the entry point, is the one module whose
top level calls something.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

JS = Path(__file__).resolve().parents[1] / "frontend" / "js"
# a module's static imports of another module of the page, by a relative specifier ("./x.js", "../graph/x.js")
IMPORT = re.compile(r'^\s*import\s[^;]*?\bfrom\s+"(\.\.?/[\w./-]+\.js)"|^\s*import\s+"(\.\.?/[\w./-]+\.js)"',
                    re.M | re.S)
ENTRY = "app.js"
# What a module's top level may hold: imports, exports and declarations (a declaration's value may be a literal or
# an arrow function, its continuation lines indented), comments and the ends of multi-line declarations.
TOP_LEVEL = re.compile(r"(import |export |(async )?function |class |const |let |//|[}\])]|$)")
DECLARATION = re.compile(r"(export )?(const|let) [^=]+=(?P<value>.*)")
CALL = re.compile(r"[\w$\])]\s*\(")


def runs_at_import(line: str) -> bool:
    """A top-level line that calls something when the module is evaluated (a function's body does not count)."""
    if not TOP_LEVEL.match(line):
        return True
    decl = DECLARATION.match(line.split(" // ")[0])
    return bool(decl and "=>" not in decl["value"] and CALL.search(decl["value"]))


def name_of(path: Path) -> str:
    """A module's name: its path under frontend/js (``graph/canvas.js``)."""
    return path.relative_to(JS).as_posix()


def imports(path: Path) -> set[str]:
    """The modules of the page `path` imports, by name (relative specifiers resolved against its folder)."""
    folder = posixpath.dirname(name_of(path))
    found = IMPORT.findall(path.read_text(encoding="utf-8"))
    return {posixpath.normpath(posixpath.join(folder, a or b)) for a, b in found}


def modules() -> list[Path]:
    return sorted(JS.rglob("*.js"))


def module_graph() -> dict[str, set[str]]:
    return {name_of(p): imports(p) for p in modules()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary circle found by a depth-first search from each module, each named once (rotated to start
    at its least name), as the list of modules around it."""
    found: set[tuple[str, ...]] = set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                ring = path[path.index(nxt):]
                k = ring.index(min(ring))
                found.add(tuple(ring[k:] + ring[:k]))
            elif len(path) < len(graph):
                walk(nxt, [*path, nxt])

    for start in graph:
        walk(start, [start])
    return [list(c) for c in sorted(found)]


def test_cycle_finder_names_a_circle():
    """The finder itself: a known circle is reported, rotated, and an acyclic graph has none."""
    graph = {"b.js": {"c.js"}, "c.js": {"a.js"}, "a.js": {"b.js", "d.js"}, "d.js": set()}
    assert cycles(graph) == [["a.js", "b.js", "c.js"]]
    assert cycles({"a.js": {"b.js"}, "b.js": set()}) == []


def test_imports_parse_every_module():
    """The parser sees the imports it must: page.js imports workspace.js and graph/canvas.js, which imports
    ../times.js, and every import names a file here."""
    graph = module_graph()
    assert {"workspace.js", "graph/canvas.js"} <= graph["page.js"] and graph["app.js"] == {"page.js"}
    assert "times.js" in graph["graph/canvas.js"]
    missing = {(m, i) for m, deps in graph.items() for i in deps if i not in graph}
    assert not missing, f"imports of files that do not exist: {sorted(missing)}"


def test_no_import_cycles():
    found = cycles(module_graph())
    assert not found, "import circles among frontend/js modules: " + "; ".join(" -> ".join([*c, c[0]]) for c in found)


def test_every_module_is_reached_from_the_entry_point():
    """No module is left over: each is imported, directly or not, by app.js."""
    graph = module_graph()
    seen, todo = set(), [ENTRY]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    assert set(graph) - seen == set()


def test_import_check_sees_calls():
    """The check itself: a call, a timer, a DOM lookup at the top level are seen; declarations are not."""
    for line in ['start();', 'document.body.append(x);', 'const t = setTimeout(f, 5);', 'let el = $("#graph");']:
        assert runs_at_import(line), line
    for line in ['export const $ = (sel) => document.querySelector(sel);', 'const CELL = 256; // (world units)',
                 'export async function start() {', '};', 'let timer = null;']:
        assert not runs_at_import(line), line


def test_nothing_happens_at_import():
    """Outside app.js, a module's top level declares and exports: no statement there calls anything."""
    offending = []
    for path in modules():
        if name_of(path) == ENTRY:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line[:1].strip() and runs_at_import(line):
                offending.append(f"{name_of(path)}:{n}: {line.strip()}")
    assert not offending, "statements run at import: " + "; ".join(offending)
