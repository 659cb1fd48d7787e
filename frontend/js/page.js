// The page: wires the components and the modules together when start() is called (app.js calls it). Each
// concern lives in its own module, each view in its own folder:
//   state.js            the page's state, every field declared in one place
//   workspace.js        one session on screen: its scope, breadcrumbs, status, relayout
//   live_socket.js      the WebSocket that keeps the scope's live rows
//   selection.js        select, hover tooltip, explain highlight
//   search.js, keys.js, toast.js, times.js, api.js, dom.js (the one `esc`)
//   navigation/         the address bar (address.js), the route it names and every move to another scope and
//                       moment (routing.js), the sessions list and the open/upload forms (landing.js)
//                       or, for a server following a directory, its applications table (applications.js)
//   graph/              SVG (svg.js) for small scopes, canvas (canvas.js) for large ones, picked by
//                       renderer_choice.js; camera.js frames both; labels.js and finding_badges.js: what a box shows
//   timeline/           the timeline (timeline.js), the live head or a batch in the past (moments.js), socket
//                       messages and history answers coalesced into one draw per animation frame (frames.js)
//   side/               the side panel (panel.js): details, "why is this stuck", its late tasks and what-if
//   drawer/             the drawer and its tabs, e.g. diff.js (what changed between two moments) and plan.js (a SQL
//                       execution's plan; its operators' stages are shown here); overview.js, the Overview a Spark
//                       application opens with (the graph one click away)
// Imports run one way (a test checks there is no circle): a module that needs a move made by a module above it
// gets it as a handler from here, as the components do.
// Progress is never recomputed here: the page shows what the server sends.

import * as api from "./api.js";
import { $ } from "./dom.js";
import { S, ui } from "./state.js";
import { GraphView } from "./graph/svg.js";
import { CanvasGraphView } from "./graph/canvas.js";
import { Timeline } from "./timeline/timeline.js";
import { SidePanel } from "./side/panel.js";
import { Drawer } from "./drawer/drawer.js";
import { toast } from "./toast.js";
import { parseHash } from "./navigation/address.js";
import { route, gotoFinding, openFinding, openBlameSegment, followHold } from "./navigation/routing.js";
import { bindLanding } from "./navigation/landing.js";
import { openScope, refreshInfo } from "./workspace.js";
import { seek, seekTime, goLive } from "./timeline/moments.js";
import { selectPort, selectBox, clearSelection, pinnedNodes, explain, hover, showFindings } from "./selection.js";
import { bindSearch } from "./search.js";
import { bindControls } from "./keys.js";
import { DiffView, diffMarks } from "./drawer/diff.js";
import { bindOverview } from "./drawer/overview.js";

function graphHandlers() {
  return {
    onPort: (key) => selectPort(key),
    onBox: (node) => selectBox(node),
    onOpen: (path) => openScope(path),
    onHover: (key, ev, node) => hover(key, ev, node),
    onFinding: (node) => showFindings(node),
    onBackground: () => clearSelection(),
  };
}

// A plan operator's stages in the job graph: its SQL execution's region opened, the stages' boxes marked and the
// first selected (plan.js calls it when an operator is selected).
async function showPlanStages(scope, stages) {
  if (scope && JSON.stringify(scope) !== JSON.stringify(S.scope)) await openScope(scope);
  const boxes = new Set((S.layout ? S.layout.nodes : [])
    .filter((n) => n.attrs && Array.isArray(n.attrs.stage_ids) && n.attrs.stage_ids.some((s) => stages.includes(s)))
    .map((n) => n.box));
  ui.graph.markMatches(boxes);
  const first = boxes.values().next().value;
  if (first !== undefined) ui.graph.selectBox(first);
}

function createComponents() {
  ui.svgGraph = new GraphView($("#graph"), graphHandlers());
  ui.canvasGraph = new CanvasGraphView($("#graph-canvas"), graphHandlers());
  ui.graph = ui.svgGraph;
  ui.panel = new SidePanel($("#details"), $("#why"), {
    explain: (key, t) => explain(key, t),
    followHold: (next) => followHold(next),
    openScope: (path) => openScope(path),
    selectPort: (key) => selectPort(key),
    focusPort: (key) => { const p = ui.graph.ports.get(key); if (p) ui.graph.focusBox(p.box); },
    openFinding: (f) => openFinding(f),
    toast,
  });
  ui.timeline = new Timeline($("#timeline"), {
    seek: (batch, playing) => seek(batch, playing),
    seekTime: (text) => seekTime(text),
    goLive: () => goLive(),
    atHead: () => goLive(),
  });
  ui.drawer = new Drawer($("#drawer"), {
    seek: (batch) => seek(batch),
    goto: (scope, batch, port) => gotoFinding(scope, batch, port),
    openFinding: (f) => openFinding(f),
    openSegment: (t, seg) => openBlameSegment(t, seg),
    session: () => (S.sid ? { sid: S.sid, scope: S.scope, info: S.info, at: S.lastAt, opened: S.drawerOpened } : null),
    opened: () => { S.drawerOpened = true; }, // from now on every frame refreshes the drawer (its cursor moves)
    pinned: () => pinnedNodes(),
    operators: () => (S.layout ? S.layout.nodes.filter((n) => n.kind === "operator" || n.kind === "scope").map((n) => n.id) : []),
    planStages: (scope, stages) => showPlanStages(scope, stages),
    toast,
  });
  ui.diff = new DiffView($("#tab-diff"), {
    context: () => ({ sid: S.sid, scope: S.scope, batch: S.batch, layout: S.layout }),
    show: (d) => { S.diff = d; ui.graph.markDiff(d ? diffMarks(d) : null); },
    selectPort: (key) => selectPort(key),
    toast,
  });
  $('#tabs button[data-tab="diff"]').addEventListener("click", () => ui.diff.suggest());
}

export async function start() {
  performance.mark("fs:start"); // the modules are loaded and evaluated (benchmarks read the fs: marks)
  window.__flowscope = S; // for tests and benchmarks: read-only use
  window.__flowscopeUI = ui;
  createComponents();
  bindLanding();
  bindSearch({ openScope: (path) => openScope(path), selectBox: (node) => selectBox(node) });
  bindControls({ seek: (batch) => seek(batch), openScope: (path) => openScope(path) });
  bindOverview({ openFinding, openSegment: openBlameSegment, goto: gotoFinding });
  window.addEventListener("hashchange", route);
  setInterval(refreshInfo, 1000);
  if (!parseHash()) {
    try {
      const sessions = await api.get("/api/sessions");
      if (sessions.length === 1) { location.hash = `#/s/${sessions[0].id}`; return; }
    } catch (e) { /* the landing page shows it */ }
  }
  route();
}
