// The graph view for large scopes, drawn on one canvas. SVG keeps one element per port and stops being fluid at
// a few thousand operators; here the layout becomes flat arrays once, channels are drawn into an offscreen layer
// only when the view moves, and a stream update repaints only the boxes whose ports changed (clipped to their
// area), in the animation frame it arrives in. Level of detail: far out, operators are blocks coloured by where
// the chosen time is; closer, boxes with ports; close in, labels and badges too.
// Same interface as GraphView (svg.js), so the rest of the page does not know which view draws.
// Where the boxes are is canvas_grid.js's spatial grid, how a box is painted canvas_paint.js's.

import { status, RANK } from "../times.js";
import { edgePath } from "./svg.js";
import { boxTexts } from "./labels.js";
import { findingBadgeText } from "./finding_badges.js";
import { Camera, FAR, VERY_FAR } from "./camera.js";
import { BoxGrid, region } from "./canvas_grid.js";
import { cssPalette, findingRect, paintBoxes } from "./canvas_paint.js";

const FULL_REDRAW_OVER = 1500; // more changed boxes than this in one frame: repaint everything
const EDGES_LATER_FROM = 1000; // boxes in a scope from which channels are built after the first picture

export class CanvasGraphView {
  constructor(canvas, handlers) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.h = handlers;
    this.base = document.createElement("canvas"); // channels, drawn when the view or the highlight changes
    this.view = new Camera(canvas, () => this._viewChanged(), 0.005);
    this.colors = null; // cssPalette(), read at each render
    this.layout = null;
    this.ports = new Map(); // key -> {box, kind, x, y, status, badgeValue}
    this.boxes = new Map(); // box -> {node, inputs, outputs, status, sel, match, hl, diff}
    this.grid = null; // BoxGrid of the boxes, built when first needed (hit tests, partial repaints, zoom)
    this.edges = []; // {key: "from>to", d: svg path, feedback}
    this.time = null;
    this.selectedPort = null;
    this.hl = null; // {ports: Set, boxes: Set, edges: Set of "from>to"} while an explain path is shown
    this.dirty = new Set(); // boxes to repaint at the next draw
    this.fullPending = true; // repaint everything at the next draw
    this.baseStale = true; // the channel layer must be drawn again
    this.frameQueued = false;
    this.edgesPending = null; // builds the channels of a large scope after its first picture
    this.structure = 0; // counts render() calls: a deferred channel build for an older layout is dropped
    this.draws = { full: 0, partial: 0 }; // for tests and benchmarks
    this._bindEvents();
    new ResizeObserver(() => { if (this.layout) this._repaint(); }).observe(canvas); // the backing store follows
  }

  // --- structure ---------------------------------------------------------------------------------------------

  render(layout) {
    const t0 = performance.now();
    const timing = (this.timing = {}); // ms, for benchmarks
    this.colors = cssPalette(this.canvas);
    this.layout = layout;
    this.ports.clear();
    this.boxes.clear();
    this.grid = null;
    this.hl = null;
    this.selectedPort = null;
    const gap = layout.port_gap;
    const texts = boxTexts(layout);
    for (const n of layout.nodes) {
      const b = { node: n, inputs: [], outputs: [], status: "none", sel: false, match: false, diff: null, text: texts.get(n.box), finding: null };
      for (let i = 0; i < n.inputs; i++) {
        const key = `in,${n.id},${i}`;
        const y = n.y + n.h / 2 + (i - (n.inputs - 1) / 2) * gap;
        this.ports.set(key, { box: n.box, kind: "in", x: n.x, y, band: n.band, status: "none", badgeValue: 0 });
        b.inputs.push(key);
      }
      for (let o = 0; o < n.outputs; o++) {
        const key = `out,${n.id},${o}`;
        const y = n.y + n.h / 2 + (o - (n.outputs - 1) / 2) * gap;
        this.ports.set(key, { box: n.box, kind: "out", x: n.x + n.w, y, band: n.band, status: "none", badgeValue: 0 });
        b.outputs.push(key);
      }
      this.boxes.set(n.box, b);
    }
    timing.boxes = performance.now() - t0;
    // Channels: at once for a small scope; for a large one after the first picture with state (far out they are
    // hairlines under the blocks, and the boxes' colours are what the first look needs).
    this.edges = [];
    this.plainPath = this.feedbackPath = this.headPath = null;
    const version = ++this.structure;
    const build = () => {
      if (version !== this.structure) return;
      this._buildEdges(layout);
      this.baseStale = true;
      this._repaint();
    };
    this.edgesPending = null;
    if (layout.nodes.length > EDGES_LATER_FROM) {
      this.edgesPending = build;
      setTimeout(() => this._buildPendingEdges(), 1500); // a scope with no state yet still gets its channels
    } else build();
    this.canvas.dataset.operators = String(layout.nodes.filter((n) => n.kind === "operator" || n.kind === "scope").length);
    this.fit();
    timing.total = performance.now() - t0;
  }

  _buildEdges(layout) {
    const t0 = performance.now();
    const plain = [], feedback = [], heads = [];
    const at = (key) => { const p = this.ports.get(key); return p && [p.x, p.y, p.box, p.band]; };
    for (const e of layout.edges) {
      const a = at(e.from.join(",")), t = at(e.to.join(","));
      if (!a || !t) continue;
      const d = edgePath(a, t, e.via, layout);
      this.edges.push({ key: e.from.join(",") + ">" + e.to.join(","), d, feedback: e.feedback });
      (e.feedback ? feedback : plain).push(d);
      heads.push(`M${t[0] - 13},${t[1] - 3.5} L${t[0] - 6},${t[1]} L${t[0] - 13},${t[1] + 3.5} Z`);
    }
    this.plainPath = new Path2D(plain.join(" "));
    this.feedbackPath = new Path2D(feedback.join(" "));
    this.headPath = new Path2D(heads.join(" "));
    this.timing.edges = performance.now() - t0;
    this.timing.edgesAt = performance.now();
  }

  // --- state -------------------------------------------------------------------------------------------------

  // rows: Map key -> [kind, node, port, frontier, pointstamps, implications]; keys: which changed (all if null).
  // Only the ports in `keys` are looked at; their boxes are repainted in this frame.
  apply(rows, time, keys = null) {
    const timeChanged = JSON.stringify(time) !== JSON.stringify(this.time);
    this.time = time;
    const all = !keys || timeChanged;
    const touched = new Set();
    for (const key of all ? this.ports.keys() : keys) {
      const p = this.ports.get(key);
      if (!p) continue;
      const row = rows.get(key);
      const st = row ? status(row[3], time) : "none";
      let total = 0;
      if (row) for (const pc of row[4]) total += pc[1];
      if (st !== p.status || total !== p.badgeValue) {
        p.status = st;
        p.badgeValue = total;
        touched.add(p.box);
      }
    }
    for (const box of touched) this._boxStatus(this.boxes.get(box));
    if (all) this.fullPending = true;
    else for (const box of touched) this.dirty.add(box);
    this.draw();
    // The channels of a large scope: once this first picture with state is on screen (two frames on: the frame
    // that shows it is painted first), not in a task that would hold that frame back.
    if (this.edgesPending && rows.size) requestAnimationFrame(() => requestAnimationFrame(() => this._buildPendingEdges()));
  }

  _buildPendingEdges() {
    const build = this.edgesPending;
    this.edgesPending = null;
    if (build) build();
  }

  _boxStatus(b) {
    const keys = b.inputs.length ? b.inputs : b.outputs;
    let worst = "none";
    for (const k of keys) {
      const st = this.ports.get(k).status;
      if (RANK[st] > RANK[worst]) worst = st;
    }
    b.status = worst;
  }

  // --- selection, highlight, search, diff --------------------------------------------------------------------

  selectPort(key) {
    for (const b of this.boxes.values()) b.sel = false;
    this.selectedPort = key && this.ports.has(key) ? key : null;
    this._repaint();
  }

  selectBox(box) {
    this.selectedPort = null;
    for (const b of this.boxes.values()) b.sel = false;
    const b = box && this.boxes.get(String(box));
    if (b) b.sel = true;
    this._repaint();
  }

  // paths: lists of port keys, holder first
  highlight(paths) {
    this.hl = null;
    if (paths && paths.length) {
      const hl = { ports: new Set(), boxes: new Set(), edges: new Set() };
      for (const path of paths) {
        for (let i = 0; i < path.length; i++) {
          const p = this.ports.get(path[i]);
          if (p) { hl.ports.add(path[i]); hl.boxes.add(p.box); }
          if (i + 1 < path.length) {
            const k = path[i] + ">" + path[i + 1];
            if (this.edges.some((e) => e.key === k)) hl.edges.add(k);
          }
        }
      }
      this.hl = hl;
    }
    this.baseStale = true;
    this._repaint();
  }

  clearHighlight() {
    if (!this.hl) return;
    this.hl = null;
    this.baseStale = true;
    this._repaint();
  }

  markMatches(boxes) {
    for (const b of this.boxes.values()) b.match = boxes.has(b.node.box);
    this._repaint();
  }

  // marks: Map box -> "stuck" | "advanced" | "appeared" (diff.js), or null to clear
  markDiff(marks) {
    for (const b of this.boxes.values()) b.diff = marks ? marks.get(b.node.box) || null : null;
    this._repaint();
  }

  // findings: Map box -> [finding marks] (finding_badges.js), or null to clear: a badge at each box's top right.
  markFindings(findings) {
    for (const b of this.boxes.values()) {
      const list = findings ? findings.get(b.node.box) : null;
      b.finding = list && list.length ? { text: findingBadgeText(list), straggler: list.some((f) => f.finding === "straggler") } : null;
    }
    this._repaint();
  }

  findingOf(box) {
    const b = this.boxes.get(String(box));
    return b && b.finding ? b.finding.text : null;
  }

  // Where a box's finding badge is on the page (client coordinates), for clicking it.
  screenOfFinding(box) {
    const b = this.boxes.get(String(box));
    const r = b && findingRect(b);
    return r ? this.view.toClient(r[0] + r[2] / 2, r[1] + r[3] / 2) : null;
  }

  // --- reading the picture (tests, benchmarks) ---------------------------------------------------------------

  // Where a port or a box is on the page (client coordinates), for clicking it.
  screenOf(keyOrBox) {
    const p = this.ports.get(keyOrBox);
    if (p) return this.view.toClient(p.x, p.y);
    const b = this.boxes.get(String(keyOrBox));
    if (!b) return null;
    const n = b.node;
    return this.view.toClient(n.x + n.w / 2, n.y + n.h / 2);
  }

  statusOf(key) {
    const p = this.ports.get(key);
    return p ? p.status : null;
  }

  badgeOf(key) {
    const p = this.ports.get(key);
    return p ? p.badgeValue : null;
  }

  highlighted() {
    return this.hl ? { ports: [...this.hl.ports], boxes: [...this.hl.boxes], edges: [...this.hl.edges] } : null;
  }

  boxFlags(box) {
    const b = this.boxes.get(String(box));
    return b ? { status: b.status, sel: b.sel, match: b.match, diff: b.diff, hl: !!(this.hl && this.hl.boxes.has(b.node.box)) } : null;
  }

  // --- drawing -----------------------------------------------------------------------------------------------

  _repaint() {
    this.fullPending = true;
    this._requestDraw();
  }

  _requestDraw() {
    if (this.frameQueued) return;
    this.frameQueued = true;
    requestAnimationFrame(() => { this.frameQueued = false; this.draw(); });
  }

  _resize() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(this.canvas.clientWidth * dpr)), h = Math.max(1, Math.round(this.canvas.clientHeight * dpr));
    if (this.canvas.width !== w || this.canvas.height !== h) {
      this.canvas.width = this.base.width = w;
      this.canvas.height = this.base.height = h;
      this.baseStale = true;
      this.fullPending = true;
    }
    return dpr;
  }

  _world(ctx, dpr) {
    const { x, y, s } = this.view;
    ctx.setTransform(dpr * s, 0, 0, dpr * s, dpr * x, dpr * y);
  }

  draw() {
    if (!this.layout) return;
    const dpr = this._resize();
    if (this.baseStale) this._drawBase(dpr);
    if (!this.fullPending && this.dirty.size > FULL_REDRAW_OVER) this.fullPending = true;
    const ctx = this.ctx;
    if (this.fullPending) {
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
      ctx.drawImage(this.base, 0, 0);
      this._world(ctx, dpr);
      this._drawBoxes(this._visible());
      this.draws.full++;
    } else if (this.dirty.size) {
      // Only the changed boxes' regions: clear them, put the channels back, repaint every box reaching into them.
      const rects = [];
      for (const box of this.dirty) rects.push(region(this.boxes.get(box).node));
      ctx.save();
      this._world(ctx, dpr);
      ctx.beginPath();
      for (const [x0, y0, x1, y1] of rects) ctx.rect(x0, y0, x1 - x0, y1 - y0);
      ctx.clip();
      for (const [x0, y0, x1, y1] of rects) ctx.clearRect(x0, y0, x1 - x0, y1 - y0);
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.drawImage(this.base, 0, 0);
      this._world(ctx, dpr);
      const seen = new Set();
      for (const r of rects) for (const b of this._inRect(r)) seen.add(b);
      this._drawBoxes([...seen]);
      ctx.restore();
      this.draws.partial++;
    }
    this.fullPending = false;
    this.dirty.clear();
  }

  _drawBase(dpr) {
    const ctx = this.base.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.base.width, this.base.height);
    this._world(ctx, dpr);
    const s = this.view.s;
    ctx.lineWidth = 1.3;
    ctx.globalAlpha = this.hl ? 0.25 : 1;
    this.baseStale = false;
    if (!this.plainPath) return;
    ctx.strokeStyle = this.colors.edge;
    ctx.stroke(this.plainPath);
    ctx.setLineDash([5, 4]);
    ctx.strokeStyle = this.colors.feedback;
    ctx.stroke(this.feedbackPath);
    ctx.setLineDash([]);
    if (s >= FAR) { ctx.fillStyle = this.colors.edge; ctx.fill(this.headPath); }
    ctx.globalAlpha = 1;
    if (this.hl) {
      ctx.strokeStyle = this.colors.hl;
      ctx.lineWidth = 3;
      for (const e of this.edges) if (this.hl.edges.has(e.key)) ctx.stroke(new Path2D(e.d));
    }
    this.baseStale = false;
  }

  // the boxes whose regions meet the visible part of the world (all of them, without a look at the grid, when
  // the whole scope is in view: the first picture of a large scope, fitted to the window)
  _visible() {
    const { x, y, s } = this.view;
    const w = this.canvas.clientWidth, h = this.canvas.clientHeight;
    const r = [-x / s, -y / s, (w - x) / s, (h - y) / s];
    const all = region({ x: 0, y: 0, w: this.layout.width, h: this.layout.height });
    if (r[0] <= all[0] && r[1] <= all[1] && r[2] >= all[2] && r[3] >= all[3]) {
      return [...this.boxes.values()];
    }
    return this._inRect(r);
  }

  // The spatial grid: each box in the cells its region meets. Not needed for the first picture of a fitted
  // scope (every box is drawn), so it is built at the first hit test, partial repaint or view of a part.
  _inRect(r) {
    if (!this.grid) this.grid = new BoxGrid(this.boxes.values());
    return this.grid.inRect(r);
  }

  _drawBoxes(list) {
    paintBoxes(this.ctx, list, { s: this.view.s, colors: this.colors, ports: this.ports, hl: this.hl, selectedPort: this.selectedPort });
  }

  // --- view: fit, zoom, pan, focus -----------------------------------------------------------------------------

  fit() {
    if (this.layout) this.view.fit(this.layout);
  }

  focusBox(box) {
    const b = this.boxes.get(String(box));
    if (b) this.view.focus(b.node);
  }

  zoom(factor, cx, cy) {
    this.view.zoom(factor, cx, cy);
  }

  _viewChanged() {
    this.baseStale = true;
    this._repaint();
  }

  // --- hit tests and events ------------------------------------------------------------------------------------

  // {port} | {box, open} | null under a point of the world
  _hit(wx, wy) {
    const reach = Math.max(7, 4 / this.view.s);
    let best = null;
    for (const b of this._inRect([wx - reach, wy - reach, wx + reach, wy + reach])) {
      if (this.view.s >= VERY_FAR) {
        for (const keys of [b.inputs, b.outputs]) {
          for (const key of keys) {
            const p = this.ports.get(key);
            if (Math.hypot(p.x - wx, p.y - wy) <= reach) return { port: key };
          }
        }
      }
      const n = b.node;
      const f = this.view.s >= FAR ? findingRect(b) : null;
      if (f && wx >= f[0] && wx <= f[0] + f[2] && wy >= f[1] && wy <= f[1] + f[3]) return { box: b, finding: true };
      if (wx >= n.x && wx <= n.x + n.w && wy >= n.y && wy <= n.y + n.h) {
        const ty = n.y + Math.min(31, n.h - 6);
        const open = n.kind === "scope" && wx >= n.x + n.w - 50 && wy >= ty - 13 && wy <= ty + 4;
        best = { box: b, open };
      }
    }
    return best;
  }

  _bindEvents() {
    const c = this.canvas;
    c.addEventListener("pointerdown", (ev) => this.view.grab(ev));
    c.addEventListener("pointermove", (ev) => {
      if (this.view.drag(ev)) return;
      const hit = this._hit(...this.view.toWorld(ev));
      c.style.cursor = hit ? "pointer" : "";
      this.h.onHover && this.h.onHover(hit && hit.port ? hit.port : null, ev, hit && hit.box ? hit.box.node : null);
    });
    c.addEventListener("pointerup", (ev) => {
      if (this.view.release() === "pan" || ev.button !== 0) return;
      const hit = this._hit(...this.view.toWorld(ev));
      if (!hit) this.h.onBackground && this.h.onBackground();
      else if (hit.port) this.h.onPort && this.h.onPort(hit.port);
      else if (hit.finding) this.h.onFinding && this.h.onFinding(hit.box.node);
      else if (hit.open && hit.box.node.scope) this.h.onOpen && this.h.onOpen(hit.box.node.scope);
      else this.h.onBox && this.h.onBox(hit.box.node);
    });
    c.addEventListener("pointerleave", () => this.h.onHover && this.h.onHover(null));
    c.addEventListener("dblclick", (ev) => {
      const hit = this._hit(...this.view.toWorld(ev));
      if (hit && hit.box && hit.box.node.scope) this.h.onOpen && this.h.onOpen(hit.box.node.scope);
    });
  }
}
