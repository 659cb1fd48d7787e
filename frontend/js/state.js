// The page's state, declared in one place with every field. Modules read and write these fields; no other
// module-level mutable state holds what the page shows. `ui` holds the components, created by page.js's start().

export const S = {
  // the session and scope on screen
  sid: null, // session id, null on the landing page
  info: null, // GET /api/sessions/{sid}: name, status, batches, first_at, ...
  tree: null, // the scope tree (breadcrumbs)
  scope: [], // the path of the scope on screen
  layout: null, // the scope's graph layout, as the server sends it
  // what moment is shown
  mode: "live", // live: follow the head through the stream; history: a batch fetched over REST
  batch: 0, // the batch on screen
  lastAt: null, // wall time (s) of that batch
  rows: new Map(), // live port rows by key ("in,3,0") from the stream
  historyRows: null, // port rows of a batch fetched over REST (history mode)
  userTime: null, // the time ports are coloured against; null: auto (the least time in flight in this scope)
  time: null, // the time the last frame coloured against
  // interaction
  selected: null, // {type: "port", key} | {type: "box", box}
  matches: null, // boxes matching the search, or null
  diff: null, // the diff on screen (diff.js), or null
  findingMarks: [], // the session's finding marks (stragglers, skewed stages): graph badges (finding_badges.js)
  // drawing: what the next frame must redraw
  pendingKeys: null, // ports changed since the last frame (Set), or null
  pendingFull: false, // redraw every port next frame
  pendingLatency: null, // wall time the oldest undrawn batch entered the tracker (benchmarks)
  pendingSince: null, // performance.now() when the oldest undrawn stream message arrived
  renderQueued: false, // a frame is requested
  frame: 0, // frames drawn
  // requests in flight: answers to older ones are dropped
  seekSeq: 0,
  scopeSeq: 0,
  // read by tests and benchmarks
  firstRender: undefined, // undefined: not yet; null: drawn, waiting for paint; number: performance.now() at paint
  drawerOpened: false,
  firstPictureWaiters: [], // resolve functions of afterFirstPicture() (frames.js)
  latency: [], // seconds from a batch entering the tracker to its frame painted
  drawLag: [], // ms from a stream message arriving to the frame that draws it (the last 1,000)
  socket: null, // the LiveSocket of this session (live_socket.js)
};

// The components (graph view, side panel, timeline, drawer), set by page.js's start().
export const ui = {
  graph: null, // the active graph view: SVG (small scopes) or canvas (large ones)
  svgGraph: null,
  canvasGraph: null,
  panel: null,
  timeline: null,
  drawer: null,
  diff: null, // the diff view (the drawer's Diff tab)
};
