// The words on a box (both graph views draw the same ones) and the hover text of an operator.
// Spark stage operators get labels that tell them apart: a DAG of four stages all named "collect at
// /a/long/path/job.py:79" would otherwise read the same clipped prefix four times. The label keeps the action and
// the call site's line (the file too, unless every stage of the scope shares it); the second line names the
// operators inside the stage (the RDD scopes Spark records, e.g. Exchange, AQEShuffleRead) that its look-alikes
// lack, or its stage id when nothing else differs. The full call site is in the hover text.

const LABEL_MAX = 21, SUB_MAX = 24;
// RDD scopes nearly every stage has: named only when nothing more telling is there
const GENERIC_OPS = /^(WholeStageCodegen|mapPartitions|map$|MapPartitions)/;

function clip(text, max) {
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

// A file name in at most `max` characters: whole, else without its extension, else its start.
function fitFile(file, max) {
  if (file.length <= max) return file;
  const stem = file.replace(/\.[A-Za-z]+$/, "");
  return stem.length <= max ? stem : stem.slice(0, Math.max(1, max - 1)) + "…";
}

// "collect at /home/me/jobs/job.py:79" -> {action: "collect", file: "job.py", line: "79", path: ...}; null when
// the stage name is not of that shape.
export function parseCallSite(stageName) {
  const m = /^(\S+) at (.+):(\d+)$/.exec(stageName || "");
  if (!m) return null;
  const file = m[2].split(/[\\/]/).pop();
  return { action: m[1], path: m[2], file, line: m[3] };
}

// "action · site" in LABEL_MAX characters, the site (its line) always kept whole: a long action loses its end.
function siteLabel(action, site) {
  const full = `${action} · ${site}`;
  return full.length <= LABEL_MAX ? full : `${clip(action, LABEL_MAX - site.length - 1)} ${site}`;
}

function isStage(n) {
  return n.kind === "operator" && n.attrs && Array.isArray(n.attrs.stage_ids);
}

// A stage the Spark model named by its call site (streaming stages are named by their operators instead: their
// call site is Spark's own "start at NativeMethodAccessorImpl.java:0"). The model cuts a long name at 80
// characters; attrs.stage_name keeps it whole.
function namedByCallSite(n) {
  const full = n.attrs && n.attrs.stage_name;
  return isStage(n) && !!n.name && typeof full === "string" && full.startsWith(n.name) && parseCallSite(full) !== null;
}

function opsOf(n) {
  return Array.isArray(n.attrs.scopes) ? n.attrs.scopes.map(String) : [];
}

function telling(ops) {
  const t = ops.filter((o) => !GENERIC_OPS.test(o));
  return t.length ? t : ops;
}

function plainText(n) {
  const label = n.kind === "enter" ? "▶ scope inputs" : n.kind === "leave" ? "scope outputs ▶" : n.name || `#${n.id}`;
  let sub = "";
  if (n.kind === "operator") sub = `#${n.id}` + (n.attrs && n.attrs.kind ? ` · ${n.attrs.kind}` : "");
  else if (n.kind === "scope") sub = `scope #${n.id} · ${n.contains} ops`;
  return { label: clip(label, LABEL_MAX), sub: clip(sub, SUB_MAX) };
}

// Map box -> {label, sub} for every node of a layout (the stage operators' texts depend on their siblings).
export function boxTexts(layout) {
  const out = new Map();
  const stages = [];
  for (const n of layout.nodes) {
    if (namedByCallSite(n)) stages.push(n);
    else out.set(n.box, plainText(n));
  }
  const files = new Set(stages.map((n) => parseCallSite(n.attrs.stage_name).path));
  const groups = new Map(); // same label: the look-alikes
  for (const n of stages) {
    const c = parseCallSite(n.attrs.stage_name);
    const site = files.size > 1 ? `${fitFile(c.file, Math.max(7, LABEL_MAX - c.action.length - 4 - c.line.length))}:${c.line}` : `line ${c.line}`;
    const label = siteLabel(c.action, site);
    if (!groups.has(label)) groups.set(label, []);
    groups.get(label).push(n);
    out.set(n.box, { label, sub: "" });
  }
  for (const group of groups.values()) {
    const common = group.length > 1 ? group.map((n) => new Set(opsOf(n))).reduce((a, b) => new Set([...a].filter((x) => b.has(x)))) : new Set();
    const words = group.map((n) => telling(opsOf(n).filter((o) => !common.has(o))).join(", "));
    group.forEach((n, i) => {
      let w = words[i];
      const twin = words.some((x, j) => j !== i && x === w);
      if (twin || !w) w = `stage ${n.attrs.stage_ids.join(",")}` + (w ? ` · ${w}` : "");
      out.get(n.box).sub = clip(`#${n.id} · ${w}`, SUB_MAX);
    });
  }
  return out;
}

// The hover text of an operator: its full name and, for a Spark stage, the full call site, the stage ids, the
// operators inside it and its tasks. [[key, value]] pairs, values plain text.
export function boxDetails(n) {
  const rows = [];
  const a = n.attrs || {};
  if (isStage(n)) {
    if (a.stage_name) rows.push(["call site", a.stage_name]);
    if (a.callsite && a.callsite !== a.stage_name) rows.push(["in Spark", a.callsite]);
    rows.push([a.stage_ids.length > 1 ? "stages" : "stage", a.stage_ids.join(", ")]);
    if (opsOf(n).length) rows.push(["operators", opsOf(n).join(", ")]);
    if (a.tasks !== undefined && a.tasks !== null) rows.push(["tasks", String(a.tasks)]);
  } else if (n.kind === "scope") {
    rows.push(["contains", `${n.contains} operators`]);
  }
  return rows;
}
