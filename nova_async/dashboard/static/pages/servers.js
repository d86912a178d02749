// #/servers: the list, live. It is loaded once over REST (GET /servers/detail) and then kept
// in step by the tab's event stream: a `server` event replaces its row in place, adds a new
// one, or removes a deleted one. No reload and no polling loop; "Refresh" asks again by hand.
// #/servers/new (launch) and #/servers/<id> (one server) are their own modules.

import { h, clear, heading, table, badge, age, confirm, toast, powerState } from "../ui.js";
import { imageNames, addressText, imageText } from "../server_text.js";

export default async function (view, ctx) {
  if (ctx.params[0] === "new") return (await import("./launch.js")).default(view, ctx);
  if (ctx.params[0]) return (await import("./server.js")).default(view, ctx);
  const { api, stream } = ctx;
  const admin = api.isAdmin();
  const servers = new Map();
  let names = new Map();
  let projects = new Map();

  const filter = h("input", { type: "search", placeholder: "Name, status or address", "aria-label": "Filter servers" });
  const statusSelect = h("select", { "aria-label": "Status" }, h("option", { value: "" }, "Any status"));
  const deleteButton = h("button", { class: "danger", disabled: true }, "Delete selected");
  const count = h("span", { class: "muted", "aria-live": "polite" });
  const selectAll = h("input", { type: "checkbox", "aria-label": "Select all shown" });

  const columns = [
    { header: selectAll, label: "", class: "check", value: (s) => h("input", {
      type: "checkbox", class: "pick", value: s.id, "aria-label": `Select ${s.name}` }) },
    { label: "Name", value: (s) => h("a", { href: `#/servers/${s.id}` }, s.name || s.id) },
    ...(admin ? [{ label: "Project", value: (s) => projects.get(s.tenant_id) || (s.tenant_id || "").slice(0, 8) }] : []),
    { label: "Status", value: (s) => badge(s.status) },
    { label: "Task", value: (s) => s["OS-EXT-STS:task_state"] || "" },
    { label: "Power", value: (s) => powerState(s["OS-EXT-STS:power_state"]) },
    ...(admin ? [{ label: "Host", value: (s) => s["OS-EXT-SRV-ATTR:host"] || "" }] : []),
    { label: "Addresses", class: "mono", value: (s) => addressText(s.addresses) },
    { label: "Flavor", value: (s) => (s.flavor && s.flavor.original_name) || "" },
    { label: "Image", value: (s) => imageText(s.image, names) },
    { label: "Age", value: (s) => age(s.created) },
  ];
  const list = table(columns, [], { rowKey: (s) => s.id, empty: "No servers." });
  list.setAttribute("aria-label", "Servers");

  const matches = (s) => {
    const text = filter.value.trim().toLowerCase();
    const status = statusSelect.value;
    if (status && s.status !== status) return false;
    if (!text) return true;
    return [s.name, s.id, s.status, s["OS-EXT-STS:task_state"], addressText(s.addresses)]
      .some((v) => v && String(v).toLowerCase().includes(text));
  };
  const picked = () => [...list.body.querySelectorAll("input.pick:checked")]
    .filter((box) => !box.closest("tr").hidden).map((box) => box.value);
  const refreshControls = () => {
    const shown = [...servers.values()].filter(matches).length;
    count.textContent = `${shown} of ${servers.size}`;
    const n = picked().length;
    deleteButton.disabled = n === 0;
    deleteButton.textContent = n ? `Delete selected (${n})` : "Delete selected";
    const statuses = [...new Set([...servers.values()].map((s) => s.status))].sort();
    const current = statusSelect.value;
    if (statuses.join() !== [...statusSelect.options].slice(1).map((o) => o.value).join()) {
      statusSelect.replaceChildren(h("option", { value: "" }, "Any status"),
        ...[...new Set([...statuses, current].filter(Boolean))].sort().map((s) => h("option", { value: s }, s)));
      statusSelect.value = current;
    }
    list.refreshEmpty();
  };
  const applyFilter = () => {
    for (const tr of list.body.rows) {
      const s = servers.get(tr.dataset.key);
      if (s) tr.hidden = !matches(s);
    }
    refreshControls();
  };
  const row = (id) => list.body.querySelector(`tr[data-key="${CSS.escape(id)}"]`);

  /** Put a server's row in the table: replaced where it is (keeping its checkbox), or added on top. */
  const show = (s, { flash = false } = {}) => {
    const old = row(s.id);
    const tr = list.renderRow(s);
    tr.hidden = !matches(s);
    if (old) {
      tr.querySelector("input.pick").checked = old.querySelector("input.pick").checked;
      old.replaceWith(tr);
    } else {
      list.body.prepend(tr);
    }
    if (flash) tr.classList.add("changed");
  };

  async function load() {
    const query = admin ? { all_tenants: 1 } : {};
    const [{ servers: found }, images, known] = await Promise.all([
      api.get("compute", "/servers/detail", query), imageNames(api),
      admin ? api.get("identity", "/projects").then((r) => new Map(r.projects.map((p) => [p.id, p.name])), () => new Map())
        : Promise.resolve(new Map())]);
    names = images;
    projects = known;
    servers.clear();
    for (const tr of [...list.body.rows]) if (tr.dataset.key) tr.remove();
    found.sort((a, b) => (a.created < b.created ? 1 : -1));
    for (const s of found.reverse()) { servers.set(s.id, s); show(s); }
    applyFilter();
  }

  filter.addEventListener("input", applyFilter);
  statusSelect.addEventListener("change", applyFilter);
  list.addEventListener("change", (ev) => {
    if (ev.target === selectAll) {
      for (const box of list.body.querySelectorAll("input.pick")) if (!box.closest("tr").hidden) box.checked = selectAll.checked;
    }
    refreshControls();
  });
  deleteButton.addEventListener("click", async () => {
    const ids = picked();
    const which = ids.map((id) => servers.get(id)?.name || id);
    if (!ids.length || !(await confirm(`Delete ${ids.length} server${ids.length > 1 ? "s" : ""}: ${which.join(", ")}? This cannot be undone.`,
                                       { action: "Delete" }))) return;
    const results = await Promise.allSettled(ids.map((id) => api.del("compute", `/servers/${id}`)));
    const failed = results.map((r, i) => [r, which[i]]).filter(([r]) => r.status === "rejected");
    for (const [r, name] of failed) toast(`${name}: ${r.reason.message}`, "bad");
    if (failed.length < ids.length) toast(`Deleting ${ids.length - failed.length} server(s).`, "ok");
    selectAll.checked = false;
    refreshControls();
  });

  clear(view,
    heading("Servers", h("a", { class: "button", href: "#/servers/new" }, "Launch"),
      h("button", { class: "ghost", onclick: () => load().catch((e) => toast(e.message, "bad")) }, "Refresh")),
    h("div", { class: "toolbar" }, filter, statusSelect, deleteButton, count),
    list);
  // Subscribed before the list is read: what changes while it loads is applied after it
  // (each event carries the server's whole state then, so applying it late converges).
  let queued = [];
  const apply = (type, data) => {
    if (type !== "server") return;
    if (data.deleted) {
      servers.delete(data.id);
      row(data.id)?.remove();
    } else {
      const s = { ...(servers.get(data.id) || {}), ...data };
      servers.set(data.id, s);
      show(s, { flash: true });
    }
    refreshControls();
  };
  const off = stream.subscribe((type, data) => (queued ? queued.push([type, data]) : apply(type, data)));
  try {
    await stream.ready();
    await load();
  } catch (err) {
    off();
    throw err;
  }
  for (const [type, data] of queued) apply(type, data);
  queued = null;
  return off;
}
