// The Executors tab: every task attempt as a bar on its executor's slot lane (GET .../tasks), coloured by stage,
// failed and killed attempts marked, the timeline cursor drawn across. Lanes are assigned here, greedily by launch
// time (a task takes the lowest lane of its executor that is free), so a straggler shows as the one long bar.
// WebGL lines (scattergl) keep 100,000 bars fast.

import * as api from "./api.js";

const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
  "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5"];

export function assignLanes(d, now) {
  const n = d.launched.length;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => d.launched[a] - d.launched[b]);
  const ends = d.executors.map(() => []);
  const lane = new Int32Array(n);
  for (const i of order) {
    const free = ends[d.executor[i]];
    const end = d.ended[i] === null ? now : d.ended[i];
    let k = 0;
    while (k < free.length && free[k] > d.launched[i] + 1e-9) k++;
    free[k] = end;
    lane[i] = k;
  }
  const base = [];
  let y = 0;
  for (let e = 0; e < d.executors.length; e++) { base.push(y); y += Math.max(1, ends[e].length) + 1; }
  return { lane, base, height: y };
}

export class ExecutorView {
  constructor(box, handlers, loadPlotly) {
    this.box = box;
    this.h = handlers;
    this.loadPlotly = loadPlotly;
  }

  async show(sid, cursorAt) {
    const d = await api.get(`/api/sessions/${sid}/tasks`);
    if (!d.launched.length) {
      this.box.innerHTML = `<p class="muted">No tasks: this log names none (task details come from the Spark model).</p>`;
      return;
    }
    if (!this.box.querySelector("#executor-chart")) {
      this.box.innerHTML = `<div class="muted" id="executor-note"></div><div id="executor-chart" class="chart"></div>`;
    }
    let now = -Infinity;
    for (let i = 0; i < d.launched.length; i++) now = Math.max(now, d.launched[i], d.ended[i] === null ? -Infinity : d.ended[i]);
    const { lane, base, height } = assignLanes(d, now);
    const byStage = new Map();
    const failed = { x: [], y: [], text: [] };
    for (let i = 0; i < d.launched.length; i++) {
      const s = d.stage[i];
      if (!byStage.has(s)) byStage.set(s, { x: [], y: [], text: [] });
      const tr = byStage.get(s);
      const y = base[d.executor[i]] + lane[i];
      const end = d.ended[i] === null ? now : d.ended[i];
      const label = `task ${d.task[i]} · stage ${s} · partition ${d.index[i]} · ${(end - d.launched[i]).toFixed(3)} s${d.ended[i] === null ? " (running)" : ""}`;
      tr.x.push(d.launched[i] * 1000, end * 1000, null);
      tr.y.push(y, y, null);
      tr.text.push(label, label, null);
      if (d.outcome[i] === "failed") { failed.x.push(end * 1000); failed.y.push(y); failed.text.push(label + " · failed or killed"); }
    }
    const stages = [...byStage.keys()].sort((a, b) => a - b);
    const traces = stages.map((s, k) => ({
      type: "scattergl", mode: "lines", name: `stage ${s}`, x: byStage.get(s).x, y: byStage.get(s).y,
      text: byStage.get(s).text, hoverinfo: "text", line: { width: 6, color: PALETTE[k % PALETTE.length] },
      showlegend: stages.length <= 24,
    }));
    if (failed.x.length) {
      traces.push({ type: "scattergl", mode: "markers", name: "failed / killed", x: failed.x, y: failed.y, text: failed.text,
        hoverinfo: "text", marker: { symbol: "x", size: 9, color: "#c0392b" } });
    }
    const shapes = cursorAt ? [{ type: "line", x0: cursorAt * 1000, x1: cursorAt * 1000, yref: "paper", y0: 0, y1: 1, line: { color: "#f0a500", width: 2 } }] : [];
    const layout = {
      margin: { l: 90, r: 140, t: 10, b: 30 }, height: Math.min(600, Math.max(180, 30 + 10 * height)),
      xaxis: { type: "date", gridcolor: "#e8ebef" },
      yaxis: { range: [height - 0.5, -0.5], tickvals: base, ticktext: d.executors.map((e) => `executor ${e}`), zeroline: false, gridcolor: "#e8ebef" },
      shapes, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "#fbfcfd", font: { size: 11 },
      legend: { orientation: "v", x: 1.01, y: 1, font: { size: 10 } },
    };
    this.box.querySelector("#executor-note").textContent =
      `${d.total.toLocaleString()} task attempts on ${d.executors.length} executor${d.executors.length > 1 ? "s" : ""}` + (d.truncated ? " (the longest shown)" : "");
    const Plotly = await this.loadPlotly();
    await Plotly.react(this.box.querySelector("#executor-chart"), traces, layout, { displayModeBar: false, responsive: true });
  }
}
