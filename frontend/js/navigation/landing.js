// The landing page: the sessions the server holds, and the forms to open a log by path or upload one; a server that
// follows an event-log directory shows its applications table instead of the sessions list (applications.js).
// Opening a session is a change of the address (routing.js follows it); the session on screen is closed before this
// shows.

import * as api from "../api.js";
import { $, esc } from "../dom.js";
import { toast } from "../toast.js";
import { showApplications } from "./applications.js";

export async function showLanding() {
  $("#workspace").hidden = true;
  $("#landing").hidden = false;
  $("#top-right").hidden = true;
  $("#crumbs").innerHTML = "";
  $("#session-status").textContent = "";
  if (!api.bundle) {
    let health = {};
    try { health = await api.get("/api/health"); } catch (e) { /* the sessions list says it */ }
    if (health.applications) return showApplications();
  }
  $("#apps-card").hidden = true;
  $("#sessions-card").hidden = false;
  let sessions = [];
  try { sessions = await api.get("/api/sessions"); } catch (e) { toast(e.message); }
  const body = $("#session-table tbody");
  body.innerHTML = sessions.map((s) => `<tr class="clickable" data-sid="${esc(s.id)}">
      <td><b>${esc(s.name)}</b></td><td>${esc(s.kind)}${s.live ? " · live" : ""}</td>
      <td><span class="pill ${esc(s.status)}">${esc(s.status)}</span></td><td>${s.batches}</td><td>${s.operators}</td>
      <td><button data-del="${esc(s.id)}" title="stop and delete">✕</button></td></tr>`).join("");
  $("#no-sessions").hidden = sessions.length > 0;
  for (const tr of body.querySelectorAll("tr[data-sid]")) {
    tr.addEventListener("click", (ev) => {
      if (ev.target.dataset.del) return;
      location.hash = `#/s/${tr.dataset.sid}`;
    });
  }
  for (const b of body.querySelectorAll("button[data-del]")) {
    b.addEventListener("click", async () => { await api.del(`/api/sessions/${b.dataset.del}`); showLanding(); });
  }
}

function showOpenError(msg) {
  const el = $("#open-error");
  el.textContent = msg;
  el.hidden = false;
}

// Called once by start(): the open-by-path and upload forms.
export function bindLanding() {
  $("#open-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const s = await api.post("/api/sessions", { path: $("#open-path").value, follow: $("#open-follow").checked });
      location.hash = `#/s/${s.id}`;
    } catch (e) { showOpenError(e.message); }
  });
  $("#upload-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = $("#upload-file").files[0];
    if (!f) return showOpenError("choose a file first");
    try {
      const s = await api.upload(f);
      location.hash = `#/s/${s.id}`;
    } catch (e) { showOpenError(e.message); }
  });
}
