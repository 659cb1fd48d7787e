"""`flowscope bundle`: a post-mortem HTML file opened from file:// in headless chromium with every network request
blocked: the graph, the timeline at a mark (colours as the stored REST answers say), explain, blame, deep links."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from backend.export.bundle import answer_key, build_bundle
from backend.views.projections import finding_opens_at, finding_port
from tests.e2e.browser import chromium, shot
from tests.test_browser_view import dom_classes, expected_status, lex_min, wait_batch

ROOT = Path(__file__).resolve().parents[1]
LOOP_LOG = ROOT / "fixtures" / "progress" / "loop.jsonl"
STALL_LOG = next((ROOT / "fixtures" / "spark" / "streaming_stall").glob("eventlog_v2_*"))


def stored(html: Path) -> dict:
    text = html.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="flowscope-bundle">(.*?)</script>', text, re.S)
    assert m, "no stored answers in the bundle"
    return json.loads(m.group(1))


def expected_from(state: dict) -> dict:
    """Port colours as the browser view derives them from a /state answer (as tests/test_browser_view.py does)."""
    rows = state["ports"]
    t = lex_min([r[3] for r in rows])
    return {f"{r[0]},{r[1]},{r[2]}": expected_status(r[3], t) for r in rows}


@pytest.fixture(scope="module")
def loop_bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "loop postmortem.html"
    res = subprocess.run([sys.executable, "-m", "flowscope.cli", "bundle", str(LOOP_LOG), "-o", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "moments" in res.stdout and out.is_file()
    return out


@pytest.fixture(scope="module")
def stall_bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "stall.html"
    summary = build_bundle(STALL_LOG, out)
    assert summary["moments"] > 2 and summary["explains"] > 0
    return out


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def offline(browser):
    """A page whose every request other than file:, data: and blob: is aborted and remembered."""
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    attempted: list[str] = []
    errors: list[str] = []

    def guard(route):
        url = route.request.url
        if url.startswith(("file:", "data:", "blob:")):
            route.continue_()
        else:
            attempted.append(url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    yield page
    context.close()
    assert not attempted, f"the post-mortem tried the network: {attempted}"
    assert not errors, errors


def test_bundle_is_one_file_with_nothing_to_fetch(loop_bundle):
    text = loop_bundle.read_text(encoding="utf-8")
    markup = re.sub(r"<script\b[^>]*>.*?</script>", "", text, flags=re.S)  # the page's own tags
    assert not re.search(r'(src|href)="(/|https?:)', markup), "a reference to a file or server outside the bundle"
    assert '<script type="module">import "flowscope/app.js";</script>' in text
    assert "Plotly" in text and "importmap" in text
    data = stored(loop_bundle)
    assert data["head"] == 91
    batches = [m[0] for m in data["moments"]]
    assert 91 in batches and 29 in batches  # the head and the mark "epoch 0 complete at the sink"
    assert len(batches) < 92  # a bounded set of moments, not every batch


def test_bundle_of_a_missing_log_names_it(tmp_path):
    res = subprocess.run([sys.executable, "-m", "flowscope.cli", "bundle", str(tmp_path / "nope.jsonl"), "-o",
                          str(tmp_path / "x.html")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "nope.jsonl" in res.stderr and not (tmp_path / "x.html").exists()


def test_bundle_of_a_file_that_is_no_log_says_why(tmp_path):
    bad = tmp_path / "notes.jsonl"
    bad.write_text("not json\n")
    res = subprocess.run([sys.executable, "-m", "flowscope.cli", "bundle", str(bad), "-o", str(tmp_path / "x.html")],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"flowscope bundle: {bad}: not a flowscope progress log" in res.stderr
    assert not (tmp_path / "x.html").exists()


def test_offline_graph_timeline_marks_and_explain(offline, loop_bundle):
    page = offline
    data = stored(loop_bundle)
    page.goto(loop_bundle.as_uri())
    page.wait_for_selector("#graph circle.port")
    assert page.locator("#graph .node.operator, #graph .node.scope").count() == 4
    assert page.locator("#graph path.edge").count() == 3
    assert page.inner_text("#head") == "91"
    wait_batch(page, 91)
    assert set(dom_classes(page).values()) == {"done"}
    assert page.inner_text("#postmortem") == f"post-mortem of loop.jsonl · {len(data['moments'])} stored moments"
    assert "evenly spaced" in page.get_attribute("#postmortem", "title")

    # the timeline moves to a mark, and the colours are those of the stored REST answer at its batch
    page.click('#tabs button[data-tab="marks-tab"]')
    page.click('#tab-marks-tab .list-row:has-text("epoch 0 complete at the sink")')
    wait_batch(page, 29)
    sid = data["sid"]
    at29 = data["answers"][answer_key(f"/api/sessions/{sid}/state", {"scope": "", "batch": 29})]
    colours = dom_classes(page)
    assert colours == expected_from(at29) and set(colours.values()) != {"done"}
    assert page.get_attribute("#graph", "data-mode") == "history"

    # explain at the mark: the stored answer's holders are shown
    page.click('#graph circle.port[data-port="in,4,0"]')
    page.click("#why-ask")
    page.wait_for_selector("#why .holder")
    ans = data["answers"][answer_key(f"/api/sessions/{sid}/explain", {"scope": "", "port": "in,4,0", "batch": 29})]
    assert ans["holders"], "the stored answer has holders at the mark"
    assert "batch 29" in page.inner_text("#why")
    shot(page, "bundle-loop-mark")

    # a batch that was not stored: the nearest stored moment, said so
    batches = [m[0] for m in data["moments"]]
    missing = next(b for b in range(92) if b not in batches)
    nearest = min(batches, key=lambda b: abs(b - missing))
    page.fill("#batch-input", str(missing))
    page.press("#batch-input", "Enter")
    wait_batch(page, nearest)
    page.wait_for_selector("#toast:not([hidden])")
    assert "nearest stored moment" in page.inner_text("#toast")


def test_deep_link_selects_the_moment_and_port(offline, loop_bundle):
    page = offline
    page.goto(loop_bundle.as_uri() + "#batch=20&port=in,2,0")
    wait_batch(page, 20)
    page.wait_for_selector("#why .holder")
    selected = page.evaluate("() => window.__flowscope.selected")
    assert selected == {"type": "port", "key": "in,2,0"}
    assert "sel" in page.get_attribute('#graph circle.port[data-port="in,2,0"]', "class").split()
    assert "held by" in page.inner_text("#why")
    # the address bar keeps the moment and the port, so it can be handed on as it is; another port selected is
    # written there too
    link = page.url
    assert "batch=20" in link and "port=in,2,0" in link, link
    page.click('#graph circle.port[data-port="in,4,0"]')
    assert "port=in,4,0" in page.url and "batch=20" in page.url, page.url
    page.goto("about:blank")
    page.goto(link)
    wait_batch(page, 20)
    page.wait_for_selector("#why .holder")
    assert page.evaluate("() => window.__flowscope.selected") == {"type": "port", "key": "in,2,0"}


def test_offline_spark_blame_lists_times(offline, stall_bundle):
    page = offline
    data = stored(stall_bundle)
    page.goto(stall_bundle.as_uri() + "#scope=2")
    page.wait_for_selector("#graph circle.port")
    page.click('#tabs button[data-tab="blame"]')
    page.wait_for_selector("#tab-blame .blame-time", timeout=15000)
    stored_blame = data["answers"][answer_key(f"/api/sessions/{data['sid']}/blame",
                                              {"top": 50, "scope": "2", "nested": "true"})]
    assert page.locator("#tab-blame .blame-time").count() == len(stored_blame["times"]) > 0
    page.wait_for_selector("#blame-waterfall .main-svg")  # plotly, inlined, draws offline
    assert len(page.query_selector_all("#blame-waterfall .bars .point")) >= 2
    # a segment opens its moment and explains the holder from the stored answers
    bar = page.query_selector_all("#blame-waterfall .bars .point path")[0].bounding_box()
    page.mouse.click(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
    page.wait_for_selector("#why .holder, #why .late-holder", timeout=15000)
    # the segment's moment is stored (the batch its middle falls in): nothing to say about a nearest one
    assert page.locator("#toast:not([hidden])").count() == 0, page.inner_text("#toast")
    shot(page, "bundle-spark-blame")


def test_offline_straggler_finding_opens_the_straggler_running(offline, stall_bundle):
    """The Findings tab's straggler row opens just before the straggler's end, from stored answers: the moment
    and the stage's explanation there, naming the task still running."""
    page = offline
    data = stored(stall_bundle)
    found = data["answers"][answer_key(f"/api/sessions/{data['sid']}/marks", {"finding": "true", "limit": 500})]
    (slow,) = [m for m in found["marks"] if m["finding"] == "straggler"]
    page.goto(stall_bundle.as_uri())
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="findings"]')
    page.click("#tab-findings .spark-finding.straggler")
    page.wait_for_selector(f'#why .late-holder tr[data-task="{slow["task"]}"]', timeout=15000)
    assert int(page.input_value("#batch-input")) < slow["after"]  # before the stage completed
    assert page.locator("#toast:not([hidden])").count() == 0, page.inner_text("#toast")


STRAGGLER_LOG = next((ROOT / "fixtures" / "spark" / "skewed_straggler").glob("eventlog_v2_*"))


def straggler_of(data: dict) -> dict:
    found = data["answers"][answer_key(f"/api/sessions/{data['sid']}/marks", {"finding": "true", "limit": 500})]
    (slow,) = [m for m in found["marks"] if m["finding"] == "straggler"]
    return slow


def opened_moment(data: dict, at: float) -> list:
    """The stored moment the page lands on for a seek to wall time ``at`` (frontend/js/api.js bundleMoment), checked
    to be the one asked for (bundleExact: its batches answer that time), so no nearest moment stands in for it."""
    pick = data["moments"][0]
    for m in data["moments"]:
        if m[1] is not None and m[1] <= at:
            pick = m
    assert (pick[1] is None or pick[1] <= at) and (pick[2] is None or at < pick[2]), \
        f"wall time {at} is not a stored moment: the page would show batch {pick[0]}, the nearest"
    return pick


def opens_at(finding: dict) -> float:
    """Where the page opens a finding (every straggler finding has a moment)."""
    at = finding_opens_at(finding)
    assert at is not None, finding
    return at


def straggler_explanation(data: dict, slow: dict, batch: int) -> dict | None:
    """The stored explanation the page asks where it opens a straggler: its stage's output, for its time."""
    port = finding_port(slow)
    assert port is not None, slow
    return data["answers"].get(answer_key(f"/api/sessions/{data['sid']}/explain", {
        "scope": ",".join(map(str, slow["scope"])), "port": ",".join(map(str, port)),
        "time": json.dumps(slow["time"], separators=(",", ":")), "batch": batch}))


@pytest.fixture(scope="module")
def unblamed_straggler_bundle(tmp_path_factory) -> Path:
    """skewed_straggler with no blame segment's moment stored: nothing but the finding itself stores the moment
    the page opens its straggler at."""
    out = tmp_path_factory.mktemp("bundle") / "straggler.html"
    build_bundle(STRAGGLER_LOG, out, spaced=0, blame_times=0)
    return out


def test_a_straggler_findings_opening_is_stored_without_any_blame_segment(unblamed_straggler_bundle):
    """The moment the page opens a straggler finding at (just before its end, as the server counts a wall time)
    is stored in the finding's scope, with the stage's output explained there for the finding's time, naming the
    straggler running, though no blame segment's moment is stored."""
    data = stored(unblamed_straggler_bundle)
    slow = straggler_of(data)
    batch = opened_moment(data, opens_at(slow))[0]
    assert batch < slow["after"]  # before the stage completed, where the finding was made
    scope = ",".join(map(str, slow["scope"]))
    state = data["answers"][answer_key(f"/api/sessions/{data['sid']}/state", {"scope": scope, "batch": batch})]
    rows = {tuple(r[:3]): r for r in state["ports"]}
    assert rows[tuple(finding_port(slow) or ())][3], "the stage's output still holds its time"
    ans = straggler_explanation(data, slow, batch)
    assert ans is not None, "the straggler's stage is not explained where the page opens it"
    running = [t["task"] for h in ans["late"] for t in h.get("running", [])]
    assert slow["task"] in running, running


def test_a_capped_bundle_explains_a_straggler_where_it_opens(tmp_path):
    """--max-explain ranks the explanation a straggler finding opens with the marks': a cap that covers exactly
    the marks' scopes at their moments and that explanation keeps it, and leaves others out."""
    full = stored_after(build_bundle, STRAGGLER_LOG, tmp_path / "full.html", spaced=0, blame_times=0)
    base = f"/api/sessions/{full['sid']}"
    slow = straggler_of(full)
    batch = opened_moment(full, opens_at(slow))[0]
    marks = full["answers"][answer_key(f"{base}/marks", {"limit": 20000})]["marks"]
    marked = {(m["after"], ",".join(map(str, m.get("scope") or []))) for m in marks if m["after"] < full["head"]}
    marked.add((batch, ",".join(map(str, slow["scope"]))))
    held = 0
    for b, scope in marked:
        state = full["answers"].get(answer_key(f"{base}/state", {"scope": scope, "batch": b}))
        held += sum(1 for row in (state or {"ports": []})["ports"] if row[3])
    data = stored_after(build_bundle, STRAGGLER_LOG, tmp_path / "capped.html", spaced=0, blame_times=0,
                        max_explain=held + 1)
    assert data["explains_capped"]
    ans = straggler_explanation(data, slow, batch)
    assert ans is not None and slow["task"] in [t["task"] for h in ans["late"] for t in h.get("running", [])]


def test_offline_straggler_finding_opens_without_any_blame_segment(offline, unblamed_straggler_bundle):
    """The Findings tab's straggler row opens its stored moment (no nearest one said) and the explanation naming
    the task running, in a bundle where no blame segment stored that moment."""
    page = offline
    slow = straggler_of(stored(unblamed_straggler_bundle))
    page.goto(unblamed_straggler_bundle.as_uri())
    page.wait_for_selector("#graph .node")
    page.click('#tabs button[data-tab="findings"]')
    page.click("#tab-findings .spark-finding.straggler")
    page.wait_for_selector(f'#why .late-holder tr[data-task="{slow["task"]}"]', timeout=15000)
    assert int(page.input_value("#batch-input")) < slow["after"]
    assert page.locator("#toast:not([hidden])").count() == 0, page.inner_text("#toast")


def test_offline_spark_streaming_and_executor_pictures(offline, stall_bundle):
    page = offline
    page.goto(stall_bundle.as_uri() + "#scope=2")
    page.wait_for_selector("#graph circle.port")
    page.click('#tabs button[data-tab="streaming"]')
    page.wait_for_selector("#tab-streaming .stream-durations .main-svg", timeout=15000)
    assert "inferred" in page.inner_text("#tab-streaming .trigger-note")
    page.click('#tabs button[data-tab="executors"]')
    page.wait_for_selector("#executor-chart .main-svg", timeout=15000)
    assert "batch 4" in page.inner_text("#critical-note")  # the stored slowest time of scope 2, overlaid


SHUFFLE_LOG = next((ROOT / "fixtures" / "spark" / "batch_shuffle").glob("eventlog_v2_*"))


def test_a_capped_bundle_explains_every_mark_first(tmp_path):
    """Under a --max-explain that covers exactly the ports with a frontier in each mark's scope at its batch, every
    one of them has its explanation stored (the latest marks too), and the cap did leave the others out."""
    full = stored_after(build_bundle, LOOP_LOG, tmp_path / "full.html")
    marks = full["answers"][answer_key(f"/api/sessions/{full['sid']}/marks", {"limit": 20000})]["marks"]
    marked = {(m["after"], ",".join(map(str, m.get("scope") or []))) for m in marks
              if m.get("after") is not None and m["after"] < full["head"]}

    def held(data: dict) -> list[str]:
        """The explanation keys a mark's moment needs: each port with a frontier in the mark's scope."""
        base = f"/api/sessions/{data['sid']}"
        keys = []
        for b, scope in sorted(marked):
            state = data["answers"].get(answer_key(f"{base}/state", {"scope": scope, "batch": b}))
            keys += [answer_key(f"{base}/explain", {"scope": scope, "port": ",".join(map(str, row[:3])), "batch": b})
                     for row in (state or {"ports": []})["ports"] if row[3]]
        return keys

    needed = held(full)
    assert len(needed) > 50 and max(b for b, _ in marked) >= 89  # loop.jsonl's marks hold work, to the last epoch
    data = stored_after(build_bundle, LOOP_LOG, tmp_path / "capped.html", max_explain=len(needed))
    assert data["explains_capped"]
    missing = [k for k in held(data) if k not in data["answers"]]
    assert not missing, f"marks without their explanation: {missing[:3]}"
    explained = [k for k in data["answers"] if k.startswith(f"/api/sessions/{data['sid']}/explain\n")]
    assert len(explained) < len([k for k in full["answers"] if k.startswith(f"/api/sessions/{full['sid']}/explain")])


def stored_after(build, log: Path, out: Path, **options) -> dict:
    build(log, out, **options)
    return stored(out)


@pytest.fixture(scope="module")
def shuffle_bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "shuffle.html"
    build_bundle(SHUFFLE_LOG, out)
    return out


def test_a_finished_job_is_answered_by_its_head_state_after_it_settled(offline, shuffle_bundle):
    """A job's region is answered only while it can still change: past its end nothing is stored for it (its
    answers would be the head's), yet the page still shows it there, at that moment, as the head does."""
    data = stored(shuffle_bundle)
    base = f"/api/sessions/{data['sid']}"
    batches = [m[0] for m in data["moments"]]
    settled = {s: b for s, b in data["settled"].items() if s and 0 < b < data["head"]}
    assert settled, "no job region settled before the head"
    for scope, b in settled.items():
        later = [k for k in batches if b <= k < data["head"]]
        assert later and not any(answer_key(f"{base}/state", {"scope": scope, "batch": k}) in data["answers"]
                                 for k in later)
        earlier = [k for k in batches if k < b]
        assert any(answer_key(f"{base}/state", {"scope": scope, "batch": k}) in data["answers"] for k in earlier)
    scope, b = min(settled.items(), key=lambda kv: kv[1])
    moment = next(k for k in batches if b < k < data["head"])
    page = offline
    page.goto(shuffle_bundle.as_uri() + f"#scope={scope}&batch={moment}")
    wait_batch(page, moment)
    head = data["answers"][answer_key(f"{base}/state", {"scope": scope})]
    assert dom_classes(page) == expected_from(head) and set(dom_classes(page).values()) == {"done"}
    assert page.get_attribute("#graph", "data-mode") == "history"
    assert page.locator("#toast:not([hidden])").count() == 0  # the moment is stored: nothing to say
    port = head["ports"][0]
    page.click(f'#graph circle.port[data-port="{port[0]},{port[1]},{port[2]}"]')
    page.click("#why-ask")  # explained as at the head, where nothing holds it
    page.wait_for_function("document.querySelector('#why').innerText.includes('The frontier is empty')",
                           timeout=10000)


def test_a_findings_batch_is_a_stored_moment(tmp_path):
    """A contract finding names the batch it was found at (as the timeline places it: after that batch): the bundle
    stores that moment, with the finding's scope and its explanations there."""
    from tests.e2e.logs import bad_log

    log = tmp_path / "bad.jsonl"
    bad_log(log)
    data = stored_after(build_bundle, log, tmp_path / "bad.html", spaced=0)
    base = f"/api/sessions/{data['sid']}"
    findings = data["answers"][answer_key(f"{base}/findings", {"limit": 20000})]["findings"]
    assert findings
    batches = [m[0] for m in data["moments"]]
    for f in findings:
        b = f["batch"]["index"] + 1
        assert b in batches, f"the moment of {f['kind']} (batch {b}) is not stored"
        scope = ",".join(map(str, f["scope"]))
        if b < data["head"] and data["settled"].get(scope, b + 1) > b:
            assert answer_key(f"{base}/state", {"scope": scope, "batch": b}) in data["answers"]


def test_a_progress_logs_loop_times_are_named_by_epoch_and_iteration(offline, loop_bundle):
    """A progress log's loop runs no Spark job: its times in the Blame tab are named by epoch and iteration."""
    page = offline
    page.goto(loop_bundle.as_uri())
    page.wait_for_selector("#graph circle.port")
    page.click('#tabs button[data-tab="blame"]')
    page.wait_for_selector("#tab-blame .blame-time")
    rows = page.locator("#tab-blame .blame-time").all_inner_texts()
    assert rows and all("job ," not in r for r in rows), rows
    assert any("loop · epoch 0, iteration 0" in r for r in rows), rows


EXECUTOR_LOST_LOG = next((ROOT / "fixtures" / "spark" / "executor_lost").glob("eventlog_v2_*"))


def test_a_finding_in_another_scope_opens_at_its_own_moment(offline, tmp_path):
    """From a moment where the finding's scope did not exist yet (a job that starts later), clicking the finding
    opens that scope at the finding's batch directly, never asking for the scope at the moment on screen."""
    out = tmp_path / "lost.html"
    build_bundle(EXECUTOR_LOST_LOG, out)
    data = stored(out)
    findings = data["answers"][answer_key(f"/api/sessions/{data['sid']}/findings", {"limit": 500})]["findings"]
    f = findings[0]
    assert f["scope"] == [2] and f["batch"]["index"] + 1 == 25
    page = offline
    page.goto(out.as_uri() + "#batch=1")  # before job 1 (scope 2) started
    wait_batch(page, 1)
    page.click('#tabs button[data-tab="findings"]')
    page.click("#tab-findings .contract-finding >> nth=0")
    wait_batch(page, 25)
    assert page.evaluate("() => window.__flowscope.scope") == [2]
    assert page.locator("#toast:not([hidden])").count() == 0, page.inner_text("#toast")
    port = ",".join(map(str, f["port"]))
    assert "sel" in page.get_attribute(f'#graph circle.port[data-port="{port}"]', "class").split()
