// Times as the tracker has them: integers, or nested two-element arrays (product times, componentwise order).
// The browser never recomputes progress; it only compares the frontiers it is sent with a chosen time.

export function le(a, b) {
  if (typeof a === "number") return typeof b === "number" ? a <= b : false;
  if (!Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!le(a[i], b[i])) return false;
  return true;
}

export function eq(a, b) {
  if (typeof a === "number") return a === b;
  if (!Array.isArray(b) || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!eq(a[i], b[i])) return false;
  return true;
}

// Lexicographic order: a linear extension of the partial order, for sorting and for "the least time".
export function cmp(a, b) {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "number") return -1;
  if (typeof b === "number") return 1;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = cmp(a[i], b[i]);
    if (c) return c;
  }
  return a.length - b.length;
}

export function fmt(t) {
  if (t === null || t === undefined) return "–";
  return typeof t === "number" ? String(t) : "(" + t.map(fmt).join(", ") + ")";
}

export function fmtFrontier(f) {
  if (!f || !f.length) return "∅ (complete)";
  return "{" + f.map(fmt).join(", ") + "}";
}

export function fmtCounts(pairs) {
  if (!pairs || !pairs.length) return "–";
  return pairs.map(([t, c]) => `${fmt(t)}${c >= 0 ? "×" : "×"}${c}`).join("  ");
}

export function parseTime(text) {
  const s = String(text).trim();
  if (!s || s === "auto") return null;
  const j = JSON.parse(s.replace(/\(/g, "[").replace(/\)/g, "]"));
  const ok = (v) => (typeof v === "number" && Number.isInteger(v)) || (Array.isArray(v) && v.length === 2 && v.every(ok));
  if (!ok(j)) throw new Error(`${s} is not a time (an integer, or [outer, inner])`);
  return j;
}

// Where the time t is at a port with frontier f:
//   done    nothing can arrive any more
//   behind  a time strictly before t can still arrive (t is not reached yet, and not even the next)
//   at      t itself is in the frontier: the port holds t
//   passed  t can no longer arrive
export function status(frontier, t) {
  if (!frontier) return "none";
  if (!frontier.length) return "done";
  if (t === null || t === undefined) return "at";
  let at = false;
  for (const f of frontier) {
    if (le(f, t)) {
      if (eq(f, t)) at = true;
      else return "behind";
    }
  }
  return at ? "at" : "passed";
}

export const RANK = { none: 0, done: 1, passed: 2, at: 3, behind: 4 };

export function duration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return "–";
  const s = Math.abs(seconds);
  if (s < 60) return `${seconds.toFixed(s < 10 ? 3 : 2)}s`;
  const m = Math.floor(s / 60), r = s - 60 * m;
  return `${seconds < 0 ? "-" : ""}${m}m${r.toFixed(1)}s`;
}

export function clock(at) {
  if (at === null || at === undefined) return "–";
  const d = new Date(at * 1000);
  return d.toISOString().substring(11, 23);
}
