// The graph view of one scope: boxes (operators, folded nested scopes, the scope's boundary) with their ports,
// channels between them, port colours by frontier relative to the chosen time, badges for messages in flight
// (inputs) and capabilities held (outputs). The layout comes from the server; this module only draws it and
// keeps the colours and badges current. The first render builds the SVG as one string (fast for 10k boxes);
// updates touch only the ports that changed.

import { esc } from "../dom.js";
import { status, RANK } from "../times.js";
import { boxTexts } from "./labels.js";
import { findingBadgeText } from "./finding_badges.js";
import { Camera, FAR, VERY_FAR } from "./camera.js";

const SVGNS = "http://www.w3.org/2000/svg";

export class GraphView {
  constructor(svg, handlers) {
    this.svg = svg;
    this.viewport = svg.querySelector("#viewport");
    this.gEdges = svg.querySelector("#edges");
    this.gNodes = svg.querySelector("#nodes");
    this.h = handlers;
    this.view = new Camera(svg, () => this._applyView(), 0.02);
    this.layout = null;
    this.ports = new Map(); // key -> {el, box, kind, x, y, status, badge, badgeValue}
    this.boxes = new Map(); // box -> {el, node, inputs:[keys], outputs:[keys], status}
    this.edgeIndex = new Map(); // "from>to" -> element
    this.state = new Map();
    this.time = null;
    this.highlighted = [];
    this._bindEvents();
  }

  // --- drawing -------------------------------------------------------------------------------------------

  render(layout) {
    const t0 = performance.now();
    const timing = (this.timing = {});
    this.layout = layout;
    this.ports.clear();
    this.boxes.clear();
    this.edgeIndex.clear();
    this.highlighted = [];
    this.svg.classList.remove("dimmed");
    const gap = layout.port_gap;
    const nodeParts = [];
    const portPos = new Map();
    const texts = boxTexts(layout);
    for (const n of layout.nodes) {
      const box = n.box;
      const ins = [], outs = [];
      const cls = `node ${n.kind}`;
      let s = `<g class="${cls}" data-box="${esc(box)}" transform="translate(${n.x},${n.y})">`;
      s += `<rect class="box" width="${n.w}" height="${n.h}"></rect>`;
      if (n.kind === "scope") s += `<rect class="inner" x="3" y="3" width="${n.w - 6}" height="${n.h - 6}"></rect>`;
      const { label, sub } = texts.get(box);
      s += `<text x="10" y="${Math.min(17, n.h / 2 - 1)}">${esc(label)}</text>`;
      if (sub) s += `<text class="sub" x="10" y="${Math.min(31, n.h - 6)}">${esc(sub)}</text>`;
      if (n.kind === "scope") s += `<text class="open" x="${n.w - 48}" y="${Math.min(31, n.h - 6)}" data-open="1">open ▸</text>`;
      for (let i = 0; i < n.inputs; i++) {
        const key = `in,${n.id},${i}`;
        const py = n.h / 2 + (i - (n.inputs - 1) / 2) * gap;
        s += `<circle class="port st-none" data-port="${key}" cx="0" cy="${py}"></circle>`;
        portPos.set(key, [n.x, n.y + py, box, n.band]);
        ins.push(key);
      }
      for (let o = 0; o < n.outputs; o++) {
        const key = `out,${n.id},${o}`;
        const py = n.h / 2 + (o - (n.outputs - 1) / 2) * gap;
        s += `<circle class="port st-none" data-port="${key}" cx="${n.w}" cy="${py}"></circle>`;
        portPos.set(key, [n.x + n.w, n.y + py, box, n.band]);
        outs.push(key);
      }
      s += "</g>";
      nodeParts.push(s);
      this.boxes.set(box, { node: n, inputs: ins, outputs: outs, status: "none", el: null });
    }
    const edgeParts = [];
    layout.edges.forEach((e, i) => {
      const a = portPos.get(e.from.join(",")), b = portPos.get(e.to.join(","));
      if (!a || !b) return;
      edgeParts.push(`<path class="edge${e.feedback ? " feedback" : ""}" data-e="${i}" d="${edgePath(a, b, e.via, layout)}"></path>`);
    });
    timing.strings = performance.now() - t0;
    this.fit(); // before the new elements are in: reading the SVG's size then costs no layout of them
    this.gEdges.innerHTML = edgeParts.join("");
    this.gNodes.innerHTML = nodeParts.join("");
    timing.dom = performance.now() - t0;
    for (const el of this.gNodes.children) {
      const b = this.boxes.get(el.dataset.box);
      b.el = el;
    }
    for (const c of this.gNodes.querySelectorAll("circle.port")) {
      const key = c.dataset.port;
      const [x, y, box] = portPos.get(key);
      this.ports.set(key, { el: c, box, x, y, status: "none", badge: null, badgeValue: 0, kind: key[0] === "i" ? "in" : "out" });
    }
    for (const el of this.gEdges.children) {
      const e = layout.edges[+el.dataset.e];
      this.edgeIndex.set(e.from.join(",") + ">" + e.to.join(","), el);
    }
    this.svg.dataset.operators = String(layout.nodes.filter((n) => n.kind === "operator" || n.kind === "scope").length);
    timing.total = performance.now() - t0;
  }

  // --- state ---------------------------------------------------------------------------------------------

  // rows: Map key -> [kind, node, port, frontier, pointstamps, implications]; keys: which changed (all if null)
  apply(rows, time, keys = null) {
    this.state = rows;
    const timeChanged = !sameTime(time, this.time);
    this.time = time;
    const touchedBoxes = new Set();
    const iter = keys && !timeChanged ? keys : this.ports.keys();
    for (const key of iter) {
      const p = this.ports.get(key);
      if (!p) continue;
      const row = rows.get(key);
      const st = row ? status(row[3], time) : "none";
      if (st !== p.status) {
        p.status = st;
        p.el.setAttribute("class", `port st-${st}${p.sel ? " sel" : ""}${p.hl ? " hl" : ""}`);
        touchedBoxes.add(p.box);
      }
      let total = 0;
      if (row) for (const pc of row[4]) total += pc[1];
      if (total !== p.badgeValue) this._badge(p, total);
    }
    for (const box of touchedBoxes) this._boxStatus(box);
  }

  _boxStatus(box) {
    const b = this.boxes.get(box);
    if (!b) return;
    const keys = b.inputs.length ? b.inputs : b.outputs;
    let worst = "none";
    for (const k of keys) {
      const st = this.ports.get(k).status;
      if (RANK[st] > RANK[worst]) worst = st;
    }
    if (worst !== b.status) {
      b.el.classList.remove(`st-${b.status}`);
      b.status = worst;
      b.el.classList.add(`st-${worst}`);
    }
  }

  _badge(p, value) {
    p.badgeValue = value;
    if (!p.badge) {
      if (!value) return;
      const g = document.createElementNS(SVGNS, "g");
      g.setAttribute("class", `badge ${p.kind === "in" ? "msg" : "cap"}`);
      const r = document.createElementNS(SVGNS, "rect");
      const t = document.createElementNS(SVGNS, "text");
      r.setAttribute("height", "14");
      t.setAttribute("y", "10.5");
      g.append(r, t);
      g.dataset.badge = p.el.dataset.port;
      p.el.parentNode.appendChild(g);
      p.badge = g;
    }
    const g = p.badge;
    if (!value) { g.style.display = "none"; return; }
    g.style.display = "";
    const text = String(value);
    const w = 8 + 6.2 * text.length;
    const cx = +p.el.getAttribute("cx"), cy = +p.el.getAttribute("cy");
    const x = p.kind === "in" ? cx - 9 - w : cx + 9;
    g.setAttribute("transform", `translate(${x},${cy - 17})`);
    g.firstChild.setAttribute("width", String(w));
    g.lastChild.setAttribute("x", String(w / 2));
    g.lastChild.textContent = text;
    g.classList.toggle("neg", value < 0);
  }

  // --- selection, highlighting, search ---------------------------------------------------------------------

  selectPort(key) {
    for (const p of this.ports.values()) if (p.sel) { p.sel = false; p.el.classList.remove("sel"); }
    for (const b of this.boxes.values()) b.el.classList.remove("sel");
    const p = key && this.ports.get(key);
    if (p) { p.sel = true; p.el.classList.add("sel"); }
  }

  selectBox(box) {
    this.selectPort(null);
    const b = box && this.boxes.get(String(box));
    if (b) b.el.classList.add("sel");
  }

  // paths: lists of port keys, holder first
  highlight(paths) {
    this.clearHighlight();
    if (!paths || !paths.length) return;
    this.svg.classList.add("dimmed");
    const mark = (el) => { el.classList.add("hl"); this.highlighted.push(el); };
    for (const path of paths) {
      for (let i = 0; i < path.length; i++) {
        const p = this.ports.get(path[i]);
        if (p) { p.hl = true; mark(p.el); mark(this.boxes.get(p.box).el); }
        if (i + 1 < path.length) {
          const e = this.edgeIndex.get(path[i] + ">" + path[i + 1]);
          if (e) mark(e);
        }
      }
    }
  }

  clearHighlight() {
    for (const el of this.highlighted) el.classList.remove("hl");
    for (const p of this.ports.values()) p.hl = false;
    this.highlighted = [];
    this.svg.classList.remove("dimmed");
  }

  markMatches(boxes) {
    for (const b of this.boxes.values()) b.el.classList.toggle("match", boxes.has(b.node.box));
  }

  // marks: Map box -> "stuck" | "advanced" | "appeared" (diff.js), or null to clear
  markDiff(marks) {
    for (const b of this.boxes.values()) {
      const m = marks ? marks.get(b.node.box) : null;
      for (const k of ["stuck", "advanced", "appeared"]) b.el.classList.toggle(`diff-${k}`, m === k);
    }
  }

  // findings: Map box -> [finding marks] (finding_badges.js), or null to clear. A badge at the box's top right.
  markFindings(findings) {
    for (const el of this.gNodes.querySelectorAll("g.finding-badge")) el.remove();
    if (!findings) return;
    for (const [box, list] of findings) {
      const b = this.boxes.get(box);
      if (!b) continue;
      const text = findingBadgeText(list);
      const w = 10 + 6.2 * text.length;
      const g = document.createElementNS(SVGNS, "g");
      g.setAttribute("class", `finding-badge ${list.some((f) => f.finding === "straggler") ? "straggler" : "skew"}`);
      g.setAttribute("transform", `translate(${b.node.w - w - 6},-8)`);
      g.dataset.findingBox = box;
      g.innerHTML = `<rect width="${w}" height="15" rx="7"></rect><text x="${w / 2}" y="11">${esc(text)}</text>`;
      b.el.appendChild(g);
    }
  }

  // --- view: fit, zoom, pan, focus ---------------------------------------------------------------------

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

  _applyView() {
    const { x, y, s } = this.view;
    this.viewport.setAttribute("transform", `translate(${x},${y}) scale(${s})`);
    // Level of detail: far out, labels and badges are unreadable (hidden); further out, ports are sub-pixel
    // and the boxes' colours (the wave of where time t is) carry the picture.
    this.svg.classList.toggle("far", s < FAR);
    this.svg.classList.toggle("very-far", s < VERY_FAR);
  }

  _bindEvents() {
    const svg = this.svg;
    svg.addEventListener("pointerdown", (ev) => {
      if (!ev.target.closest(".node")) this.view.grab(ev); // a press on a box is a click on it
    });
    svg.addEventListener("pointermove", (ev) => {
      if (this.view.drag(ev)) return;
      const port = ev.target.closest && ev.target.closest("circle.port");
      const node = !port && ev.target.closest && ev.target.closest(".node");
      const b = node ? this.boxes.get(node.dataset.box) : null;
      this.h.onHover && this.h.onHover(port ? port.dataset.port : null, ev, b ? b.node : null);
    });
    svg.addEventListener("pointerup", () => {
      if (this.view.release() === "click") this.h.onBackground && this.h.onBackground();
    });
    svg.addEventListener("pointerleave", () => this.h.onHover && this.h.onHover(null));
    svg.addEventListener("click", (ev) => {
      const port = ev.target.closest("circle.port");
      if (port) { this.h.onPort && this.h.onPort(port.dataset.port); return; }
      const badge = ev.target.closest("g.finding-badge");
      if (badge) { this.h.onFinding && this.h.onFinding(this.boxes.get(badge.dataset.findingBox).node); return; }
      const node = ev.target.closest(".node");
      if (!node) return;
      const b = this.boxes.get(node.dataset.box);
      if (ev.target.dataset && ev.target.dataset.open && b.node.scope) { this.h.onOpen && this.h.onOpen(b.node.scope); return; }
      this.h.onBox && this.h.onBox(b.node);
    });
    svg.addEventListener("dblclick", (ev) => {
      const node = ev.target.closest(".node");
      if (!node) return;
      const b = this.boxes.get(node.dataset.box);
      if (b && b.node.scope) this.h.onOpen && this.h.onOpen(b.node.scope);
    });
  }
}

function sameTime(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

// A channel from an output (x1, y1) to an input (x2, y2), through the virtual boxes of the layers it crosses
// (`via`: the left end of each, a straight run of one box width there), with horizontal tangents at every port.
// A channel going backwards runs in a gutter: below its band (a feedback channel), or in the gap above the
// target's band (a pipeline wrapped from the end of one band to the start of the next).
export function edgePath(a, b, via, layout) {
  const boxW = layout.node_width;
  let d = `M${a[0]},${a[1]}`;
  let cur = a;
  for (const [vx, vy] of via || []) {
    d += " " + segment(cur, [vx, vy], null);
    d += ` L${vx + boxW},${vy}`;
    cur = [vx + boxW, vy];
  }
  let gutter = null;
  const bands = layout.band_y || [];
  if (b[0] - 6 <= cur[0] + 4 && bands.length) {
    const ba = a[3], bb = b[3];
    if (bb > ba && bands[bb]) gutter = bands[bb][0] - layout.band_gap / 2;
    else if (bands[Math.max(ba, bb)]) gutter = bands[Math.max(ba, bb)][1] + 22;
  }
  return d + " " + segment(cur, [b[0] - 6, b[1]], gutter);
}

function segment([x1, y1], [x2, y2], gutter) {
  if (x2 > x1 + 4) {
    const dx = Math.max(24, (x2 - x1) / 2);
    return `C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`;
  }
  const g = gutter ?? Math.max(y1, y2) + 46;
  const r1 = Math.min(60, Math.abs(g - y1)), r2 = Math.min(60, Math.abs(g - y2));
  return `C${x1 + r1},${y1} ${x1 + r1},${g} ${x1},${g} L${x2},${g} C${x2 - r2},${g} ${x2 - r2},${y2} ${x2},${y2}`;
}
