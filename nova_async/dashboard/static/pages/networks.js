// Networks with their subnets (Neutron v2): list, create a network and, in the same form, its
// first subnet; add a subnet; delete either.

import { h, clear, pageHeading, ready, table, badge, field, modal, confirm, toast, fieldError, blame,
         rowButton, rowActions, checkbox } from "../ui.js";

export default async function networks(view, { api }) {
  const admin = api.isAdmin();
  const project = api.current().project.id;
  const list = h("div");
  view.append(pageHeading("Networks", h("button", { type: "button", onclick: () => createNetwork(api, load) }, "Create network")), list);

  async function load() {
    const [nets, subs] = await Promise.all([api.get("network", "/networks"), api.get("network", "/subnets")]);
    // What the project uses: its own networks, the shared and the external ones (an admin's
    // list would otherwise hold every project's).
    const shown = nets.networks.filter((n) => n.project_id === project || n.shared || n["router:external"]);
    const byNetwork = Map.groupBy(subs.subnets, (s) => s.network_id);
    const mine = (n) => n.project_id === project || (admin && (n.shared || n["router:external"]));
    clear(list, table([
      { label: "Name", value: (n) => n.name || n.id },
      { label: "Status", value: (n) => badge(n.status) },
      { label: "Subnets", value: (n) => subnetList(n, byNetwork.get(n.id) || [], mine(n)) },
      { label: "Kind", value: (n) => [n["router:external"] ? "external" : null, n.shared ? "shared" : null,
                                      n["provider:network_type"] || null].filter(Boolean).join(" · ") },
      { label: "", value: (n) => rowActions(mine(n) ? [
          rowButton("Add subnet", `Add a subnet to ${n.name || n.id}`, () => addSubnet(api, n, load)),
          rowButton("Delete", `Delete network ${n.name || n.id}`, () => removeNetwork(n), { danger: true })] : null) },
    ], shown, { rowKey: (n) => n.id, empty: "No networks yet: create one." }));
  }

  function subnetList(net, subnets, editable) {
    if (!subnets.length) return h("span", { class: "muted" }, "none");
    return h("ul", { class: "sub-list" }, subnets.map((s) => h("li", { dataset: { subnet: s.id } },
      h("strong", {}, s.name || "(no name)"), h("span", { class: "mono" }, s.cidr),
      h("span", { class: "muted" }, `gateway ${s.gateway_ip || "none"} · DHCP ${s.enable_dhcp ? "on" : "off"}`),
      editable ? rowButton("×", `Delete subnet ${s.name || s.cidr}`, () => removeSubnet(s), { danger: true }) : null)));
  }

  async function removeNetwork(n) {
    if (!await confirm(`Delete the network “${n.name || n.id}” and its subnets? It must have no servers on it.`, { action: "Delete" })) return;
    try {
      await api.del("network", `/networks/${n.id}`);
      toast(`Network ${n.name || n.id} deleted.`, "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  async function removeSubnet(s) {
    if (!await confirm(`Delete the subnet ${s.name || ""} ${s.cidr}?`, { action: "Delete" })) return;
    try {
      await api.del("network", `/subnets/${s.id}`);
      toast(`Subnet ${s.cidr} deleted.`, "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  await load();
  ready(view);
}

/** The subnet's fields, named subnet_*, shared by both forms. */
function subnetFields() {
  return [
    field("Subnet name", h("input", { name: "subnet_name", maxlength: 255 })),
    field("CIDR", h("input", { name: "cidr", placeholder: "10.0.0.0/24", autocomplete: "off" }), "IPv4 or IPv6, e.g. 10.0.0.0/24"),
    field("Gateway", h("input", { name: "gateway_ip", placeholder: "the first address" }),
          "Empty: the first address. “none”: no gateway."),
    checkbox("DHCP", "enable_dhcp", { checked: true }),
    field("DNS servers", h("input", { name: "dns", placeholder: "192.0.2.53, 192.0.2.54" }), "Optional, comma-separated."),
  ];
}

function subnetBody(form, networkId) {
  const v = (n) => form.elements[n].value.trim();
  const cidr = v("cidr");
  if (!/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(cidr)) throw fieldError("cidr", "Write the range as address/prefix, e.g. 10.0.0.0/24.");
  const body = { network_id: networkId, cidr, ip_version: cidr.includes(":") ? 6 : 4,
                 enable_dhcp: form.elements.enable_dhcp.checked };
  if (v("subnet_name")) body.name = v("subnet_name");
  const gw = v("gateway_ip");
  if (gw.toLowerCase() === "none") body.gateway_ip = null;
  else if (gw) body.gateway_ip = gw;
  const dns = v("dns").split(/[\s,]+/).filter(Boolean);
  if (dns.length) body.dns_nameservers = dns;
  return body;
}

const SUBNET_BLAME = { gateway_ip: /gateway/i, dns: /dns|nameserver/i, cidr: /cidr|prefix|overlap|address|network/i,
                       subnet_name: /name/i };

async function postSubnet(api, body) {
  try {
    return (await api.post("network", "/subnets", { subnet: body })).subnet;
  } catch (err) {
    throw blame(err, SUBNET_BLAME);
  }
}

function createNetwork(api, reload) {
  const admin = api.isAdmin();
  return modal("Create a network", (form) => {
    const withSubnet = checkbox("With a subnet", "with_subnet", { checked: true });
    const subnet = h("fieldset", { class: "subnet" }, h("legend", {}, "Subnet"), subnetFields());
    withSubnet.querySelector("input").addEventListener("change", (ev) => { subnet.disabled = !ev.target.checked; });
    form.append(
      field("Name", h("input", { name: "name", required: true, maxlength: 255 })),
      field("MTU", h("input", { name: "mtu", type: "number", min: 68, placeholder: "the default" })),
      admin ? checkbox("Shared with every project", "shared") : null,
      admin ? checkbox("External (routers' gateways, floating IPs)", "external") : null,
      withSubnet, subnet);
  }, async (form) => {
    const v = (n) => form.elements[n].value.trim();
    const body = { name: v("name"), admin_state_up: true };
    if (v("mtu")) body.mtu = Number(v("mtu"));
    if (admin) {
      body.shared = form.elements.shared.checked;
      body["router:external"] = form.elements.external.checked;
    }
    const wantSubnet = form.elements.with_subnet.checked;
    if (wantSubnet) subnetBody(form, "check");  // the form's own mistakes before anything is made
    let net;
    try {
      net = (await api.post("network", "/networks", { network: body })).network;
    } catch (err) {
      throw blame(err, { mtu: /mtu/i, name: /name/i });
    }
    if (wantSubnet) {
      try {
        await postSubnet(api, subnetBody(form, net.id));
      } catch (err) {
        // The pair is one thing to the person filling the form: without its subnet the network
        // goes too, so sending the form again does not make a second one.
        await api.del("network", `/networks/${net.id}`).catch(() => {});
        if (!err.field) err.field = "cidr";
        throw err;
      }
    }
    toast(`Network ${net.name} created.`, "ok");
    await reload();
    return net;
  }, { action: "Create" });
}

function addSubnet(api, net, reload) {
  return modal(`Add a subnet to ${net.name || net.id}`, (form) => {
    form.append(...subnetFields());
    form.elements.cidr.required = true;
  }, async (form) => {
    const made = await postSubnet(api, subnetBody(form, net.id));
    toast(`Subnet ${made.cidr} added.`, "ok");
    await reload();
    return made;
  }, { action: "Add" });
}
