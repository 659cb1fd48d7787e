// Which moment is on screen: the live head (followed through the live socket) or a batch in the past (fetched over
// REST by batch number or by wall time). Moves to another scope as well as another moment are routing.js's.

import * as api from "../api.js";
import { S, ui } from "../state.js";
import { toast } from "../toast.js";
import { setHash } from "../navigation/address.js";
import { scheduleRender } from "./frames.js";

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
  S.rows = S.socket.rows;
  S.batch = S.socket.batch ?? S.batch;
  S.pendingFull = true;
  setHash();
  scheduleRender();
}
