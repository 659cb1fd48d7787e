// The Findings tab, three kinds of finding: the SQL plans' (plan.js draws the plans; a row opens its operator
// there), the Spark model's (stragglers, skewed stages and the findings that say what to do: marks with a
// `finding`, also badges on the graph) and the progress contract's (batches that broke it). Each of the last two
// goes to its scope at its batch.

import * as api from "../api.js";
import { esc } from "../dom.js";

// The SQL plan findings as rows; a click opens the operator's plan.
function planFindingRows(findings) {
  if (!findings.length) return "";
  return `<div class="muted">SQL plan findings (${findings.length})</div>` + findings.map((f, i) =>
    `<div class="list-row plan-finding-row" data-p="${i}"><span class="b">SQL ${f.execution}</span><span class="kind">${esc(f.finding)}</span><span>${esc(f.label)}; ${esc(f.recommendation)}</span><span class="muted">${esc(f.metric)}</span></div>`).join("");
}

export class FindingsView {
  // handlers: goto(scope, batch, port), openFinding(mark), openPlan(execution, operator) (the Plan tab)
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers;
  }

  async show(sid, info) {
    const [data, spark, plan] = await Promise.all([
      api.get(`/api/sessions/${sid}/findings`, { limit: 500 }),
      api.get(`/api/sessions/${sid}/marks`, { finding: true, limit: 500 }),
      api.get(`/api/sessions/${sid}/plan`).catch(() => ({ executions: [] })), // no Spark log: no plans
    ]);
    const box = this.root;
    const planned = plan.executions.flatMap((e) => e.findings);
    let html = planFindingRows(planned);
    if (spark.total) {
      html += `<div class="muted">Spark findings: stragglers, skew, and what to change (${spark.total})</div>`;
      spark.marks.forEach((m, i) => {
        // a finding that says what to do (backend/spark/findings.py): its recommendation and the threshold that fired
        const th = m.threshold ? ` · ${m.threshold.name} ${m.threshold.value}` : "";
        const rec = m.recommendation ? `<div class="recommendation">${esc(m.recommendation)}<span class="muted">${esc(th)}</span></div>` : "";
        html += `<div class="list-row spark-finding ${esc(m.finding)}" data-s="${i}"><span class="b">batch ${m.after}</span><span class="kind">${esc(m.finding)}</span><span>${esc(m.label)}${rec}</span><span class="muted">scope [${m.scope || []}]</span></div>`;
      });
    }
    if (!data.total) {
      html += `<p class="muted">${info && !info.checked ? "Contract checking is off for this session." : "No contract findings: every batch kept the progress contract."}</p>`;
    } else {
      html += `<div class="muted">Progress-contract findings (${data.total})</div>`;
      data.findings.forEach((f, i) => {
        const batch = f.batch.index !== null ? f.batch.index + 1 : 0;
        html += `<div class="list-row contract-finding" data-i="${i}"><span class="b">batch ${batch}</span><span class="kind">${esc(f.kind)}</span><span>${esc(f.message)}</span><span class="muted">scope [${f.scope}] ${esc(f.port.join(","))}${f.batch.line ? ` · line ${f.batch.line}` : ""}</span></div>`;
      });
    }
    box.innerHTML = html;
    for (const r of box.querySelectorAll(".contract-finding")) {
      r.addEventListener("click", () => {
        const f = data.findings[+r.dataset.i];
        this.h.goto(f.scope, f.batch.index !== null ? f.batch.index + 1 : 0, f.port.join(","));
      });
    }
    for (const r of box.querySelectorAll(".spark-finding")) {
      r.addEventListener("click", () => {
        this.h.openFinding(spark.marks[+r.dataset.s]);
      });
    }
    for (const r of box.querySelectorAll(".plan-finding-row")) {
      r.addEventListener("click", () => {
        const f = planned[+r.dataset.p];
        this.h.openPlan(f.execution, f.operator);
      });
    }
  }
}
