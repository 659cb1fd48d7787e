// Navigation, in one place: the route the address names (#/ lists the sessions, #/s/ID?scope=3,1&batch=20 shows
// one scope of a session, at a batch in the past; &port=out,4,0 selects and explains a port), and every move that
// takes the page to another scope and moment at once: a finding, a blame segment, a hold followed into another
// scope. The modules below it (workspace, moments, selection) never import this one; page.js hands these
// functions to the components as handlers.

import * as api from "../api.js";
import { S } from "../state.js";
import { toast } from "../toast.js";
import { parseHash } from "./address.js";
import { showLanding } from "./landing.js";
import { closeSession, openSession, openScope } from "../workspace.js";
import { seek } from "../timeline/moments.js";
import { selectPort, explain } from "../selection.js";

export async function route() {
  const r = parseHash();
  if (!r) {
    closeSession();
    return showLanding();
  }
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

export async function gotoFinding(scope, batch, port) {
  if (String(scope) !== String(S.scope)) {
    // the other scope opens at the moment itself, not first at the one on screen (where it may not exist yet)
    S.mode = "history";
    S.batch = batch;
    await openScope(scope);
  } else await seek(batch);
  if (port) selectPort(port);
}

// The view of `scope` at wall time `at`, explaining `port` for time `t` there: a blame segment's middle, a
// straggler just before its end.
async function openAt(scope, at, port, t) {
  const st = await api.get(`/api/sessions/${S.sid}/state`, { scope: api.scopeParam(scope), at });
  await gotoFinding(scope, st.batch, port);
  if (port) await explain(port, t);
}

// A finding: a straggler is shown just before its end, while it still held its stage's time (its siblings mostly
// done), explaining the stage's output there; any other finding at its own batch. The wall time and the port mirror
// backend/views/projections.py finding_opens_at and finding_port, by which flowscope bundle stores that moment.
export async function openFinding(f) {
  const port = f.node !== undefined && f.node !== null ? `out,${f.node},0` : null;
  try {
    if (f.finding === "straggler" && typeof f.ended_at === "number") await openAt(f.scope || [], f.ended_at - 0.001, port, f.time);
    else await gotoFinding(f.scope || [], f.after, port);
  } catch (e) { toast(e.message); }
}

// A blame segment: the view at the middle of it, explaining the holder's port for the blamed time.
export async function openBlameSegment(t, seg) {
  try {
    await openAt(t.scope, (seg.from + seg.to) / 2, seg.holder.port ? seg.holder.port.join(",") : null, t.time);
  } catch (e) { toast(e.message); }
}

// The side panel's "followed hold": the holder's scope opened, its port selected and explained.
export async function followHold(next) {
  await openScope(next.scope);
  const key = next.port.join(",");
  selectPort(key);
  await explain(key, null);
}
