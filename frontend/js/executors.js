// The Executors tab: every task attempt as a bar on its executor's slot lane (GET .../tasks), coloured by stage or
// by duration (a toggle), failed and killed attempts marked, the timeline cursor drawn across, and the critical
// path of the selected completed time (the one picked in the Blame tab, else the slowest) overlaid: its segments
// on a lane of their own coloured by kind, and the tasks on it outlined on their lanes. Lanes are assigned here,
// greedily by launch time (a task takes the lowest lane of its executor that is free), so a straggler shows as the
// one long bar. WebGL lines (scattergl) keep 100,000 bars fast.

import * as api from "./api.js";
import { KIND_COLORS, segmentLabel } from "./blame.js";

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

// Durations in log-spaced bins (one WebGL trace each: a line's colour cannot vary within a trace).
const DURATION_COLORS = ["#fde725", "#b5de2b", "#6ece58", "#35b779", "#1f9e89", "#26828e", "#31688e", "#3e4989", "#482878", "#440154"];
const CRITICAL = -2; // the critical path's lane, above the executors

export function durationBins(durations, n = DURATION_COLORS.length) {
  let lo = Infinity, hi = 0;
  for (const v of durations) { if (v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }
  if (!(hi > 0)) return { bin: () => 0, edges: [0, 0] };
  lo = Math.max(lo, hi / 1e4);
  const a = Math.log(lo), step = (Math.log(hi) - a) / n || 1;
  const edges = Array.from({ length: n + 1 }, (_, k) => Math.exp(a + k * step));
  return { bin: (v) => Math.max(0, Math.min(n - 1, Math.floor((Math.log(Math.max(v, lo)) - a) / step))), edges };
}

function seconds(v) {
  return v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v >= 0.1 ? v.toFixed(2) : v.toFixed(3);
}

export class ExecutorView {
  constructor(box, handlers, loadPlotly) {
    this.box = box;
    this.h = handlers;
    this.loadPlotly = loadPlotly;
    this.colour = "stage"; // "stage" | "duration"
    this.sid = null;
  }

  // picked: the completed time whose critical path is overlaid (the Blame tab's choice), or null: the slowest in
  // the scope on screen (in the whole session at the root).
  async show(sid, cursorAt, picked = null, scope = []) {
    this.sid = sid;
    this.cursorAt = cursorAt;
    this.picked = picked;
    this.scope = scope;
    const t0 = performance.now();
    const [d, t] = await Promise.all([api.get(`/api/sessions/${sid}/tasks`), this._time(sid, picked, scope)]);
    this.timing = { fetch: performance.now() - t0 }; // ms, for benchmarks
    if (!d.launched.length) {
      this.box.innerHTML = `<p class="muted">No tasks: this log names none (task details come from the Spark model).</p>`;
      return;
    }
    if (!this.box.querySelector("#executor-chart")) {
      this.box.innerHTML = `<div class="executor-bar"><span class="muted" id="executor-note"></span>
        <span class="colour-by">colour by <button data-colour="stage">stage</button><button data-colour="duration">duration</button></span>
        <span class="muted" id="critical-note"></span></div><div id="executor-chart" class="chart"></div>`;
      for (const b of this.box.querySelectorAll("button[data-colour]")) {
        b.addEventListener("click", () => { this.colour = b.dataset.colour; this.show(this.sid, this.cursorAt, this.picked, this.scope).catch(() => {}); });
      }
    }
    for (const b of this.box.querySelectorAll("button[data-colour]")) b.classList.toggle("on", b.dataset.colour === this.colour);
    await this._draw(d, t, cursorAt);
  }

  async _time(sid, picked, scope) {
    if (picked) return picked;
    try {
      const ans = await api.get(`/api/sessions/${sid}/blame`, { top: 1, scope: scope.length ? scope.join(",") : undefined });
      return ans.times[0] || null;
    } catch (e) { return null; }
  }

  async _draw(d, t, cursorAt) {
    let now = -Infinity;
    for (let i = 0; i < d.launched.length; i++) now = Math.max(now, d.launched[i], d.ended[i] === null ? -Infinity : d.ended[i]);
    const t0 = performance.now();
    const { lane, base, height } = assignLanes(d, now);
    this.timing.lanes = performance.now() - t0;
    const n = d.launched.length;
    const durations = new Float64Array(n);
    for (let i = 0; i < n; i++) durations[i] = (d.ended[i] === null ? now : d.ended[i]) - d.launched[i];
    const bins = this.colour === "duration" ? durationBins(durations) : null;
    const groups = new Map(); // stage, or duration bin -> bars
    const failed = { x: [], y: [], text: [] };
    const rowOfTask = new Map();
    for (let i = 0; i < n; i++) {
      const s = d.stage[i];
      const g = bins ? bins.bin(durations[i]) : s;
      if (!groups.has(g)) groups.set(g, { x: [], y: [], text: [] });
      const tr = groups.get(g);
      const y = base[d.executor[i]] + lane[i];
      const end = d.ended[i] === null ? now : d.ended[i];
      const label = `task ${d.task[i]} · stage ${s} · partition ${d.index[i]} · ${durations[i].toFixed(3)} s${d.ended[i] === null ? " (running)" : ""}`;
      tr.x.push(d.launched[i] * 1000, end * 1000, null);
      tr.y.push(y, y, null);
      tr.text.push(label, label, null);
      if (d.outcome[i] === "failed") { failed.x.push(end * 1000); failed.y.push(y); failed.text.push(label + " · failed or killed"); }
      rowOfTask.set(d.task[i], i);
    }
    const keys = [...groups.keys()].sort((a, b) => a - b);
    const traces = [];
    const critical = t ? this._critical(t, rowOfTask, d, base, lane) : null;
    if (critical) traces.push(critical.outline); // under the bars: an outline around the critical tasks
    traces.push(...keys.map((g, k) => ({
      type: "scattergl", mode: "lines", name: bins ? `${seconds(bins.edges[g])}–${seconds(bins.edges[g + 1])} s` : `stage ${g}`,
      x: groups.get(g).x, y: groups.get(g).y, text: groups.get(g).text, hoverinfo: "text",
      line: { width: 6, color: bins ? DURATION_COLORS[g] : PALETTE[k % PALETTE.length] }, showlegend: keys.length <= 24,
    })));
    if (critical) traces.push(...critical.lane);
    if (failed.x.length) {
      traces.push({ type: "scattergl", mode: "markers", name: "failed / killed", x: failed.x, y: failed.y, text: failed.text,
        hoverinfo: "text", marker: { symbol: "x", size: 9, color: "#c0392b" } });
    }
    const shapes = cursorAt ? [{ type: "line", x0: cursorAt * 1000, x1: cursorAt * 1000, yref: "paper", y0: 0, y1: 1, line: { color: "#f0a500", width: 2 } }] : [];
    if (t) {
      shapes.push({ type: "rect", x0: t.start * 1000, x1: t.end * 1000, yref: "paper", y0: 0, y1: 1, layer: "below",
        fillcolor: "rgba(58,111,247,0.07)", line: { width: 0 } });
    }
    const top = t ? CRITICAL - 0.5 : -0.5;
    const layout = {
      margin: { l: 90, r: 140, t: 10, b: 30 }, height: Math.min(600, Math.max(180, 30 + 10 * (height - top))),
      xaxis: { type: "date", gridcolor: "#e8ebef" },
      yaxis: { range: [height - 0.5, top], tickvals: (t ? [CRITICAL] : []).concat(base),
        ticktext: (t ? ["critical path"] : []).concat(d.executors.map((e) => `executor ${e}`)), zeroline: false, gridcolor: "#e8ebef" },
      shapes, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "#fbfcfd", font: { size: 11 },
      legend: { orientation: "v", x: 1.01, y: 1, font: { size: 10 } },
    };
    this.box.querySelector("#executor-note").textContent =
      `${d.total.toLocaleString()} task attempts on ${d.executors.length} executor${d.executors.length > 1 ? "s" : ""}` + (d.truncated ? " (the longest shown)" : "");
    const what = t ? (t.batch_id !== null && t.batch_id !== undefined ? `batch ${t.batch_id}` : `time ${JSON.stringify(t.time)}`) : "";
    this.box.querySelector("#critical-note").textContent = t
      ? `critical path of ${t.name} · ${what} (${t.latency_s.toFixed(3)} s; ${critical.tasks} of its tasks outlined${this.picked ? "" : "; the slowest here, pick another in the Blame tab"})`
      : "no completed time to overlay";
    const el = this.box.querySelector("#executor-chart");
    el.dataset.colour = this.colour;
    el.dataset.criticalTasks = critical ? String(critical.tasks) : "0";
    const Plotly = await this.loadPlotly();
    this.timing.traces = performance.now() - t0 - this.timing.lanes;
    await Plotly.react(el, traces, layout, { displayModeBar: false, responsive: true });
    this.timing.plot = performance.now() - t0 - this.timing.lanes - this.timing.traces;
  }

  // The critical path of time t: its segments on their own lane (coloured by kind), and an outline under the bars
  // of the tasks it runs through (a task segment's holder names the task).
  _critical(t, rowOfTask, d, base, lane) {
    const outline = { x: [], y: [], text: [] };
    const byKind = new Map();
    let tasks = 0;
    for (const s of t.blame) {
      if (!byKind.has(s.kind)) byKind.set(s.kind, { x: [], y: [], text: [] });
      const k = byKind.get(s.kind);
      const label = `${s.kind} ${s.seconds.toFixed(3)} s · ${segmentLabel(s)}`;
      k.x.push(s.from * 1000, s.to * 1000, null);
      k.y.push(CRITICAL, CRITICAL, null);
      k.text.push(label, label, null);
      const row = s.holder && s.holder.task !== undefined ? rowOfTask.get(s.holder.task) : undefined;
      if (row !== undefined && (s.kind === "task" || s.kind === "recompute")) {
        const y = base[d.executor[row]] + lane[row];
        const end = d.ended[row] === null ? s.to : d.ended[row];
        outline.x.push(d.launched[row] * 1000, end * 1000, null);
        outline.y.push(y, y, null);
        outline.text.push(label, label, null);
        tasks++;
      }
    }
    return {
      tasks,
      outline: { type: "scattergl", mode: "lines", name: "on the critical path", x: outline.x, y: outline.y, text: outline.text,
        hoverinfo: "text", line: { width: 12, color: "#1c2430" }, showlegend: false },
      lane: [...byKind.entries()].map(([kind, k]) => ({
        type: "scattergl", mode: "lines", name: `critical: ${kind}`, x: k.x, y: k.y, text: k.text, hoverinfo: "text",
        line: { width: 8, color: KIND_COLORS[kind] || "#999" }, showlegend: false, // the lane's hover names the kind
      })),
    };
  }
}
