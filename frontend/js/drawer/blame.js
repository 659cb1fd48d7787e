// The Blame tab: the slowest completed times of the scope (jobs, micro-batches) and, for the one picked, a waterfall
// of where its seconds went (GET .../blame): one bar per segment of the critical path, coloured by kind. Clicking a
// bar opens that holder at that moment: the view seeks to the batch then and explains the holder's port. A mark of a
// finished job or micro-batch opens its own time here (want()), listed first when it is not among the slowest.

import * as api from "../api.js";
import { esc } from "../dom.js";

export const KIND_COLORS = {
  task: "#d9534f", "waiting-for-slots": "#f0a500", scheduler: "#8e9aaf", recompute: "#9b59b6",
  driver: "#4a90d9", capability: "#5cb85c", message: "#8fd19e",
};

function what(t) {
  if (t.batch_id !== null && t.batch_id !== undefined) return `batch ${t.batch_id}`;
  // a loop's time [epoch, iteration]: the job that ran it (a Spark loop) or the epoch (a progress log's), and the
  // iteration
  if (t.iteration !== null && t.iteration !== undefined) {
    const outer = t.job_ids.length ? `job ${t.job_ids.join(", ")}` : `epoch ${JSON.stringify(t.time.slice(0, -1)).slice(1, -1)}`;
    return `${outer}, iteration ${t.iteration}`;
  }
  return `time ${JSON.stringify(t.time)}`;
}

export function segmentLabel(s) {
  const h = s.holder;
  if (s.kind === "task" || (s.kind === "recompute" && h.task !== undefined)) {
    // the partition the task computed (a re-run's index in its task set is not it)
    const part = h.partition !== undefined && h.partition !== null ? h.partition : h.index;
    const op = h.plan_operator ? ` · ${h.plan_operator.name} #${h.plan_operator.id}` : ""; // the SQL operator it ran
    return `task ${h.task} · stage ${h.stage}${op} · partition ${part} · ${h.executor}`;
  }
  if (s.kind === "waiting-for-slots") return `task ${h.task} waits for a slot (stage ${h.stage})`;
  // a task not launched yet while slots were free: the scheduler's own delay
  if (s.kind === "scheduler" && h.task !== undefined) return `task ${h.task} pending with a slot free (stage ${h.stage})`;
  if (s.kind === "recompute") {
    // a stage attempt's hold no task's end accounts for: one that failed, or a re-run
    const why = h.failure && h.failure.reason ? ` (${h.failure.reason})` : "";
    if (h.failed_attempt !== undefined) return `stage ${h.stage}.${h.attempt} failed${why}`;
    return `stage ${h.stage}.${h.attempt} re-run${why}`;
  }
  if (h.doing) return `${h.operator}: ${h.doing}`;
  return `${h.operator} ${h.port ? h.port.join(",") : ""}`;
}

function hover(t, s) {
  const h = s.holder;
  const lines = [`<b>${esc(s.kind)}</b> ${s.seconds.toFixed(3)} s (${(100 * s.seconds / (t.latency_s || 1)).toFixed(0)}%)`,
    esc(segmentLabel(s))];
  if (h.median_task_s !== undefined && h.median_task_s !== null) lines.push(`median of its siblings ${h.median_task_s.toFixed(3)} s`);
  if (h.what_if) {
    const then = h.what_if.then_held_by;
    let who = "";
    if (then) {
      who = then.task !== undefined && then.task !== null ? `task ${then.task} of stage ${then.stage}` : "";
      if (then.operator) who = who ? `${who} (${then.operator})` : then.operator;
    }
    lines.push(esc(`at the median: ${h.what_if.ends_earlier_s.toFixed(3)} s earlier` + (who ? `, then held by ${who}` : "")));
  }
  if (h.held_by) lines.push("slots held by " + h.held_by.map((x) => `stage ${x.stage} (job ${x.job}) ×${x.tasks}`).join(", "));
  if (h.failure) lines.push(esc(failureText(h.failure)));
  if (h.breakdown) lines.push(...breakdownLines(h.breakdown).map(esc));
  return lines.join("<br>");
}

// A task's time split as Spark measured it (the holder's `breakdown`): where its time went, then what it read,
// wrote and spilled; a metric the log does not have is said to be missing, never shown as 0.
function ms(v) { return v >= 100 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(0)} ms`; }
function bytes(n) {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return i ? `${n.toFixed(1)} ${units[i]}` : `${n} B`;
}
// A task's (or a stage's finished tasks') Python worker time (`python`: its time within the run, what of it
// started workers and ran Python code), in a few words.
export function pythonWords(p) {
  const parts = [];
  if (p.start_ms) parts.push(`starting ${ms(p.start_ms)}`);
  if (p.exec_ms) parts.push(`executing Python code ${ms(p.exec_ms)}`);
  return `Python workers ${ms(p.ms)}${parts.length ? ` (${parts.join(", ")})` : ""}`;
}
export function breakdownLines(b) {
  const time = [["run_ms", "run"], ["cpu_ns", "CPU"], ["gc_ms", "GC"], ["fetch_wait_ms", "fetch wait"],
    ["shuffle_write_ns", "shuffle write"], ["scheduler_delay_ms", "scheduler delay"], ["deserialize_ms", "deserialize"],
    ["result_serialization_ms", "result serialization"], ["getting_result_ms", "getting result"]];
  const said = time.filter(([k]) => typeof b[k] === "number" && (b[k] > 0 || k === "run_ms" || k === "gc_ms"))
    .map(([k, n]) => `${n} ${ms(k.endsWith("_ns") ? b[k] / 1e6 : b[k])}`); // CPU and shuffle write: Spark's ns
  const missing = time.filter(([k]) => b[k] === null || b[k] === undefined).map(([, n]) => n);
  if (b.python) said.push(pythonWords(b.python));
  const out = [`time: ${said.join(", ") || "none measured"}`];
  if (missing.length) out.push(`not in the log: ${missing.join(", ")}`);
  const read = (b.input_bytes || 0) + (b.shuffle_local_bytes || 0) + (b.shuffle_remote_bytes || 0);
  const sizes = [];
  if (read) sizes.push(`read ${bytes(read)}`);
  if (b.shuffle_write_bytes) sizes.push(`shuffle write ${bytes(b.shuffle_write_bytes)}`);
  if (b.output_bytes) sizes.push(`output ${bytes(b.output_bytes)}`);
  if (b.memory_spilled) sizes.push(`spilled ${bytes(b.memory_spilled)} from memory, ${bytes(b.disk_spilled || 0)} to disk`);
  if (b.peak_execution_memory) sizes.push(`peak execution memory ${bytes(b.peak_execution_memory)}`);
  if (sizes.length) out.push(sizes.join(", "));
  return out;
}

// Why a recompute segment's work is redone: the failure it follows (Spark's reason, the executor it names, the
// executor's removal) in one line.
export function failureText(f) {
  let text = `redone after ${f.reason || "a failure"}`;
  if (f.executor !== undefined && f.executor !== null) text += ` (executor ${f.executor}${f.host ? `, ${f.host}` : ""})`;
  if (f.stage !== undefined && f.stage !== null) text += ` in stage ${f.stage}.${f.attempt ?? 0}`;
  if (f.message) text += `: ${f.message}`;
  if (f.executor_removed) text += `; executor removed: ${f.executor_removed}`;
  return text;
}

export class BlameView {
  constructor(box, handlers, loadPlotly) {
    this.box = box;
    this.h = handlers;
    this.loadPlotly = loadPlotly;
    this.times = [];
    this.picked = null;
    this.wanted = null;
  }

  // The next show() draws this time's waterfall: [scope path, time] as a mark names them (a job's epoch, a
  // micro-batch's id: the region's time).
  want(scope, time) {
    this.wanted = { scope, time };
    this.picked = null;
  }

  async show(sid, scope) {
    this.sid = sid;
    // a region's list holds its nested scopes' times too (its loop's iterations, labelled with their iteration)
    const params = { top: 50 };
    if (scope.length) { params.scope = scope.join(","); params.nested = true; }
    const data = await api.get(`/api/sessions/${sid}/blame`, params);
    this.times = data.times;
    const wanted = this.wanted;
    this.wanted = null;
    if (wanted) {
      const same = (t) => t.scope.join() === wanted.scope.join() && JSON.stringify(t.time) === JSON.stringify(wanted.time);
      let found = this.times.find(same);
      if (!found) {
        const one = await api.get(`/api/sessions/${sid}/blame`, { scope: wanted.scope.join(","), time: JSON.stringify(wanted.time) });
        found = one.times[0];
        if (found) this.times = [found, ...this.times];
      }
      if (found) this.picked = found;
      else if (this.h.toast) this.h.toast(`no blame for time ${JSON.stringify(wanted.time)} of scope [${wanted.scope}] (not completed yet?)`);
    }
    if (!this.times.length) {
      this.box.innerHTML = `<p class="muted">No completed job or micro-batch in this scope yet.</p>`;
      return;
    }
    let html = `<div class="blame-cols"><div class="blame-list"><div class="muted">Slowest times</div>`;
    this.times.forEach((t, i) => {
      const top = t.blame.reduce((a, b) => (b.seconds > a.seconds ? b : a), t.blame[0] || { kind: "-", seconds: 0 });
      const failed = t.status === "failed" ? ` <span class="pill failed" title="${esc(t.failure || "")}">failed</span>` : "";
      html += `<div class="list-row blame-time${t.status === "failed" ? " failed" : ""}" data-i="${i}"><span class="b">${t.latency_s.toFixed(3)} s</span>
        <span>${esc(t.name)} · ${esc(what(t))}${failed}</span><span class="kind" style="color:${KIND_COLORS[top.kind] || "#555"}">${esc(top.kind)} ${top.seconds.toFixed(2)} s</span></div>`;
    });
    html += `</div><div class="blame-right"><div class="blame-status" id="blame-status" hidden></div>
      <div class="blame-waterfall chart" id="blame-waterfall"></div></div></div>`;
    this.box.innerHTML = html;
    for (const r of this.box.querySelectorAll(".blame-time")) r.addEventListener("click", () => this.waterfall(+r.dataset.i));
    const keep = this.picked ? this.times.findIndex((t) => t.scope.join() === this.picked.scope.join() && JSON.stringify(t.time) === JSON.stringify(this.picked.time)) : -1;
    await this.waterfall(keep >= 0 ? keep : 0);
  }

  async waterfall(i) {
    const t = this.times[i];
    if (!t) return;
    this.picked = t;
    const seq = this.drawing = (this.drawing || 0) + 1; // a row picked while the previous one is still drawing
    for (const r of this.box.querySelectorAll(".blame-time")) r.classList.toggle("active", +r.dataset.i === i);
    const Plotly = await this.loadPlotly();
    if (seq !== this.drawing) return; // wins: the chart and its click handler are the last pick's
    const el = this.box.querySelector("#blame-waterfall");
    // a failed job's time: its latency is how long it took to fail, and why it did
    const status = this.box.querySelector("#blame-status");
    const named = t.batch_id === null && t.iteration === null && t.job_ids.length ? `job ${t.job_ids.join(", ")}` : what(t);
    status.textContent = t.status === "failed" ? `${named} failed after ${t.latency_s.toFixed(3)} s: ${t.failure || "no reason given"}` : "";
    status.hidden = t.status !== "failed";
    const segs = t.blame;
    const y = segs.map((s, k) => `${k + 1}. ${segmentLabel(s)}`.slice(0, 70));
    const trace = {
      type: "bar", orientation: "h", y, x: segs.map((s) => s.seconds), base: segs.map((s) => s.from - t.start),
      marker: { color: segs.map((s) => KIND_COLORS[s.kind] || "#999") },
      hovertext: segs.map((s) => hover(t, s)), hoverinfo: "text",
    };
    const layout = {
      title: { text: `${esc(t.name)} · ${esc(what(t))}: ${t.latency_s.toFixed(3)} s`, font: { size: 12 } },
      margin: { l: 300, r: 20, t: 30, b: 30 }, height: Math.max(160, 40 + 22 * segs.length),
      xaxis: { title: { text: "seconds since the start" }, zeroline: false },
      yaxis: { autorange: "reversed", automargin: true }, showlegend: false,
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "#fbfcfd", font: { size: 11 },
    };
    await Plotly.react(el, [trace], layout, { displayModeBar: false, responsive: true });
    if (seq !== this.drawing) return;
    el.removeAllListeners && el.removeAllListeners("plotly_click");
    el.on("plotly_click", (ev) => {
      const s = segs[ev.points[0].pointIndex];
      if (s && this.h.openSegment) this.h.openSegment(t, s);
    });
  }
}
