// Routes: #/ lists the sessions, #/s/ID?scope=3,1&batch=20 shows one scope of a session (at a batch in the past).

import { S } from "./state.js";
import { showLanding } from "./landing.js";
import { openSession, openScope } from "./workspace.js";
import { seek } from "./moments.js";

export function parseHash() {
  const m = location.hash.match(/^#\/s\/([^?]+)(?:\?(.*))?$/);
  if (!m) return null;
  const q = new URLSearchParams(m[2] || "");
  const scope = (q.get("scope") || "").split(",").filter((x) => x !== "").map(Number);
  return { sid: m[1], scope, batch: q.has("batch") ? +q.get("batch") : null, port: q.get("port") };
}

export function setHash() {
  const q = new URLSearchParams();
  if (S.scope.length) q.set("scope", S.scope.join(","));
  if (S.mode === "history") q.set("batch", S.batch);
  const h = `#/s/${S.sid}` + (q.toString() ? "?" + q : "");
  if (location.hash !== h) history.replaceState(null, "", h);
}

export async function route() {
  const r = parseHash();
  if (!r) return showLanding();
  if (r.sid !== S.sid) return openSession(r.sid, r.scope, r.batch);
  if (r.batch !== null) { S.mode = "history"; S.batch = r.batch; }
  if (String(r.scope) !== String(S.scope)) await openScope(r.scope);
  else if (r.batch !== null && r.batch !== S.batch) await seek(r.batch);
}
