// The applications table: what a server following an event-log directory shows first (backend/history/). Every
// application of the followed directories, opened or not, as GET /api/sessions lists them: id, name, user, start,
// duration, status, and once replayed its jobs, idle cores and top finding; sortable by any column, filtered by text
// and status. Only the rows in view are in the DOM (a fixed row height, the rest a spacer), so 10,000 scroll as
// smoothly as 10. The list is asked again every few seconds (an unchanged one is a 304), so in-progress
// applications grow and new ones appear. A row opens the application (its Overview); its REST link the documents
// of Spark's REST API.

import { $ } from "../dom.js";

const ROW_HEIGHT = 28; // px: must match .apps-row in app.css
const OVERSCAN = 8; // rows drawn above and below the view
const REFRESH_MS = 2000;

const T = {
  rows: [], // every row, as made by toRow
  shown: [], // the rows the filter keeps, in the sort's order
  sort: { key: "start", dir: -1 },
  etag: null,
  timer: null,
  drawn: "", // the range drawn last: "first:last:version"
  version: 0,
  bound: false,
};

const STATUS_TEXT = { in_progress: "in progress", finished: "finished", failed: "failed", incomplete: "incomplete" };

function toRow(s) {
  const a = s.application;
  const sum = (a && a.summary) || null;
  const top = sum && sum.findings && sum.findings.length ? sum.findings[0] : null;
  const status = a ? a.status : s.status;
  const row = {
    id: s.id,
    name: (a && a.name) || s.name || "",
    user: (a && a.user) || "",
    start: a ? a.start : s.first_at,
    duration: a ? a.duration_s : null,
    status,
    opened: s.status !== "listed",
    jobs: sum ? sum.jobs : null,
    idle: sum ? sum.idle_cores_pct : null,
    finding: top ? `${top.kind}${top.impact_s ? ` (${fmtDuration(top.impact_s)})` : ""}: ${top.text}` : "",
    rest: a ? a.rest : null,
  };
  row.text = `${row.id} ${row.name} ${row.user} ${row.finding}`.toLowerCase();
  return row;
}

function fmtStart(t) {
  if (t === null || t === undefined) return "";
  const d = new Date(t * 1000);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

function fmtDuration(s) {
  if (s === null || s === undefined) return "";
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
}

function compare(key, dir) {
  return (a, b) => {
    const x = a[key], y = b[key];
    if (x === y) return a.id < b.id ? -1 : a.id > b.id ? 1 : 0; // ties in a stable order: by id
    if (x === null || x === undefined || x === "") return 1; // blanks last, either way
    if (y === null || y === undefined || y === "") return -1;
    return (x < y ? -1 : 1) * dir;
  };
}

function applyView() {
  const text = $("#apps-filter").value.trim().toLowerCase();
  const status = $("#apps-status").value;
  T.shown = T.rows.filter((r) => (!status || r.status === status) && (!text || r.text.includes(text)));
  T.shown.sort(compare(T.sort.key, T.sort.dir));
  $("#apps-count").textContent = T.shown.length === T.rows.length ? `${T.rows.length}`
    : `${T.shown.length} of ${T.rows.length}`;
  for (const b of document.querySelectorAll("#apps-head [data-sort]")) {
    b.dataset.dir = b.dataset.sort === T.sort.key ? (T.sort.dir > 0 ? "asc" : "desc") : "";
  }
  $("#apps-spacer").style.height = `${T.shown.length * ROW_HEIGHT}px`;
  T.version += 1;
  draw();
}

const CELLS = 10; // id, name, user, start, duration, status, jobs, idle cores, top finding, REST

// A row element, made once and filled again as the table scrolls (no HTML is parsed while scrolling).
function makeRow() {
  const row = document.createElement("div");
  row.className = "apps-row clickable";
  row.setAttribute("role", "row");
  for (let i = 0; i < CELLS; i++) row.appendChild(document.createElement("span"));
  for (const i of [3, 4, 6, 7]) row.children[i].className = "num";
  const pill = document.createElement("span");
  const opened = document.createElement("span");
  opened.className = "muted";
  opened.title = "replayed, in memory";
  opened.textContent = " ●";
  row.children[5].append(pill, opened);
  const rest = document.createElement("a");
  rest.textContent = "REST";
  rest.target = "_blank";
  rest.rel = "noopener";
  rest.dataset.rest = "1";
  row.children[9].appendChild(rest);
  return row;
}

function fillRow(row, r) {
  const c = row.children;
  row.dataset.sid = r.id;
  row.dataset.status = r.status;
  c[0].textContent = r.id;
  c[0].title = r.id;
  c[1].textContent = r.name;
  c[1].title = r.name;
  c[2].textContent = r.user;
  c[3].textContent = fmtStart(r.start);
  c[4].textContent = fmtDuration(r.duration);
  const pill = c[5].firstChild;
  pill.className = `pill ${r.status === "in_progress" ? "live" : r.status === "failed" || r.status === "incomplete" ? "failed" : ""}`;
  pill.textContent = STATUS_TEXT[r.status] || r.status;
  c[5].lastChild.hidden = !r.opened;
  c[6].textContent = r.jobs === null ? "" : String(r.jobs);
  c[7].textContent = r.idle === null ? "" : `${r.idle}%`;
  c[8].textContent = r.finding;
  c[8].title = r.finding;
  const rest = c[9].firstChild;
  rest.hidden = !r.rest;
  if (r.rest) rest.href = r.rest;
}

// Only the rows in view (and a few around them) are in the DOM, refilled as the table scrolls.
function draw() {
  const box = $("#apps-scroll");
  // A scroll position left over from a longer list (the browser clamps it later) still shows the list's end.
  const inView = Math.ceil(box.clientHeight / ROW_HEIGHT);
  const first = Math.max(0, Math.min(Math.floor(box.scrollTop / ROW_HEIGHT), T.shown.length - inView) - OVERSCAN);
  const last = Math.max(first, Math.min(T.shown.length, Math.ceil((box.scrollTop + box.clientHeight) / ROW_HEIGHT) + OVERSCAN));
  const key = `${first}:${last}:${T.version}`;
  if (key === T.drawn) return;
  T.drawn = key;
  const rows = $("#apps-rows");
  while (rows.children.length < last - first) rows.appendChild(makeRow());
  while (rows.children.length > last - first) rows.lastElementChild.remove();
  rows.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
  for (let i = first; i < last; i++) fillRow(rows.children[i - first], T.shown[i]);
}

async function refresh() {
  let res;
  try {
    res = await fetch("/api/sessions", { headers: T.etag ? { "If-None-Match": T.etag } : {} });
  } catch (e) { return; }
  if (res.status === 304 || !res.ok) return;
  T.etag = res.headers.get("ETag");
  T.rows = (await res.json()).map(toRow);
  applyView();
}

function bind() {
  if (T.bound) return;
  T.bound = true;
  $("#apps-scroll").addEventListener("scroll", draw, { passive: true }); // scroll events come once a frame
  const fromTop = () => { $("#apps-scroll").scrollTop = 0; applyView(); }; // a new filter shows its first rows
  $("#apps-filter").addEventListener("input", fromTop);
  $("#apps-status").addEventListener("change", fromTop);
  $("#apps-head").addEventListener("click", (ev) => {
    const key = ev.target.closest("[data-sort]")?.dataset.sort;
    if (!key) return;
    T.sort = { key, dir: T.sort.key === key ? -T.sort.dir : (key === "start" || key === "duration" ? -1 : 1) };
    applyView();
  });
  $("#apps-rows").addEventListener("click", (ev) => {
    if (ev.target.closest("[data-rest]")) return; // the link opens itself
    const row = ev.target.closest("[data-sid]");
    if (row) location.hash = `#/s/${row.dataset.sid}`;
  });
  window.addEventListener("resize", () => { T.drawn = ""; draw(); });
}

// Show the table (the landing page of a server that follows a directory) and keep it current while it is shown.
export async function showApplications() {
  bind();
  $("#apps-card").hidden = false;
  $("#sessions-card").hidden = true;
  T.etag = null;
  await refresh();
  clearInterval(T.timer);
  T.timer = setInterval(() => {
    if ($("#landing").hidden) { clearInterval(T.timer); T.timer = null; return; }
    refresh();
  }, REFRESH_MS);
}
