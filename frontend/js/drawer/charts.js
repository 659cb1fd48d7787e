// The Charts tab: each operator's frontier over wall time (a big scope charts a dozen: the pinned operators and
// the rest spread over the scope) and the counts in flight, with the timeline's moment drawn across both.

import * as api from "../api.js";
import { loadPlotly, LAYOUT, CONFIG } from "./plotly.js";

export class ChartsView {
  // handlers: pinned() (selected operators, search hits), operators() (the scope's), cursor() (the moment's time)
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers;
    this.shapes = null; // the cursor line at the moment's time, once the charts are drawn
  }

  async show(sid, scope, info) {
    const pinned = this.h.pinned ? this.h.pinned() : [];
    const params = { scope: api.scopeParam(scope) };
    const all = this.h.operators ? this.h.operators() : null;
    if (all && all.length > 12) {
      // a big scope: chart the pinned operators (selected, search hits) and spread the rest over the scope
      const pick = new Set(pinned.slice(0, 8));
      const step = Math.max(1, Math.floor(all.length / (12 - pick.size)));
      for (let i = 0; i < all.length && pick.size < 12; i += step) pick.add(all[i]);
      params.nodes = [...pick].join(",");
    }
    const data = await api.get(`/api/sessions/${sid}/series`, params);
    const Plotly = await loadPlotly();
    let ids = Object.keys(data.nodes);
    if (ids.length > 12) {
      const keep = new Set(pinned.map(String));
      ids = ids.filter((id) => keep.has(id)).concat(ids.filter((id) => !keep.has(id))).slice(0, 12);
    }
    const t0 = info && info.first_at ? info.first_at : 0;
    const traces = ids.map((id) => {
      const s = data.nodes[id];
      return { x: s.t.map((t) => t - t0), y: s.v, name: `${s.name} #${id}`, mode: "lines", line: { shape: "hv", width: pinned.includes(+id) ? 3 : 1.5 }, connectgaps: false };
    });
    this.shapes = () => {
      const at = this.h.cursor();
      return at ? [{ type: "line", x0: at - t0, x1: at - t0, yref: "paper", y0: 0, y1: 1, line: { color: "#3a6ff7", width: 1.5, dash: "dot" } }] : [];
    };
    const fl = { ...LAYOUT, title: { text: "frontier per operator (least time still possible)", font: { size: 12 }, x: 0.01 }, xaxis: { ...LAYOUT.xaxis, title: { text: "seconds", standoff: 2 } }, shapes: this.shapes() };
    if (!traces.length) {
      fl.annotations = [{ text: "no operator in this scope has reported progress yet (open a nested scope)", showarrow: false,
        xref: "paper", yref: "paper", x: 0.5, y: 0.5, font: { color: "#6b7686" } }];
    }
    await Plotly.react(this.root.querySelector("#chart-frontier"), traces, fl, CONFIG);
    const c = data.counts;
    const ct = [
      { x: c.t.map((t) => t - t0), y: c.messages, name: "messages in flight", mode: "lines", line: { shape: "hv", color: "#2f6fdf" }, fill: "tozeroy", fillcolor: "rgba(47,111,223,.12)" },
      { x: c.t.map((t) => t - t0), y: c.capabilities, name: "capabilities held", mode: "lines", line: { shape: "hv", color: "#8a4bd6" } },
    ];
    const cl = { ...LAYOUT, title: { text: "counts in flight in this scope", font: { size: 12 }, x: 0.01 }, xaxis: { ...LAYOUT.xaxis, title: { text: "seconds", standoff: 2 } }, shapes: this.shapes() };
    await Plotly.react(this.root.querySelector("#chart-counts"), ct, cl, CONFIG);
    this.root.querySelector("#chart-frontier").dataset.traces = String(traces.length);
  }

  // The moment moved: the cursor line moves across both charts, without drawing them again.
  moveCursor() {
    if (!window.Plotly || !this.shapes) return;
    for (const id of ["#chart-frontier", "#chart-counts"]) {
      const el = this.root.querySelector(id);
      if (el && el.data) window.Plotly.relayout(el, { shapes: this.shapes() });
    }
  }
}
