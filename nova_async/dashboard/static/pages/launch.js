// #/servers/new: the launch form. Choices come from the services (images, flavors, networks,
// key pairs, security groups, availability zones, server groups, volume types); the request
// is POST /servers as any client sends it. A refusal is shown next to the field it is about,
// and after the 202 the form follows the new server(s) on the event stream: ERROR shows the
// fault's reason (NoValidHost says why no host would do) next to the flavor, ACTIVE goes to
// the list.

import { h, clear, field, select, clearErrors, showError, badge } from "../ui.js";

const MiB = (n) => (n >= 1024 ? `${(n / 1024).toFixed(n % 1024 ? 1 : 0)} GiB` : `${n} MiB`);

// Which field a refusal is about, from its status and sentence (Nova says it in words only).
function fieldOf(err) {
  const m = (err.message || "").toLowerCase();
  if (err.status === 403 && m.includes("quota")) {
    return /\b(cores|ram|vcpu|memory)\b/.test(m) ? "flavorRef" : "count";
  }
  if (m.includes("flavor")) return "flavorRef";
  if (m.includes("image")) return "imageRef";
  if (m.includes("network") || m.includes("port") || m.includes("fixed ip")) return "networks";
  if (m.includes("key pair") || m.includes("keypair") || m.includes("key_name")) return "key_name";
  if (m.includes("security group")) return "security_groups";
  if (m.includes("availability zone")) return "availability_zone";
  if (m.includes("group")) return "group";
  if (m.includes("user_data") || m.includes("user data")) return "user_data";
  if (m.includes("volume") || m.includes("block device")) return "volume_size";
  if (m.includes("min_count") || m.includes("max_count") || m.includes("count")) return "count";
  if (m.includes("name")) return "name";
  return null;
}

const optional = (p) => p.then((v) => v, () => null);

/** user data as the API wants it: the text's UTF-8 bytes in base64. */
function base64(text) {
  const bytes = new TextEncoder().encode(text);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

export default async function (view, ctx) {
  const { api, stream } = ctx;
  const project = api.current().project.id;
  const [images, flavors, networks, keypairs, groups, zones, serverGroups, volumeTypes] = await Promise.all([
    api.get("image", "/images", { limit: 1000 }).then((r) => r.images),
    api.get("compute", "/flavors/detail").then((r) => r.flavors),
    optional(api.get("network", "/networks").then((r) => r.networks)),
    optional(api.get("compute", "/os-keypairs").then((r) => r.keypairs.map((k) => k.keypair))),
    optional(api.get("network", "/security-groups", { project_id: project }).then((r) => r.security_groups)),
    optional(api.get("compute", "/os-availability-zone").then((r) => r.availabilityZoneInfo)),
    optional(api.get("compute", "/os-server-groups").then((r) => r.server_groups)),
    // Boot from volume is offered only when the volume service answers.
    optional(api.get("volume", "/types").then((r) => r.volume_types)),
  ]);

  const bootable = images.filter((i) => i.status === "active" && !["aki", "ari"].includes(i.disk_format));
  const usable = (networks || []).filter((n) => !n["router:external"] || api.isAdmin());
  // One network of the project's own is the obvious choice; an external one never is.
  const internal = usable.filter((n) => !n["router:external"]);
  const flavorLabel = (f) => `${f.name} — ${f.vcpus} vCPU, ${MiB(f.ram)}, ${f.disk} GB disk`;

  const name = h("input", { name: "name", required: true, autocomplete: "off" });
  const image = select("imageRef", [["", "Choose an image"], ...bootable.map((i) => [i.id, i.name || i.id])],
                       { required: true, value: bootable.find((i) => /demo/.test(i.name || ""))?.id || "" });
  const flavor = select("flavorRef", [["", "Choose a flavor"], ...[...flavors].sort((a, b) => a.ram - b.ram || a.vcpus - b.vcpus)
    .map((f) => [f.id, flavorLabel(f)])], { required: true });
  const nets = select("networks", usable.map((n) => [n.id, `${n.name || n.id}${n.shared ? " (shared)" : ""}`]),
                      { multiple: true, value: internal.length === 1 ? [internal[0].id] : [] });
  const keypair = select("key_name", [["", "None"], ...(keypairs || []).map((k) => [k.name, k.name])]);
  const secgroups = select("security_groups", (groups || []).map((g) => [g.name, g.name]),
                           { multiple: true, value: ["default"] });
  const userData = h("textarea", { name: "user_data", spellcheck: false, placeholder: "#cloud-config or a script" });
  const count = h("input", { name: "count", type: "number", min: 1, max: 100, value: 1, required: true });
  const zone = select("availability_zone", [["", "Any"], ...(zones || [])
    .filter((z) => z.zoneState?.available !== false).map((z) => [z.zoneName, z.zoneName])]);
  const group = select("group", [["", "None"], ...(serverGroups || []).map((g) => [g.id, `${g.name} (${g.policy || (g.policies || []).join(", ")})`])]);
  const fromVolume = h("input", { type: "checkbox", name: "boot_from_volume" });
  const volumeSize = h("input", { name: "volume_size", type: "number", min: 1, value: 1, disabled: true });
  fromVolume.addEventListener("change", () => { volumeSize.disabled = !fromVolume.checked; });

  const formError = h("div", { class: "form-error", role: "alert" });
  const progress = h("div", { class: "launch-progress", "aria-live": "polite" });
  const submit = h("button", { type: "submit" }, "Launch");
  const form = h("form", { class: "panel form", "aria-label": "Launch a server", novalidate: false },
    field("Name", name),
    field("Image", image, bootable.length ? null : "No active image: upload one first."),
    field("Flavor", flavor),
    field("Networks", nets, usable.length ? "Ctrl/⌘-click or Shift+arrows to choose several; none: no network." : "No network: the server gets none."),
    field("Key pair", keypair),
    field("Security groups", secgroups),
    field("User data", userData, "Sent as it is (base64-encoded for the API) to the server's config drive and metadata."),
    field("Count", count, "Launches this many servers at once (all or none)."),
    volumeTypes ? h("fieldset", { class: "inline" }, h("legend", {}, "Boot from volume"),
      h("label", { class: "check" }, fromVolume, " Create a volume from the image and boot from it"),
      field("Volume size (GB)", volumeSize)) : null,
    field("Availability zone", zone),
    field("Server group", group),
    formError,
    h("div", { class: "actions" }, submit, h("a", { class: "button ghost", href: "#/servers" }, "Cancel")),
    progress);

  let unsubscribe = null;
  let recheck = () => {};
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    formError.textContent = "";
    progress.replaceChildren();
    if (unsubscribe) { unsubscribe(); unsubscribe = null; }
    const n = Number(count.value);
    if (!Number.isInteger(n) || n < 1) return showError(form, Object.assign(new Error("A whole number, 1 or more."), { field: "count" }));
    const server = {
      name: name.value.trim(),
      flavorRef: flavor.value,
      networks: [...nets.selectedOptions].map((o) => ({ uuid: o.value })),
      min_count: n, max_count: n,
    };
    if (!server.networks.length) server.networks = "none";
    if (fromVolume.checked) {
      server.block_device_mapping_v2 = [{ boot_index: 0, uuid: image.value, source_type: "image",
        destination_type: "volume", volume_size: Number(volumeSize.value), delete_on_termination: true }];
      server.imageRef = "";
    } else {
      server.imageRef = image.value;
    }
    if (keypair.value) server.key_name = keypair.value;
    const sgs = [...secgroups.selectedOptions].map((o) => ({ name: o.value }));
    if (sgs.length) server.security_groups = sgs;
    if (userData.value) server.user_data = base64(userData.value);
    if (zone.value) server.availability_zone = zone.value;
    const body = { server };
    if (group.value) body["os:scheduler_hints"] = { group: group.value };

    submit.disabled = true;
    // Follow the new server(s) from the moment of the request: the stream may tell before the
    // 202 is read. Several at once are named name-1, name-2… (Nova's multi-create naming).
    const watched = new Map();
    const early = [];
    const mine = (d) => d.name === server.name || (n > 1 && d.name?.startsWith(`${server.name}-`));
    unsubscribe = stream.subscribe((type, data) => {
      if (type === "server" && !data.deleted && (watched.has(data.id) || (watched.size < n && mine(data)))) follow(data);
      else if (type === "fault" && watched.has(data.server_id)) explain(data.server_id, data);
      else if (type === "server" || type === "fault") early.push([type, data]);
    });
    let created;
    try {
      created = (await api.post("compute", "/servers", body)).server;
    } catch (err) {
      unsubscribe(); unsubscribe = null;
      submit.disabled = false;
      const target = fieldOf(err);
      return showError(form, Object.assign(err, { field: target }), formError);
    }
    track(created.id, server.name);
    for (const [type, data] of early.splice(0)) {
      if (type === "server" && data.id === created.id) follow(data);
      if (type === "fault" && data.server_id === created.id) explain(data.server_id, data);
    }
    // The state now, in case it settled before the stream could say (or the stream is down).
    recheck = () => { for (const sid of watched.keys()) api.get("compute", `/servers/${sid}`).then((r) => follow(r.server), () => {}); };
    recheck();

    function track(id, label) {
      if (watched.has(id)) return watched.get(id);
      const status = h("span", {}, badge("BUILD"));
      const line = h("li", { dataset: { server: id } }, h("a", { href: `#/servers/${id}` }, label), " ", status);
      progress.replaceChildren(h("p", {}, n > 1 ? `Launching ${n} servers:` : "Launching:"),
        h("ul", {}, ...[...watched.values()].map((w) => w.line), line));
      const entry = { line, status, last: null, explained: false };
      watched.set(id, entry);
      return entry;
    }
    function follow(s) {
      const entry = track(s.id, s.name);
      if (entry.last === s.status) return;
      entry.last = s.status;
      entry.status.replaceChildren(badge(s.status));
      if (s.status === "ERROR") {
        if (s.fault) explain(s.id, s.fault);
        else api.get("compute", `/servers/${s.id}`).then((r) => r.server.fault && explain(s.id, r.server.fault), () => {});
      }
      const states = [...watched.values()].map((w) => w.last);
      if (watched.size >= n && states.every((st) => st === "ACTIVE")) {
        progress.append(h("p", {}, "Active. ", h("a", { href: "#/servers" }, "Back to the servers")));
        ctx.navigate("#/servers");
      }
      if (states.every((st) => st === "ACTIVE" || st === "ERROR")) submit.disabled = false;
    }
    function explain(id, fault) {
      const entry = watched.get(id);
      if (!entry || entry.explained) return;
      entry.explained = true;
      submit.disabled = false;
      const f = form.querySelector('.field[data-field="flavorRef"]');
      f.classList.add("invalid");
      const reason = [fault.message, fault.details && !fault.details.includes("Traceback") ? fault.details : null]
        .filter(Boolean).join(" — ");
      f.querySelector(".error").replaceChildren(`${reason} `, h("a", { href: `#/servers/${id}` }, "See the server"));
      flavor.focus();
    }
  });

  clear(view, h("h1", {}, "Launch a server"), form);
  name.focus();
  const leave = () => { if (unsubscribe) unsubscribe(); };
  leave.onReset = () => recheck();   // events were missed: read the followed servers again
  return leave;
}
