// The address bar: reading #/s/ID?scope=3,1&batch=20&port=out,4,0 and writing what is on screen back into it. A
// leaf module (state and api only), so every module that moves the page can keep the address current without
// importing the modules that react to it (routing.js does). A post-mortem (api.bundle) has one session, and
// takes the short deep link #batch=20&port=out,4,0&scope=3,1 too.

import { S } from "../state.js";
import { bundle } from "../api.js";

// The route in the address, or null for the landing page: {sid, scope, batch (null: live), port (or null)}.
export function parseHash() {
  let m = location.hash.match(/^#\/s\/([^?]+)(?:\?(.*))?$/);
  if (!m && bundle && /^#(batch|port|scope)=/.test(location.hash)) m = [null, bundle.sid, location.hash.slice(1)];
  if (!m) return null;
  const q = new URLSearchParams(m[2] || "");
  const scope = (q.get("scope") || "").split(",").filter((x) => x !== "").map(Number);
  return { sid: m[1], scope, batch: q.has("batch") ? +q.get("batch") : null, port: q.get("port") };
}

// Writes the scope, the moment (in history) and the selected port into the address, without a history entry.
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
