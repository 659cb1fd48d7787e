// The two helpers every view module uses to write HTML: a query shorthand, and the one escaping function for
// text placed into markup (names and times come from logs, which anyone may have written).

export const $ = (sel) => document.querySelector(sel);

const ENTITIES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

export function esc(s) {
  return String(s).replace(/[&<>"]/g, (c) => ENTITIES[c]);
}
