// The side panel: details of the selected port or operator, and "why is this stuck" (the explain answer, with
// the holders' paths highlighted on the graph and a way to follow a hold into a nested scope or out to the parent).

import { esc } from "../dom.js";
import { fmt, fmtFrontier, fmtCounts, status, parseTime } from "../times.js";
import { lateHtml } from "./late.js";
import { attachWhatIf } from "./whatif.js";
import { findingsHtml } from "../graph/finding_badges.js";

const LABEL = { behind: "behind t", at: "holds t", passed: "passed t", done: "complete", none: "no state" };

export function portName(key, layout) {
  const [kind, node, port] = key.split(",");
  if (+node === 0) return kind === "out" ? `scope input ${port}` : `scope output ${port}`;
  const n = layout && layout.nodes.find((x) => x.id === +node && x.box !== "enter" && x.box !== "leave");
  return `${n ? n.name : "#" + node} · ${kind === "in" ? "input" : "output"} ${port}`;
}

function tag(st) {
  return `<span class="tag st-${st}">${LABEL[st]}</span>`;
}

export class SidePanel {
  constructor(details, why, handlers) {
    this.details = details;
    this.why = why;
    this.h = handlers;
    this.current = null; // {type, key|node}
  }

  clear() {
    this.current = null;
    this.details.innerHTML = `<p class="muted">Click a port or an operator to see its frontier, pointstamps and implications, and to ask why it is stuck.</p>`;
    this.why.hidden = true;
    this.why.innerHTML = "";
  }

  showPort(key, rows, time, layout, keepWhy = false) {
    const fresh = !this.current || this.current.key !== key;
    this.current = { type: "port", key };
    const row = rows.get(key);
    const st = row ? status(row[3], time) : "none";
    const [kind] = key.split(",");
    const held = row ? row[4].reduce((a, p) => a + p[1], 0) : 0;
    this.details.innerHTML = `
      <h3>${esc(portName(key, layout))} ${tag(st)}</h3>
      <div class="kv">
        <span class="k">port</span><span class="t">${esc(key.replace(",", " "))}</span>
        <span class="k">frontier</span><span class="t" data-field="frontier">${esc(row ? fmtFrontier(row[3]) : "–")}</span>
        <span class="k">${kind === "in" ? "messages" : "capabilities"}</span><span class="t">${held}</span>
        <span class="k">pointstamps</span><span class="t" data-field="pointstamps">${esc(row ? fmtCounts(row[4]) : "–")}</span>
        <span class="k">implications</span><span class="t" data-field="implications">${esc(row ? fmtCounts(row[5]) : "–")}</span>
        <span class="k">chosen t</span><span class="t">${esc(time === null ? "auto" : fmt(time))}</span>
      </div>`;
    if (fresh || !keepWhy) this._whyForm(key, row);
  }

  _whyForm(key, row) {
    const least = row && row[3].length ? fmt(row[3][0]) : "";
    this.why.hidden = false;
    this.why.innerHTML = `
      <h3>Why is this stuck?</h3>
      <div class="ask">
        <span class="muted">time</span>
        <input id="why-time" value="${esc(least ? JSON.stringify(row[3][0]) : "")}" placeholder="least in frontier" spellcheck="false">
        <button id="why-ask" class="primary">Why?</button>
      </div>
      <div id="why-answer"><p class="muted">${least ? `Who holds time ${esc(least)} at this port: the minimal pointstamps that could still result in it.` : "Nothing can arrive here any more."}</p></div>`;
    this.why.querySelector("#why-ask").addEventListener("click", () => {
      const text = this.why.querySelector("#why-time").value;
      let t = null;
      try { t = parseTime(text); } catch (e) { this.h.toast(e.message); return; }
      this.h.explain(key, t);
    });
  }

  showExplanation(ans, layout) {
    const box = this.why.querySelector("#why-answer");
    if (!box) return;
    if (ans.time === null) {
      box.innerHTML = `<div class="verdict free">The frontier is empty: nothing can arrive at this port any more.</div>`;
      return;
    }
    let html = ans.held
      ? `<div class="verdict held" data-held="1">Time <b class="t">${esc(fmt(ans.time))}</b> is held by ${ans.holders.length} pointstamp${ans.holders.length > 1 ? "s" : ""} (batch ${ans.batch}).</div>`
      : `<div class="verdict free" data-held="0">Nothing holds time <b class="t">${esc(fmt(ans.time))}</b> here: it has passed or cannot arrive.</div>`;
    html += lateHtml(ans);
    ans.holders.forEach((h, i) => {
      const key = h.location.join(",");
      const what = { capability: "capability held", message: "messages in flight", "parent-frontier": "held outside this scope", "nested-scope": "held inside a nested scope" }[h.what];
      const attrs = Object.entries(h.attrs || {}).map(([k, v]) => `${esc(k)}: ${esc(typeof v === "object" ? JSON.stringify(v) : v)}`).join(" · ");
      let next = "";
      if (h.next) {
        const label = h.what === "nested-scope" ? "Ask inside the scope ▸" : "◂ Ask the parent scope";
        next = `<button data-next="${i}">${label}</button>`;
      }
      html += `<div class="holder" data-holder="${esc(key)}">
        <div class="what">${esc(what)}</div>
        <div class="who">${esc(h.operator || portName(key, layout))} <span class="muted t">${esc(key)}</span></div>
        <div class="t">time ${esc(fmt(h.time))} ×${h.count} · summary ${esc(fmt(h.summary))} → ${esc(fmt(h.results_in))}</div>
        ${attrs ? `<div class="attrs">${attrs}</div>` : ""}
        ${next}
      </div>`;
    });
    if (ans.implied.length) html += `<p class="muted">${ans.implied.length} more pointstamp${ans.implied.length > 1 ? "s" : ""} qualify, each implied by a holder above.</p>`;
    box.innerHTML = html;
    attachWhatIf(box, ans);
    for (const b of box.querySelectorAll("button[data-next]")) {
      b.addEventListener("click", () => this.h.followHold(ans.holders[+b.dataset.next].next));
    }
    for (const el of box.querySelectorAll(".holder")) {
      el.addEventListener("mouseenter", () => this.h.focusPort(el.dataset.holder));
    }
  }

  // Findings on a stage or inside a nested scope (its badge clicked): under its details, each with a way to its
  // batch in its scope.
  showFindings(list, where) {
    this.why.hidden = false;
    this.why.innerHTML = `<div id="findings-answer">${list.length ? findingsHtml(list, where) : `<p class="muted">No findings here.</p>`}</div>`;
    for (const b of this.why.querySelectorAll("button.finding-goto")) {
      b.addEventListener("click", () => this.h.openFinding(list[+b.dataset.i]));
    }
  }

  showBox(node, rows, time, layout) {
    this.current = { type: "box", box: node.box };
    const ports = [];
    for (let i = 0; i < node.inputs; i++) ports.push(`in,${node.id},${i}`);
    for (let o = 0; o < node.outputs; o++) ports.push(`out,${node.id},${o}`);
    const attrs = Object.entries(node.attrs || {});
    const kindLabel = { operator: "operator", scope: "nested scope", enter: "scope inputs", leave: "scope outputs" }[node.kind];
    let html = `<h3>${esc(node.name || kindLabel)}</h3>
      <div class="kv"><span class="k">kind</span><span>${kindLabel}</span>
      <span class="k">node</span><span class="t">${node.id}</span>
      ${node.kind === "scope" ? `<span class="k">contains</span><span>${node.contains} operators</span>` : ""}
      ${attrs.map(([k, v]) => `<span class="k">${esc(k)}</span><span class="t">${esc(typeof v === "object" ? JSON.stringify(v) : v)}</span>`).join("")}
      </div>`;
    if (node.kind === "scope") html += `<p><button id="open-scope">Open scope ▸</button></p>`;
    html += `<h4>Ports</h4><table><thead><tr><th>port</th><th></th><th>frontier</th><th>#</th></tr></thead><tbody>`;
    for (const key of ports) {
      const row = rows.get(key);
      const st = row ? status(row[3], time) : "none";
      const held = row ? row[4].reduce((a, p) => a + p[1], 0) : 0;
      html += `<tr class="port-row" data-port="${key}"><td class="t">${esc(key.split(",")[0])} ${key.split(",")[2]}</td><td>${tag(st)}</td><td class="t">${esc(row ? fmtFrontier(row[3]) : "–")}</td><td>${held || ""}</td></tr>`;
    }
    html += "</tbody></table>";
    this.details.innerHTML = html;
    this.why.hidden = true;
    const open = this.details.querySelector("#open-scope");
    if (open) open.addEventListener("click", () => this.h.openScope(node.scope));
    for (const tr of this.details.querySelectorAll("tr.port-row")) tr.addEventListener("click", () => this.h.selectPort(tr.dataset.port));
  }
}
