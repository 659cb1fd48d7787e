// The Errors tab: the log's corrupt lines and rejected batches, each with its line and the reason.

import * as api from "../api.js";
import { esc } from "../dom.js";

export class ErrorsView {
  constructor(root) {
    this.root = root;
  }

  async show(sid) {
    const data = await api.get(`/api/sessions/${sid}/errors`, { limit: 500 });
    this.root.innerHTML = data.total ? data.errors.map((e) =>
      `<div class="list-row"><span class="b">line ${e.line}</span><span>${esc(e.reason)}</span></div>`).join("")
      : `<p class="muted">No corrupt lines or rejected batches.</p>`;
  }
}
