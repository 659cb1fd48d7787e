// The Executors tab: every task attempt as a bar on its executor's slot lane (GET .../tasks), coloured by stage or
// by duration (a toggle), failed and killed attempts marked, the timeline cursor drawn across, and the critical
// path of the selected completed time (the one picked in the Blame tab, else the slowest) overlaid: its segments
// on a lane of their own coloured by kind, and the tasks on it outlined on their lanes. Lanes are assigned here,
// greedily by launch time (a task takes the lowest lane of its executor that is free), so a straggler shows as the
// one long bar. Level of detail keeps 100,000 tasks quick: far out, adjacent bars of one colour on a lane that are
// under a pixel apart are drawn as one; zoomed in, each task again. Few bars are SVG lines, many WebGL ones.
// "phases" splits each bar as Spark's event timeline does (GET .../tasks `phases`: scheduler delay, deserialization,
// shuffle fetch wait, computing, GC, shuffle write, result serialization, getting the result), each phase its share
// of the bar; a task whose log measured none is drawn whole, grey.

import * as api from "../api.js";
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
  return { lane, base, height: y, order };
}

// Durations in log-spaced bins (one WebGL trace each: a line's colour cannot vary within a trace).
const DURATION_COLORS = ["#fde725", "#b5de2b", "#6ece58", "#35b779", "#1f9e89", "#26828e", "#31688e", "#3e4989", "#482878", "#440154"];
const CRITICAL = -2; // the critical path's lane, above the executors
const MERGE_FROM = 5000; // tasks in view from which adjacent bars of a lane merge (level of detail)
const MERGE_PIXELS = 2000; // ... when closer than the span over this (under a pixel on a chart up to 2,000 px wide)
const SVG_UP_TO = 3000; // bars drawn as SVG up to this many (the rest WebGL)
// Spark's event timeline phases, in the order a bar shows them (GET .../tasks `phases`), with their colours
export const PHASES = [
  ["scheduler_delay", "scheduler delay", "#80b1d3"], ["deserialize", "task deserialization", "#fb8072"],
  ["fetch_wait", "shuffle read (fetch wait)", "#fdb462"], ["compute", "executor computing", "#b3de69"],
  ["python", "Python workers", "#4daf4a"],
  ["gc", "GC", "#e7298a"], ["shuffle_write", "shuffle write", "#ffed6f"],
  ["result_serialization", "result serialization", "#bc80bd"], ["getting_result", "getting result", "#8dd3c7"],
];

export function durationBins(durations, n = DURATION_COLORS.length) {
  let lo = Infinity, hi = 0;
  for (const v of durations) { if (v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }
  if (!(hi > 0)) return { bin: () => 0, edges: [0, 0] };
  lo = Math.max(lo, hi / 1e4);
  const a = Math.log(lo), step = Math.max((Math.log(hi) - a) / n, 1e-9);
  const edges = Array.from({ length: n + 1 }, (_, k) => Math.exp(a + k * step));
  return { bin: (v) => Math.max(0, Math.min(n - 1, Math.floor((Math.log(Math.max(v, lo)) - a) / step))), edges };
}

function cursorShape(at) {
  return { name: "cursor", type: "line", x0: at * 1000, x1: at * 1000, yref: "paper", y0: 0, y1: 1, line: { color: "#f0a500", width: 2 } };
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
    this.range = null; // the zoomed x range [lo, hi] in seconds, or null: everything
  }

  // picked: the completed time whose critical path is overlaid (the Blame tab's choice), or null: the slowest in
  // the scope on screen (in the whole session at the root).
  // version: what the answers depend on (the session's batch count): unchanged, only the cursor moves.
  async show(sid, cursorAt, picked = null, scope = [], version = null) {
    if (sid !== this.sid) this.range = null;
    const key = JSON.stringify([sid, version, picked && [picked.scope, picked.time], scope, this.colour]);
    if (version !== null && key === this.drawn && this.box.querySelector("#executor-chart .main-svg")) {
      this.moveCursor(cursorAt);
      return;
    }
    this.sid = sid;
    this.cursorAt = cursorAt;
    this.picked = picked;
    this.scope = scope;
    this.drawn = key;
    const t0 = performance.now();
    const [d, t] = await Promise.all([api.get(`/api/sessions/${sid}/tasks`), this._time(sid, picked, scope)]);
    this.timing = { fetch: performance.now() - t0 }; // ms, for benchmarks
    if (!d.launched.length) {
      this.box.innerHTML = `<p class="muted">No tasks: this log names none (task details come from the Spark model).</p>`;
      return;
    }
    if (!this.box.querySelector("#executor-chart")) {
      this.box.innerHTML = `<div class="executor-bar"><span class="muted" id="executor-note"></span>
        <span class="colour-by">colour by <button data-colour="stage">stage</button><button data-colour="duration">duration</button><button data-colour="phases" title="each task split into the phases Spark measured">phases</button></span>
        <span class="muted" id="critical-note"></span></div><div id="executor-chart" class="chart"></div>`;
      for (const b of this.box.querySelectorAll("button[data-colour]")) {
        b.addEventListener("click", () => { this.colour = b.dataset.colour; this.show(this.sid, this.cursorAt, this.picked, this.scope).catch(() => {}); });
      }
    }
    for (const b of this.box.querySelectorAll("button[data-colour]")) b.classList.toggle("on", b.dataset.colour === this.colour);
    await this._draw(d, t, cursorAt);
  }

  // The stages of an operator selected in the Plan tab: their tasks' bars stay, the others fade (null: none).
  emphasize(stages) {
    this.emphasized = stages && stages.length ? new Set(stages) : null;
    this._emphasis();
  }

  _emphasis() {
    const el = this.box.querySelector("#executor-chart");
    if (!el || !el.data || !window.Plotly) return;
    const idx = [], opacity = [];
    el.data.forEach((tr, i) => {
      const m = /^stage (\d+)$/.exec(tr.name || "");
      if (!m) return;
      idx.push(i);
      opacity.push(!this.emphasized || this.emphasized.has(Number(m[1])) ? 1 : 0.15);
    });
    if (idx.length) window.Plotly.restyle(el, { opacity }, idx);
    el.dataset.emphasized = this.emphasized ? [...this.emphasized].join(",") : "";
  }

  // The timeline cursor moved: only the line moves (no request, no redraw of the bars).
  moveCursor(at) {
    this.cursorAt = at;
    const el = this.box.querySelector("#executor-chart");
    if (!el || !el.layout || !window.Plotly || !at) return;
    const shapes = (el.layout.shapes || []).filter((sh) => !sh.name || sh.name !== "cursor");
    shapes.unshift(cursorShape(at));
    window.Plotly.relayout(el, { shapes });
  }

  async _time(sid, picked, scope) {
    if (picked) return picked;
    try {
      const ans = await api.get(`/api/sessions/${sid}/blame`, scope.length ? { top: 1, scope: scope.join(","), nested: true } : { top: 1 });
      return ans.times[0] || null;
    } catch (e) { return null; }
  }

  // Per task, once per answer: its lane's y, its end, its duration, its colour group (stage or duration bin).
  _prepare(d) {
    let now = -Infinity;
    for (let i = 0; i < d.launched.length; i++) now = Math.max(now, d.launched[i], d.ended[i] === null ? -Infinity : d.ended[i]);
    const t0 = performance.now();
    const { lane, base, height, order } = assignLanes(d, now);
    this.timing.lanes = performance.now() - t0;
    const n = d.launched.length;
    const y = new Int32Array(n), end = new Float64Array(n), dur = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      end[i] = d.ended[i] === null ? now : d.ended[i];
      dur[i] = end[i] - d.launched[i];
      y[i] = base[d.executor[i]] + lane[i];
    }
    const bins = this.colour === "duration" ? durationBins(dur) : null;
    const group = new Int32Array(n);
    const distinct = new Set();
    for (let i = 0; i < n; i++) { group[i] = bins ? bins.bin(dur[i]) : d.stage[i]; distinct.add(group[i]); }
    const colourOf = new Map();
    [...distinct].sort((a, b) => a - b).forEach((g, k) => colourOf.set(g, bins ? DURATION_COLORS[g] : PALETTE[k % PALETTE.length]));
    return { d, n, now, lane, base, height, order, y, end, dur, bins, group, colourOf };
  }

  // A bar's words: the partition the task computes; in a resubmitted stage attempt (its task set holds only the
  // lost partitions) also the task's index in that task set, labelled as such.
  _label(m, i) {
    const d = m.d;
    const part = d.partition ? d.partition[i] : d.index[i];
    const index = d.partition && d.index[i] !== part ? ` (index ${d.index[i]} in the re-run)` : "";
    return `task ${d.task[i]} · stage ${d.stage[i]} · partition ${part}${index} · ${m.dur[i].toFixed(3)} s${d.ended[i] === null ? " (running)" : ""}`;
  }

  // The bars overlapping [lo, hi] (seconds; all when null), one trace per colour group. Level of detail: with more
  // than MERGE_FROM tasks in view, consecutive tasks of one group on one lane less than a fraction of a pixel apart
  // are drawn as one bar (its hover says how many); zooming in redraws the visible range at its own resolution.
  _bars(m, lo = null, hi = null) {
    if (this.colour === "phases") return this._phaseBars(m, lo, hi);
    const d = m.d;
    const from = lo === null ? -Infinity : lo, to = hi === null ? Infinity : hi;
    let visible = 0;
    for (let i = 0; i < m.n; i++) if (d.launched[i] <= to && m.end[i] >= from) visible++;
    const span = (hi === null ? m.now : hi) - (lo === null ? d.launched[m.order[0]] : lo);
    const gap = visible > MERGE_FROM ? span / MERGE_PIXELS : -1;
    const groups = new Map(); // group -> {x, y, text, tasks}
    const open = new Map(); // y -> the bar being extended on that lane: {g, x0, x1, count, first}
    const flush = (bar, y) => {
      if (!groups.has(bar.g)) groups.set(bar.g, { x: [], y: [], text: [], tasks: 0 });
      const tr = groups.get(bar.g);
      const label = bar.count === 1 ? this._label(m, bar.first)
        : `${bar.count} tasks · ${m.bins ? "" : `stage ${bar.g} · `}${(bar.x1 - bar.x0).toFixed(3)} s from ${new Date(bar.x0 * 1000).toISOString().slice(11, 23)} (zoom in for each)`;
      tr.x.push(bar.x0 * 1000, bar.x1 * 1000, null);
      tr.y.push(y, y, null);
      tr.text.push(label, label, null);
      tr.tasks += bar.count;
    };
    for (const i of m.order) {
      if (d.launched[i] > to || m.end[i] < from) continue;
      const y = m.y[i], g = m.group[i];
      const bar = open.get(y);
      if (bar && bar.g === g && d.launched[i] - bar.x1 <= gap) {
        bar.x1 = Math.max(bar.x1, m.end[i]);
        bar.count++;
        continue;
      }
      if (bar) flush(bar, y);
      open.set(y, { g, x0: d.launched[i], x1: m.end[i], count: 1, first: i });
    }
    for (const [y, bar] of open) flush(bar, y);
    const keys = [...groups.keys()].sort((a, b) => a - b);
    let segments = 0;
    for (const tr of groups.values()) segments += tr.x.length / 3;
    // SVG while the bars are few (no WebGL context to set up: the first picture comes sooner), WebGL beyond
    const type = segments <= SVG_UP_TO ? "scatter" : "scattergl";
    return keys.map((g) => ({
      type, mode: "lines", name: m.bins ? `${seconds(m.bins.edges[g])}–${seconds(m.bins.edges[g + 1])} s` : `stage ${g}`,
      x: groups.get(g).x, y: groups.get(g).y, text: groups.get(g).text, hoverinfo: "text", meta: { tasks: groups.get(g).tasks },
      line: { width: 6, color: m.colourOf.get(g) }, showlegend: keys.length <= 24,
    }));
  }

  // Each task in view split into its phases: one trace per phase, a segment per task, in the timeline's order
  // (a phase's share of the bar is its share of the measured phases' sum). No merging: zoom in on a large log.
  _phaseBars(m, lo, hi) {
    const d = m.d;
    const from = lo === null ? -Infinity : lo, to = hi === null ? Infinity : hi;
    const traces = PHASES.map(([key, name, color]) => ({ key, name, color, x: [], y: [], text: [] }));
    const whole = { key: "none", name: "not measured", color: "#c8ced6", x: [], y: [], text: [] };
    const ph = d.phases || {};
    for (const i of m.order) {
      if (d.launched[i] > to || m.end[i] < from) continue;
      const ms = PHASES.map(([key]) => (ph[key] ? ph[key][i] : null));
      const total = ms.reduce((a, v) => a + (v || 0), 0);
      const y = m.y[i];
      const label = this._label(m, i);
      if (!(total > 0)) {
        whole.x.push(d.launched[i] * 1000, m.end[i] * 1000, null);
        whole.y.push(y, y, null);
        whole.text.push(label, label, null);
        continue;
      }
      const scale = (m.end[i] - d.launched[i]) * 1000 / total;
      const words = PHASES.map(([key, name], k) => (ms[k] === null ? `${name}: not measured` : (key === "python" && !ms[k] ? "" : `${name} ${ms[k].toFixed(0)} ms`)))
        .filter(Boolean).join(" · "); // a task without Python time does not say "Python workers 0 ms"
      let x = d.launched[i] * 1000;
      ms.forEach((v, k) => {
        if (!v) return;
        const tr = traces[k];
        tr.x.push(x, x + v * scale, null);
        tr.y.push(y, y, null);
        tr.text.push(`${label} · ${words}`, `${label} · ${words}`, null);
        x += v * scale;
      });
    }
    const all = traces.concat([whole]).filter((tr) => tr.x.length);
    const segments = all.reduce((a, tr) => a + tr.x.length / 3, 0);
    const type = segments <= SVG_UP_TO ? "scatter" : "scattergl";
    return all.map((tr) => ({ type, mode: "lines", name: tr.name, x: tr.x, y: tr.y, text: tr.text, hoverinfo: "text",
      meta: { phase: tr.key }, line: { width: 6, color: tr.color }, showlegend: true }));
  }

  async _draw(d, t, cursorAt) {
    const m = this._prepare(d);
    const t0 = performance.now();
    const { base, lane, height } = m;
    const failed = { x: [], y: [], text: [] }, killed = { x: [], y: [], text: [] };
    const rowOfTask = new Map(); // the tasks on the critical path
    const wanted = new Set(t ? t.blame.filter((sg) => sg.holder && sg.holder.task !== undefined).map((sg) => sg.holder.task) : []);
    for (let i = 0; i < m.n; i++) {
      const o = d.outcome[i];
      if (o === "failed" || o === "killed") {
        const to = o === "failed" ? failed : killed;
        to.x.push(m.end[i] * 1000);
        to.y.push(m.y[i]);
        to.text.push(`${this._label(m, i)} · ${o}${d.reasons && d.reasons[i] ? ": " + d.reasons[i] : ""}`);
      }
      if (wanted.has(d.task[i])) rowOfTask.set(d.task[i], i);
    }
    const traces = [];
    const critical = t ? this._critical(t, rowOfTask, d, base, lane) : null;
    if (critical) traces.push(critical.outline); // under the bars: an outline around the critical tasks
    const bars = this._bars(m, ...(this.range || [null, null]));
    traces.push(...bars);
    if (critical) traces.push(...critical.lane);
    if (failed.x.length) {
      traces.push({ type: "scattergl", mode: "markers", name: "failed", x: failed.x, y: failed.y, text: failed.text,
        hoverinfo: "text", marker: { symbol: "x", size: 9, color: "#c0392b" } });
    }
    if (killed.x.length) {
      traces.push({ type: "scattergl", mode: "markers", name: "killed", x: killed.x, y: killed.y, text: killed.text,
        hoverinfo: "text", marker: { symbol: "x-open", size: 9, color: "#6b7686" } });
    }
    // one kind of trace: a single WebGL trace would set up a WebGL context for all
    const kind = bars.length ? bars[0].type : "scatter";
    for (const tr of traces) tr.type = kind;
    const shapes = cursorAt ? [cursorShape(cursorAt)] : [];
    if (t) {
      shapes.push({ type: "rect", x0: t.start * 1000, x1: t.end * 1000, yref: "paper", y0: 0, y1: 1, layer: "below",
        fillcolor: "rgba(58,111,247,0.07)", line: { width: 0 } });
    }
    const top = t ? CRITICAL - 0.5 : -0.5;
    const layout = {
      margin: { l: 90, r: 140, t: 10, b: 30 }, height: Math.min(600, Math.max(180, 30 + 10 * (height - top))),
      xaxis: { type: "date", gridcolor: "#e8ebef", ...(this.range ? { range: this.range.map((v) => v * 1000), autorange: false } : {}) },
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
    el.dataset.draws = String(+(el.dataset.draws || 0) + 1);
    el.dataset.bars = String(bars.reduce((a, tr) => a + tr.x.length / 3, 0));
    const Plotly = await this.loadPlotly();
    this.timing.traces = performance.now() - t0;
    await Plotly.react(el, traces, layout, { displayModeBar: false, responsive: true });
    this._emphasis();
    this.timing.plot = performance.now() - t0 - this.timing.traces;
    // zooming redraws the bars of the visible range at its resolution (the other traces stay)
    this.model = m;
    this.nBars = bars.length;
    this.firstBar = critical ? 1 : 0;
    if (!el.dataset.zoomBound) {
      el.dataset.zoomBound = "1";
      el.on("plotly_relayout", (ev) => this._zoomed(el, ev));
    }
  }

  async _zoomed(el, ev) {
    let lo = null, hi = null;
    if (ev["xaxis.range[0]"] !== undefined) [lo, hi] = [ev["xaxis.range[0]"], ev["xaxis.range[1]"]];
    else if (ev["xaxis.range"]) [lo, hi] = ev["xaxis.range"];
    else if (!ev["xaxis.autorange"]) return;
    const sec = (v) => (typeof v === "number" ? v / 1000 : Date.parse(String(v).replace(" ", "T") + "Z") / 1000);
    const m = this.model;
    this.range = lo === null ? null : [sec(lo), sec(hi)];
    if (!m || m.n <= MERGE_FROM) return;
    const bars = this._bars(m, ...(this.range || [null, null]));
    const kind = bars.length ? bars[0].type : "scatter";
    const data = el.data.slice(0, this.firstBar).concat(bars, el.data.slice(this.firstBar + this.nBars))
      .map((tr) => ({ ...tr, type: kind }));
    this.nBars = bars.length;
    const layout = { ...el.layout, xaxis: { ...el.layout.xaxis } };
    if (lo !== null) { layout.xaxis.range = [lo, hi]; layout.xaxis.autorange = false; }
    el.dataset.bars = String(bars.reduce((a, tr) => a + tr.x.length / 3, 0));
    await window.Plotly.react(el, data, layout);
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
