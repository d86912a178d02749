// Flavors: what a server may be sized as. Everybody sees the public ones (and those shared
// with their project); admins see every one and make and delete them.

import { h, clear, pageHeading, ready, table, field, modal, confirm, toast, fieldError, blame, rowButton,
         rowActions, checkbox } from "../ui.js";

export default async function flavors(view, { api }) {
  const admin = api.isAdmin();
  const list = h("div");
  view.append(pageHeading("Flavors", admin ? h("button", { type: "button", onclick: () => create(api, load) }, "Create flavor") : null),
              list);

  async function load() {
    // is_public=None: an admin sees the private flavors too (Nova's own spelling of "all").
    const data = await api.get("compute", "/flavors/detail", admin ? { is_public: "None" } : undefined);
    clear(list, table([
      { label: "Name", value: (f) => f.name },
      { label: "vCPUs", class: "num", value: (f) => f.vcpus },
      { label: "RAM", class: "num", value: (f) => `${f.ram} MiB` },
      { label: "Disk", class: "num", value: (f) => `${f.disk} GiB` },
      { label: "Ephemeral", class: "num", value: (f) => `${f["OS-FLV-EXT-DATA:ephemeral"] ?? 0} GiB` },
      { label: "Swap", class: "num", value: (f) => (f.swap ? `${f.swap} MiB` : "—") },
      { label: "Public", value: (f) => (f["os-flavor-access:is_public"] === false ? "no" : "yes") },
      { label: "Extra specs", value: (f) => specs(f.extra_specs) },
      { label: "", value: (f) => rowActions(admin
          ? rowButton("Delete", `Delete flavor ${f.name}`, () => remove(f), { danger: true }) : null) },
    ], data.flavors, { rowKey: (f) => f.id, empty: admin ? "No flavors yet: create one." : "No flavors." }));
  }

  async function remove(f) {
    if (!await confirm(`Delete the flavor “${f.name}”? Servers of this size keep running.`, { action: "Delete" })) return;
    try {
      await api.del("compute", `/flavors/${encodeURIComponent(f.id)}`);
      toast(`Flavor ${f.name} deleted.`, "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  await load();
  ready(view);
}

function specs(extra) {
  const entries = Object.entries(extra || {});
  if (!entries.length) return h("span", { class: "muted" }, "—");
  return h("ul", { class: "sub-list mono" }, entries.map(([k, v]) => h("li", {}, `${k}=${v}`)));
}

function parseSpecs(text) {
  const out = {};
  for (const [n, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw fieldError("extra_specs", `Line ${n + 1}: write key=value.`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

function create(api, reload) {
  const num = (name, attrs) => h("input", { name, type: "number", required: true, ...attrs });
  return modal("Create a flavor", (form) => {
    form.append(
      field("Name", h("input", { name: "name", required: true, maxlength: 255 })),
      field("ID", h("input", { name: "id", placeholder: "made for you" }), "Leave empty for a new UUID."),
      field("vCPUs", num("vcpus", { min: 1, value: 1 })),
      field("RAM (MiB)", num("ram", { min: 1, value: 512 })),
      field("Root disk (GiB)", num("disk", { min: 0, value: 1 }), "0: as large as the image."),
      field("Ephemeral disk (GiB)", num("ephemeral", { min: 0, value: 0 })),
      field("Swap (MiB)", num("swap", { min: 0, value: 0 })),
      checkbox("Public (every project may use it)", "public", { checked: true }),
      field("Extra specs", h("textarea", { name: "extra_specs", rows: 3, placeholder: "hw:cpu_policy=dedicated" }),
            "One key=value a line."));
  }, async (form) => {
    const v = (n) => form.elements[n].value.trim();
    const extra = parseSpecs(form.elements.extra_specs.value);
    const body = { name: v("name"), vcpus: Number(v("vcpus")), ram: Number(v("ram")), disk: Number(v("disk")),
                   "OS-FLV-EXT-DATA:ephemeral": Number(v("ephemeral")), swap: Number(v("swap")),
                   "os-flavor-access:is_public": form.elements.public.checked };
    if (v("id")) body.id = v("id");
    let made;
    try {
      made = (await api.post("compute", "/flavors", { flavor: body })).flavor;
    } catch (err) {
      throw blame(err, { id: /\bid\b|flavor with id/i, vcpus: /vcpu/i, ram: /\bram\b|memory/i,
                         ephemeral: /ephemeral/i, swap: /swap/i, disk: /disk/i, name: /name/i });
    }
    if (Object.keys(extra).length) {
      try {
        await api.post("compute", `/flavors/${encodeURIComponent(made.id)}/os-extra_specs`, { extra_specs: extra });
      } catch (err) {
        // The flavor is half made: take it back so the form can be sent again as it is.
        await api.del("compute", `/flavors/${encodeURIComponent(made.id)}`).catch(() => {});
        throw fieldError("extra_specs", err.message);
      }
    }
    toast(`Flavor ${made.name} created.`, "ok");
    await reload();
    return made;
  }, { action: "Create" });
}
