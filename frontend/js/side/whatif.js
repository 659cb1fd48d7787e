// "What if released?": a button on each holder of the "Why is this stuck?" answer that releases that pointstamp on
// a copy of the state at the answer's batch (GET .../whatif) and lists the frontiers that would advance. Nothing
// advancing is an answer too: something else holds the time as well.
import { esc } from "../dom.js";
import * as api from "../api.js";


function sessionId() {
  const m = location.hash.match(/#\/s\/([^/?&]+)/);
  return m ? decodeURIComponent(m[1]) : null;
}

async function ask(ans, location_, time) {
  return api.get(`/api/sessions/${encodeURIComponent(sessionId())}/whatif`, {
    scope: ans.scope.join(","), port: location_.join(","), time: JSON.stringify(time), batch: String(ans.batch) });
}

function render(out) {
  if (!out.advanced.length) return `<div class="whatif-result muted">Nothing would advance: something else holds it too.</div>`;
  const rows = out.advanced.map((a) => `<li>${esc(a.operator)} <span class="muted t">[${esc(a.scope.join(","))}] ${esc(a.port.join(","))}</span>:
    ${esc(JSON.stringify(a.before))} → ${esc(JSON.stringify(a.after))}</li>`).join("");
  return `<div class="whatif-result">Released ×${out.released}; these frontiers would advance:<ul>${rows}</ul></div>`;
}

export function attachWhatIf(box, ans) {
  if (!sessionId() || ans.time === null) return;
  const targets = [];
  box.querySelectorAll(".holder").forEach((el, i) => targets.push([el, ans.holders[i]]));
  box.querySelectorAll(".late-holder").forEach((el) => {
    const h = (ans.late || []).find((x) => x.location.join(",") === el.dataset.late);
    if (h) targets.push([el, h]);
  });
  for (const [el, h] of targets) {
    if (!h || h.from_parent) continue;
    const b = document.createElement("button");
    b.className = "whatif";
    b.textContent = "What if released?";
    b.addEventListener("click", async () => {
      b.disabled = true;
      try {
        el.insertAdjacentHTML("beforeend", render(await ask(ans, h.location, h.time)));
      } catch (e) {
        el.insertAdjacentHTML("beforeend", `<div class="whatif-result err">${esc(e.message)}</div>`);
      }
    });
    el.appendChild(b);
  }
}
