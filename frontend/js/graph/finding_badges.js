// Skew and straggler findings on the graph: the Spark model reports them as marks (`finding`: "straggler" or
// "skew", with the stage operator's `node`, see backend/spark/tasks.py); GET .../marks passes their details on.
// Here they are grouped by the box they concern, for the badges both graph views draw, and described for the
// side panel when a badge is clicked. The findings are the server's; only their words on a badge are chosen here.

import { esc } from "../dom.js";

// Map box -> [finding marks] for the scope on screen: a stage's own findings on its box, and the findings inside
// a nested scope (a job, a query) on that scope's box, so the root shows which job holds a straggler. A mark both
// fetched and streamed is counted once.
export function findingsByBox(marks, scope) {
  const out = new Map();
  const seen = new Set();
  const n = scope.length;
  for (const m of marks || []) {
    if (!m.finding || m.node === undefined || !Array.isArray(m.scope) || m.scope.length < n) continue;
    if (scope.some((p, i) => m.scope[i] !== p)) continue;
    const key = [m.scope.join(","), m.finding, m.stage, m.attempt, m.task, m.after].join("/");
    if (seen.has(key)) continue;
    seen.add(key);
    const box = String(m.scope.length === n ? m.node : m.scope[n]);
    if (!out.has(box)) out.set(box, []);
    out.get(box).push(m);
  }
  return out;
}

// The badge's words: what was found, the worst figure.
export function findingBadgeText(list) {
  const slow = list.filter((f) => f.finding === "straggler");
  const skew = list.filter((f) => f.finding === "skew");
  const parts = [];
  if (slow.length) {
    const worst = slow.reduce((a, b) => ((b.duration_s || 0) / (b.median_task_s || 1) > (a.duration_s || 0) / (a.median_task_s || 1) ? b : a));
    const ratio = worst.median_task_s ? worst.duration_s / worst.median_task_s : null;
    parts.push(`straggler${slow.length > 1 ? "s " + slow.length : ""}${ratio ? " " + ratio.toFixed(0) + "×" : ""}`);
  }
  if (skew.length) {
    const score = Math.max(...skew.map((f) => (f.summary && f.summary.skew) || 0));
    parts.push(`skew ${score.toFixed(2)}`);
  }
  // the findings that say what to do (gc, spill, ...): their kinds
  const other = [...new Set(list.filter((f) => f.finding !== "straggler" && f.finding !== "skew").map((f) => f.finding))];
  parts.push(...other);
  return "⚠ " + parts.join(" · ");
}

// bytes as people read them (decimal units)
function fmtBytes(n) {
  if (typeof n !== "number") return "?";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return i ? `${n.toFixed(1)} ${units[i]}` : `${n} ${units[i]}`;
}

function row(k, v) {
  return v === undefined || v === null ? "" : `<span class="k">${esc(k)}</span><span class="t">${esc(String(v))}</span>`;
}

// The side panel's section for a clicked badge (where: "on this stage", "in this scope"): each finding with its
// figures and a button to the batch it was found at, in its own scope.
export function findingsHtml(list, where) {
  let html = `<h3>Findings ${esc(where)}</h3>`;
  list.forEach((f, i) => {
    const s = f.summary || {};
    const d = s.duration_s || {};
    html += `<div class="finding ${esc(f.finding)}" data-i="${i}">
      <div class="what">${esc(f.finding)}</div><div>${esc(f.label)}</div>
      <div class="kv">${row("stage", f.attempt ? `${f.stage} (attempt ${f.attempt})` : f.stage)}${row("task", f.task)}${row("partition", f.partition ?? f.index)}
      ${row("executor", f.executor)}${row("ran", f.duration_s !== undefined ? `${f.duration_s.toFixed(3)} s` : null)}
      ${row("median of others", f.median_task_s !== undefined ? `${f.median_task_s.toFixed(3)} s` : null)}
      ${row("read", f.records !== undefined ? `${f.records.toLocaleString()} records, ${fmtBytes(f.bytes)}` : null)}
      ${row("tasks", s.tasks)}${row("skew score", s.skew)}${row("records skew", s.records_skew)}${row("bytes skew", s.bytes_skew)}
      ${row("input per task", s.input_bytes ? `median ${fmtBytes(s.input_bytes.median)}, max ${fmtBytes(s.input_bytes.max)}` : null)}
      ${row("task durations", d.median !== undefined ? `median ${d.median.toFixed(3)} s, max ${(d.max ?? 0).toFixed(3)} s` : null)}
      ${row("what to change", f.recommendation)}${row("threshold", f.threshold ? `${f.threshold.name} = ${f.threshold.value} (${f.threshold.source})` : null)}</div>
      <button class="finding-goto" data-i="${i}">${f.finding === "straggler" && typeof f.ended_at === "number" ? `show task ${esc(String(f.task))} running, just before its end` : `show batch ${f.after}`}${f.scope && f.scope.length ? ` of scope [${f.scope.join(",")}]` : ""}</button></div>`;
  });
  return html;
}
