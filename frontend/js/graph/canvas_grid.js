// Where the canvas view's boxes are: a spatial grid over the world, each box filed in the cells its region meets
// (the part of the world it paints: itself, its ports and its badges). Hit tests, partial repaints and a view of
// part of a scope ask it for the boxes meeting a rectangle instead of looking at every box.

const CELL = 256; // spatial grid cell (world units)
const MARGIN_X = 80, MARGIN_Y = 22, MARGIN_BELOW = 6; // a box's region: its badges reach out of it

// The part of the world a box paints: itself, its ports and its badges, as [x0, y0, x1, y1].
export function region(n) {
  return [n.x - MARGIN_X, n.y - MARGIN_Y, n.x + n.w + MARGIN_X, n.y + n.h + MARGIN_BELOW];
}

// A grid cell's key (cells are at most a few thousand either way).
function cellKey(cx, cy) {
  return cx * 65536 + cy;
}

export class BoxGrid {
  // boxes: the view's box entries ({node, ...}), filed once
  constructor(boxes) {
    const grid = (this.cells = new Map());
    for (const b of boxes) {
      const [x0, y0, x1, y1] = region(b.node);
      for (let cx = Math.floor(x0 / CELL); cx <= Math.floor(x1 / CELL); cx++) {
        for (let cy = Math.floor(y0 / CELL); cy <= Math.floor(y1 / CELL); cy++) {
          const k = cellKey(cx, cy);
          const cell = grid.get(k);
          if (cell) cell.push(b); else grid.set(k, [b]);
        }
      }
    }
  }

  // The boxes whose regions meet the rectangle [x0, y0, x1, y1], each once.
  inRect([x0, y0, x1, y1]) {
    const out = new Set();
    for (let cx = Math.floor(x0 / CELL); cx <= Math.floor(x1 / CELL); cx++) {
      for (let cy = Math.floor(y0 / CELL); cy <= Math.floor(y1 / CELL); cy++) {
        const cell = this.cells.get(cellKey(cx, cy));
        if (!cell) continue;
        for (const b of cell) {
          const n = b.node;
          if (n.x + n.w + MARGIN_X >= x0 && n.x - MARGIN_X <= x1 && n.y + n.h + MARGIN_BELOW >= y0 && n.y - MARGIN_Y <= y1) out.add(b);
        }
      }
    }
    return [...out];
  }
}
