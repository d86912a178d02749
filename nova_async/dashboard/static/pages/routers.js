// Routers (Neutron v2): list with their gateway and interfaces; create; set or clear the
// external gateway; add or remove a subnet's interface; delete (its interfaces first).

import { h, clear, pageHeading, ready, table, badge, field, select, modal, confirm, toast, fieldError, blame,
         rowButton, rowActions } from "../ui.js";

export default async function routers(view, { api }) {
  const list = h("div");
  let nets = [], subnets = [];
  view.append(pageHeading("Routers", h("button", { type: "button", onclick: () => create() }, "Create router")), list);

  const netName = (id) => nets.find((n) => n.id === id)?.name || id;
  const subnetLabel = (s) => `${s.name ? `${s.name} ` : ""}${s.cidr} (${netName(s.network_id)})`;
  const externals = () => nets.filter((n) => n["router:external"]);
  // Subnets a router may take an interface on: not the external networks' own.
  const internalSubnets = () => subnets.filter((s) => {
    const net = nets.find((n) => n.id === s.network_id);
    return net && !net["router:external"] && (net.project_id === api.current().project.id || net.shared);
  });

  async function load() {
    const [r, n, s, p] = await Promise.all([
      api.get("network", "/routers", { project_id: api.current().project.id }),
      api.get("network", "/networks"), api.get("network", "/subnets"),
      api.get("network", "/ports", { device_owner: "network:router_interface", project_id: api.current().project.id })]);
    nets = n.networks;
    subnets = s.subnets;
    const interfaces = Map.groupBy(p.ports, (port) => port.device_id);
    clear(list, table([
      { label: "Name", value: (x) => x.name || x.id },
      { label: "Status", value: (x) => badge(x.status) },
      { label: "External gateway", value: (x) => gateway(x) },
      { label: "Interfaces", value: (x) => interfaceList(x, interfaces.get(x.id) || []) },
      { label: "", value: (x) => rowActions(
          x.external_gateway_info
            ? rowButton("Clear gateway", `Clear the gateway of ${x.name || x.id}`, () => clearGateway(x))
            : rowButton("Set gateway", `Set the gateway of ${x.name || x.id}`, () => setGateway(x)),
          rowButton("Add interface", `Add an interface to ${x.name || x.id}`, () => addInterface(x)),
          rowButton("Delete", `Delete router ${x.name || x.id}`, () => remove(x, interfaces.get(x.id) || []), { danger: true })) },
    ], r.routers, { rowKey: (x) => x.id, empty: "No routers yet: create one." }));
  }

  function gateway(x) {
    const gw = x.external_gateway_info;
    if (!gw) return h("span", { class: "muted" }, "none");
    const ips = (gw.external_fixed_ips || []).map((f) => f.ip_address).join(", ");
    return h("span", {}, netName(gw.network_id), ips ? h("span", { class: "mono" }, ` ${ips}`) : null,
             gw.enable_snat === false ? h("span", { class: "muted" }, " (no SNAT)") : null);
  }

  function interfaceList(x, ports) {
    if (!ports.length) return h("span", { class: "muted" }, "none");
    return h("ul", { class: "sub-list" }, ports.flatMap((port) => port.fixed_ips.map((ip) => {
      const s = subnets.find((one) => one.id === ip.subnet_id);
      return h("li", {}, h("span", { class: "mono" }, ip.ip_address), h("span", { class: "muted" }, s ? subnetLabel(s) : ip.subnet_id),
               rowButton("×", `Remove the interface ${ip.ip_address} from ${x.name || x.id}`, () => removeInterface(x, ip.subnet_id), { danger: true }));
    })));
  }

  const act = async (what, fn) => {
    try { await fn(); toast(what, "ok"); } catch (err) { toast(err.message, "bad"); }
    await load();
  };

  function externalSelect(value) {
    return select("network_id", [["", "— none —"], ...externals().map((n) => [n.id, n.name || n.id])], { value });
  }

  function create() {
    const ext = externals();
    return modal("Create a router", (form) => {
      form.append(
        field("Name", h("input", { name: "name", required: true, maxlength: 255 })),
        field("External network", externalSelect(ext.length === 1 ? ext[0].id : ""), "Its gateway: the way out, and floating IPs."),
        field("Interface on subnet", select("subnet_id", [["", "— none —"], ...internalSubnets().map((s) => [s.id, subnetLabel(s)])]),
              "Optional: a first interface, on one of your subnets."));
    }, async (form) => {
      const v = (n) => form.elements[n].value.trim();
      const body = { name: v("name"), admin_state_up: true };
      if (v("network_id")) body.external_gateway_info = { network_id: v("network_id") };
      let made;
      try {
        made = (await api.post("network", "/routers", { router: body })).router;
      } catch (err) {
        throw blame(err, { network_id: /gateway|external|network/i, name: /name/i });
      }
      if (v("subnet_id")) {
        try {
          await api.put("network", `/routers/${made.id}/add_router_interface`, { subnet_id: v("subnet_id") });
        } catch (err) {
          await load();
          throw fieldError("subnet_id", `The router was made, without this interface: ${err.message}`);
        }
      }
      toast(`Router ${made.name} created.`, "ok");
      await load();
      return made;
    }, { action: "Create" });
  }

  function setGateway(x) {
    return modal(`Set the gateway of ${x.name || x.id}`, (form) => {
      const choice = externalSelect(externals()[0]?.id || "");
      choice.required = true;
      form.append(field("External network", choice));
    }, async (form) => {
      const networkId = form.elements.network_id.value;
      if (!networkId) throw fieldError("network_id", "Choose an external network.");
      try {
        await api.put("network", `/routers/${x.id}`, { router: { external_gateway_info: { network_id: networkId } } });
      } catch (err) { throw fieldError("network_id", err.message); }
      toast(`Gateway of ${x.name || x.id} set.`, "ok");
      await load();
      return true;
    }, { action: "Set gateway" });
  }

  async function clearGateway(x) {
    if (!await confirm(`Clear the gateway of “${x.name || x.id}”? Its floating IPs stop working.`, { action: "Clear gateway" })) return;
    await act(`Gateway of ${x.name || x.id} cleared.`,
              () => api.put("network", `/routers/${x.id}`, { router: { external_gateway_info: {} } }));
  }

  function addInterface(x) {
    return modal(`Add an interface to ${x.name || x.id}`, (form) => {
      const choice = select("subnet_id", internalSubnets().map((s) => [s.id, subnetLabel(s)]));
      choice.required = true;
      form.append(field("Subnet", choice, "The router takes the subnet's gateway address."));
    }, async (form) => {
      const subnetId = form.elements.subnet_id.value;
      if (!subnetId) throw fieldError("subnet_id", "Choose a subnet (create one on the Networks page).");
      try {
        await api.put("network", `/routers/${x.id}/add_router_interface`, { subnet_id: subnetId });
      } catch (err) { throw fieldError("subnet_id", err.message); }
      toast(`Interface added to ${x.name || x.id}.`, "ok");
      await load();
      return true;
    }, { action: "Add" });
  }

  async function removeInterface(x, subnetId) {
    if (!await confirm(`Remove this interface from “${x.name || x.id}”? Its subnet loses its way out.`, { action: "Remove" })) return;
    await act("Interface removed.", () => api.put("network", `/routers/${x.id}/remove_router_interface`, { subnet_id: subnetId }));
  }

  async function remove(x, ports) {
    const more = ports.length ? ` Its ${ports.length} interface(s) are removed first.` : "";
    if (!await confirm(`Delete the router “${x.name || x.id}”?${more}`, { action: "Delete" })) return;
    await act(`Router ${x.name || x.id} deleted.`, async () => {
      for (const port of ports) {
        await api.put("network", `/routers/${x.id}/remove_router_interface`, { port_id: port.id });
      }
      await api.del("network", `/routers/${x.id}`);
    });
  }

  await load();
  ready(view);
}
