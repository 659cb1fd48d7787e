// The live socket: the page's WebSocket client (Structured Streaming is structured_streaming.js), one connection
// per watched scope. Keeps the live state of that scope (port rows by key) from a snapshot plus deltas, and
// reconnects after a drop by *resuming*: it sends the last batch it has, and the server answers with only the
// ports that changed since (backend/sessions/fanout.py).

import { bundle, bundleSnapshot } from "./api.js";

// The socket index.html opened for the address's scope while the modules loaded, if it is this one and still
// usable: taken once (any other use of the page opens its own).
function takeFirstStream(sid, scope) {
  const first = typeof window !== "undefined" ? window.__flowscopeFirstStream : null;
  if (!first) return null;
  window.__flowscopeFirstStream = null;
  if (first.sid === sid && first.scope === scope.join(",") && first.ws.readyState <= WebSocket.OPEN) return first;
  first.ws.close();
  return null;
}

export class LiveSocket {
  constructor(sid, handlers) {
    this.sid = sid;
    this.h = handlers;
    this.scope = [];
    this.rows = new Map();
    this.batch = null;
    this.ws = null;
    this.closed = false;
    this.retry = 250;
    this.connected = false;
  }

  watch(scope) {
    this.scope = scope;
    this.rows = new Map();
    this.batch = null;
    if (bundle) { this.connect(); return; }
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify({ type: "watch", scope, since: null }));
    } else {
      this.connect();
    }
  }

  connect() {
    if (bundle) { // a post-mortem: the stored head state, once
      const scope = this.scope;
      setTimeout(() => { if (!this.closed) this._message(bundleSnapshot(scope)); }, 0);
      return;
    }
    if (this.ws) { this.ws.onclose = null; this.ws.close(); }
    const first = this.batch === null ? takeFirstStream(this.sid, this.scope) : null;
    let ws;
    if (first) {
      ws = first.ws;
      this.h.received = first.messages.length > 0; // index.html marked its arrival
    } else {
      const proto = location.protocol === "https:" ? "wss:" : "ws:";
      const q = new URLSearchParams({ scope: this.scope.join(",") });
      if (this.batch !== null) q.set("since", this.batch);
      ws = new WebSocket(`${proto}//${location.host}/api/sessions/${this.sid}/stream?${q}`);
    }
    this.ws = ws;
    const opened = () => { this.retry = 250; this.connected = true; this.h.onStatus && this.h.onStatus("connected"); };
    ws.onopen = () => { performance.mark("fs:ws-open"); opened(); };
    ws.onmessage = (ev) => { if (!this.h.received) { this.h.received = true; performance.mark("fs:ws-message"); } this._message(JSON.parse(ev.data)); };
    if (first) { // what it got so far, as if it came now (after the caller's own setup: a microtask, before any event)
      queueMicrotask(() => {
        if (first.opened) opened();
        if (this.ws === ws) for (const data of first.messages) this._message(JSON.parse(data));
      });
    }
    ws.onclose = (ev) => {
      this.connected = false;
      if (this.closed || ev.code === 4404) { this.h.onStatus && this.h.onStatus("closed", ev.reason); return; }
      this.h.onStatus && this.h.onStatus("reconnecting");
      setTimeout(() => { if (!this.closed) this.connect(); }, this.retry);
      this.retry = Math.min(5000, this.retry * 2);
    };
  }

  close() {
    this.closed = true;
    if (this.ws) this.ws.close();
  }

  _message(msg) {
    if (msg.type === "error") { this.h.onError && this.h.onError(msg.detail); return; }
    if (String(msg.scope) !== String(this.scope)) return; // a message for the scope we just left
    let keys = null;
    if (msg.type === "snapshot") {
      performance.mark("fs:snapshot");
      this.rows = new Map();
      for (const r of msg.ports) this.rows.set(`${r[0]},${r[1]},${r[2]}`, r);
    } else {
      keys = [];
      for (const r of msg.ports) {
        const key = `${r[0]},${r[1]},${r[2]}`;
        this.rows.set(key, r);
        keys.push(key);
      }
    }
    this.batch = msg.batch;
    this.h.onState(msg, keys);
  }
}
