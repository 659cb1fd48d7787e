// "Who is actually late": the explain answer's `late` list (pointstamps with running work first, even when a
// driver capability is the formal holder), with the tasks each is made of. Used by the "Why is this stuck?" panel.
import { pythonWords } from "../drawer/blame.js";
import { esc } from "../dom.js";

const MAX_TASKS = 8;

function secs(s) {
  return s == null ? "" : s >= 10 ? `${s.toFixed(0)} s` : `${s.toFixed(2)} s`;
}

function clock(at) {
  return at == null ? "?" : new Date(at * 1000).toISOString().slice(11, 23);
}

// a loop's time [epoch, iteration], as its stage's detail names it: the job and the iteration
function iteration(h) {
  const st = (h.stages || []).filter((s) => s.iteration !== undefined && s.iteration !== null).pop();
  return st ? ` · job ${st.job}, iteration ${st.iteration}` : "";
}

// What the stage's finished tasks spent their time on (its detail's `finished`, docs/spark-model.md "A task's
// time"), in one line; "" when the log says nothing of it.
function finished(h) {
  const f = (h.stages || []).map((s) => s.finished).filter((x) => x && x.tasks).pop();
  if (!f) return "";
  const ms = (v) => (v >= 100 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(0)} ms`);
  const parts = [["run_ms", "run", 1], ["cpu_ns", "CPU", 1e-6], ["gc_ms", "GC", 1], ["fetch_wait_ms", "fetch wait", 1],
    ["shuffle_write_ns", "shuffle write", 1e-6], ["scheduler_delay_ms", "scheduler delay", 1], ["deserialize_ms", "deserialize", 1]]
    .filter(([k]) => typeof f[k] === "number" && (f[k] > 0 || k === "gc_ms")).map(([k, n, u]) => `${n} ${ms(f[k] * u)}`);
  if (f.python) parts.push(pythonWords(f.python));
  const spill = f.memory_spilled ? `; spilled ${(f.memory_spilled / 1e6).toFixed(1)} MB` : "";
  return `its ${f.tasks} finished task${f.tasks > 1 ? "s" : ""} spent: ${parts.join(", ") || "nothing measured"}${spill}`;
}

export function lateHtml(ans) {
  const late = (ans.late || []).filter((h) => (h.running && h.running.length) || (h.pending && h.pending.count));
  if (!late.length) return "";
  let html = `<div class="late">`;
  for (const h of late) {
    const running = [...(h.running || [])].sort((a, b) => (b.running_s || 0) - (a.running_s || 0));
    const pend = h.pending && h.pending.count ? `, ${h.pending.count} pending since ${clock(h.pending.since)}` : "";
    const why = h.implied ? ` <span class="muted">(the driver's capability implies it; this is what the time waits for)</span>` : "";
    html += `<div class="late-holder" data-late="${esc(h.location.join(","))}">
      <div class="what">actually late</div>
      <div class="who">${esc(h.operator)} <span class="muted t">${esc(h.location.join(","))} @ ${esc(JSON.stringify(h.time))}${esc(iteration(h))}</span>${why}</div>
      <div class="t">${running.length} running${esc(pend)}</div>`;
    html += `<table class="tasks"><tr><th>task</th><th>partition</th><th>attempt</th><th>executor</th><th>running</th><th>launched</th></tr>`;
    for (const t of running.slice(0, MAX_TASKS)) {
      html += `<tr data-task="${esc(t.task)}"><td>${esc(t.task)}${t.speculative ? " (spec.)" : ""}</td><td>${esc(t.partition ?? t.index)}</td><td>${esc(t.attempt)}</td>
        <td>${esc(t.executor)} <span class="muted">${esc(t.host || "")}</span></td><td>${secs(t.running_s)}</td><td>${clock(t.launched)}</td></tr>`;
    }
    html += `</table>`;
    if (running.length > MAX_TASKS) html += `<div class="muted">… ${running.length - MAX_TASKS} more running</div>`;
    const done = finished(h);
    if (done) html += `<div class="finished t">${esc(done)}</div>`;
    html += `</div>`;
  }
  return html + `</div>`;
}
