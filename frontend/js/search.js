// Search: operators of this scope whose names match are marked on the graph at once; the server's answer lists
// matches in every scope, and picking one opens its scope and selects it.

import * as api from "./api.js";
import { $, esc } from "./dom.js";
import { S, ui } from "./state.js";

// moves: {openScope(path), selectBox(node)}, from bindSearch
async function search(moves) {
  const q = $("#search").value.trim().toLowerCase();
  const hitsBox = $("#search-hits");
  if (!q || !S.layout) {
    S.matches = null;
    ui.graph.markMatches(new Set());
    hitsBox.hidden = true;
    return;
  }
  const local = new Set(S.layout.nodes.filter((n) => n.name.toLowerCase().includes(q)).map((n) => n.box));
  S.matches = local;
  ui.graph.markMatches(local);
  let hits = [];
  try { hits = await api.get(`/api/sessions/${S.sid}/search`, { q, limit: 50 }); } catch (e) { return; }
  hitsBox.innerHTML = hits.length ? hits.map((h, i) => `<div data-i="${i}">${esc(h.name)} <span class="where">#${h.node} in ${h.scope.length ? esc(h.scope_name || "scope " + h.scope.join(".")) : "root"}</span></div>`).join("")
    : `<div class="muted">no operator matches</div>`;
  hitsBox.hidden = false;
  for (const d of hitsBox.querySelectorAll("div[data-i]")) {
    d.addEventListener("click", async () => {
      const h = hits[+d.dataset.i];
      hitsBox.hidden = true;
      if (String(h.scope) !== String(S.scope)) await moves.openScope(h.scope);
      ui.graph.focusBox(String(h.node));
      const node = S.layout.nodes.find((n) => n.box === String(h.node));
      if (node) moves.selectBox(node);
    });
  }
}

// Called once by start(), with the moves a picked match makes: {openScope(path), selectBox(node)}.
export function bindSearch(moves) {
  let timer = null;
  $("#search").addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => search(moves), 150);
  });
  $("#search").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      const first = $("#search-hits div");
      if (first) first.click();
    } else if (ev.key === "Escape") {
      $("#search").value = "";
      search(moves);
    }
  });
  document.addEventListener("click", (ev) => { if (!ev.target.closest("#search-box")) $("#search-hits").hidden = true; });
}
