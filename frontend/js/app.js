// flowscope in the browser: routes (#/ the sessions, #/s/ID?scope=3,1 one scope of a session), and the glue
// between the stream (live state), the REST API (state in the past, graph, explain), the graph view, the side
// panel, the timeline and the drawer. Progress is never recomputed here: the page shows what the server sends.

import * as api from "./api.js";
import { GraphView } from "./graph.js";
import { Stream } from "./stream.js";
import { Timeline } from "./timeline.js";
import { SidePanel, portName } from "./panels.js";
import { Drawer } from "./drawer.js";
import { cmp, fmt, fmtFrontier, fmtCounts, parseTime, status, clock } from "./times.js";

const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

const S = {
  sid: null,
  info: null,
  tree: null,
  scope: [],
  layout: null,
  mode: "live", // live: follow the head through the stream; history: a batch fetched over REST
  batch: 0,
  rows: new Map(),
  historyRows: null,
  userTime: null, // null: auto (the least time still in flight in this scope)
  time: null,
  selected: null, // {type: "port", key} | {type: "box", box}
  pendingKeys: null,
  pendingFull: false,
  frame: 0,
  stream: null,
  latency: [],
  seekSeq: 0,
  scopeSeq: 0,
};
window.__flowscope = S; // for tests and benchmarks: read-only use

// --- toast ------------------------------------------------------------------------------------------------

let toastTimer = null;
function toast(msg, info = false) {
  const t = $("#toast");
  t.textContent = msg;
  t.className = info ? "info" : "";
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (t.hidden = true), 5000);
}

// --- components --------------------------------------------------------------------------------------------

const graph = new GraphView($("#graph"), {
  onPort: (key) => selectPort(key),
  onBox: (node) => selectBox(node),
  onOpen: (path) => openScope(path),
  onHover: (key, ev) => hover(key, ev),
  onBackground: () => { S.selected = null; graph.selectPort(null); graph.clearHighlight(); panel.clear(); },
});

const panel = new SidePanel($("#details"), $("#why"), {
  explain: (key, t) => explain(key, t),
  followHold: (next) => followHold(next),
  openScope: (path) => openScope(path),
  selectPort: (key) => selectPort(key),
  focusPort: (key) => { const p = graph.ports.get(key); if (p) graph.focusBox(p.box); },
  toast,
});

const timeline = new Timeline($("#timeline"), {
  seek: (batch, playing) => seek(batch, playing),
  seekTime: (text) => seekTime(text),
  goLive: () => goLive(),
  atHead: () => goLive(),
});

const drawer = new Drawer($("#drawer"), {
  seek: (batch) => seek(batch),
  goto: (scope, batch, port) => gotoFinding(scope, batch, port),
  openSegment: (t, seg) => openBlameSegment(t, seg),
  session: () => (S.sid ? { sid: S.sid, scope: S.scope, info: S.info } : null),
  pinned: () => pinnedNodes(),
  operators: () => (S.layout ? S.layout.nodes.filter((n) => n.kind === "operator" || n.kind === "scope").map((n) => n.id) : []),
  toast,
});

// --- routing -----------------------------------------------------------------------------------------------

function parseHash() {
  const m = location.hash.match(/^#\/s\/([^?]+)(?:\?(.*))?$/);
  if (!m) return null;
  const q = new URLSearchParams(m[2] || "");
  const scope = (q.get("scope") || "").split(",").filter((x) => x !== "").map(Number);
  return { sid: m[1], scope, batch: q.has("batch") ? +q.get("batch") : null, port: q.get("port") };
}

function setHash() {
  const q = new URLSearchParams();
  if (S.scope.length) q.set("scope", S.scope.join(","));
  if (S.mode === "history") q.set("batch", S.batch);
  const h = `#/s/${S.sid}` + (q.toString() ? "?" + q : "");
  if (location.hash !== h) history.replaceState(null, "", h);
}

async function route() {
  const r = parseHash();
  if (!r) return showLanding();
  if (r.sid !== S.sid) return openSession(r.sid, r.scope, r.batch);
  if (r.batch !== null) S.mode = "history", S.batch = r.batch;
  if (String(r.scope) !== String(S.scope)) await openScope(r.scope);
  else if (r.batch !== null && r.batch !== S.batch) await seek(r.batch);
}

window.addEventListener("hashchange", route);

// --- landing -------------------------------------------------------------------------------------------------

async function showLanding() {
  closeSession();
  $("#workspace").hidden = true;
  $("#landing").hidden = false;
  $("#top-right").hidden = true;
  $("#crumbs").innerHTML = "";
  $("#session-status").textContent = "";
  let sessions = [];
  try { sessions = await api.get("/api/sessions"); } catch (e) { toast(e.message); }
  const body = $("#session-table tbody");
  body.innerHTML = sessions.map((s) => `<tr class="clickable" data-sid="${s.id}">
      <td><b>${esc(s.name)}</b></td><td>${esc(s.kind)}${s.live ? " · live" : ""}</td>
      <td><span class="pill ${s.status}">${s.status}</span></td><td>${s.batches}</td><td>${s.operators}</td>
      <td><button data-del="${s.id}" title="stop and delete">✕</button></td></tr>`).join("");
  $("#no-sessions").hidden = sessions.length > 0;
  for (const tr of body.querySelectorAll("tr[data-sid]")) {
    tr.addEventListener("click", (ev) => {
      if (ev.target.dataset.del) return;
      location.hash = `#/s/${tr.dataset.sid}`;
    });
  }
  for (const b of body.querySelectorAll("button[data-del]")) {
    b.addEventListener("click", async () => { await api.del(`/api/sessions/${b.dataset.del}`); showLanding(); });
  }
}

$("#open-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  try {
    const s = await api.post("/api/sessions", { path: $("#open-path").value, follow: $("#open-follow").checked });
    location.hash = `#/s/${s.id}`;
  } catch (e) { showOpenError(e.message); }
});

$("#upload-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = $("#upload-file").files[0];
  if (!f) return showOpenError("choose a file first");
  try {
    const s = await api.upload(f);
    location.hash = `#/s/${s.id}`;
  } catch (e) { showOpenError(e.message); }
});

function showOpenError(msg) {
  const el = $("#open-error");
  el.textContent = msg;
  el.hidden = false;
}

// --- a session -------------------------------------------------------------------------------------------------

function closeSession() {
  if (S.stream) S.stream.close();
  S.stream = null;
  S.sid = null;
  timeline.pause();
}

async function openSession(sid, scope = [], batch = null) {
  closeSession();
  // Everything the first picture needs is asked for at once: the session, the scope's graph, the stream.
  const graphReq = api.get(`/api/sessions/${sid}/graph`, { scope: api.scopeParam(scope) }).catch((e) => e);
  let info;
  try {
    info = await api.get(`/api/sessions/${sid}`);
  } catch (e) {
    toast(e.message);
    location.hash = "#/";
    return;
  }
  S.sid = sid;
  S.info = info;
  $("#landing").hidden = true;
  $("#workspace").hidden = false;
  $("#top-right").hidden = false;
  timeline.reset();
  S.stream = new Stream(sid, {
    onState: (msg, keys) => onStream(msg, keys),
    onStatus: (st, reason) => { if (st === "closed" && reason) toast(`stream closed: ${reason}`); },
    onError: (d) => toast(d),
  });
  S.stream.scope = scope;
  S.stream.connect();
  S.mode = batch === null ? "live" : "history";
  S.batch = batch || 0;
  await openScope(scope, graphReq);
  // Marks and findings for the timeline: after the first picture.
  try {
    const [marks, found] = await Promise.all([
      api.get(`/api/sessions/${sid}/marks`, { limit: 20000 }),
      api.get(`/api/sessions/${sid}/findings`, { limit: 20000 }),
    ]);
    timeline.addMarks(marks.marks);
    timeline.addFindings(found.findings);
  } catch (e) { /* the tabs show errors */ }
}

setInterval(refreshInfo, 1000);

async function refreshInfo() {
  if (!S.sid) return;
  try {
    S.info = await api.get(`/api/sessions/${S.sid}`);
  } catch (e) { return; }
  const i = S.info;
  const pill = $("#session-status");
  pill.textContent = `${i.status}${i.status === "loading" || i.live ? ` · ${i.batches} batches` : ""}`;
  pill.className = `pill ${i.status}`;
  drawer.counts(i);
}

async function openScope(path, prefetched = null) {
  const seq = ++S.scopeSeq;
  S.scope = path;
  S.selected = null;
  S.userTime = null;
  renderCrumbs();
  $("#time-input").value = "auto";
  panel.clear();
  let layout = prefetched ? await prefetched : null;
  try {
    if (!layout || layout instanceof Error) {
      if (layout instanceof Error && layout.status !== 404) throw layout;
      layout = await api.get(`/api/sessions/${S.sid}/graph`, { scope: api.scopeParam(path) });
    }
  } catch (e) {
    toast(e.message);
    if (path.length) return openScope([]);
    return;
  }
  if (seq !== S.scopeSeq) return;
  S.layout = layout;
  S.firstRender = undefined; // set once this scope's state is on screen (benchmarks)
  S.drawerOpened = false;
  graph.render(layout);
  $("#graph-empty").hidden = layout.nodes.length > 0;
  if (String(S.stream.scope) !== String(path)) S.stream.watch(path);
  S.rows = S.stream.rows;
  S.pendingFull = true;
  scheduleRender();
  setHash();
  crumbs();
  refreshInfo();
  if (S.mode === "history") await seek(S.batch);
}

async function crumbs() {
  try { S.tree = await api.get(`/api/sessions/${S.sid}/scopes`); } catch (e) { return; }
  renderCrumbs();
}

function renderCrumbs() {
  if (!S.tree || !S.info) return;
  const parts = [`<span class="session-name">${esc(S.info.name)}</span>`];
  let node = S.tree;
  const chain = [node];
  for (let i = 0; i < S.scope.length; i++) {
    node = node.scopes.find((c) => c.path[i] === S.scope[i]);
    if (!node) break;
    chain.push(node);
  }
  chain.forEach((n, i) => {
    if (i) parts.push(`<span class="sep">›</span>`);
    const label = n.path.length ? n.name || `scope ${n.path.join(".")}` : "root";
    parts.push(`<a href="#/s/${S.sid}${n.path.length ? "?scope=" + n.path.join(",") : ""}" class="${i === chain.length - 1 ? "current" : ""}" data-path="${n.path.join(",")}">${esc(label)}</a>`);
  });
  $("#crumbs").innerHTML = parts.join("");
}

// --- state: live stream or history -------------------------------------------------------------------------------

function onStream(msg, keys) {
  timeline.addMarks(msg.marks && msg.marks.length !== undefined ? msg.marks : null);
  timeline.addFindings(msg.findings && msg.findings.length !== undefined ? msg.findings : null);
  timeline.setHead(msg.batch);
  if (S.layout && msg.version !== S.layout.version) scheduleRelayout();
  if (S.mode !== "live") return;
  S.rows = S.stream.rows;
  S.batch = msg.batch;
  S.lastAt = msg.at;
  if (keys === null) S.pendingFull = true;
  else {
    if (!S.pendingKeys) S.pendingKeys = new Set();
    for (const k of keys) S.pendingKeys.add(k);
  }
  if (msg.t_first) S.pendingLatency = Math.min(S.pendingLatency || Infinity, msg.t_first);
  scheduleRender();
}

let relayoutTimer = null;
function scheduleRelayout() {
  if (relayoutTimer) return;
  relayoutTimer = setTimeout(async () => {
    relayoutTimer = null;
    try {
      const layout = await api.get(`/api/sessions/${S.sid}/graph`, { scope: api.scopeParam(S.scope) });
      S.layout = layout;
      graph.render(layout);
      $("#graph-empty").hidden = layout.nodes.length > 0;
      S.pendingFull = true;
      scheduleRender();
      crumbs();
    } catch (e) { /* the next message retries */ }
  }, 300);
}

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(render);
}

function autoTime(rows) {
  let best = null;
  for (const r of rows.values()) for (const t of r[3]) if (best === null || cmp(t, best) < 0) best = t;
  return best;
}

function render() {
  renderQueued = false;
  const rows = S.mode === "live" ? S.rows : S.historyRows || new Map();
  const time = S.userTime !== null ? S.userTime : autoTime(rows);
  const keys = S.pendingFull ? null : S.pendingKeys;
  S.pendingFull = false;
  S.pendingKeys = null;
  graph.apply(rows, time, keys);
  S.time = time;
  S.frame++;
  const svg = $("#graph");
  svg.dataset.batch = String(S.batch);
  svg.dataset.mode = S.mode;
  svg.dataset.time = JSON.stringify(time);
  if (S.pendingLatency && S.pendingLatency !== Infinity) {
    // latency: from the oldest batch in what was just drawn entering the tracker to the frame being painted
    const oldest = S.pendingLatency;
    requestAnimationFrame(() => setTimeout(() => {
      S.latency.push(Date.now() / 1000 - oldest);
      if (S.latency.length > 100000) S.latency.splice(0, 50000);
    }, 0));
  }
  S.pendingLatency = null;
  if (S.firstRender === undefined && rows.size && graph.layout === S.layout) {
    S.firstRender = null;
    requestAnimationFrame(() => setTimeout(() => {
      S.firstRender = performance.now();
      if (!S.drawerOpened) { S.drawerOpened = true; setTimeout(() => drawer.open(S.sid, S.scope, S.info, S.lastAt), 50); }
    }, 0));
  }
  timeline.show(S.batch, S.mode === "live", S.lastAt);
  if (S.selected && S.selected.type === "port") panel.showPort(S.selected.key, rows, time, S.layout, true);
  if (S.drawerOpened) drawer.refresh(false, S.lastAt);
}

async function seek(batch, playing = false) {
  if (!S.sid) return;
  if (!playing) timeline.pause();
  timeline.batch = batch; // the target: a second step before this answer arrives steps from here
  const seq = ++S.seekSeq;
  try {
    const st = await api.get(`/api/sessions/${S.sid}/state`, { scope: api.scopeParam(S.scope), batch });
    if (seq !== S.seekSeq) return;
    applyHistory(st);
  } catch (e) { toast(e.message); }
}

function applyHistory(st) {
  const rows = new Map();
  for (const r of st.ports) rows.set(`${r[0]},${r[1]},${r[2]}`, r);
  const live = st.batch >= st.head && S.info && S.info.status !== "done" && S.info.live;
  S.mode = "history";
  S.historyRows = rows;
  S.batch = st.batch;
  S.lastAt = st.at;
  S.pendingFull = true;
  setHash();
  if (S.selected && S.selected.type === "port") graph.clearHighlight();
  scheduleRender();
  if (live) goLive();
}

async function seekTime(text) {
  const s = String(text).trim();
  if (!s || !S.info || !S.info.first_at) return;
  let at;
  const m = s.match(/^(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)$/);
  if (m) {
    const d = new Date(S.info.first_at * 1000);
    d.setUTCHours(+m[1], +m[2], 0, 0);
    at = d.getTime() / 1000 + parseFloat(m[3]);
  } else if (/^\+?-?\d+(\.\d+)?s?$/.test(s)) {
    at = S.info.first_at + parseFloat(s.replace(/[+s]/g, ""));
  } else {
    toast("seek by wall time: seconds since the first batch (12.5) or a clock time (HH:MM:SS.mmm)");
    return;
  }
  try {
    const st = await api.get(`/api/sessions/${S.sid}/state`, { scope: api.scopeParam(S.scope), at });
    applyHistory(st);
  } catch (e) { toast(e.message); }
}

function goLive() {
  S.mode = "live";
  S.historyRows = null;
  S.rows = S.stream.rows;
  S.batch = S.stream.batch ?? S.batch;
  S.pendingFull = true;
  setHash();
  scheduleRender();
}

// A blame segment: the view at the middle of it, explaining the holder's port for the blamed time.
async function openBlameSegment(t, seg) {
  try {
    const st = await api.get(`/api/sessions/${S.sid}/state`, { scope: api.scopeParam(t.scope), at: (seg.from + seg.to) / 2 });
    const port = seg.holder.port ? seg.holder.port.join(",") : null;
    await gotoFinding(t.scope, st.batch, port);
    if (port) await explain(port, t.time);
  } catch (e) { toast(e.message); }
}

async function gotoFinding(scope, batch, port) {
  if (String(scope) !== String(S.scope)) await openScope(scope);
  await seek(batch);
  if (port) selectPort(port);
}

// --- selection, hover, explain --------------------------------------------------------------------------------

function currentRows() {
  return S.mode === "live" ? S.rows : S.historyRows || new Map();
}

function selectPort(key) {
  S.selected = { type: "port", key };
  graph.selectPort(key);
  graph.clearHighlight();
  panel.showPort(key, currentRows(), S.time, S.layout);
}

function selectBox(node) {
  S.selected = { type: "box", box: node.box };
  graph.selectBox(node.box);
  graph.clearHighlight();
  panel.showBox(node, currentRows(), S.time, S.layout);
  drawer.refresh(true);
}

function pinnedNodes() {
  const out = [];
  if (S.selected && S.selected.type === "box") out.push(+S.selected.box);
  if (S.selected && S.selected.type === "port") out.push(+S.selected.key.split(",")[1]);
  if (S.matches) for (const b of S.matches) out.push(+b);
  return out.filter((x) => x > 0);
}

async function explain(key, time) {
  const params = { scope: api.scopeParam(S.scope), port: key };
  if (time !== null) params.time = JSON.stringify(time);
  if (S.mode === "history") params.batch = S.batch;
  try {
    const ans = await api.get(`/api/sessions/${S.sid}/explain`, params);
    panel.showExplanation(ans, S.layout);
    graph.highlight(ans.holders.map((h) => h.path.map((p) => p.join(","))));
  } catch (e) { toast(e.message); }
}

async function followHold(next) {
  await openScope(next.scope);
  const key = next.port.join(",");
  selectPort(key);
  await explain(key, null);
}

const tip = $("#tooltip");
function hover(key, ev) {
  if (!key) { tip.hidden = true; return; }
  const row = currentRows().get(key);
  const st = row ? status(row[3], S.time) : "none";
  tip.innerHTML = `<b>${esc(portName(key, S.layout))}</b><br>
    <span class="k">frontier</span> ${esc(row ? fmtFrontier(row[3]) : "–")} <span class="k">(${st})</span><br>
    <span class="k">pointstamps</span> ${esc(row ? fmtCounts(row[4]) : "–")}<br>
    <span class="k">implications</span> ${esc(row ? fmtCounts(row[5]) : "–")}`;
  const r = $("#graph-pane").getBoundingClientRect();
  tip.style.left = `${Math.min(r.width - 300, ev.clientX - r.left + 14)}px`;
  tip.style.top = `${ev.clientY - r.top + 14}px`;
  tip.hidden = false;
}

// --- top bar: time, search -----------------------------------------------------------------------------------------

$("#time-input").addEventListener("change", () => {
  const v = $("#time-input").value;
  try {
    S.userTime = parseTime(v);
  } catch (e) {
    toast(e.message);
    return;
  }
  if (S.userTime === null) $("#time-input").value = "auto";
  S.pendingFull = true;
  scheduleRender();
});

let searchTimer = null;
$("#search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(search, 150);
});
$("#search").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter") {
    const first = $("#search-hits div");
    if (first) first.click();
  } else if (ev.key === "Escape") {
    $("#search").value = "";
    search();
  }
});

async function search() {
  const q = $("#search").value.trim().toLowerCase();
  const hitsBox = $("#search-hits");
  if (!q || !S.layout) {
    S.matches = null;
    graph.markMatches(new Set());
    hitsBox.hidden = true;
    return;
  }
  const local = new Set(S.layout.nodes.filter((n) => n.name.toLowerCase().includes(q)).map((n) => n.box));
  S.matches = local;
  graph.markMatches(local);
  let hits = [];
  try { hits = await api.get(`/api/sessions/${S.sid}/search`, { q, limit: 50 }); } catch (e) { return; }
  hitsBox.innerHTML = hits.length ? hits.map((h, i) => `<div data-i="${i}">${esc(h.name)} <span class="where">#${h.node} in ${h.scope.length ? esc(h.scope_name || "scope " + h.scope.join(".")) : "root"}</span></div>`).join("")
    : `<div class="muted">no operator matches</div>`;
  hitsBox.hidden = false;
  for (const d of hitsBox.querySelectorAll("div[data-i]")) {
    d.addEventListener("click", async () => {
      const h = hits[+d.dataset.i];
      hitsBox.hidden = true;
      if (String(h.scope) !== String(S.scope)) await openScope(h.scope);
      graph.focusBox(String(h.node));
      const node = S.layout.nodes.find((n) => n.box === String(h.node));
      if (node) selectBox(node);
    });
  }
}
document.addEventListener("click", (ev) => { if (!ev.target.closest("#search-box")) $("#search-hits").hidden = true; });

// --- graph tools, keys ------------------------------------------------------------------------------------------------

$("#fit").addEventListener("click", () => graph.fit());
$("#zoom-in").addEventListener("click", () => graph.zoom(1.25));
$("#zoom-out").addEventListener("click", () => graph.zoom(0.8));
document.addEventListener("keydown", (ev) => {
  if (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT") return;
  if (ev.key === "ArrowRight") { seek(Math.min(timeline.head, S.batch + 1)); ev.preventDefault(); }
  else if (ev.key === "ArrowLeft") { seek(Math.max(0, S.batch - 1)); ev.preventDefault(); }
  else if (ev.key === " ") { timeline.playing ? timeline.pause() : timeline.play(); ev.preventDefault(); }
  else if (ev.key === "f") graph.fit();
  else if (ev.key === "Backspace" && S.scope.length) openScope(S.scope.slice(0, -1));
});
window.addEventListener("resize", () => { if (S.layout && S.frame < 2) graph.fit(); });

// --- start ----------------------------------------------------------------------------------------------------------------

(async function start() {
  if (!parseHash()) {
    try {
      const sessions = await api.get("/api/sessions");
      if (sessions.length === 1) { location.hash = `#/s/${sessions[0].id}`; return; }
    } catch (e) { /* the landing page shows it */ }
  }
  route();
})();

export { fmt, clock };
