// Which graph view draws a scope: SVG (one element per port; simple, and every element inspectable) for small
// scopes, canvas (canvas.js) for large ones, where thousands of elements stop being fluid. `?renderer=canvas`
// or `?renderer=svg` in the page's address forces one.

import { $ } from "../dom.js";
import { ui } from "../state.js";

export const CANVAS_FROM = 400; // boxes in a scope from which the canvas draws it

export function chooseGraph(layout) {
  const forced = new URLSearchParams(location.search).get("renderer");
  const canvas = forced ? forced === "canvas" : layout.nodes.length >= CANVAS_FROM;
  const next = canvas ? ui.canvasGraph : ui.svgGraph;
  if (next !== ui.graph) {
    ui.graph.selectPort(null);
    ui.graph.clearHighlight();
  }
  $("#graph").toggleAttribute("hidden", canvas);
  $("#graph-canvas").toggleAttribute("hidden", !canvas);
  if (canvas) for (const id of ["#nodes", "#edges"]) $("#graph").querySelector(id).innerHTML = ""; // nothing kept while hidden
  ui.graph = next;
  return next;
}
