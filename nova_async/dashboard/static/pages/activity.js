// #/activity: what happened, newest first — the tab's event stream (server changes, instance
// actions, faults) as it arrives, with what the tab saw before the page was opened (stream.js
// keeps the last 500 events since log-in). Before that, the page seeds itself with the
// servers changed in the last 24 hours (GET /servers/detail?changes-since=…, newest
// `updated` first: one line per server with its state now), so a fresh tab is not empty.
// The seed is a REST read, not a replay: the stream's `since=oldest` would replay the
// whole retained backlog on a second connection, and the tab keeps to one stream.

import { h, clear, badge } from "../ui.js";
import { when } from "../server_text.js";

const SHOWN = 500;

export default async function (view, ctx) {
  const { api, stream } = ctx;
  const admin = api.isAdmin();
  const names = new Map();  // server id → name, for action and fault lines
  const kinds = h("select", { "aria-label": "Show" },
    [["", "Everything"], ["server", "Server changes"], ["action", "Actions"], ["fault", "Faults"]]
      .map(([v, t]) => h("option", { value: v }, t)));
  const feed = h("ol", { class: "feed", "aria-label": "Activity, newest first" });
  const seeded = h("ol", { class: "feed seeded", "aria-label": "Servers changed in the last 24 hours" });

  const link = (id) => h("a", { href: `#/servers/${id}` }, names.get(id) || id.slice(0, 8));
  const line = (ev) => {
    const d = ev.data || {};
    let what;
    if (ev.type === "server") {
      if (d.name) names.set(d.id, d.name);
      what = d.deleted ? [link(d.id), " deleted"]
        : [link(d.id), " ", badge(d.status), d["OS-EXT-STS:task_state"] ? ` ${d["OS-EXT-STS:task_state"]}` : "",
           admin && d["OS-EXT-SRV-ATTR:host"] ? h("span", { class: "muted" }, ` on ${d["OS-EXT-SRV-ATTR:host"]}`) : ""];
    } else if (ev.type === "action") {
      what = [link(d.server_id), " ", h("strong", {}, d.action), d.event ? ` · ${d.event}` : "",
              d.event ? [" ", badge(d.result || "running")] : " started",
              d.message ? h("span", { class: "muted" }, ` — ${d.message}`) : ""];
    } else if (ev.type === "fault") {
      what = [link(d.server_id), " ", badge("ERROR"), ` fault ${d.code ?? ""}: ${d.message || ""}`];
    } else if (ev.type === "reset") {
      what = [h("em", {}, `The stream restarted (${d.reason || "gap too old"}); older lines may be incomplete.`)];
    } else {
      return null;
    }
    return h("li", { dataset: { type: ev.type } }, h("time", { datetime: ev.at }, new Date(ev.at).toLocaleTimeString()), " ", what);
  };
  const filtered = (ev) => !kinds.value || ev.type === kinds.value;
  const redraw = () => {
    feed.replaceChildren(...stream.history().reverse().filter(filtered).slice(0, SHOWN).map(line).filter(Boolean));
    seeded.hidden = !!kinds.value && kinds.value !== "server";
  };
  kinds.addEventListener("change", redraw);

  clear(view, h("h1", {}, "Activity"), h("div", { class: "toolbar" }, kinds,
    h("span", { class: "muted" }, "Live from the event stream; newest first.")), feed,
    h("h2", {}, "Changed in the last 24 hours"), seeded);

  const since = new Date(Date.now() - 24 * 3600 * 1000).toISOString();
  const { servers } = await api.get("compute", "/servers/detail",
    { "changes-since": since, ...(admin ? { all_tenants: 1 } : {}) });
  servers.sort((a, b) => (a.updated < b.updated ? 1 : -1));
  for (const s of servers) names.set(s.id, s.name);
  seeded.replaceChildren(...(servers.length ? servers.map((s) => h("li", {},
    h("time", { datetime: s.updated }, s.updated ? when(s.updated) : ""), " ",
    s.status === "DELETED" ? [s.name, " ", badge("DELETED")] : [link(s.id), " ", badge(s.status),
      s["OS-EXT-STS:task_state"] ? ` ${s["OS-EXT-STS:task_state"]}` : ""])) : [h("li", { class: "muted" }, "Nothing.")]));
  redraw();

  return stream.subscribe((type, data, id) => {
    const ev = stream.history().at(-1);
    if (!ev || ev.id !== id || ev.type !== type) return;
    if (!filtered(ev)) return;
    const li = line(ev);
    if (li) feed.prepend(li);
    while (feed.children.length > SHOWN) feed.lastChild.remove();
  });
}
