// Volumes (the block-storage v3 API, /volume/v3/{project_id}): list, create (empty or from
// an image), extend, delete. Only when the token's catalog lists a volume service: a cloud
// without one says so instead of failing.

import { h, clear, pageHeading, ready, table, badge, field, select, modal, confirm, toast, fieldError, blame,
         rowButton, rowActions, age, settle, coalesce } from "../ui.js";

// Statuses a volume passes through on its own; the page follows it until it leaves them.
const MOVING = new Set(["creating", "extending", "deleting", "downloading", "attaching", "detaching", "reserved"]);

export default async function volumes(view, { api, stream }) {
  view.append(pageHeading("Volumes"));
  if (!await api.hasService("block-storage", "volumev3")) {
    view.append(h("p", { class: "empty" }, "This cloud has no volume service."));
    return undefined;
  }
  const leaving = new AbortController();
  const list = h("div");
  view.querySelector(".head-actions").append(h("button", { type: "button", onclick: () => create() }, "Create volume"));
  view.append(list);
  let servers = new Map();

  async function load() {
    const [v, s] = await Promise.all([api.get("volume", "/volumes/detail"),
                                      api.get("compute", "/servers").catch(() => ({ servers: [] }))]);
    servers = new Map(s.servers.map((x) => [x.id, x.name]));
    clear(list, table([
      { label: "Name", value: (x) => x.name || x.id },
      { label: "Status", value: (x) => badge(x.status) },
      { label: "Size", class: "num", value: (x) => `${x.size} GiB` },
      { label: "Type", value: (x) => x.volume_type || "" },
      { label: "Attached to", value: (x) => attached(x) },
      { label: "Bootable", value: (x) => (x.bootable === "true" ? "yes" : "no") },
      { label: "Age", value: (x) => age(x.created_at) },
      { label: "", value: (x) => rowActions(
          rowButton("Extend", `Extend volume ${x.name || x.id}`, () => extend(x), { disabled: x.status !== "available" }),
          rowButton("Delete", `Delete volume ${x.name || x.id}`, () => remove(x),
                    { danger: true, disabled: !["available", "error", "error_extending"].includes(x.status) })) },
    ], v.volumes, { rowKey: (x) => x.id, empty: "No volumes yet: create one." }));
    for (const x of v.volumes) if (MOVING.has(x.status)) follow(x.id);
  }

  function attached(x) {
    if (!x.attachments?.length) return h("span", { class: "muted" }, "—");
    return h("ul", { class: "sub-list" }, x.attachments.map((a) => h("li", {},
      h("a", { href: `#/servers/${a.server_id}` }, servers.get(a.server_id) || a.server_id), a.device ? ` on ${a.device}` : "")));
  }

  const following = new Set();
  async function follow(id) {
    if (following.has(id)) return;
    following.add(id);
    try {
      await settle(() => api.get("volume", `/volumes/${id}`).then((d) => d.volume, () => null),
                   (vol) => !vol || !MOVING.has(vol.status), { signal: leaving.signal });
    } finally {
      following.delete(id);
    }
    if (!leaving.signal.aborted) await load();
  }

  async function create() {
    const [types, images] = await Promise.all([
      api.get("volume", "/types").catch(() => ({ volume_types: [] })),
      api.get("image", "/images", { status: "active", limit: 1000 }).catch(() => ({ images: [] }))]);
    return modal("Create a volume", (form) => {
      form.append(
        field("Name", h("input", { name: "name", maxlength: 255 })),
        field("Size (GiB)", h("input", { name: "size", type: "number", min: 1, value: 1, required: true })),
        field("Type", select("volume_type", [["", "the default"], ...types.volume_types.map((t) => [t.name, t.name])])),
        field("From image", select("imageRef", [["", "— empty —"], ...images.images.map((i) => [i.id, `${i.name || i.id} (${Math.ceil((i.size || 0) / 2 ** 30)} GiB)`])]),
              "The image's bytes written onto the new volume (then bootable)."),
        field("Description", h("input", { name: "description", maxlength: 255 })));
    }, async (form) => {
      const v = (n) => form.elements[n].value.trim();
      const size = Number(v("size"));
      if (!Number.isInteger(size) || size < 1) throw fieldError("size", "A whole number of GiB, at least 1.");
      const body = { size };
      for (const k of ["name", "volume_type", "imageRef", "description"]) if (v(k)) body[k] = v(k);
      let made;
      try {
        made = (await api.post("volume", "/volumes", { volume: body })).volume;
      } catch (err) {
        throw blame(err, { size: /size|gigabytes|quota/i, imageRef: /image/i, volume_type: /type/i, name: /name/i });
      }
      toast(`Volume ${made.name || made.id} is being created.`, "ok");
      await load();
      return made;
    }, { action: "Create" });
  }

  function extend(x) {
    return modal(`Extend ${x.name || x.id}`, (form) => {
      form.append(field("New size (GiB)", h("input", { name: "new_size", type: "number", min: x.size + 1, value: x.size + 1, required: true }),
                        `Now ${x.size} GiB; a volume only grows.`));
    }, async (form) => {
      const size = Number(form.elements.new_size.value);
      if (!(size > x.size)) throw fieldError("new_size", `More than ${x.size} GiB.`);
      try {
        await api.post("volume", `/volumes/${x.id}/action`, { "os-extend": { new_size: size } });
      } catch (err) { throw fieldError("new_size", err.message); }
      toast(`Volume ${x.name || x.id} is being extended to ${size} GiB.`, "ok");
      await load();
      return true;
    }, { action: "Extend" });
  }

  async function remove(x) {
    if (!await confirm(`Delete the volume “${x.name || x.id}” and its data (${x.size} GiB)?`, { action: "Delete" })) return;
    try {
      await api.del("volume", `/volumes/${x.id}`);
      toast(`Volume ${x.name || x.id} is being deleted.`, "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  await load();
  ready(view);
  // A volume attached or detached from a server's page shows here as it happens: the server's
  // instance action, finished, arrives on the tab's event stream.
  const reload = coalesce(load);
  const unsubscribe = stream.subscribe((type, data) => {
    if (type === "action" && /volume/.test(data.action || "") && data.finish_time) reload();
  });
  return () => { leaving.abort(); reload.cancel(); unsubscribe(); };
}
