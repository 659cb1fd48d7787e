// The Streaming tab: per streaming query (GET .../streaming, computed by backend/streaming_progress.py), its
// micro-batches' durations against the trigger interval, late batches marked, and its event-time watermark against
// processing time. Spark's events do not state the interval: the server infers it from the trigger starts or takes
// the user's setting (the input here), and the view says which.

import * as api from "./api.js";
import { esc } from "./dom.js";

const LATE = "#c0392b", ON_TIME = "#4a90d9", UNKNOWN = "#8e9aaf";
const CONFIG = { displayModeBar: false, responsive: true };
const BASE = {
  margin: { l: 56, r: 20, t: 28, b: 36 }, height: 240, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "#fbfcfd",
  font: { size: 11, family: "system-ui, sans-serif", color: "#1f2733" }, showlegend: true,
  legend: { orientation: "h", x: 0, y: -0.25, font: { size: 10 } },
};

export class StreamingView {
  constructor(box, handlers, loadPlotly) {
    this.box = box;
    this.h = handlers;
    this.loadPlotly = loadPlotly;
    this.triggerS = null; // the user's trigger interval (seconds), or null: inferred
    this.sid = null;
  }

  async show(sid) {
    if (sid !== this.sid) { this.sid = sid; this.triggerS = null; }
    const data = await api.get(`/api/sessions/${sid}/streaming`, { trigger_s: this.triggerS });
    const key = JSON.stringify(data);
    if (key === this.shown && this.box.querySelector(".stream-query, p")) return; // nothing new: keep the input as typed
    this.shown = key;
    if (!data.queries.length) {
      this.box.innerHTML = `<p class="muted">No streaming query in this session (the charts need Structured Streaming progress events).</p>`;
      return;
    }
    let html = `<div class="stream-setting"><label>trigger interval <input id="trigger-s" type="number" min="0.001" step="any" size="6"
      placeholder="inferred" value="${this.triggerS ?? ""}"> s</label> <button id="trigger-apply">apply</button>
      <span class="muted">(applies to every query; empty: inferred from the trigger starts)</span></div>`;
    data.queries.forEach((q, i) => {
      const late = q.batches.filter((b) => b.late).length;
      const t = q.trigger;
      html += `<div class="stream-query" data-query="${esc(q.query)}">
        <div class="stream-head"><b>${esc(q.name)}</b> · ${q.batches.length} batches${t.interval_s !== null ? ` · <span class="late-count">${late} late</span>` : ""}
        · <span class="trigger-note" data-source="${esc(t.source)}">trigger interval ${t.interval_s !== null ? `${t.interval_s} s` : "unknown"}: ${esc(t.how)}</span></div>
        <div class="stream-charts"><div class="chart stream-durations" id="stream-durations-${i}"></div>
        <div class="chart stream-watermark" id="stream-watermark-${i}"></div></div></div>`;
    });
    this.box.innerHTML = html;
    this.box.querySelector("#trigger-apply").addEventListener("click", () => {
      const v = parseFloat(this.box.querySelector("#trigger-s").value);
      this.triggerS = Number.isFinite(v) && v > 0 ? v : null;
      this.show(sid).catch((e) => this.h.toast && this.h.toast(e.message));
    });
    const Plotly = await this.loadPlotly();
    for (let i = 0; i < data.queries.length; i++) {
      await this.durations(Plotly, data.queries[i], this.box.querySelector(`#stream-durations-${i}`));
      await this.watermark(Plotly, data.queries[i], this.box.querySelector(`#stream-watermark-${i}`));
    }
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
      yaxis: { title: { text: "seconds" }, gridcolor: "#e8ebef", rangemode: "tozero" }, xaxis: { type: "category" } };
    await Plotly.react(el, traces, layout, CONFIG);
    el.dataset.late = String(bs.filter((b) => b.late).length);
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
    const layout = { ...BASE, title: { text: "event-time watermark against processing time (batch starts)", font: { size: 12 }, x: 0.01 },
      xaxis: { type: "date", gridcolor: "#e8ebef" }, yaxis: { type: "date", gridcolor: "#e8ebef" } };
    if (!has) {
      layout.annotations = [{ text: "no event-time watermark in this query's progress (no withWatermark)", showarrow: false,
        xref: "paper", yref: "paper", x: 0.5, y: 0.5, font: { color: "#6b7686" } }];
    }
    await Plotly.react(el, traces, layout, CONFIG);
    el.dataset.watermarks = String(bs.filter((b) => b.watermark !== null).length);
  }
}
