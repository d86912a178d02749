// Floating IPs (Neutron v2): list (with the server behind each), allocate from an external
// network, associate to a server (through one of its ports), disassociate, release.

import { h, clear, pageHeading, table, badge, field, select, modal, confirm, toast, fieldError,
         rowButton, rowActions } from "../ui.js";

export default async function floatingIps(view, { api }) {
  const list = h("div");
  let nets = [];
  view.append(pageHeading("Floating IPs", h("button", { type: "button", onclick: () => allocate() }, "Allocate IP")), list);

  async function load() {
    const [f, n, p, s] = await Promise.all([
      api.get("network", "/floatingips"), api.get("network", "/networks"),
      api.get("network", "/ports"),
      api.get("compute", "/servers").catch(() => ({ servers: [] }))]);
    nets = n.networks;
    const ports = new Map(p.ports.map((port) => [port.id, port]));
    const servers = new Map(s.servers.map((x) => [x.id, x.name]));
    const serverOf = (ip) => {
      const port = ports.get(ip.port_id);
      return port && port.device_owner?.startsWith("compute:") ? { id: port.device_id, name: servers.get(port.device_id) } : null;
    };
    clear(list, table([
      { label: "Address", value: (ip) => h("span", { class: "mono" }, ip.floating_ip_address) },
      { label: "Status", value: (ip) => badge(ip.status) },
      { label: "Fixed IP", value: (ip) => h("span", { class: "mono" }, ip.fixed_ip_address || "—") },
      { label: "Server", value: (ip) => {
          const server = serverOf(ip);
          return server ? h("a", { href: `#/servers/${server.id}` }, server.name || server.id) : h("span", { class: "muted" }, "—");
        } },
      { label: "Port", value: (ip) => h("span", { class: "mono muted" }, ip.port_id ? ip.port_id.slice(0, 8) : "—") },
      { label: "Pool", value: (ip) => nets.find((x) => x.id === ip.floating_network_id)?.name || ip.floating_network_id },
      { label: "", value: (ip) => rowActions(
          ip.port_id
            ? rowButton("Disassociate", `Disassociate ${ip.floating_ip_address}`, () => disassociate(ip))
            : rowButton("Associate", `Associate ${ip.floating_ip_address}`, () => associate(ip)),
          rowButton("Release", `Release ${ip.floating_ip_address}`, () => release(ip), { danger: true })) },
    ], f.floatingips, { rowKey: (ip) => ip.id, empty: "No floating IPs: allocate one." }));
  }

  function allocate() {
    const pools = nets.filter((x) => x["router:external"]);
    return modal("Allocate a floating IP", (form) => {
      form.append(field("From network", select("floating_network_id", pools.map((x) => [x.id, x.name || x.id])),
                        pools.length ? "An external network." : "There is no external network to take one from."),
                  field("Description", h("input", { name: "description", maxlength: 255 })));
    }, async (form) => {
      const networkId = form.elements.floating_network_id.value;
      if (!networkId) throw fieldError("floating_network_id", "Choose an external network.");
      const body = { floating_network_id: networkId };
      if (form.elements.description.value.trim()) body.description = form.elements.description.value.trim();
      let made;
      try {
        made = (await api.post("network", "/floatingips", { floatingip: body })).floatingip;
      } catch (err) { throw fieldError("floating_network_id", err.message); }
      toast(`Allocated ${made.floating_ip_address}.`, "ok");
      await load();
      return made;
    }, { action: "Allocate" });
  }

  async function associate(ip) {
    const servers = (await api.get("compute", "/servers/detail")).servers;
    return modal(`Associate ${ip.floating_ip_address}`, (form) => {
      const server = select("server", [["", "— choose a server —"], ...servers.map((x) => [x.id, x.name || x.id])]);
      const port = select("port", []);
      server.required = port.required = true;
      // The server's ports, asked for when it is chosen: the address goes to a port, not a server.
      server.addEventListener("change", async () => {
        port.replaceChildren();
        if (!server.value) return;
        const ports = (await api.get("network", "/ports", { device_id: server.value })).ports;
        for (const p of ports) {
          for (const fixed of p.fixed_ips) {
            const net = nets.find((x) => x.id === p.network_id)?.name || p.network_id;
            port.append(h("option", { value: `${p.id} ${fixed.ip_address}` }, `${fixed.ip_address} on ${net}`));
          }
        }
        if (!port.options.length) port.append(h("option", { value: "" }, "This server has no port"));
      });
      form.append(field("Server", server), field("Port", port, "The server's address the floating IP points to."));
    }, async (form) => {
      if (!form.elements.server.value) throw fieldError("server", "Choose a server.");
      const [portId, fixed] = form.elements.port.value.split(" ");
      if (!portId) throw fieldError("port", "Choose one of its addresses.");
      try {
        await api.put("network", `/floatingips/${ip.id}`, { floatingip: { port_id: portId, fixed_ip_address: fixed } });
      } catch (err) { throw fieldError("port", err.message); }
      toast(`${ip.floating_ip_address} associated.`, "ok");
      await load();
      return true;
    }, { action: "Associate" });
  }

  async function disassociate(ip) {
    if (!await confirm(`Disassociate ${ip.floating_ip_address} from its server?`, { action: "Disassociate" })) return;
    try {
      await api.put("network", `/floatingips/${ip.id}`, { floatingip: { port_id: null } });
      toast(`${ip.floating_ip_address} disassociated.`, "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  async function release(ip) {
    if (!await confirm(`Release ${ip.floating_ip_address}? Another project may get it next.`, { action: "Release" })) return;
    try {
      await api.del("network", `/floatingips/${ip.id}`);
      toast(`${ip.floating_ip_address} released.`, "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  await load();
}
