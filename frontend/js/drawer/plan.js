// The Plan tab: a SQL execution's physical plan (GET .../plan?layout=true, built by backend/spark/sql_plan): its
// operators laid out by the server (root on top, data flowing up), codegen stages as boxes around their
// operators, exchanges and broadcasts as dashed edges between them. Selecting an operator lists its metrics (as
// Spark combines them), its time where Spark measures it, its stages and findings, and highlights those stages in
// the job graph. A codegen box collapses to one box when its title is clicked; search marks operators by name or
// description; fit shows the whole plan; the wheel zooms and dragging pans.

import * as api from "../api.js";
import { esc } from "../dom.js";

const SVGNS = "http://www.w3.org/2000/svg";

function fmt(m, v) {
  if (v === null || v === undefined) return "";
  if (m.type === "size") {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let x = v, u = 0;
    while (x >= 2048 && u < units.length - 1) { x /= 1024; u++; }
    return `${x.toFixed(1)} ${units[u]}`;
  }
  if (m.type === "timing" || m.type === "nsTiming") return v < 1000 ? `${v} ms` : `${(v / 1000).toFixed(1)} s`;
  return Number(v).toLocaleString("en-US");
}

// A metric's running total over time as a small line (its tasks finishing), or "" with fewer than two points.
function spark(series) {
  if (!series || series.length < 2) return "";
  const t0 = series[0][0], t1 = series[series.length - 1][0], top = series[series.length - 1][1] || 1;
  const w = 90, h = 16, dt = Math.max(1, t1 - t0);
  const pts = series.map(([t, v]) => `${(((t - t0) / dt) * w).toFixed(1)},${(h - (v / top) * h).toFixed(1)}`).join(" ");
  return `<svg class="plan-spark" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}"><title>${series.length} updates over ${((t1 - t0) / 1000).toFixed(2)} s</title><polyline points="0,${h} ${pts}"></polyline></svg>`;
}

function headline(node) {
  const rows = node.metrics.find((m) => m.name === "number of output rows");
  if (rows) return `${fmt(rows, rows.value)} rows`;
  const first = node.metrics[0];
  return first ? `${first.name}: ${fmt(first, first.value)}` : "";
}

export class PlanView {
  constructor(box, handlers) {
    this.box = box;
    this.h = handlers;
    this.sid = null;
    this.data = null;
    this.execution = null;
    this.collapsed = new Set();
    this.selected = null;
  }

  // Open an execution's plan with one of its operators selected at the next show (a finding's row asks it).
  open(execution, operator) {
    this.pending = { execution, operator };
  }

  // scope: the job graph's scope; a SQL execution's region picks its plan.
  async show(sid, scope) {
    const data = await api.get(`/api/sessions/${sid}/plan`, { layout: "true", series: "true" });
    const here = JSON.stringify(scope || []);
    const key = JSON.stringify(data.executions.map((e) => [e.execution, e.nodes.length, e.completed]));
    const inScope = data.executions.find((e) => e.scope && here.startsWith(JSON.stringify(e.scope).slice(0, -1)));
    const pending = this.pending;
    this.pending = null;
    const wanted = pending ? pending.execution
      : inScope ? inScope.execution : (this.execution ?? (data.executions[0] || {}).execution);
    if (!pending && sid === this.sid && key === this.key && wanted === this.execution) return;
    this.sid = sid; this.key = key; this.data = data; this.execution = wanted;
    this.render();
    if (pending && this.current() && this.current().nodes.some((n) => n.id === pending.operator)) this.select(pending.operator);
  }

  current() {
    return this.data && this.data.executions.find((e) => e.execution === this.execution);
  }

  render() {
    const ex = this.current();
    if (!this.data.executions.length) {
      this.box.innerHTML = "<p>No SQL executions in this session's log.</p>";
      return;
    }
    const options = this.data.executions.map((e) => `<option value="${e.execution}"${e.execution === this.execution ? " selected" : ""}>SQL execution ${e.execution}: ${esc(e.description.slice(0, 80))}</option>`).join("");
    this.box.innerHTML = `<div class="plan-bar"><select class="plan-pick">${options}</select>
      <input class="plan-search" type="search" placeholder="search operators" aria-label="search operators">
      <button class="plan-fit">fit</button><span class="plan-count"></span></div>
      <div class="plan-body"><svg class="plan-graph" aria-label="SQL plan"></svg><div class="plan-details"></div></div>`;
    this.box.querySelector(".plan-pick").addEventListener("change", (ev) => {
      this.execution = Number(ev.target.value); this.collapsed.clear(); this.selected = null; this.render();
    });
    this.box.querySelector(".plan-search").addEventListener("input", (ev) => this.search(ev.target.value));
    this.box.querySelector(".plan-fit").addEventListener("click", () => this.fit());
    this.svg = this.box.querySelector(".plan-graph");
    this.bindZoom();
    if (ex) this.draw(ex);
    this.natural();
  }

  // The plan at its own scale (a unit a pixel), its top in view, centred: readable however large it is.
  natural() {
    const r = this.svg.getBoundingClientRect();
    if (!r.width || !r.height) { this.fit(); return; }
    const x = Math.min(0, ((this.width || 0) - r.width) / 2);
    this.svg.setAttribute("viewBox", `${(this.width || 0) > r.width ? 0 : x} 0 ${r.width} ${r.height}`);
  }

  // Wheel zooms about the pointer, dragging the background pans: the view box moves, the drawing stays.
  bindZoom() {
    const box = () => this.svg.viewBox.baseVal;
    const toPlan = (ev) => {
      const r = this.svg.getBoundingClientRect(), v = box();
      return [v.x + (ev.clientX - r.left) * v.width / r.width, v.y + (ev.clientY - r.top) * v.height / r.height];
    };
    this.svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const [px, py] = toPlan(ev), v = box(), k = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
      this.svg.setAttribute("viewBox", `${px - (px - v.x) * k} ${py - (py - v.y) * k} ${v.width * k} ${v.height * k}`);
    }, { passive: false });
    let drag = null;
    this.svg.addEventListener("pointerdown", (ev) => {
      if (ev.target.closest("g.plan-node, text.plan-cluster-title")) return;
      drag = { x: ev.clientX, y: ev.clientY, v: { ...box() } };
    });
    this.svg.addEventListener("pointermove", (ev) => {
      if (!drag) return;
      const r = this.svg.getBoundingClientRect(), v = drag.v;
      const dx = (ev.clientX - drag.x) * v.width / r.width, dy = (ev.clientY - drag.y) * v.height / r.height;
      this.svg.setAttribute("viewBox", `${v.x - dx} ${v.y - dy} ${v.width} ${v.height}`);
    });
    for (const end of ["pointerup", "pointerleave"]) this.svg.addEventListener(end, () => { drag = null; });
  }

  draw(ex) {
    const L = ex.layout;
    const byId = new Map(ex.nodes.map((n) => [n.id, n]));
    const hiddenIn = new Map(); // member id -> collapsed cluster id
    for (const c of this.collapsed) for (const m of (L.clusters[c] || { members: [] }).members) hiddenIn.set(m, c);
    const where = (id) => {
      const c = hiddenIn.get(id);
      if (c !== undefined) { const b = L.clusters[c]; return { x: b.x, y: b.y, w: b.w, h: 40 }; }
      return L.nodes[id];
    };
    let html = "";
    for (const [cid, c] of Object.entries(L.clusters)) {
      const n = byId.get(Number(cid));
      const folded = this.collapsed.has(Number(cid));
      const dur = n.metrics.find((m) => m.name === "duration");
      const title = `${esc(n.name)}${dur ? ` · ${fmt(dur, dur.value)}` : ""}${folded ? ` · ${c.members.length} operators` : ""}`;
      html += `<g class="plan-cluster${folded ? " folded" : ""}" data-cluster="${cid}"><rect x="${c.x}" y="${c.y}" width="${c.w}" height="${folded ? 40 : c.h}" rx="6"></rect>
        <text class="plan-cluster-title" x="${c.x + 8}" y="${c.y + 11}">${folded ? "▸" : "▾"} ${title}</text></g>`;
    }
    for (const e of L.edges) {
      const a = where(e.from), b = where(e.to);
      if (!a || !b || (hiddenIn.has(e.from) && hiddenIn.get(e.from) === hiddenIn.get(e.to))) continue;
      html += `<line class="plan-edge${e.between_stages ? " between" : ""}" x1="${a.x + a.w / 2}" y1="${a.y}" x2="${b.x + b.w / 2}" y2="${b.y + b.h}"></line>`;
    }
    for (const [id, b] of Object.entries(L.nodes)) {
      if (hiddenIn.has(Number(id))) continue;
      const n = byId.get(Number(id));
      const finding = ex.findings.some((f) => f.operator === n.id);
      html += `<g class="plan-node${finding ? " has-finding" : ""}${this.selected === n.id ? " sel" : ""}" data-node="${id}" transform="translate(${b.x},${b.y})">
        <rect width="${b.w}" height="${b.h}" rx="4"></rect>
        <text x="8" y="18" class="plan-name">${esc(n.name)} #${n.id}</text>
        <text x="8" y="36" class="plan-metric">${esc(headline(n))}</text>${n.running ? `<text x="${b.w - 8}" y="18" class="plan-running">${n.running.tasks} running, ${n.running.longest_s.toFixed(1)} s</text>` : ""}</g>`;
    }
    this.svg.innerHTML = html;
    for (const g of this.svg.querySelectorAll("g.plan-node")) g.addEventListener("click", () => this.select(Number(g.dataset.node)));
    for (const t of this.svg.querySelectorAll("text.plan-cluster-title")) {
      t.addEventListener("click", () => {
        const cid = Number(t.parentNode.dataset.cluster);
        if (this.collapsed.has(cid)) this.collapsed.delete(cid); else this.collapsed.add(cid);
        this.draw(ex);
      });
    }
    this.width = L.width; this.height = L.height;
  }

  fit() {
    if (!this.svg) return;
    this.svg.setAttribute("viewBox", `0 0 ${Math.max(this.width || 1, 1)} ${Math.max(this.height || 1, 1)}`);
  }

  search(text) {
    const q = text.trim().toLowerCase();
    const ex = this.current();
    let count = 0;
    for (const g of this.svg.querySelectorAll("g.plan-node")) {
      const n = ex.nodes.find((x) => x.id === Number(g.dataset.node));
      const hit = q !== "" && (n.name.toLowerCase().includes(q) || n.desc.toLowerCase().includes(q));
      g.classList.toggle("match", hit);
      if (hit) count++;
    }
    this.svg.classList.toggle("searching", q !== "");
    this.box.querySelector(".plan-count").textContent = q ? `${count} match${count === 1 ? "" : "es"}` : "";
  }

  select(id) {
    const ex = this.current();
    const n = ex.nodes.find((x) => x.id === id);
    this.selected = id;
    for (const g of this.svg.querySelectorAll("g.plan-node")) g.classList.toggle("sel", Number(g.dataset.node) === id);
    const rows = n.metrics.map((m) => `<tr><td>${esc(m.name)}</td><td>${esc(fmt(m, m.value))}</td><td>${m.min === null ? "" : esc(`${fmt(m, m.min)} / ${fmt(m, m.med)} / ${fmt(m, m.max)}`)}</td><td>${spark(m.series)}</td></tr>`).join("");
    const time = n.time.measured ? `${esc(fmt({ type: "timing" }, n.time.ms))} (${esc(n.time.by.join(", "))}${n.time.of === "pipeline" ? ", the whole codegen stage" : ""})` : esc(n.time.note);
    const findings = ex.findings.filter((f) => f.operator === id).map((f) => `<li class="plan-finding"><b>${esc(f.finding)}</b>: ${esc(f.label)}<br>${esc(f.recommendation)} <span class="muted">(${esc(f.metric)})</span></li>`).join("");
    this.box.querySelector(".plan-details").innerHTML = `<h4>${esc(n.name)} #${n.id}</h4><div class="plan-desc">${esc(n.desc.slice(0, 400))}</div>
      <div>stages: <span class="plan-stages">${n.stages.join(", ") || "none recorded"}</span></div><div>time: ${time}</div>
      ${n.running ? `<div class="plan-running-note">${n.running.tasks} task${n.running.tasks === 1 ? "" : "s"} still running, the longest for ${n.running.longest_s.toFixed(1)} s</div>` : ""}
      ${rows ? `<table class="plan-metrics"><thead><tr><th>metric</th><th>total</th><th>min / med / max</th><th>as tasks finished</th></tr></thead><tbody>${rows}</tbody></table>` : "<p>No metrics.</p>"}
      ${findings ? `<ul>${findings}</ul>` : ""}`;
    if (this.h.planStages) this.h.planStages(ex.scope, n.stages);
  }
}
