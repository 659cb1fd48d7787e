// Frames: live socket messages and history answers mark what changed; one frame per animation frame draws it all
// (coalesced: a burst of messages is one draw of their union of changed ports, never a queue of old frames).

import { $ } from "../dom.js";
import { S, ui } from "../state.js";
import { cmp } from "../times.js";
import { findingsByBox } from "../graph/finding_badges.js";

export function currentRows() {
  return S.mode === "live" ? S.rows : S.historyRows || new Map();
}

// A live socket message (keys: the ports it changed, null for all): its marks and findings to the timeline, its
// rows drawn at the next frame when the live head is on screen. A new structure version is workspace.js's.
export function onSocketMessage(msg, keys) {
  const { timeline } = ui;
  timeline.addMarks(msg.marks && msg.marks.length !== undefined ? msg.marks : null);
  timeline.addFindings(msg.findings && msg.findings.length !== undefined ? msg.findings : null);
  const found = msg.marks && msg.marks.length ? msg.marks.filter((m) => m.finding) : [];
  if (found.length) { S.findingMarks.push(...found); ui.graph.markFindings(findingsByBox(S.findingMarks, S.scope)); }
  timeline.setHead(msg.batch);
  if (S.mode !== "live") return;
  S.rows = S.socket.rows;
  S.batch = msg.batch;
  S.lastAt = msg.at;
  if (keys === null) S.pendingFull = true;
  else {
    if (!S.pendingKeys) S.pendingKeys = new Set();
    for (const k of keys) S.pendingKeys.add(k);
  }
  if (S.pendingSince === null) S.pendingSince = performance.now();
  if (msg.t_first) S.pendingLatency = Math.min(S.pendingLatency || Infinity, msg.t_first);
  scheduleRender();
}

// Resolves once this scope's first picture is painted (or after 1.5 s, for a scope with nothing to colour):
// requests the first picture does not need wait for it, so the server answers the ones it does first.
export function afterFirstPicture() {
  if (typeof S.firstRender === "number") return Promise.resolve();
  return new Promise((resolve) => {
    S.firstPictureWaiters.push(resolve);
    setTimeout(resolve, 1500);
  });
}

export function scheduleRender() {
  if (S.renderQueued) return;
  S.renderQueued = true;
  requestAnimationFrame(render);
}

function autoTime(rows) {
  let best = null;
  for (const r of rows.values()) for (const t of r[3]) if (best === null || cmp(t, best) < 0) best = t;
  return best;
}

function render() {
  S.renderQueued = false;
  const { graph, timeline, panel, drawer } = ui;
  if (!S.layout || graph.layout !== S.layout) return; // the socket can answer before the layout: openScope redraws
  const rows = currentRows();
  const time = S.userTime !== null ? S.userTime : autoTime(rows);
  const keys = S.pendingFull ? null : S.pendingKeys;
  S.pendingFull = false;
  S.pendingKeys = null;
  graph.apply(rows, time, keys);
  if (S.pendingSince !== null) {
    S.drawLag.push(performance.now() - S.pendingSince);
    if (S.drawLag.length > 1000) S.drawLag.shift();
    S.pendingSince = null;
  }
  S.time = time;
  S.frame++;
  for (const el of [$("#graph"), $("#graph-canvas")]) {
    el.dataset.batch = String(S.batch);
    el.dataset.mode = S.mode;
    el.dataset.time = JSON.stringify(time);
  }
  if (S.pendingLatency && S.pendingLatency !== Infinity) {
    // latency: from the oldest batch in what was just drawn entering the tracker to the frame being painted
    const oldest = S.pendingLatency;
    requestAnimationFrame(() => setTimeout(() => {
      S.latency.push(Date.now() / 1000 - oldest);
      if (S.latency.length > 100000) S.latency.splice(0, 50000);
    }, 0));
  }
  S.pendingLatency = null;
  if (S.firstRender === undefined && rows.size) {
    S.firstRender = null;
    performance.mark("fs:first-frame");
    requestAnimationFrame(() => setTimeout(() => {
      S.firstRender = performance.now();
      performance.mark("fs:first-paint");
      for (const resolve of S.firstPictureWaiters.splice(0)) resolve();
      if (!S.drawerOpened) { S.drawerOpened = true; setTimeout(() => drawer.open(S.sid, S.scope, S.info, S.lastAt), 50); }
    }, 0));
  }
  timeline.show(S.batch, S.mode === "live", S.lastAt);
  if (S.selected && S.selected.type === "port") panel.showPort(S.selected.key, rows, time, S.layout, true);
  if (S.drawerOpened) drawer.refresh(false, S.lastAt);
}
