// Selecting a port or an operator, the tooltip on hover, and "why is this stuck" (explain) with the holders'
// paths highlighted on the graph. Following a hold into another scope is routing.js's (followHold).

import * as api from "./api.js";
import { $, esc } from "./dom.js";
import { S, ui } from "./state.js";
import { toast } from "./toast.js";
import { currentRows } from "./timeline/frames.js";
import { portName } from "./side/panel.js";
import { fmtFrontier, fmtCounts, status } from "./times.js";
import { boxDetails } from "./graph/labels.js";
import { findingsByBox } from "./graph/finding_badges.js";
import { setHash } from "./navigation/address.js";

export function selectPort(key) {
  S.selected = { type: "port", key };
  ui.graph.selectPort(key);
  ui.graph.clearHighlight();
  ui.panel.showPort(key, currentRows(), S.time, S.layout);
  setHash();
}

export function selectBox(node) {
  S.selected = { type: "box", box: node.box };
  ui.graph.selectBox(node.box);
  ui.graph.clearHighlight();
  ui.panel.showBox(node, currentRows(), S.time, S.layout);
  ui.drawer.refresh(true);
  setHash();
}

export function clearSelection() {
  S.selected = null;
  ui.graph.selectPort(null);
  ui.graph.clearHighlight();
  ui.panel.clear();
  setHash();
}

// The operators the drawer's charts keep whatever else they show: the selection and the search matches.
export function pinnedNodes() {
  const out = [];
  if (S.selected && S.selected.type === "box") out.push(+S.selected.box);
  if (S.selected && S.selected.type === "port") out.push(+S.selected.key.split(",")[1]);
  if (S.matches) for (const b of S.matches) out.push(+b);
  return out.filter((x) => x > 0);
}

export async function explain(key, time) {
  const params = { scope: api.scopeParam(S.scope), port: key };
  if (time !== null) params.time = JSON.stringify(time);
  if (S.mode === "history") params.batch = S.batch;
  try {
    const ans = await api.get(`/api/sessions/${S.sid}/explain`, params);
    ui.panel.showExplanation(ans, S.layout);
    ui.graph.highlight(ans.holders.map((h) => h.path.map((p) => p.join(","))));
  } catch (e) { toast(e.message); }
}

// A stage's (or a nested scope's) finding badge was clicked: select it and show what was found.
export function showFindings(node) {
  selectBox(node);
  const list = findingsByBox(S.findingMarks, S.scope).get(node.box) || [];
  ui.panel.showFindings(list, node.kind === "scope" ? "in this scope" : "on this stage");
}

// The tooltip: a port's frontier and counts, or an operator's full name and call site (node: the box under the
// pointer when no port is).
export function hover(key, ev, node = null) {
  const tip = $("#tooltip");
  const rows = !key && node && (node.kind === "operator" || node.kind === "scope") ? boxDetails(node) : null;
  if (!key && !rows) { tip.hidden = true; return; }
  if (key) {
    const row = currentRows().get(key);
    const st = row ? status(row[3], S.time) : "none";
    tip.innerHTML = `<b>${esc(portName(key, S.layout))}</b><br>
      <span class="k">frontier</span> ${esc(row ? fmtFrontier(row[3]) : "–")} <span class="k">(${st})</span><br>
      <span class="k">pointstamps</span> ${esc(row ? fmtCounts(row[4]) : "–")}<br>
      <span class="k">implications</span> ${esc(row ? fmtCounts(row[5]) : "–")}`;
  } else {
    tip.innerHTML = `<b>${esc(node.name || "#" + node.id)}</b>` + rows.map(([k, v]) => `<br><span class="k">${esc(k)}</span> ${esc(v)}`).join("");
  }
  const r = $("#graph-pane").getBoundingClientRect();
  tip.style.left = `${Math.max(0, Math.min(r.width - 390, ev.clientX - r.left + 14))}px`;
  tip.style.top = `${ev.clientY - r.top + 14}px`;
  tip.hidden = false;
}
