// The Streaming tab: per streaming query (GET .../streaming, computed by backend/spark/structured_streaming.py), its
// micro-batches' durations against the trigger interval, late batches marked, and its event-time watermark against
// processing time, with the timeline's current moment drawn across both (it moves as the user scrubs, without a
// redraw). Spark's events do not state the interval: the server infers it from the trigger starts or takes the
// user's setting (each query's own input here: queries may run on different triggers), and the view says which.

import * as api from "../api.js";
import { esc } from "../dom.js";

const LATE = "#c0392b", ON_TIME = "#4a90d9", UNKNOWN = "#8e9aaf";
const CONFIG = { displayModeBar: false, responsive: true };
const BASE = {
  margin: { l: 56, r: 20, t: 28, b: 36 }, height: 240, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "#fbfcfd",
  font: { size: 11, family: "system-ui, sans-serif", color: "#1f2733" }, showlegend: true,
  legend: { orientation: "h", x: 0, y: -0.25, font: { size: 10 } },
};

const CURSOR = { color: "#f0a500", width: 2 }; // as the executor timeline's cursor

// Where moment `at` (epoch seconds) falls on the durations chart's batch axis (category k at position k): across
// batch k's slot from its start to the next batch's start (its end, for the last), so the line moves as time does.
export function batchPosition(batches, at) {
  const bs = batches.filter((b) => b.start !== null);
  if (!bs.length || at < bs[0].start) return -0.5;
  let k = 0;
  while (k + 1 < bs.length && bs[k + 1].start <= at) k++;
  const b = bs[k];
  const until = k + 1 < bs.length ? bs[k + 1].start : (b.end ?? b.start);
  const frac = until > b.start ? Math.min(1, (at - b.start) / (until - b.start)) : 1;
  return batches.indexOf(b) - 0.5 + frac;
}

function cursorShape(x) {
  return { name: "cursor", type: "line", x0: x, x1: x, yref: "paper", y0: 0, y1: 1, line: CURSOR };
}

export class StreamingView {
  constructor(box, handlers, loadPlotly) {
    this.box = box;
    this.h = handlers;
    this.loadPlotly = loadPlotly;
    this.triggers = {}; // query id -> the user's trigger interval (seconds); a query not here: inferred
    this.sid = null;
    this.cursorAt = null;
    this.queries = [];
  }

  // cursorAt: the timeline's moment (epoch seconds), drawn on both charts of every query.
  async show(sid, cursorAt = null) {
    if (sid !== this.sid) { this.sid = sid; this.triggers = {}; }
    this.cursorAt = cursorAt;
    const set = Object.keys(this.triggers).length ? JSON.stringify(this.triggers) : undefined;
    const data = await api.get(`/api/sessions/${sid}/streaming`, { triggers: set });
    const key = JSON.stringify(data);
    if (key === this.shown && this.box.querySelector(".stream-query, p")) { // nothing new: keep the inputs as typed
      this.moveCursor(cursorAt);
      return;
    }
    this.shown = key;
    this.queries = data.queries;
    if (!data.queries.length) {
      this.box.innerHTML = `<p class="muted">No streaming query in this session (the charts need Structured Streaming progress events).</p>`;
      return;
    }
    let html = "";
    data.queries.forEach((q, i) => {
      const late = q.batches.filter((b) => b.late).length;
      const t = q.trigger;
      html += `<div class="stream-query" data-query="${esc(q.query)}">
        <div class="stream-head"><b>${esc(q.name)}</b> · ${q.batches.length} batches${t.interval_s !== null ? ` · <span class="late-count">${late} late</span>` : ""}
        · <span class="trigger-note" data-source="${esc(t.source)}">trigger interval ${t.interval_s !== null ? `${t.interval_s} s` : "unknown"}: ${esc(t.how)}</span>
        <span class="stream-setting"><label>set <input class="trigger-s" type="number" min="0.001" step="any" size="6"
          placeholder="inferred" value="${this.triggers[q.query] ?? ""}"> s</label> <button class="trigger-apply">apply</button>
          <span class="muted">(this query; empty: inferred from its trigger starts)</span></span></div>
        <div class="stream-charts"><div class="chart stream-durations" id="stream-durations-${i}"></div>
        <div class="chart stream-watermark" id="stream-watermark-${i}"></div></div></div>`;
    });
    this.box.innerHTML = html;
    for (const div of this.box.querySelectorAll(".stream-query")) {
      div.querySelector(".trigger-apply").addEventListener("click", () => {
        const v = parseFloat(div.querySelector(".trigger-s").value);
        if (Number.isFinite(v) && v > 0) this.triggers[div.dataset.query] = v;
        else delete this.triggers[div.dataset.query];
        this.show(sid, this.cursorAt).catch((e) => this.h.toast && this.h.toast(e.message));
      });
    }
    const Plotly = await this.loadPlotly();
    for (let i = 0; i < data.queries.length; i++) {
      await this.durations(Plotly, data.queries[i], this.box.querySelector(`#stream-durations-${i}`));
      await this.watermark(Plotly, data.queries[i], this.box.querySelector(`#stream-watermark-${i}`));
    }
  }

  // The cursor's shape on each chart of query q: a batch position on the durations chart, a time on the watermark's.
  _cursors(q, at) {
    return at ? { durations: [cursorShape(batchPosition(q.batches, at))], watermark: [cursorShape(at * 1000)] }
      : { durations: [], watermark: [] };
  }

  // The timeline's moment moved: only the lines move (no request, no redraw of the charts).
  moveCursor(at) {
    this.cursorAt = at;
    if (!window.Plotly) return;
    this.queries.forEach((q, i) => {
      const c = this._cursors(q, at);
      for (const [kind, shapes] of Object.entries(c)) {
        const el = this.box.querySelector(`#stream-${kind}-${i}`);
        if (el && el.layout) window.Plotly.relayout(el, { shapes });
      }
    });
  }

  async durations(Plotly, q, el) {
    const interval = q.trigger.interval_s;
    const bs = q.batches;
    const x = bs.map((b) => `batch ${b.batch}`);
    const text = bs.map((b) => `batch ${b.batch}: ${b.duration_s === null ? "?" : b.duration_s.toFixed(3)} s` +
      (b.input_rows !== null && b.input_rows !== undefined ? ` · ${b.input_rows} rows` : "") + (b.late ? ` · late (over ${interval} s)` : ""));
    const traces = [{
      type: "bar", name: interval === null ? "batch duration" : "on time", x, y: bs.map((b) => b.duration_s), hovertext: text, hoverinfo: "text",
      marker: { color: bs.map((b) => (interval === null ? UNKNOWN : b.late ? LATE : ON_TIME)) },
    }];
    if (interval !== null) {
      traces.push({ type: "bar", name: "late", x: [null], y: [null], marker: { color: LATE }, hoverinfo: "skip" }); // legend entry
      traces.push({ type: "scatter", mode: "lines", name: `trigger interval ${interval} s (${q.trigger.source})`, x, y: bs.map(() => interval),
        line: { color: "#f0a500", width: 2, dash: "dash" }, hoverinfo: "skip" });
    }
    const layout = { ...BASE, barmode: "overlay", title: { text: "batch durations against the trigger interval", font: { size: 12 }, x: 0.01 },
      yaxis: { title: { text: "seconds" }, gridcolor: "#e8ebef", rangemode: "tozero" },
      xaxis: { type: "category", range: [-0.5, bs.length - 0.5] }, shapes: this._cursors(q, this.cursorAt).durations };
    await Plotly.react(el, traces, layout, CONFIG);
    el.dataset.late = String(bs.filter((b) => b.late).length);
    el.dataset.draws = String(+(el.dataset.draws || 0) + 1);
  }

  async watermark(Plotly, q, el) {
    const bs = q.batches.filter((b) => b.start !== null);
    const ms = (s) => (s === null ? null : s * 1000);
    const has = bs.some((b) => b.watermark !== null);
    const traces = [
      { type: "scatter", mode: "lines+markers", name: "event-time watermark", x: bs.map((b) => ms(b.start)), y: bs.map((b) => ms(b.watermark)),
        line: { shape: "hv", color: "#2e9e5b" }, connectgaps: false,
        hovertext: bs.map((b) => `batch ${b.batch}: watermark ${b.watermark === null ? "none" : new Date(b.watermark * 1000).toISOString().slice(11, 23)}` +
          (b.watermark !== null ? ` · ${(b.start - b.watermark).toFixed(1)} s behind` : "")), hoverinfo: "text" },
      { type: "scatter", mode: "lines", name: "processing time", x: bs.map((b) => ms(b.start)), y: bs.map((b) => ms(b.start)),
        line: { color: "#9aa5b1", dash: "dot", width: 1 }, hoverinfo: "skip" },
    ];
    // the batches' span, fixed: a cursor outside it is off the chart rather than stretching the axis as it moves
    const lo = bs.length ? ms(bs[0].start) : null, hi = bs.length ? ms(bs[bs.length - 1].start) : null;
    const pad = bs.length ? Math.max(1000, (hi - lo) * 0.03) : 0;
    const layout = { ...BASE, title: { text: "event-time watermark against processing time (batch starts)", font: { size: 12 }, x: 0.01 },
      xaxis: { type: "date", gridcolor: "#e8ebef", ...(bs.length ? { range: [lo - pad, hi + pad] } : {}) },
      yaxis: { type: "date", gridcolor: "#e8ebef" },
      shapes: this._cursors(q, this.cursorAt).watermark };
    if (!has) {
      layout.annotations = [{ text: "no event-time watermark in this query's progress (no withWatermark)", showarrow: false,
        xref: "paper", yref: "paper", x: 0.5, y: 0.5, font: { color: "#6b7686" } }];
    }
    await Plotly.react(el, traces, layout, CONFIG);
    el.dataset.watermarks = String(bs.filter((b) => b.watermark !== null).length);
    el.dataset.draws = String(+(el.dataset.draws || 0) + 1);
  }
}
