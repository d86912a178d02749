// Overview: the project's usage against its quotas (compute, network, volumes) as bars; for
// admins, every compute host's placement usage (VCPU, RAM, disk: used of what can be
// allocated, after reserved and allocation ratio) drawn as rings, and the hypervisors.
// Non-admins never ask placement (it would refuse them anyway).

import { h, pageHeading, table, badge, usageBar, svg, coalesce } from "../ui.js";

const COMPUTE = [["instances", "Servers"], ["cores", "vCPUs"], ["ram", "RAM", "MiB"], ["key_pairs", "Key pairs"],
                 ["server_groups", "Server groups"]];
const NETWORK = [["network", "Networks"], ["subnet", "Subnets"], ["port", "Ports"], ["router", "Routers"],
                 ["floatingip", "Floating IPs"], ["security_group", "Security groups"], ["security_group_rule", "Security group rules"]];
const VOLUME = [["Volumes", "totalVolumesUsed", "maxTotalVolumes"], ["Storage", "totalGigabytesUsed", "maxTotalVolumeGigabytes", "GiB"],
                ["Snapshots", "totalSnapshotsUsed", "maxTotalSnapshots"], ["Backups", "totalBackupsUsed", "maxTotalBackups"]];
const CLASSES = [["VCPU", "vCPU", ""], ["MEMORY_MB", "RAM", "MiB"], ["DISK_GB", "Disk", "GiB"]];

export default async function overview(view, { api, stream }) {
  const session = api.current();
  const project = session.project.id;
  view.append(pageHeading(`Overview · ${session.project.name}`));
  const compute = section(view, "Compute", () => computeQuotas(api, project));
  const fills = [compute,
    section(view, "Network", () => networkQuotas(api, project)),
    section(view, "Volumes", async () => (await api.hasService("block-storage", "volumev3")) ? volumeQuotas(api) : null)];
  const hostsSection = api.isAdmin() ? section(view, "Hosts", () => hosts(api)) : null;
  if (hostsSection) fills.push(hostsSection, section(view, "Hypervisors", () => hypervisors(api)));
  await Promise.all(fills.map((refresh) => refresh()));

  // Live: a server made, deleted, resized or going between states changes the quotas' use and
  // the hosts' usage (placement's allocations follow the build and the resize); the tab's event
  // stream says when, and these two sections are asked again, at most once a second.
  const seen = new Map();
  const reload = coalesce(() => Promise.all([compute(), hostsSection?.()]), 1000);
  const unsubscribe = stream.subscribe((type, data) => {
    if (type !== "server") return;
    const now = data.deleted ? "deleted" : `${data.flavor?.original_name}|${data.status}`;
    const before = seen.get(data.id);
    seen.set(data.id, now);
    if (before !== now) reload();
  });
  return () => { reload.cancel(); unsubscribe(); };
}

/** A titled section, shown at once; the function returned (re)makes its body with `fill()` —
 *  null takes the section away, an error is shown in its place. */
function section(view, title, fill) {
  const id = `ov-${title.toLowerCase()}`;
  let body = h("p", { class: "muted" }, "Loading…");
  const el = h("section", { class: "overview-section", "aria-labelledby": id, "aria-busy": "true" },
               h("h2", { id }, title), body);
  view.append(el);
  return async () => {
    let made;
    try {
      made = await fill();
    } catch (err) {
      made = h("p", { class: "form-error", role: "alert" }, err.message);
    }
    if (made === null) { el.remove(); return; }
    body.replaceWith(made);
    body = made;
    el.removeAttribute("aria-busy");
  };
}

function quota(label, used, limit, unit = "") {
  const fmt = (n) => `${Number(n).toLocaleString()}${unit ? ` ${unit}` : ""}`;
  const of = limit === -1 || limit === undefined || limit === null ? "no limit" : fmt(limit);
  return h("div", { class: "quota panel", dataset: { quota: label } },
    h("div", { class: "nums" }, h("span", {}, label), h("span", {}, `${fmt(used)} of ${of}`)),
    usageBar(used, limit));
}

async function computeQuotas(api, project) {
  let sets;
  try {
    sets = (await api.get("compute", `/os-quota-sets/${project}/detail`)).quota_set;
  } catch {
    // Where the detail is refused, the limits call gives the same for the main ones.
    const a = (await api.get("compute", "/limits")).limits.absolute;
    sets = { instances: { in_use: a.totalInstancesUsed, limit: a.maxTotalInstances },
             cores: { in_use: a.totalCoresUsed, limit: a.maxTotalCores },
             ram: { in_use: a.totalRAMUsed, limit: a.maxTotalRAMSize },
             server_groups: { in_use: a.totalServerGroupsUsed, limit: a.maxServerGroups } };
  }
  return h("div", { class: "grid" }, COMPUTE.filter(([k]) => sets[k])
    .map(([k, label, unit]) => quota(label, sets[k].in_use, sets[k].limit, unit)));
}

async function networkQuotas(api, project) {
  const q = (await api.get("network", `/quotas/${project}/details`)).quota;
  return h("div", { class: "grid" }, NETWORK.filter(([k]) => q[k]).map(([k, label]) => quota(label, q[k].used, q[k].limit)));
}

async function volumeQuotas(api) {
  const a = (await api.get("volume", "/limits")).limits.absolute;
  return h("div", { class: "grid" }, VOLUME.filter(([, used]) => used in a)
    .map(([label, used, max, unit]) => quota(label, a[used], a[max], unit)));
}

async function hosts(api) {
  const providers = (await api.get("placement", "/resource_providers")).resource_providers;
  const shown = await Promise.all(providers.map(async (rp) => {
    const [inv, use] = await Promise.all([api.get("placement", `/resource_providers/${rp.uuid}/inventories`),
                                          api.get("placement", `/resource_providers/${rp.uuid}/usages`)]);
    return { rp, inventories: inv.inventories, usages: use.usages };
  }));
  // Compute nodes: the providers with vCPUs (sharing providers and the like are left out).
  const nodes = shown.filter((x) => x.inventories.VCPU);
  if (!nodes.length) return h("p", { class: "empty" }, "No compute host has reported to placement yet.");
  return h("div", { class: "hosts" }, nodes.map(hostCard));
}

/** One ring per resource class: used out of (total − reserved) × allocation ratio, with the
 *  reserved part in grey at its end. */
function hostCard({ rp, inventories, usages }) {
  const size = 110;
  const rings = CLASSES.filter(([rc]) => inventories[rc]).map(([rc, label, unit], i) => {
    const inv = inventories[rc];
    const capacity = Math.floor((inv.total - inv.reserved) * inv.allocation_ratio);
    const used = usages[rc] || 0;
    const share = capacity > 0 ? used / capacity : 1;
    // The whole ring is total × ratio; its grey end, the reserved part (reserved × ratio).
    const reservedShare = inv.total > 0 ? inv.reserved / inv.total : 0;
    const cx = size / 2 + i * size;
    const r = 38;
    const circumference = 2 * Math.PI * r;
    const arc = (cls, fraction, offset = 0) => svg("circle", {
      class: cls, cx, cy: 52, r, fill: "none", "stroke-width": 12,
      "stroke-dasharray": `${Math.max(0, Math.min(1, fraction)) * circumference} ${circumference}`,
      "stroke-dashoffset": -offset * circumference, transform: `rotate(-90 ${cx} 52)` });
    const level = share >= 1 ? "full" : share >= 0.8 ? "high" : "";
    const amount = (n) => (unit === "MiB" && n >= 1024 ? `${(n / 1024).toFixed(1)} GiB` : `${n}${unit ? ` ${unit}` : ""}`);
    return svg("g", { role: "img", "aria-label": `${label}: ${amount(used)} used of ${amount(capacity)}` },
      svg("title", {}, `${label}: ${amount(used)} used of ${amount(capacity)} ` +
          `(total ${amount(inv.total)}, reserved ${amount(inv.reserved)}, allocation ratio ${inv.allocation_ratio})`),
      arc("track", 1),
      arc("reserved", reservedShare, 1 - reservedShare),
      arc(`used ${level}`, Math.min(share, 1) * (1 - reservedShare)),
      svg("text", { x: cx, y: 50, "text-anchor": "middle" }, `${Math.round(share * 100)}%`),
      svg("text", { x: cx, y: 66, "text-anchor": "middle", class: "small" }, label),
      svg("text", { x: cx, y: 118, "text-anchor": "middle", class: "small" }, `${amount(used)} / ${amount(capacity)}`));
  });
  const picture = svg("svg", { viewBox: `0 0 ${size * rings.length} 128`, role: "group",
                               "aria-label": `Placement usage of ${rp.name}` }, rings);
  return h("div", { class: "host panel", dataset: { host: rp.name } }, h("h3", {}, rp.name), picture);
}

async function hypervisors(api) {
  const list = (await api.get("compute", "/os-hypervisors/detail")).hypervisors;
  return table([
    { label: "Host", value: (x) => x.hypervisor_hostname },
    { label: "State", value: (x) => badge(x.state === "up" ? "UP" : "DOWN") },
    { label: "Status", value: (x) => x.status },
    { label: "Type", value: (x) => `${x.hypervisor_type} ${x.hypervisor_version ?? ""}` },
    { label: "Address", value: (x) => h("span", { class: "mono" }, x.host_ip || "—") },
    { label: "Disabled because", value: (x) => x.service?.disabled_reason || "" },
  ], list, { rowKey: (x) => x.id, empty: "No hypervisors." });
}
