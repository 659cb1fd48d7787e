// The Findings tab: every finding flowscope report lists (GET .../overview: the Spark model's, the SQL plans', the
// progress contract's) in the report's groups, one kind on one stage signature, largest impact first. A group shows
// its worst finding, "the other N" the rest; a row opens its finding: a Spark finding's moment, a plan finding's
// operator in the Plan tab, a contract finding's batch and port. The Overview lists the same groups (overview.js).

import * as api from "../api.js";
import { esc } from "../dom.js";

// The groups (GET .../overview's `groups`), as the Findings tab and the Overview list them.

export function impactWords(s) {
  return typeof s === "number" ? (s >= 100 ? `${s.toFixed(0)} s` : `${s.toFixed(2)} s`) : "impact unknown";
}

// A fired threshold as the report prints it: "skew.score >= 0.5 (Flink FLIP-418's data-skew score)".
export function thresholdWords(t) {
  if (!t || !t.name) return "";
  const one = (x) => `${x.name} ${x.op || ">="} ${x.value}${x.source ? ` (${x.source})` : ""}`;
  return [one(t), ...(t.and || []).map(one)].join("; ");
}

// One finding of a group, as a row: what it says, what to change, the threshold, its impact. Its class says how it
// opens (a Spark model's finding, a SQL plan's, a progress contract's).
function instanceHtml(f, i) {
  const cls = f.contract ? "contract-finding" : f.plan ? "plan-finding-row" : "spark-finding";
  const where = f.plan ? `SQL ${f.execution}` : f.stage !== null && f.stage !== undefined ? `stage ${f.stage}` : `batch ${f.batch ?? "–"}`;
  const th = thresholdWords(f.threshold);
  return `<div class="list-row finding-instance ${cls} ${esc(f.kind)}" data-f="${i}"><span class="b">${esc(where)}</span>
    <span class="kind">${esc(f.kind)}</span><span>${esc(f.text)}${f.recommendation ? `<div class="recommendation">${esc(f.recommendation)}</div>` : ""}${th ? `<div class="muted threshold">${esc(th)}</div>` : ""}</span>
    <span class="muted impact" title="${esc(f.impact_note || "")}">${esc(impactWords(f.impact_s))}</span></div>`;
}

// The groups (at most `limit`), each a heading (what, how many, the summed impact), its worst finding, and a
// button listing the others.
export function groupsHtml(o, limit = Infinity) {
  return o.groups.slice(0, limit).map((g, gi) => {
    const worst = o.findings.findIndex((f) => f.group === gi); // a group's findings come largest impact first
    const hours = typeof g.core_hours === "number" ? `, ${g.core_hours.toFixed(3)} core-hours idle` : "";
    return `<div class="finding-group ${esc(g.kind)}" data-g="${gi}">
      <div class="group-head"><span class="kind">${esc(g.kind)}</span> ${esc(g.label)}
        <span class="muted">· ${g.count} finding${g.count === 1 ? "" : "s"} · impact ${esc(impactWords(g.impact_s))}${g.count > 1 ? " in all" : ""}${esc(hours)}</span></div>
      ${instanceHtml(o.findings[worst], worst)}
      ${g.count > 1 ? `<button class="group-more" data-g="${gi}">the other ${g.count - 1}</button><div class="group-rest" hidden></div>` : ""}</div>`;
  }).join("");
}

// Clicks in what groupsHtml drew (or the Overview's rows): a finding row opens it (open(f)); "the other N" lists the
// group's other findings under it.
export function bindGroups(box, o, open) {
  const bind = (root) => {
    for (const r of root.querySelectorAll(".finding-instance")) {
      if (r.dataset.bound) continue;
      r.dataset.bound = "1";
      r.addEventListener("click", () => open(o.findings[+r.dataset.f]));
    }
  };
  bind(box);
  for (const b of box.querySelectorAll(".group-more")) {
    b.addEventListener("click", () => {
      const rest = b.nextElementSibling;
      if (!rest.hidden) { rest.hidden = true; return; }
      const g = +b.dataset.g;
      const shown = o.findings.findIndex((f) => f.group === g);
      rest.innerHTML = o.findings.map((f, i) => (f.group === g && i !== shown ? instanceHtml(f, i) : "")).join("");
      rest.hidden = false;
      bind(rest);
    });
  }
}

export class FindingsView {
  // handlers: goto(scope, batch, port), openFinding(mark), openPlan(execution, operator) (the Plan tab),
  // counted(sid, total) (the tab's count: the report's)
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers;
  }

  async show(sid, info) {
    const o = await api.get(`/api/sessions/${sid}/overview`);
    const box = this.root;
    let html = o.findings_total
      ? `<div class="muted" id="findings-total" data-total="${o.findings_total}">${o.findings_total} finding${o.findings_total === 1 ? "" : "s"} in ${o.groups.length} group${o.groups.length === 1 ? "" : "s"}, largest impact first (as flowscope report lists them)</div>`
      : `<p class="muted">No findings.</p>`;
    html += groupsHtml(o);
    if (!o.findings.some((f) => f.contract)) {
      html += `<p class="muted">${info && !info.checked ? "Contract checking is off for this session." : "No contract findings: every batch kept the progress contract."}</p>`;
    }
    box.innerHTML = html;
    if (this.h.counted) this.h.counted(sid, o.findings_total);
    bindGroups(box, o, (f) => {
      if (f.contract) this.h.goto(f.scope, f.batch, f.port.join(","));
      else if (f.plan) this.h.openPlan(f.execution, f.operator);
      else this.h.openFinding(f);
    });
  }
}
