// The camera both graph views look through (svg.js's SVG, canvas.js's canvas): where the layout's world is on
// the element (translate x, y; scale s), fitted to the element, zoomed about a point, panned by dragging, centred
// on a box; and the level of detail a scale shows. One camera, so both renderers frame a scope alike.

export const FAR = 0.45; // below this scale: no labels, no badges
export const VERY_FAR = 0.16; // below this scale: operators are coloured blocks, no ports

const MOVED = 3; // pixels a press travels before it is a pan, not a click

export class Camera {
  // el: the element drawn on; onChange(): called after every change of the view; minScale: how far out it zooms
  constructor(el, onChange, minScale) {
    this.el = el;
    this.onChange = onChange;
    this.minScale = minScale;
    this.x = 0;
    this.y = 0;
    this.s = 1;
    this.press = null; // a press of the main button: {x, y, vx, vy, moved}
    el.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = el.getBoundingClientRect();
      this.zoom(Math.exp(-ev.deltaY * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });
  }

  // The whole layout in view, centred (never closer than 1.25), with room for the channels' gutters.
  fit(layout) {
    const r = this.el.getBoundingClientRect();
    const pad = 40;
    const w = Math.max(1, layout.width + 60), h = Math.max(1, layout.height + 40);
    const s = Math.min(1.25, (r.width - 2 * pad) / w, (r.height - 2 * pad) / h);
    this._set(s, (r.width - s * w) / 2, Math.max(pad, (r.height - s * h) / 2));
  }

  // A box of the layout in the middle of the element, at a readable scale.
  focus(node) {
    const r = this.el.getBoundingClientRect();
    const s = Math.max(this.s, 0.9);
    this._set(s, r.width / 2 - s * (node.x + node.w / 2), r.height / 2 - s * (node.y + node.h / 2));
  }

  // Scale by `factor` about (cx, cy) in the element (its middle by default), which stays where it is.
  zoom(factor, cx, cy) {
    if (cx === undefined) {
      const r = this.el.getBoundingClientRect();
      cx = r.width / 2;
      cy = r.height / 2;
    }
    const s = Math.min(4, Math.max(this.minScale, this.s * factor));
    const k = s / this.s;
    this._set(s, cx - k * (cx - this.x), cy - k * (cy - this.y));
  }

  // A point of the world under a pointer event, and a point of the world on the page (client coordinates).
  toWorld(ev) {
    const r = this.el.getBoundingClientRect();
    return [(ev.clientX - r.left - this.x) / this.s, (ev.clientY - r.top - this.y) / this.s];
  }

  toClient(wx, wy) {
    const r = this.el.getBoundingClientRect();
    return { x: r.left + this.x + this.s * wx, y: r.top + this.y + this.s * wy };
  }

  // Dragging pans. The view's pointer handlers call these: grab on a press that may pan, drag on every move
  // (true while the press pans, when the move is the camera's and not a hover), release on the button's release
  // ("pan" after a drag, "click" after a press that did not move, null with no press).
  grab(ev) {
    if (ev.button !== 0) return;
    this.press = { x: ev.clientX, y: ev.clientY, vx: this.x, vy: this.y, moved: false };
    this.el.setPointerCapture(ev.pointerId);
  }

  drag(ev) {
    const p = this.press;
    if (!p) return false;
    const dx = ev.clientX - p.x, dy = ev.clientY - p.y;
    if (!p.moved && Math.abs(dx) + Math.abs(dy) <= MOVED) return false;
    p.moved = true;
    this.el.classList.add("panning");
    this._set(this.s, p.vx + dx, p.vy + dy);
    return true;
  }

  release() {
    const p = this.press;
    this.press = null;
    this.el.classList.remove("panning");
    return p ? (p.moved ? "pan" : "click") : null;
  }

  _set(s, x, y) {
    this.s = s;
    this.x = x;
    this.y = y;
    this.onChange();
  }
}
