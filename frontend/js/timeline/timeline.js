// The timeline: play, pause, step, seek by batch or wall time, speed, LIVE (follow the head), and the marks and
// findings drawn above the scrubber. It owns no state of the dataflow: it tells the app which batch to show.

import { clock } from "../times.js";

export class Timeline {
  constructor(root, handlers) {
    this.h = handlers;
    this.slider = root.querySelector("#slider");
    this.batchInput = root.querySelector("#batch-input");
    this.headEl = root.querySelector("#head");
    this.playBtn = root.querySelector("#play");
    this.liveBtn = root.querySelector("#live");
    this.speedSel = root.querySelector("#speed");
    this.timeSeek = root.querySelector("#time-seek");
    this.marksSvg = root.querySelector("#marks");
    this.head = 0;
    this.batch = 0;
    this.live = true;
    this.playing = false;
    this.marks = [];
    this.findings = [];
    this._marksDirty = true;
    this._timer = null;
    this._busy = false;

    this.slider.addEventListener("input", () => this.h.seek(+this.slider.value));
    this.batchInput.addEventListener("change", () => this.h.seek(Math.max(0, Math.min(this.head, +this.batchInput.value || 0))));
    root.querySelector("#to-start").addEventListener("click", () => { this.pause(); this.h.seek(0); });
    root.querySelector("#step-back").addEventListener("click", () => { this.pause(); this.h.seek(Math.max(0, this.batch - 1)); });
    root.querySelector("#step-fwd").addEventListener("click", () => { this.pause(); this.h.seek(Math.min(this.head, this.batch + 1)); });
    this.playBtn.addEventListener("click", () => (this.playing ? this.pause() : this.play()));
    this.liveBtn.addEventListener("click", () => { this.pause(); this.h.goLive(); });
    this.timeSeek.addEventListener("change", () => this.h.seekTime(this.timeSeek.value));
    setInterval(() => this._drawMarks(), 1000);
  }

  setHead(head) {
    this.head = head;
    this.slider.max = String(head);
    this.batchInput.max = String(head);
    this.headEl.textContent = String(head);
    if (this.live) this.show(head, true);
  }

  show(batch, live, at) {
    this.batch = batch;
    this.live = live;
    this.slider.value = String(batch);
    if (document.activeElement !== this.batchInput) this.batchInput.value = String(batch);
    this.liveBtn.classList.toggle("on", live);
    if (at !== undefined && document.activeElement !== this.timeSeek) this.timeSeek.value = at ? clock(at) : "";
  }

  addMarks(marks) {
    if (marks && marks.length) { this.marks.push(...marks); this._marksDirty = true; }
  }

  addFindings(findings) {
    if (findings && findings.length) { this.findings.push(...findings); this._marksDirty = true; }
  }

  reset() {
    this.marks = [];
    this.findings = [];
    this._marksDirty = true;
  }

  play() {
    if (this.batch >= this.head) this.h.seek(0);
    this.playing = true;
    this.playBtn.textContent = "⏸";
    this.playBtn.classList.add("on");
    const fps = 10;
    this._timer = setInterval(async () => {
      if (this._busy) return;
      const speed = +this.speedSel.value;
      const step = Math.max(1, Math.round(speed / fps));
      const next = Math.min(this.head, this.batch + step);
      if (next >= this.head) {
        this.pause();
        if (this.h.atHead) this.h.atHead();
        else this.h.seek(this.head);
        return;
      }
      this._busy = true;
      try { await this.h.seek(next, true); } finally { this._busy = false; }
    }, 1000 / fps);
  }

  pause() {
    this.playing = false;
    this.playBtn.textContent = "▶";
    this.playBtn.classList.remove("on");
    if (this._timer) clearInterval(this._timer);
    this._timer = null;
  }

  _drawMarks() {
    if (!this._marksDirty && this._drawnHead === this.head) return;
    this._marksDirty = false;
    this._drawnHead = this.head;
    const head = Math.max(1, this.head);
    const W = 1000;
    const seen = new Set();
    const parts = [];
    const add = (batch, cls, title) => {
      const x = Math.round((batch / head) * W * 2) / 2;
      const key = cls + x;
      if (seen.has(key)) return;
      seen.add(key);
      parts.push(`<line class="${cls}" x1="${x}" x2="${x}" y1="${cls === "finding" ? 0 : 3}" y2="12"><title>${title}</title></line>`);
    };
    for (const m of this.marks) add(m.after, "mark", `${m.label} (after batch ${m.after})`.replace(/</g, "&lt;"));
    // events that never arrived (a live listener's outage): a red stretch, on top of the ordinary marks
    for (const m of this.marks) {
      if (!m.lost) continue;
      const x = Math.round((m.after / head) * W * 2) / 2;
      const secs = m.lost_until && m.at ? ` over ${Math.round(m.lost_until - m.at)} s` : "";
      const title = `${m.lost} events lost${secs} (after batch ${m.after}): answers after this may be incomplete`;
      parts.push(`<rect class="lost" x="${Math.max(0, x - 3)}" y="0" width="6" height="12"><title>${title.replace(/</g, "&lt;")}</title></rect>`);
    }
    for (const f of this.findings) add((f.batch && f.batch.index !== null ? f.batch.index + 1 : 0), "finding", `${f.kind}: ${f.message}`.replace(/</g, "&lt;"));
    this.marksSvg.setAttribute("viewBox", `0 0 ${W} 12`);
    this.marksSvg.innerHTML = parts.join("");
  }
}
