// How the canvas view paints its boxes: the palette it reads from the page's stylesheet, and a list of boxes drawn
// in layers (bodies batched by colour, outlines, ports batched by status, then words and badges), at the level of
// detail the camera's scale asks for. The channels under them are the view's own layer (canvas.js).

import { FAR, VERY_FAR } from "./camera.js";

const STATUSES = ["behind", "at", "passed", "done", "none"];

// The colours the SVG view's stylesheet gives each part (frontend/css/app.css's variables on :root), read from
// the page's CSS when a layout is drawn: one palette for both views.
export function cssPalette(el) {
  const css = getComputedStyle(el);
  const v = (name) => css.getPropertyValue(`--${name}`).trim();
  const byStatus = (suffix, none) => Object.fromEntries(STATUSES.map((st) => [st, st === "none" ? v(none) : v(st + suffix)]));
  return {
    ink: v("ink"), muted: v("muted"), accent: v("accent"), hl: v("hl"), match: v("match"), scope: v("scope-line"),
    box: v("box"), boxLine: v("box-line"), edge: v("edge"), feedback: v("feedback"), badgeText: v("badge-text"),
    strong: byStatus("", "box"), // a port's fill
    block: { ...byStatus("", "none-block"), done: v("done-block") }, // an operator's fill, far out
    bg: byStatus("-bg", "box"), // a box's fill
    stroke: { ...byStatus("-line", "box-line"), done: v("box-line") }, // a box's outline
    badge: { in: v("msg"), out: v("cap"), neg: v("behind") },
    diff: { stuck: v("behind"), advanced: v("passed"), appeared: v("accent") },
    finding: { straggler: v("straggler"), skew: v("skew") },
  };
}

// A box's finding badge's rectangle in the world, or null.
export function findingRect(b) {
  if (!b.finding) return null;
  const w = 10 + 6.2 * b.finding.text.length;
  return [b.node.x + b.node.w - w - 6, b.node.y - 8, w, 15];
}

// Paints the box entries of `list` on ctx, already in world coordinates, at scale s: the ports' entries (by key),
// the explain path's highlight and the selected port as the view holds them.
export function paintBoxes(ctx, list, { s, colors: c, ports, hl, selectedPort }) {
  // 1. box bodies, batched by colour (one fill per colour, whatever the number of boxes)
  const groups = new Map();
  for (const b of list) {
    const dim = hl && !hl.boxes.has(b.node.box);
    const k = b.status + (dim ? "/dim" : "");
    const g = groups.get(k);
    if (g) g.push(b); else groups.set(k, [b]);
  }
  for (const [k, bs] of groups) {
    const [st, dim] = k.split("/");
    ctx.globalAlpha = dim ? 0.35 : 1;
    ctx.beginPath();
    for (const { node: n } of bs) {
      if (s < VERY_FAR) ctx.rect(n.x, n.y, n.w, n.h);
      else ctx.roundRect(n.x, n.y, n.w, n.h, 7);
    }
    ctx.fillStyle = s < VERY_FAR ? c.block[st] : c.bg[st];
    ctx.fill();
    if (s >= VERY_FAR) { ctx.lineWidth = 1.2; ctx.strokeStyle = c.stroke[st]; ctx.stroke(); }
  }
  ctx.globalAlpha = 1;
  // 2. outlines: scopes, diff marks, search matches, the selection, the explain path
  for (const b of list) {
    const n = b.node;
    let color = null, width = 0;
    if (n.kind === "scope" && s >= VERY_FAR) { color = c.scope; width = 1.6; }
    if (b.diff) { color = c.diff[b.diff]; width = 3; }
    if (b.match) { color = c.match; width = 3; }
    if (b.sel) { color = c.accent; width = 2.5; }
    if (hl && hl.boxes.has(n.box)) { color = c.hl; width = 2.5; }
    if (!color) continue;
    ctx.lineWidth = s < VERY_FAR ? Math.max(width, 2 / s) : width;
    ctx.strokeStyle = color;
    ctx.beginPath();
    if (s < VERY_FAR) ctx.rect(n.x, n.y, n.w, n.h); else ctx.roundRect(n.x, n.y, n.w, n.h, 7);
    ctx.stroke();
  }
  if (s < VERY_FAR) return;
  // 3. ports, batched by status
  const byStatus = new Map();
  for (const b of list) {
    for (const keys of [b.inputs, b.outputs]) {
      for (const key of keys) {
        const p = ports.get(key);
        const g = byStatus.get(p.status);
        if (g) g.push(p); else byStatus.set(p.status, [p]);
      }
    }
  }
  ctx.lineWidth = 1.5;
  for (const [st, ps] of byStatus) {
    ctx.beginPath();
    for (const p of ps) { ctx.moveTo(p.x + 5, p.y); ctx.arc(p.x, p.y, 5, 0, 2 * Math.PI); }
    ctx.fillStyle = c.strong[st];
    ctx.fill();
    ctx.strokeStyle = st === "none" ? c.boxLine : c.box;
    ctx.stroke();
  }
  const ring = (key, color, width) => {
    const p = ports.get(key);
    if (!p) return;
    ctx.beginPath();
    ctx.arc(p.x, p.y, 5, 0, 2 * Math.PI);
    ctx.lineWidth = width;
    ctx.strokeStyle = color;
    ctx.stroke();
  };
  if (hl) for (const key of hl.ports) ring(key, c.hl, 3.5);
  if (selectedPort) ring(selectedPort, c.accent, 3);
  if (s < FAR) return;
  // 4. text and badges (close in only)
  ctx.textBaseline = "alphabetic";
  for (const b of list) {
    const n = b.node;
    ctx.textAlign = "left";
    ctx.font = "12px system-ui, sans-serif";
    ctx.fillStyle = c.ink;
    ctx.fillText(b.text.label, n.x + 10, n.y + Math.min(17, n.h / 2 - 1));
    if (b.text.sub) {
      ctx.font = "10px system-ui, sans-serif";
      ctx.fillStyle = c.muted;
      ctx.fillText(b.text.sub, n.x + 10, n.y + Math.min(31, n.h - 6));
    }
    if (n.kind === "scope") {
      ctx.font = "600 11px system-ui, sans-serif";
      ctx.fillStyle = c.accent;
      ctx.fillText("open ▸", n.x + n.w - 48, n.y + Math.min(31, n.h - 6));
    }
    for (const keys of [b.inputs, b.outputs]) {
      for (const key of keys) {
        const p = ports.get(key);
        if (p.badgeValue) badge(ctx, p, c);
      }
    }
    if (b.finding) findingBadge(ctx, b, c);
  }
}

function findingBadge(ctx, b, colors) {
  const [x, y, w, h] = findingRect(b);
  ctx.beginPath();
  ctx.roundRect(x, y, w, h, 7);
  ctx.fillStyle = b.finding.straggler ? colors.finding.straggler : colors.finding.skew;
  ctx.fill();
  ctx.font = "650 10px system-ui, sans-serif";
  ctx.textAlign = "center";
  ctx.fillStyle = colors.badgeText;
  ctx.fillText(b.finding.text, x + w / 2, y + 11);
}

function badge(ctx, p, colors) {
  const text = String(p.badgeValue);
  const w = 8 + 6.2 * text.length;
  const x = p.kind === "in" ? p.x - 9 - w : p.x + 9;
  const y = p.y - 17;
  ctx.beginPath();
  ctx.roundRect(x, y, w, 14, 7);
  ctx.fillStyle = p.badgeValue < 0 ? colors.badge.neg : colors.badge[p.kind];
  ctx.fill();
  ctx.font = "650 10px system-ui, sans-serif";
  ctx.textAlign = "center";
  ctx.fillStyle = colors.badgeText;
  ctx.fillText(text, x + w / 2, y + 10.5);
}
