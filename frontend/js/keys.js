// The top bar's time box, the graph tools (fit, zoom) and the keyboard: arrows step, space plays, f fits,
// backspace leaves the scope.

import { $ } from "./dom.js";
import { S, ui } from "./state.js";
import { toast } from "./toast.js";
import { parseTime } from "./times.js";
import { scheduleRender } from "./timeline/frames.js";

// Called once by start(), with the moves the keys make: {seek(batch), openScope(path)}.
export function bindControls(h) {
  $("#time-input").addEventListener("change", () => {
    const v = $("#time-input").value;
    try {
      S.userTime = parseTime(v);
    } catch (e) {
      toast(e.message);
      return;
    }
    if (S.userTime === null) $("#time-input").value = "auto";
    S.pendingFull = true;
    scheduleRender();
  });
  $("#fit").addEventListener("click", () => ui.graph.fit());
  $("#zoom-in").addEventListener("click", () => ui.graph.zoom(1.25));
  $("#zoom-out").addEventListener("click", () => ui.graph.zoom(0.8));
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT") return;
    const { timeline } = ui;
    if (ev.key === "ArrowRight") { h.seek(Math.min(timeline.head, S.batch + 1)); ev.preventDefault(); }
    else if (ev.key === "ArrowLeft") { h.seek(Math.max(0, S.batch - 1)); ev.preventDefault(); }
    else if (ev.key === " ") { timeline.playing ? timeline.pause() : timeline.play(); ev.preventDefault(); }
    else if (ev.key === "f") ui.graph.fit();
    else if (ev.key === "Backspace" && S.scope.length) h.openScope(S.scope.slice(0, -1));
  });
  window.addEventListener("resize", () => { if (S.layout && S.frame < 2) ui.graph.fit(); });
}
