// The Marks tab: the session's marks (a finished job, a micro-batch, ...) at their batches; a click seeks there,
// and a mark that says a time completed in its scope opens that time in the Blame tab.

import * as api from "../api.js";
import { esc } from "../dom.js";
import { duration } from "../times.js";

// The time a mark says completed in its scope (the server's `completes`: a finished job, a micro-batch), which
// the Blame tab splits; null for any other mark.
function blamedTime(m) {
  return Array.isArray(m.scope) && m.completes !== undefined && m.completes !== null ? m.completes : null;
}

export class MarksView {
  // handlers: seek(batch), blame(scope, time) (the Blame tab, opened on that time)
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers;
  }

  async show(sid, info) {
    const data = await api.get(`/api/sessions/${sid}/marks`, { limit: 2000 });
    const box = this.root;
    const t0 = info && info.first_at ? info.first_at : 0;
    box.innerHTML = data.total ? data.marks.map((m, i) =>
      `<div class="list-row" data-i="${i}"><span class="b">batch ${m.after}</span><span class="muted">${m.at ? "+" + duration(m.at - t0) : ""}</span><span>${esc(m.label)}</span>${blamedTime(m) !== null ? `<button class="mark-blame" title="where this time's seconds went">blame</button>` : ""}</div>`).join("")
      : `<p class="muted">No marks in this session.</p>`;
    for (const r of box.querySelectorAll(".list-row")) r.addEventListener("click", () => this.h.seek(data.marks[+r.dataset.i].after));
    for (const b of box.querySelectorAll(".mark-blame")) {
      b.addEventListener("click", (ev) => {
        ev.stopPropagation();
        const m = data.marks[+b.closest(".list-row").dataset.i];
        this.h.blame(m.scope, blamedTime(m));
      });
    }
  }
}
