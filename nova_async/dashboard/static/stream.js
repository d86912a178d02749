// The tab's one live stream: GET /compute/v2.1/events read as Server-Sent Events. fetch()
// rather than EventSource, because EventSource cannot send X-Auth-Token (and a token in the
// URL would end up in logs). After a drop it reconnects with the last id it saw
// (Last-Event-ID), so the server replays what was missed; a `reset` means the gap was too
// old to replay and every page reloads what it shows.

import * as api from "./api.js";

const subscribers = new Set();
// The last events this tab saw since it logged in, oldest first: the activity page shows
// them when opened later (a ring buffer, so a long-open tab keeps a bounded amount).
const HISTORY = 500;
const recent = [];
let controller = null;
let lastId = null;
let stateListener = () => {};

/** fn(type, data, id) for every event; returns the unsubscribe function. */
export function subscribe(fn) {
  subscribers.add(fn);
  return () => subscribers.delete(fn);
}

let connected = null;       // resolves when the stream first answers (see ready())
let markConnected = () => {};

/**
 * Resolves once the stream is connected (or after `ms`, so that a page never waits on a
 * stream that is down). A page that reads state over REST after this, having subscribed
 * before, misses no change: every change after the read comes on the stream.
 */
export function ready(ms = 3000) {
  return Promise.race([connected || Promise.resolve(), new Promise((r) => setTimeout(r, ms))]);
}

/** fn("on" | "retry" | "off") as the connection changes (the header's dot). */
export function onState(fn) { stateListener = fn; }

/** The events seen so far (oldest first): {type, data, id, at}. */
export function history() { return recent.slice(); }

function emit(type, data, id) {
  recent.push({ type, data, id, at: new Date().toISOString() });
  if (recent.length > HISTORY) recent.splice(0, recent.length - HISTORY);
  for (const fn of [...subscribers]) {
    try { fn(type, data, id); } catch (err) { console.error("event subscriber failed", err); }
  }
}

export function start() {
  stop();
  connected = new Promise((r) => { markConnected = r; });
  controller = new AbortController();
  run(controller.signal);
}

export function stop() {
  if (controller) controller.abort();
  controller = null;
  lastId = null;
  recent.length = 0;
  stateListener("off");
}

async function run(signal) {
  let delay = 500;
  let dropped = false;
  while (!signal.aborted && api.current()) {
    try {
      const query = api.isAdmin() ? { all_tenants: 1 } : undefined;
      const h = api.headers("compute", { Accept: "text/event-stream" });
      if (lastId) h["Last-Event-ID"] = lastId;
      const resp = await fetch(api.url("compute", "/events", query), { headers: h, signal });
      if (resp.status === 401) { await api.logout(); return; }
      if (!resp.ok || !resp.body) throw new Error(`event stream: ${resp.status}`);
      stateListener("on");
      // Back without a cursor (it dropped before its first id): what changed meanwhile cannot
      // be replayed, so the pages reload what they show, as after a reset.
      if (dropped && !lastId) emit("reset", { reason: "reconnected without a cursor" }, null);
      markConnected();
      delay = 500;
      await read(resp.body, signal);
    } catch (err) {
      if (signal.aborted) return;
      console.warn("event stream dropped; reconnecting", err);
    }
    dropped = true;
    stateListener("retry");
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 10000);
  }
}

async function read(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let event = { type: "message", data: [], id: null };
  while (!signal.aborted) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let nl;
    while ((nl = buffer.search(/\r\n|\n|\r/)) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
      if (line === "") {
        // An id with no data still moves the cursor (the server's keepalive carries one when
        // it went past events this client may not see): a reconnect starts there.
        if (event.id !== null) lastId = event.id;
        if (event.data.length) {
          let data;
          try { data = JSON.parse(event.data.join("\n")); } catch { data = event.data.join("\n"); }
          emit(event.type, data, event.id);
        }
        event = { type: "message", data: [], id: null };
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event.type = value;
      else if (field === "data") event.data.push(value);
      else if (field === "id") event.id = value;
    }
  }
}
