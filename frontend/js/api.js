// Thin fetch wrappers: JSON in and out, errors as exceptions carrying the server's `detail`.
// Bundle mode (a post-mortem made by `flowscope bundle`, window.__FLOWSCOPE_BUNDLE__ set): no server; GETs are
// answered from the answers stored when the bundle was made (backend/export/bundle.py), a seek by the nearest stored
// moment, and the stream by the stored head state. Nothing is computed here either.

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

async function check(res) {
  if (res.ok) return res.status === 204 ? null : res.json();
  let detail = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body && body.detail) detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
  } catch (e) { /* not JSON */ }
  throw new ApiError(res.status, detail);
}

export const bundle = typeof window !== "undefined" && window.__FLOWSCOPE_BUNDLE__ ? window.__FLOWSCOPE_BUNDLE__ : null;

// The stored answer's key; must match answer_key in backend/export/bundle.py.
export function answerKey(path, params) {
  const pairs = Object.keys(params).filter((k) => params[k] !== undefined && params[k] !== null).sort()
    .map((k) => [k, String(params[k])]);
  return path + "\n" + JSON.stringify(pairs);
}

// The stored moment a seek lands on: by batch the nearest one, by wall time the last one at or before it.
export function bundleMoment(batch, at) {
  const ms = bundle.moments;
  if (at !== undefined && at !== null) {
    let pick = ms[0];
    for (const m of ms) if (m[1] !== null && m[1] <= +at) pick = m;
    return pick[0];
  }
  let best = ms[0];
  for (const m of ms) if (Math.abs(m[0] - batch) < Math.abs(best[0] - batch)) best = m;
  return best[0];
}

// Whether the moment a seek landed on is the one asked for: by batch, that batch; by wall time, the moment whose
// batches answer that time (from its own time until the next batch's, stored as the moment's third element).
export function bundleExact(k, batch, at) {
  if (at === undefined || at === null) return k === batch;
  const m = bundle.moments.find((x) => x[0] === k);
  return (m[1] === null || m[1] <= +at) && (m[2] === null || m[2] === undefined || +at < m[2]);
}

let noteShown = null;
function note(text) {
  if (noteShown === text) return;
  noteShown = text;
  const el = document.getElementById("toast");
  if (el) { el.textContent = text; el.hidden = false; setTimeout(() => { el.hidden = true; }, 4000); }
}

// A scope answered only within its lifetime (backend/export/bundle.py): from the first stored moment at which nothing has
// changed it since and no port has a frontier, its state and explanations are those of the head.
function settledBy(scope, batch) {
  const from = bundle.settled ? bundle.settled[scope ?? ""] : undefined;
  return from !== undefined && from <= batch;
}

function atMoment(answer, batch) {
  const out = { ...answer, batch };
  if ("at" in answer) out.at = bundle.moments.find((m) => m[0] === batch)[1];
  return out;
}

function bundleGet(path, params) {
  const answers = bundle.answers;
  const p = { ...params };
  let hit = answers[answerKey(path, p)];
  if (hit === undefined && (p.batch !== undefined || p.at !== undefined)) {
    const at = p.at;
    const want = at !== undefined && at !== null ? null : +p.batch;
    const k = bundleMoment(want, at);
    delete p.at;
    if (k >= bundle.head) delete p.batch; else p.batch = k;
    hit = answers[answerKey(path, p)];
    if (hit === undefined && p.batch !== undefined && settledBy(p.scope, k)) {
      // the scope had settled by then: its answer is the head's, told for this moment (as the server would)
      delete p.batch;
      hit = answers[answerKey(path, p)];
      if (hit !== undefined) hit = atMoment(hit, k);
    }
    if (hit !== undefined && !bundleExact(k, want, at)) note(`post-mortem: batch ${want ?? "at that time"} is not stored; showing batch ${k}, the nearest stored moment`);
  }
  if (hit === undefined && p.nodes !== undefined) { delete p.nodes; hit = answers[answerKey(path, p)]; }
  if (hit === undefined && p.time !== undefined) {
    // an explanation stored for the least time in the frontier answers a question about that same time
    const t = p.time;
    delete p.time;
    hit = answers[answerKey(path, p)];
    let asked = null;
    try { asked = JSON.stringify(JSON.parse(t)); } catch (e) { /* not JSON: the server would refuse it too */ }
    if (hit !== undefined && JSON.stringify(hit.time) !== asked) hit = undefined;
  }
  if (hit === undefined) throw new ApiError(404, `not stored in this post-mortem: ${path.split("/").pop()} with ${JSON.stringify(params)}`);
  return JSON.parse(JSON.stringify(hit));
}

// The stream's first message in bundle mode: the stored head state of a scope.
export function bundleSnapshot(scope) {
  const s = bundle.heads[scope.join(",")];
  return s ? JSON.parse(JSON.stringify(s)) : { type: "error", detail: `scope ${scope} is not stored in this post-mortem` };
}

export async function get(path, params = {}) {
  if (bundle) return bundleGet(path, params);
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) q.set(k, v);
  const qs = q.toString();
  return check(await fetch(path + (qs ? "?" + qs : ""), { credentials: "same-origin" }));
}

export async function post(path, body) {
  if (bundle) throw new ApiError(405, "a post-mortem is read-only");
  return check(await fetch(path, {
    method: "POST", credentials: "same-origin",
    headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  }));
}

export async function upload(file) {
  const q = new URLSearchParams({ filename: file.name });
  return check(await fetch("/api/sessions/upload?" + q, {
    method: "POST", credentials: "same-origin",
    headers: { "content-type": "application/octet-stream" }, body: file,
  }));
}

export async function del(path) {
  return check(await fetch(path, { method: "DELETE", credentials: "same-origin" }));
}

export const scopeParam = (path) => path.join(",");

// A scope's laid-out graph. It is fetched column by column (a third of the bytes of a list of objects: see
// layout_columns in backend/views/graph_layout.py) and rebuilt here into the objects every view uses. The page's first
// one was asked for by index.html before the modules loaded (window.__flowscopeFirstGraph): taken once, if it is
// this one.
export async function graph(sid, scope) {
  const params = { scope: scopeParam(scope), compact: 1 };
  const path = `/api/sessions/${sid}/graph`;
  const first = typeof window !== "undefined" ? window.__flowscopeFirstGraph : null;
  let g;
  if (!bundle && first && first.url === `${path}?${new URLSearchParams(params)}`) {
    window.__flowscopeFirstGraph = null;
    const res = await first.answer;
    g = res ? await check(res) : null;
  }
  if (!g) g = await get(path, params);
  performance.mark("fs:graph-received");
  return expandGraph(g);
}

export function expandGraph(g) {
  if (!g.columns) return g;
  const c = g.nodes;
  const nodes = new Array(c.id.length);
  for (let i = 0; i < nodes.length; i++) {
    nodes[i] = { id: c.id[i], box: String(c.id[i]), kind: c.kind[i], name: c.name[i], inputs: c.inputs[i],
      outputs: c.outputs[i], x: c.x[i], y: c.y[i], w: c.w[i], h: c.h[i], layer: c.layer[i], band: c.band[i],
      attrs: {} };
  }
  for (const [i, box] of c.box) nodes[i].box = box;
  for (const [i, attrs] of c.attrs) nodes[i].attrs = attrs;
  for (const [i, scope, contains] of c.scope) { nodes[i].scope = scope; nodes[i].contains = contains; }
  const e = g.edges;
  const edges = new Array(e.from.length / 2);
  for (let i = 0; i < edges.length; i++) {
    edges[i] = { from: ["out", e.from[2 * i], e.from[2 * i + 1]], to: ["in", e.to[2 * i], e.to[2 * i + 1]],
      feedback: false };
  }
  for (const i of e.feedback) edges[i].feedback = true;
  for (const [i, via] of e.via) edges[i].via = via;
  const out = { ...g, nodes, edges };
  delete out.columns;
  return out;
}
