// Which moment is on screen: the live head (followed through the stream) or a batch in the past (fetched over
// REST by batch number or by wall time).

import * as api from "./api.js";
import { S, ui } from "./state.js";
import { toast } from "./toast.js";
import { setHash } from "./routing.js";
import { scheduleRender } from "./frames.js";
import { openScope } from "./workspace.js";
import { selectPort, explain } from "./selection.js";

export async function seek(batch, playing = false) {
  if (!S.sid) return;
  const { timeline } = ui;
  if (!playing) timeline.pause();
  timeline.batch = batch; // the target: a second step before this answer arrives steps from here
  const seq = ++S.seekSeq;
  try {
    const st = await api.get(`/api/sessions/${S.sid}/state`, { scope: api.scopeParam(S.scope), batch });
    if (seq !== S.seekSeq) return;
    applyHistory(st);
  } catch (e) { toast(e.message); }
}

function applyHistory(st) {
  const rows = new Map();
  for (const r of st.ports) rows.set(`${r[0]},${r[1]},${r[2]}`, r);
  const live = st.batch >= st.head && S.info && S.info.status !== "done" && S.info.live;
  S.mode = "history";
  S.historyRows = rows;
  S.batch = st.batch;
  S.lastAt = st.at;
  S.pendingFull = true;
  setHash();
  if (S.selected && S.selected.type === "port") ui.graph.clearHighlight();
  scheduleRender();
  if (live) goLive();
}

// Wall time as typed: seconds since the first batch ("12.5", "+3s") or a clock time ("HH:MM:SS.mmm", UTC).
export function parseWallTime(text, firstAt) {
  const s = String(text).trim();
  const m = s.match(/^(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)$/);
  if (m) {
    const d = new Date(firstAt * 1000);
    d.setUTCHours(+m[1], +m[2], 0, 0);
    return d.getTime() / 1000 + parseFloat(m[3]);
  }
  if (/^\+?-?\d+(\.\d+)?s?$/.test(s)) return firstAt + parseFloat(s.replace(/[+s]/g, ""));
  return null;
}

export async function seekTime(text) {
  if (!String(text).trim() || !S.info || !S.info.first_at) return;
  const at = parseWallTime(text, S.info.first_at);
  if (at === null) {
    toast("seek by wall time: seconds since the first batch (12.5) or a clock time (HH:MM:SS.mmm)");
    return;
  }
  try {
    const st = await api.get(`/api/sessions/${S.sid}/state`, { scope: api.scopeParam(S.scope), at });
    applyHistory(st);
  } catch (e) { toast(e.message); }
}

export function goLive() {
  S.mode = "live";
  S.historyRows = null;
  S.rows = S.stream.rows;
  S.batch = S.stream.batch ?? S.batch;
  S.pendingFull = true;
  setHash();
  scheduleRender();
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
