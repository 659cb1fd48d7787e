// One session on screen: opening it (the first picture asks for everything at once), the scope shown and its
// breadcrumbs, the session's status pill, and re-laying out when the structure grows.

import * as api from "./api.js";
import { $, esc } from "./dom.js";
import { S, ui } from "./state.js";
import { LiveSocket } from "./live_socket.js";
import { toast } from "./toast.js";
import { setHash } from "./navigation/address.js";
import { afterFirstPicture, onSocketMessage, scheduleRender } from "./timeline/frames.js";
import { seek } from "./timeline/moments.js";
import { chooseGraph } from "./graph/renderer_choice.js";
import { findingsByBox } from "./graph/finding_badges.js";

export function closeSession() {
  if (S.socket) S.socket.close();
  S.socket = null;
  S.sid = null;
  S.layout = null; // nothing is drawn for the next session until its own layout is on screen
  S.findingMarks = [];
  S.firstRender = undefined;
  ui.timeline.pause();
}

export async function openSession(sid, scope = [], batch = null) {
  closeSession();
  // Everything the first picture needs is asked for at once: the session, the scope's graph, the live socket.
  const graphReq = api.graph(sid, scope).catch((e) => e);
  ui.timeline.reset();
  S.mode = batch === null ? "live" : "history"; // before the socket's first message can set the batch
  S.batch = batch || 0;
  const socket = new LiveSocket(sid, {
    onState: (msg, keys) => {
      onSocketMessage(msg, keys);
      if (S.layout && msg.version !== S.layout.version) scheduleRelayout();
    },
    onStatus: (st, reason) => { if (st === "closed" && reason) toast(`stream closed: ${reason}`); },
    onError: (d) => toast(d),
  });
  socket.scope = scope;
  socket.connect();
  S.socket = socket;
  let info;
  try {
    info = await api.get(`/api/sessions/${sid}`);
  } catch (e) {
    socket.close();
    S.socket = null;
    toast(e.message);
    location.hash = "#/";
    return;
  }
  S.sid = sid;
  S.info = info;
  $("#landing").hidden = true;
  $("#workspace").hidden = false;
  $("#top-right").hidden = false;
  await openScope(scope, graphReq);
  // Marks and findings for the timeline: after the first picture.
  await afterFirstPicture();
  try {
    const [marks, found] = await Promise.all([
      api.get(`/api/sessions/${sid}/marks`, { limit: 20000 }),
      api.get(`/api/sessions/${sid}/findings`, { limit: 20000 }),
    ]);
    ui.timeline.addMarks(marks.marks);
    ui.timeline.addFindings(found.findings);
    S.findingMarks = marks.marks.filter((m) => m.finding);
    ui.graph.markFindings(findingsByBox(S.findingMarks, S.scope));
  } catch (e) { /* the tabs show errors */ }
}

export async function refreshInfo() {
  if (!S.sid) return;
  try {
    S.info = await api.get(`/api/sessions/${S.sid}`);
  } catch (e) { return; }
  const i = S.info;
  const pill = $("#session-status");
  pill.textContent = `${i.status}${i.status === "loading" || i.live ? ` · ${i.batches} batches` : ""}`;
  pill.className = `pill ${i.status}`;
  ui.drawer.counts(i);
}

function showLayout(layout) {
  S.layout = layout;
  chooseGraph(layout).render(layout);
  ui.graph.markFindings(findingsByBox(S.findingMarks, S.scope));
  $("#graph-empty").hidden = layout.nodes.length > 0;
}

export async function openScope(path, prefetched = null) {
  const seq = ++S.scopeSeq;
  S.scope = path;
  S.selected = null;
  S.userTime = null;
  ui.diff.clear();
  renderCrumbs();
  $("#time-input").value = "auto";
  ui.panel.clear();
  let layout = prefetched ? await prefetched : null;
  try {
    if (!layout || layout instanceof Error) {
      if (layout instanceof Error && layout.status !== 404) throw layout;
      layout = await api.graph(S.sid, path);
    }
  } catch (e) {
    toast(e.message);
    if (path.length) return openScope([]);
    return;
  }
  if (seq !== S.scopeSeq) return;
  S.firstRender = undefined; // set once this scope's state is on screen (benchmarks)
  S.drawerOpened = false;
  showLayout(layout);
  performance.mark("fs:layout-drawn");
  if (String(S.socket.scope) !== String(path)) S.socket.watch(path);
  S.rows = S.socket.rows;
  S.pendingFull = true;
  scheduleRender();
  setHash();
  if (S.mode === "history") await seek(S.batch);
  afterFirstPicture().then(() => { crumbs(); refreshInfo(); });
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
    parts.push(`<a href="#/s/${esc(S.sid)}${n.path.length ? "?scope=" + n.path.join(",") : ""}" class="${i === chain.length - 1 ? "current" : ""}" data-path="${n.path.join(",")}">${esc(label)}</a>`);
  });
  $("#crumbs").innerHTML = parts.join("");
}

// The structure grew (a new version): lay the scope out again, at most every 300 ms.
let relayoutTimer = null;
export function scheduleRelayout() {
  if (relayoutTimer) return;
  relayoutTimer = setTimeout(async () => {
    relayoutTimer = null;
    try {
      showLayout(await api.graph(S.sid, S.scope));
      S.pendingFull = true;
      scheduleRender();
      crumbs();
    } catch (e) { /* the next message retries */ }
  }, 300);
}
