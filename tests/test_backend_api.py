"""The REST API against a real uvicorn server on 127.0.0.1 (httpx)."""

from __future__ import annotations

import base64
import gzip
import json
import posixpath
import re
import shutil
from pathlib import Path

import httpx
import pytest
import zstandard

from backend.eventlog.encoders import encode
from backend.web.app import Settings
from backend.web.page import InlinePage, module_map
from tests.conftest import LOOP_LOG, REPO
from tests.e2e.logs import bad_log, growing_records, write_pipeline, write_records
from tests.e2e.server import running_server


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("logs")
    (d / "loop.jsonl").write_bytes(LOOP_LOG.read_bytes())
    bad_log(d / "bad.jsonl")
    write_pipeline(d / "pipe.jsonl", operators=12, epochs=30)
    (d / "readme.txt").write_text("not a log\n")
    write_records(d / "growing.jsonl", growing_records())
    return d


@pytest.fixture(scope="module")
def server(logs, tmp_path_factory):
    settings = Settings(allowed_dirs=[logs], data_dir=tmp_path_factory.mktemp("data"), upload_limit=200_000,
                        checkpoint_every=16)
    with running_server(settings) as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server):
    with httpx.Client(base_url=server.url, timeout=20) as c:
        yield c


@pytest.fixture(scope="module")
def loop_sid(server, client, logs) -> str:
    r = client.post("/api/sessions", json={"path": str(logs / "loop.jsonl")})
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    server.wait_for(sid, client=client)
    return sid


def test_session_lifecycle(server, client, logs):
    r = client.post("/api/sessions", json={"path": str(logs / "pipe.jsonl"), "name": "the pipe"})
    assert r.status_code == 201
    info = r.json()
    assert info["name"] == "the pipe" and info["kind"] == "progress-log" and info["status"] in ("loading", "done")
    done = server.wait_for(info["id"], client=client)
    assert done["operators"] == 12 and done["batches"] > 300 and done["findings"] == 0 and done["errors"] == 0
    assert info["id"] in {s["id"] for s in client.get("/api/sessions").json()}
    scratch = server.manager.sessions[info["id"]].history.scratch
    assert scratch.size > 0 and not scratch.closed
    assert client.delete(f"/api/sessions/{info['id']}").status_code == 204
    assert scratch.closed  # the session's sealed history pages are given back with it
    assert client.get(f"/api/sessions/{info['id']}").status_code == 404
    assert client.delete(f"/api/sessions/{info['id']}").status_code == 404


def test_scope_tree_and_graph(client, loop_sid):
    tree = client.get(f"/api/sessions/{loop_sid}/scopes").json()
    assert tree["path"] == [] and tree["operators"] == 3
    assert [s["path"] for s in tree["scopes"]] == [[3]] and tree["scopes"][0]["depth"] == 2
    g = client.get(f"/api/sessions/{loop_sid}/graph").json()
    assert {n["name"] for n in g["nodes"]} == {"input", "map", "loop", "sink"}
    assert {tuple(e["from"]) + tuple(e["to"]) for e in g["edges"]} == {
        ("out", 1, 0, "in", 2, 0), ("out", 2, 0, "in", 3, 0), ("out", 3, 0, "in", 4, 0)}
    inner = client.get(f"/api/sessions/{loop_sid}/graph", params={"scope": "3"}).json()
    assert inner["depth"] == 2 and len(inner["nodes"]) == 5
    r = client.get(f"/api/sessions/{loop_sid}/graph", params={"scope": "7"})
    assert r.status_code == 404 and "no scope [7]" in r.json()["detail"]
    assert client.get(f"/api/sessions/{loop_sid}/graph", params={"scope": "x"}).status_code == 400


def _expand(g: dict) -> dict:
    """The browser's expandGraph (frontend/js/api.js), restated: the compact graph rebuilt as objects."""
    c, e = g["nodes"], g["edges"]
    nodes = [{"id": c["id"][i], "box": str(c["id"][i]), "kind": c["kind"][i], "name": c["name"][i],
              "inputs": c["inputs"][i], "outputs": c["outputs"][i], "x": c["x"][i], "y": c["y"][i], "w": c["w"][i],
              "h": c["h"][i], "layer": c["layer"][i], "band": c["band"][i], "attrs": {}} for i in range(len(c["id"]))]
    for i, box in c["box"]:
        nodes[i]["box"] = box
    for i, attrs in c["attrs"]:
        nodes[i]["attrs"] = attrs
    for i, path, contains in c["scope"]:
        nodes[i].update(scope=path, contains=contains)
    edges = [{"from": ["out", *e["from"][2 * i:2 * i + 2]], "to": ["in", *e["to"][2 * i:2 * i + 2]],
              "feedback": i in e["feedback"]} for i in range(len(e["from"]) // 2)]
    for i, via in e["via"]:
        edges[i]["via"] = via
    rest = {k: v for k, v in g.items() if k not in ("nodes", "edges", "columns")}
    return dict(rest, nodes=nodes, edges=edges)


@pytest.mark.parametrize("scope", ["", "3"])
def test_the_compact_graph_is_the_same_graph_column_by_column(client, loop_sid, scope):
    full = client.get(f"/api/sessions/{loop_sid}/graph", params={"scope": scope})
    compact = client.get(f"/api/sessions/{loop_sid}/graph", params={"scope": scope, "compact": 1})
    assert compact.json()["columns"] is True
    assert _expand(compact.json()) == full.json()
    assert len(compact.content) < len(full.content)
    nodes = full.json()["nodes"]
    assert any(n["box"] != str(n["id"]) for n in nodes) or any("scope" in n for n in nodes)  # sparse rows used


def _port(state: dict, key: str) -> list:
    kind, node, port = key.split(",")
    return next(r for r in state["ports"] if r[0] == kind and r[1] == int(node) and r[2] == int(port))


def test_state_at_batch_and_at_wall_time_match_the_cli(client, loop_sid):
    import orjson

    from tracker.progress_log.replay import replay_file

    expected = orjson.loads(orjson.dumps(replay_file(LOOP_LOG, at=20).state()))  # tuples -> arrays, as served
    st = client.get(f"/api/sessions/{loop_sid}/state", params={"batch": 20, "scope": "3"}).json()
    assert st["batch"] == 20 and st["head"] == 91
    want = next(s for s in expected["scopes"] if s["path"] == [3])
    got = {(r[0], r[1], r[2]): (sorted(map(str, r[3])), r[4], r[5]) for r in st["ports"]}
    for p in want["ports"]:
        key = tuple(p["port"])
        assert got[key] == (sorted(map(str, p["frontier"])), p["pointstamps"], p["implications"]), key
    head = client.get(f"/api/sessions/{loop_sid}/state").json()
    assert head["batch"] == 91 and all(r[3] == [] for r in head["ports"])  # everything completes
    by_time = client.get(f"/api/sessions/{loop_sid}/state", params={"at": st["at"]}).json()
    assert by_time["batch"] == 20 and by_time["ports"] == client.get(
        f"/api/sessions/{loop_sid}/state", params={"batch": 20}).json()["ports"]
    early = client.get(f"/api/sessions/{loop_sid}/state", params={"batch": 0}).json()
    assert _port(early, "out,1,0")[3] == [0]  # the input's initial capability


def test_explain_names_the_blocking_holder_and_where_to_ask_next(client, loop_sid):
    ans = client.get(f"/api/sessions/{loop_sid}/explain", params={"batch": 20, "port": "in,4,0"}).json()
    assert ans["held"] and ans["time"] == 0 and ans["frontier"] == [0]
    (h,) = ans["holders"]
    assert h["location"] == ["out", 3, 0] and h["what"] == "nested-scope" and h["operator"] == "loop"
    assert h["next"] == {"scope": [3], "port": ["in", 0, 0]}
    assert h["path"] == [["out", 3, 0], ["in", 4, 0]]
    inner = client.get(f"/api/sessions/{loop_sid}/explain",
                       params={"batch": 20, "scope": "3", "port": "in,0,0", "time": "[0,2]"}).json()
    assert inner["held"] and inner["holders"][0]["what"] == "message"
    assert inner["holders"][0]["operator"] == "step" and inner["holders"][0]["path"][0] == ["in", 2, 0]
    assert inner["holders"][0]["path"][-1] == ["in", 0, 0]
    done = client.get(f"/api/sessions/{loop_sid}/explain", params={"port": "in,4,0"}).json()
    assert not done["held"] and done["frontier"] == []
    assert client.get(f"/api/sessions/{loop_sid}/explain", params={"port": "sideways,1,0"}).status_code == 400
    assert client.get(f"/api/sessions/{loop_sid}/explain", params={"port": "in,9,0"}).status_code == 404
    r = client.get(f"/api/sessions/{loop_sid}/explain", params={"port": "in,4,0", "time": "[1,2]"})
    assert r.status_code == 400 and "time" in r.json()["detail"]


def test_marks_series_search_workers_batches(client, loop_sid):
    marks = client.get(f"/api/sessions/{loop_sid}/marks").json()
    assert marks["total"] == 13 and marks["marks"][0]["label"] == "epoch 0 started" and marks["marks"][0]["after"] == 1
    series = client.get(f"/api/sessions/{loop_sid}/series", params={"scope": "3"}).json()
    concat = series["nodes"]["1"]
    assert concat["name"] == "concat" and len(concat["t"]) > 5 and concat["v"][-1] is None
    assert max(series["counts"]["messages"]) >= 1
    assert client.get(f"/api/sessions/{loop_sid}/search", params={"q": "STEP"}).json() == [
        {"scope": [3], "scope_name": "loop", "node": 2, "name": "step", "nested": False}]
    workers = client.get(f"/api/sessions/{loop_sid}/workers").json()
    assert workers["workers"][0]["batches"] == 91 and sum(workers["histogram"]["0"]) == 91
    b = client.get(f"/api/sessions/{loop_sid}/batches", params={"offset": 20, "limit": 2}).json()
    assert b["total"] == 91 and [x["batch"] for x in b["batches"]] == [21, 22]
    first = b["batches"][0]
    assert first["cause"] == {"operator": "step"} and first["seq"] == 20 and first["scope"] == [3]
    assert client.get(f"/api/sessions/{loop_sid}/batches", params={"worker": 5}).json()["total"] == 0


def test_findings_and_read_errors_of_a_broken_log(server, client, logs):
    sid = client.post("/api/sessions", json={"path": str(logs / "bad.jsonl")}).json()["id"]
    info = server.wait_for(sid, client=client)
    assert info["status"] == "done" and info["findings"] >= 1 and info["errors"] == 2
    found = client.get(f"/api/sessions/{sid}/findings").json()["findings"]
    f = next(f for f in found if f["kind"] == "capability-without-cause")
    assert f["port"] == ["out", 2, 0] and f["batch"]["line"] == 6
    errs = client.get(f"/api/sessions/{sid}/errors").json()["errors"]
    assert sorted(e["line"] for e in errs) == [7, 8]
    assert any("no node 9" in e["reason"] for e in errs)


def test_paths_are_confined_and_non_logs_refused(client, logs):
    r = client.post("/api/sessions", json={"path": str(REPO / "README.md")})
    assert r.status_code == 403 and "outside the directories" in r.json()["detail"]
    r = client.post("/api/sessions", json={"path": str(logs / ".." / ".." / "etc")})
    assert r.status_code == 403
    link = logs / "escape.jsonl"
    if not link.exists():
        link.symlink_to(LOOP_LOG)  # inside by name, outside once resolved
    assert client.post("/api/sessions", json={"path": str(link)}).status_code == 403
    r = client.post("/api/sessions", json={"path": str(logs / "missing.jsonl")})
    assert r.status_code == 404
    r = client.post("/api/sessions", json={"path": str(logs / "readme.txt")})
    assert r.status_code == 422 and "not a flowscope progress log" in r.json()["detail"]


def test_uploads(server, client, logs):
    data = gzip.compress((logs / "loop.jsonl").read_bytes())
    r = client.post("/api/sessions/upload", params={"filename": "../../evil/loop.jsonl.gz"}, content=data)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    assert r.json()["name"] == "loop.jsonl.gz"  # the directory part is dropped
    assert server.wait_for(sid, client=client)["batches"] == 91
    stored = list(Path(server.app.state.settings.data_dir, "sessions", sid).iterdir())
    assert [p.name for p in stored] == ["loop.jsonl.gz"]
    client.delete(f"/api/sessions/{sid}")
    assert not Path(server.app.state.settings.data_dir, "sessions", sid).exists()


@pytest.mark.parametrize("name,body,status,reason", [
    ("empty.jsonl", b"", 422, "empty"),
    ("notes.jsonl", b"hello world\n", 422, "first line is not JSON"),
    ("wrong.jsonl", b'{"type":"header","format":"other"}\n', 422, "first record must be"),
    ("newer.jsonl", b'{"type":"header","format":"flowscope-progress","version":9}\n', 422, "version 9"),
    ("broken.jsonl.gz", b"\x1f\x8b\x08\x00garbage", 422, "truncated"),
    ("corrupt.jsonl.gz", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\xff" * 64, 422, "compression is broken"),
    ("huge.jsonl", b"x" * 300_000, 413, "limit"),
])
def test_bad_uploads_get_a_clear_4xx(server, client, name, body, status, reason):
    before = set(Path(server.app.state.settings.data_dir, "sessions").glob("*")) if Path(
        server.app.state.settings.data_dir, "sessions").exists() else set()
    r = client.post("/api/sessions/upload", params={"filename": name}, content=body)
    assert r.status_code == status, r.text
    assert reason in r.json()["detail"]
    assert str(server.app.state.settings.data_dir) not in r.json()["detail"]
    after = set(Path(server.app.state.settings.data_dir, "sessions").glob("*"))
    assert after == before  # nothing left behind


@pytest.mark.parametrize("codec, suffix", [("gz", ".gz"), ("zstd", ".zst"), ("lz4", ".lz4"), ("snappy", ".snappy"),
                                           ("lzf", ".lzf")])
def test_a_decompression_bomb_upload_is_a_413(server, client, codec, suffix):
    """The limit counts what an upload decompresses to, not only the bytes received: 2 MB of blank lines after a
    progress-log header (10 times the limit), compressed to under the 200 KB limit, is refused before any session
    reads it."""
    bomb = encode(codec, [LOOP_LOG.read_bytes().split(b"\n", 1)[0] + b"\n" + b"\n" * (2 << 20)])
    assert len(bomb) < 200_000
    sessions = Path(server.app.state.settings.data_dir, "sessions")
    before = set(sessions.glob("*")) if sessions.exists() else set()
    r = client.post("/api/sessions/upload", params={"filename": f"bomb.jsonl{suffix}"}, content=bomb)
    assert r.status_code == 413, r.text
    assert r.json()["detail"] == (f"bomb.jsonl{suffix} decompresses to more than 200000 bytes; the limit is 200000 "
                                  "bytes (--upload-decompressed-limit)")
    assert set(sessions.glob("*")) == before, "nothing left behind"
    # the same codec under the limit loads: a progress log in the codecs progress logs are read in, else a Spark log
    if suffix in (".gz", ".zst"):
        name, small = f"loop.jsonl{suffix}", encode(codec, [LOOP_LOG.read_bytes()])
    else:
        spark = next(REPO.glob("fixtures/spark/batch_shuffle/eventlog_v2_*/events_1_*.zstd"))
        lines = zstandard.ZstdDecompressor().decompressobj().decompress(spark.read_bytes()).splitlines(True)
        while sum(map(len, lines)) > 150_000:  # the start of the application, under the limit
            lines.pop()
        name, small = f"app{suffix}", encode(codec, [b"".join(lines)])
    r = client.post("/api/sessions/upload", params={"filename": name}, content=small)
    assert r.status_code == 201, r.text
    info = server.wait_for(r.json()["id"], client=client)
    assert info["batches"] == 91 if suffix in (".gz", ".zst") else info["batches"] > 0
    client.delete(f"/api/sessions/{r.json()['id']}")


def test_an_upload_without_length_is_cut_at_the_limit(client):
    def chunks():
        for _ in range(40):
            yield b"y" * 10_000
    r = client.post("/api/sessions/upload", params={"filename": "stream.jsonl"}, content=chunks())
    assert r.status_code == 413 and "exceeds the limit of 200000 bytes" in r.json()["detail"]


def test_every_module_of_the_page_is_preloaded():
    """The page names every ES module it imports up front (modulepreload), so the browser fetches them at once
    instead of discovering each level of imports one round trip after another."""
    frontend = REPO / "frontend"
    html = (frontend / "index.html").read_text()
    preloaded = set(re.findall(r'<link rel="modulepreload" href="/static/js/([\w./]+)">', html))
    assert preloaded == {p.relative_to(frontend / "js").as_posix() for p in (frontend / "js").rglob("*.js")}


def test_frontend_plotly_and_openapi_are_served(client):
    page = client.get("/static/index.html")  # the page with its modules as files
    assert page.status_code == 200 and '<script type="module" src="/static/js/app.js">' in page.text
    js = client.get("/static/js/graph/svg.js")
    assert js.status_code == 200 and "export class GraphView" in js.text
    plotly = client.get("/vendor/plotly.min.js")
    assert plotly.status_code == 200 and len(plotly.content) > 1_000_000 and b"plotly" in plotly.content[:2000].lower()
    spec = client.get("/openapi.json").json()
    for path in ("/api/sessions", "/api/sessions/upload", "/api/sessions/{sid}/state", "/api/sessions/{sid}/explain",
                 "/api/sessions/{sid}/graph", "/api/sessions/{sid}/findings", "/api/sessions/{sid}/marks"):
        assert path in spec["paths"], path
    assert "ScopeState" in spec["components"]["schemas"] and "Explanation" in spec["components"]["schemas"]


def bare_imports(text: str, folder: str) -> str:
    """A module's text as the import map serves it: each relative specifier ("./x.js", "../x.js"), resolved against
    the module's folder under frontend/js, named flowscope/PATH.js."""
    def bare(m: re.Match) -> str:
        return f'"flowscope/{posixpath.normpath(posixpath.join(folder, m[1]))}"'
    return re.sub(r'"(\.\.?/[\w./-]+\.js)"', bare, text)


def test_the_page_is_one_response_holding_every_module_and_stylesheet(client):
    """``/`` inlines what index.html loads (backend/web/page.py): every module of frontend/js as a data: URL in the
    import map, its relative imports named through the map, the stylesheets in a <style>; nothing left to fetch
    from /static/ before the first picture. An unchanged page revalidates to a 304."""
    frontend = REPO / "frontend"
    page = client.get("/")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-cache"
    assert not re.search(r'(src|href)="/static/', page.text), "the page still fetches a file of its own"
    importmap = re.search(r'<script type="importmap">(.*?)</script>', page.text, re.S)
    assert importmap is not None
    imports = json.loads(importmap.group(1))["imports"]
    js = frontend / "js"
    assert set(imports) == {f"flowscope/{p.relative_to(js).as_posix()}" for p in js.rglob("*.js")}
    for name, url in imports.items():
        src = base64.b64decode(url.split(",", 1)[1]).decode()
        path = name.removeprefix("flowscope/")
        original = (js / path).read_text()
        assert src == bare_imports(original, posixpath.dirname(path)), name
        assert '"./' not in src and '"../' not in src, name
    assert '<script type="module">import "flowscope/app.js";</script>' in page.text
    assert ".pill" in page.text and "#graph-canvas" in page.text  # app.css inlined
    again = client.get("/", headers={"if-none-match": page.headers["etag"]})
    assert again.status_code == 304 and not again.content


def test_an_edited_module_is_in_the_next_page(tmp_path):
    """The inlined page is made from the files as they are: an edit, in a subfolder of frontend/js too, shows at the
    next request (a new ETag)."""
    frontend = tmp_path / "frontend"
    shutil.copytree(REPO / "frontend", frontend)
    page = InlinePage(frontend)
    raw, gz, etag = page.get()
    assert gzip.decompress(gz) == raw and page.get()[2] == etag
    js = frontend / "js" / "graph" / "camera.js"
    js.write_text(js.read_text() + "\nexport const EDITED = 1;\n")
    raw2, _, etag2 = page.get()
    assert etag2 != etag and raw2 != raw
    importmap2 = re.search(rb'<script type="importmap">(.*?)</script>', raw2, re.S)
    assert importmap2 is not None
    imports = json.loads(importmap2.group(1))["imports"]
    edited = imports["flowscope/graph/camera.js"]
    assert "export const EDITED = 1;" in base64.b64decode(edited.split(",", 1)[1]).decode()


def test_the_import_map_names_modules_by_their_path_and_resolves_relative_imports(tmp_path):
    """A module in a subfolder is named by its path; ``./`` and ``../`` resolve against the importing module's folder,
    the way the browser resolves them against its URL; an import that leaves frontend/js is an error naming it."""
    js = tmp_path / "js"
    (js / "graph" / "svg").mkdir(parents=True)
    (js / "app.js").write_text('import { a } from "./graph/view.js";\n')
    (js / "graph" / "view.js").write_text('import { t } from "../times.js";\nimport "./svg/draw.js";\n'
                                          'export const a = () => import("../app.js");\n')
    (js / "graph" / "svg" / "draw.js").write_text('export { a } from "../view.js";\nimport "../../times.js";\n')
    (js / "times.js").write_text("export const t = 1;\n")
    got = {k: base64.b64decode(v.split(",", 1)[1]).decode() for k, v in module_map(js).items()}
    assert list(got) == ["flowscope/app.js", "flowscope/graph/svg/draw.js", "flowscope/graph/view.js",
                         "flowscope/times.js"]
    assert got["flowscope/app.js"] == 'import { a } from "flowscope/graph/view.js";\n'
    assert got["flowscope/graph/view.js"] == ('import { t } from "flowscope/times.js";\n'
                                             'import "flowscope/graph/svg/draw.js";\n'
                                             'export const a = () => import("flowscope/app.js");\n')
    assert got["flowscope/graph/svg/draw.js"] == ('export { a } from "flowscope/graph/view.js";\n'
                                                 'import "flowscope/times.js";\n')
    (js / "times.js").write_text('\nimport { x } from "../outside.js";\n')
    with pytest.raises(ValueError, match=r"times\.js:2: the import '\.\./outside\.js' reaches outside"):
        module_map(js)


def test_strata_of_the_loop(client, loop_sid):
    root = client.get(f"/api/sessions/{loop_sid}/strata").json()
    assert root == {"scope": [], "strata": [[1], [2], [3], [4]], "feedback": []}
    inner = client.get(f"/api/sessions/{loop_sid}/strata", params={"scope": "3"}).json()
    assert inner["strata"] == [[1], [2], [3]] and inner["feedback"] == [["3", "1"]]


def test_per_worker_view_and_a_dataflow_that_grows(server, client, logs):
    sid = client.post("/api/sessions", json={"path": str(logs / "growing.jsonl")}).json()["id"]
    info = server.wait_for(sid, client=client)
    assert info["batches"] == 39 and info["findings"] == 0
    workers = {w["worker"]: w for w in client.get(f"/api/sessions/{sid}/workers").json()["workers"]}
    assert set(workers) == {0, 1} and workers[0]["batches"] + workers[1]["batches"] == 39
    one = client.get(f"/api/sessions/{sid}/batches", params={"worker": 1, "limit": 1000}).json()
    assert one["total"] == workers[1]["batches"] and all(b["worker"] == 1 for b in one["batches"])
    assert one["batches"][0]["batch"] == workers[1]["first_batch"]
    # the late sink exists at the head, not before it was declared
    head = client.get(f"/api/sessions/{sid}/state").json()
    assert any(r[1] == 3 for r in head["ports"])
    early = client.get(f"/api/sessions/{sid}/state", params={"batch": 2}).json()
    assert not any(r[1] == 3 for r in early["ports"])
    nodes = client.get(f"/api/sessions/{sid}/graph").json()["nodes"]
    assert {n["name"] for n in nodes} == {"source", "iterate", "late sink"}
