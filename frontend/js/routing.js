// Routes: #/ lists the sessions, #/s/ID?scope=3,1&batch=20 shows one scope of a session (at a batch in the past);
// &port=out,4,0 selects and explains a port (and a port selected is written there, with the moment). A post-mortem
// (api.bundle) has one session, and takes the short deep link #batch=20&port=out,4,0&scope=3,1 too.

import { S } from "./state.js";
import { showLanding } from "./landing.js";
import { openSession, openScope } from "./workspace.js";
import { seek } from "./moments.js";
import { selectPort, explain } from "./selection.js";
import { bundle } from "./api.js";

export function parseHash() {
  let m = location.hash.match(/^#\/s\/([^?]+)(?:\?(.*))?$/);
  if (!m && bundle && /^#(batch|port|scope)=/.test(location.hash)) m = [null, bundle.sid, location.hash.slice(1)];
  if (!m) return null;
  const q = new URLSearchParams(m[2] || "");
  const scope = (q.get("scope") || "").split(",").filter((x) => x !== "").map(Number);
  return { sid: m[1], scope, batch: q.has("batch") ? +q.get("batch") : null, port: q.get("port") };
}

export function setHash() {
  const q = new URLSearchParams();
  if (S.scope.length) q.set("scope", S.scope.join(","));
  if (S.mode === "history") q.set("batch", S.batch);
  // the selected port too: the address bar is a link to what is on screen, explanation included
  if (S.selected && S.selected.type === "port") q.set("port", S.selected.key);
  const qs = q.toString().replace(/%2C/g, ","); // 3,1 and in,4,0 as people write them
  const h = `#/s/${S.sid}` + (qs ? "?" + qs : "");
  if (location.hash !== h) history.replaceState(null, "", h);
}

export async function route() {
  const r = parseHash();
  if (!r) return showLanding();
  if (r.sid !== S.sid) await openSession(r.sid, r.scope, r.batch);
  else {
    if (r.batch !== null) { S.mode = "history"; S.batch = r.batch; }
    if (String(r.scope) !== String(S.scope)) await openScope(r.scope);
    else if (r.batch !== null && r.batch !== S.batch) await seek(r.batch);
  }
  if (r.port && S.sid) {
    if (r.batch !== null) await seek(r.batch); // the moment's rows are on screen before the port is shown
    selectPort(r.port);
    await explain(r.port, null);
  }
}
