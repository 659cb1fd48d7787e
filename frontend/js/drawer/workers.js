// The Workers tab: each worker's batches (how many, the first and last, the time between) and a chart of batches
// per worker over time; clicking a worker lists its batches, and clicking a batch seeks to it.

import * as api from "../api.js";
import { esc } from "../dom.js";
import { duration } from "../times.js";
import { loadPlotly, LAYOUT, CONFIG } from "./plotly.js";

export class WorkersView {
  // handlers: seek(batch)
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers;
    this.sid = null;
  }

  async show(sid, info) {
    this.sid = sid;
    const data = await api.get(`/api/sessions/${sid}/workers`);
    const t0 = info && info.first_at ? info.first_at : 0;
    let html = `<table><thead><tr><th>worker</th><th>batches</th><th>first</th><th>last</th><th>span</th></tr></thead><tbody>`;
    for (const w of data.workers) {
      html += `<tr class="clickable" data-worker="${w.worker}"><td>${w.worker < 0 ? "–" : w.worker}</td><td>${w.batches}</td><td>${w.first_batch}</td><td>${w.last_batch}</td><td>${duration(w.last_at - w.first_at)}</td></tr>`;
    }
    html += "</tbody></table><p class='muted'>Click a worker to list its batches.</p>";
    const table = this.root.querySelector("#workers-table");
    table.innerHTML = html;
    for (const tr of table.querySelectorAll("tr[data-worker]")) tr.addEventListener("click", () => this.workerBatches(+tr.dataset.worker));
    const Plotly = await loadPlotly();
    const traces = Object.entries(data.histogram).map(([w, counts]) => ({
      type: "bar", name: `worker ${w}`, x: data.buckets.map((b) => b - t0), y: counts,
    }));
    await Plotly.react(this.root.querySelector("#chart-workers"), traces,
      { ...LAYOUT, barmode: "stack", bargap: 0.05, title: { text: "batches per worker over time", font: { size: 12 }, x: 0.01 } }, CONFIG);
  }

  async workerBatches(worker) {
    const data = await api.get(`/api/sessions/${this.sid}/batches`, { worker, limit: 200 });
    const box = this.root.querySelector("#worker-batches");
    let html = `<div class="muted">worker ${worker}: ${data.total} batches${data.total > 200 ? " (first 200)" : ""}</div>`;
    for (const b of data.batches) {
      html += `<div class="list-row" data-batch="${b.batch}"><span class="b">#${b.batch}</span><span class="muted">seq ${b.seq ?? "–"}</span><span>${esc(b.cause ? JSON.stringify(b.cause) : "")}</span><span class="muted">${b.updates} updates</span></div>`;
    }
    box.innerHTML = html;
    for (const r of box.querySelectorAll(".list-row")) r.addEventListener("click", () => this.h.seek(+r.dataset.batch));
  }
}
