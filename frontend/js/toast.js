// Short messages at the bottom of the page: errors, and information the user asked for.

import { $ } from "./dom.js";

let hideTimer = null;

export function toast(msg, info = false) {
  const t = $("#toast");
  t.textContent = msg;
  t.className = info ? "info" : "";
  t.hidden = false;
  clearTimeout(hideTimer);
  hideTimer = setTimeout(() => (t.hidden = true), 5000);
}
