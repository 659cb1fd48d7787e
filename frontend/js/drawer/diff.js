// The diff view (the drawer's Diff tab): pick two moments (batches, mark:N or at:SECONDS) and see what changed in
// this scope between them (GET .../diff, backend/views/diff.py): ports whose frontier advanced and by how much, ports
// that did not move while holding times (stuck, outlined red on the graph), counts that changed, operators that
// appeared.

import * as api from "../api.js";
import { esc } from "../dom.js";
import { fmt, fmtFrontier } from "../times.js";
import { portName } from "../side/panel.js";

const SECTIONS = [
  ["stuck", "did not move (stuck)", (x) => fmtFrontier(x.frontier)],
  ["advanced", "frontier advanced", (x) => `${fmtFrontier(x.from)} → ${fmtFrontier(x.to)}${x.by === null ? "" : x.by === "done" ? " (complete)" : ` (+${fmt(x.by)})`}`],
  ["counts", "counts changed", (x) => `pointstamps ${x.pointstamps[0]} → ${x.pointstamps[1]} · implications ${x.implications[0]} → ${x.implications[1]}`],
];

// Which boxes the graph outlines: an operator that appeared, one with a port that advanced, or else one stuck.
export function diffMarks(d) {
  const marks = new Map();
  for (const x of d.stuck) marks.set(x.port[1] === 0 ? (x.port[0] === "out" ? "enter" : "leave") : String(x.port[1]), "stuck");
  for (const x of d.advanced) marks.set(x.port[1] === 0 ? (x.port[0] === "out" ? "enter" : "leave") : String(x.port[1]), "advanced");
  for (const a of d.appeared) marks.set(String(a.node), "appeared");
  return marks;
}

export class DiffView {
  // root: the tab's element; handlers: {context: () => ({sid, scope, batch, layout}), show: (diff|null),
  // selectPort: (key), toast}
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers;
    this.diff = null;
    root.innerHTML = `<form id="diff-form" class="diff-form">
        <label>from <input id="diff-from" size="10" spellcheck="false" placeholder="batch, mark:N, at:S"></label>
        <label>to <input id="diff-to" size="10" spellcheck="false" placeholder="-1 (head)"></label>
        <button type="submit" id="diff-go">Compare</button>
        <button type="button" id="diff-clear">Clear</button>
        <span id="diff-summary" class="muted"></span>
      </form><div id="diff-result"></div>`;
    root.querySelector("#diff-form").addEventListener("submit", (ev) => { ev.preventDefault(); this.compare(); });
    root.querySelector("#diff-clear").addEventListener("click", () => this.clear());
  }

  // Sensible moments when the tab opens: ten batches back to the batch on screen.
  suggest() {
    const { batch } = this.h.context();
    const from = this.root.querySelector("#diff-from"), to = this.root.querySelector("#diff-to");
    if (!from.value) from.value = String(Math.max(0, batch - 10));
    if (!to.value) to.value = String(batch);
  }

  async compare() {
    const { sid, scope } = this.h.context();
    const from = this.root.querySelector("#diff-from").value.trim() || "0";
    const to = this.root.querySelector("#diff-to").value.trim() || "-1";
    try {
      const d = await api.get(`/api/sessions/${sid}/diff`, { scope: api.scopeParam(scope), from, to });
      this.show(d);
    } catch (e) { this.h.toast(e.message); }
  }

  clear() {
    this.diff = null;
    this.root.querySelector("#diff-result").innerHTML = "";
    this.root.querySelector("#diff-summary").textContent = "";
    this.h.show(null);
  }

  show(d) {
    this.diff = d;
    const { layout } = this.h.context();
    const s = d.summary;
    this.root.querySelector("#diff-summary").textContent =
      `batch ${d.from.batch} → ${d.to.batch}: ${s.advanced} advanced, ${s.stuck} stuck, ${s.counts} counts changed, ${s.appeared} appeared`;
    let html = "";
    for (const [kind, title, text] of SECTIONS) {
      if (!d[kind].length) continue;
      html += `<h4 class="diff-${kind}">${title} <span class="muted">${d[kind].length}</span></h4>`;
      html += d[kind].slice(0, 500).map((x) => {
        const key = x.port.join(",");
        return `<div class="list-row" data-kind="${kind}" data-port="${esc(key)}"><span class="b">${esc(portName(key, layout))}</span><span class="t">${esc(text(x))}</span></div>`;
      }).join("");
    }
    if (d.appeared.length) {
      html += `<h4 class="diff-appeared">operators that appeared <span class="muted">${d.appeared.length}</span></h4>`;
      html += d.appeared.map((a) => `<div class="list-row" data-kind="appeared" data-node="${a.node}"><span class="b">#${a.node}</span><span>${esc(a.name)}</span></div>`).join("");
    }
    if (!html) html = `<p class="muted">Nothing changed in this scope between these moments.</p>`;
    const result = this.root.querySelector("#diff-result");
    result.innerHTML = html;
    for (const row of result.querySelectorAll(".list-row[data-port]")) {
      row.addEventListener("click", () => this.h.selectPort(row.dataset.port));
    }
    this.h.show(d);
  }
}
