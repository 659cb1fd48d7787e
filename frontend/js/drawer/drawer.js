// The drawer under the timeline: its tabs, one module each (charts.js, workers.js, findings.js, marks.js,
// errors.js, blame.js, executors.js, structured_streaming.js, plan.js; the Diff tab is diff.js, which page.js
// wires), shown one at a time and refreshed as the moment moves, at most every 2 s unless asked.

import { ChartsView } from "./charts.js";
import { WorkersView } from "./workers.js";
import { FindingsView } from "./findings.js";
import { MarksView } from "./marks.js";
import { ErrorsView } from "./errors.js";
import { BlameView } from "./blame.js";
import { ExecutorView } from "./executors.js";
import { StreamingView } from "./structured_streaming.js";
import { PlanView } from "./plan.js";
import { loadPlotly } from "./plotly.js";

export class Drawer {
  constructor(root, handlers) {
    this.root = root;
    this.h = handlers;
    this.tab = "charts";
    this.sid = null;
    this.scope = [];
    for (const b of root.querySelectorAll("#tabs button[data-tab]")) {
      b.addEventListener("click", () => this.select(b.dataset.tab));
    }
    root.querySelector("#drawer-toggle").addEventListener("click", () => {
      root.classList.toggle("collapsed");
      root.querySelector("#drawer-toggle").textContent = root.classList.contains("collapsed") ? "▴" : "▾";
      window.dispatchEvent(new Event("resize"));
    });
    this._last = 0;
    this.charts = new ChartsView(root.querySelector("#tab-charts"), { ...handlers, cursor: () => this._cursor });
    this.workers = new WorkersView(root.querySelector("#tab-workers"), handlers);
    this.findings = new FindingsView(root.querySelector("#tab-findings"), {
      ...handlers,
      openPlan: (execution, operator) => { // a SQL plan finding: its operator in the Plan tab
        this.plan.open(execution, operator);
        this.select("plan");
      },
      counted: (sid, total) => { // every finding, as the report counts them: the tab's count from now on
        this._findingsTotal = { sid, total };
        if (this.info) this.counts(this.info);
      },
    });
    this.marks = new MarksView(root.querySelector("#tab-marks-tab"), {
      ...handlers,
      blame: (scope, time) => { // a mark of a completed time: where its seconds went, in the Blame tab
        this.blame.want(scope, time);
        this.select("blame");
      },
    });
    this.errors = new ErrorsView(root.querySelector("#tab-errors"));
    this.blame = new BlameView(root.querySelector("#tab-blame"), handlers, loadPlotly);
    this.executors = new ExecutorView(root.querySelector("#tab-executors"), handlers, loadPlotly);
    this.streaming = new StreamingView(root.querySelector("#tab-streaming"), handlers, loadPlotly);
    this.plan = new PlanView(root.querySelector("#tab-plan"), {
      ...handlers,
      planStages: (scope, stages) => { // an operator's stages: selected in the job graph, its tasks in Executors
        this.executors.emphasize(stages);
        return handlers.planStages && handlers.planStages(scope, stages);
      },
    });
  }

  open(sid, scope, info, at = null) {
    this.sid = sid;
    this.scope = scope;
    this.info = info;
    this.refresh(true, at);
  }

  select(tab) {
    this.tab = tab;
    for (const b of this.root.querySelectorAll("#tabs button[data-tab]")) b.classList.toggle("active", b.dataset.tab === tab);
    for (const t of this.root.querySelectorAll(".tab")) t.hidden = t.id !== `tab-${tab}`;
    this.root.classList.remove("collapsed");
    // a scope without ports never opened it (nothing drawn to open it after): open it on the page's session and
    // moment, and have the frames refresh it from now on, so its cursor follows the timeline
    const s = this.h.session ? this.h.session() : null;
    if (s && (!this.sid || !s.opened)) {
      this.open(s.sid, s.scope, s.info, s.at ?? null);
      if (this.h.opened) this.h.opened();
    } else this.refresh(true);
  }

  counts(info) {
    // the progress contract's findings, until the Findings tab has counted them all (as the report does)
    const known = this._findingsTotal && this._findingsTotal.sid === this.sid ? this._findingsTotal.total : 0;
    const n = Math.max(known, info.findings || 0);
    const f = this.root.querySelector("#findings-count");
    f.textContent = n ? String(n) : "";
    f.classList.toggle("bad", n > 0);
    this.root.querySelector("#marks-count").textContent = info.marks ? String(info.marks) : "";
    const e = this.root.querySelector("#errors-count");
    e.textContent = info.errors ? String(info.errors) : "";
    e.classList.toggle("bad", info.errors > 0);
  }

  // Called often (every state change); refreshes at most every 2 s unless forced.
  async refresh(force = false, at = null) {
    if (!this.sid || this.root.classList.contains("collapsed")) return;
    const now = performance.now();
    if (at !== null) this._cursor = at;
    if (!force && now - this._last < 2000) { this._moveCursor(); return; }
    this._last = now;
    try {
      if (this.tab === "charts") await this.charts.show(this.sid, this.scope, this.info);
      else if (this.tab === "workers") await this.workers.show(this.sid, this.info);
      else if (this.tab === "findings") await this.findings.show(this.sid, this.info);
      else if (this.tab === "marks-tab") await this.marks.show(this.sid, this.info);
      else if (this.tab === "errors") await this.errors.show(this.sid);
      else if (this.tab === "blame") await this.blame.show(this.sid, this.scope);
      else if (this.tab === "executors") await this.executors.show(this.sid, this._cursor, this.blame.sid === this.sid ? this.blame.picked : null, this.scope, this._version());
      else if (this.tab === "streaming") await this.streaming.show(this.sid, this._cursor);
      else if (this.tab === "plan") await this.plan.show(this.sid, this.scope);
    } catch (e) {
      if (this.h.toast) this.h.toast(e.message);
    }
  }

  // What the session's answers depend on: its batch count (grows while live), from the page's session info.
  _version() {
    const s = this.h.session ? this.h.session() : null;
    return s && s.info ? `${s.info.status}/${s.info.batches}` : null;
  }

  _moveCursor() {
    if (this.tab === "executors") { this.executors.moveCursor(this._cursor); return; }
    if (this.tab === "streaming") { this.streaming.moveCursor(this._cursor); return; }
    if (this.tab === "charts") this.charts.moveCursor();
  }
}
