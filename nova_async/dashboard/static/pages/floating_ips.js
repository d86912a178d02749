// Floating IPs (Neutron v2): list (with the server behind each), allocate from an external
// network, associate to a server (through one of its ports), disassociate, release.

import { h, clear, pageHeading, ready, table, badge, field, select, modal, confirm, toast, fieldError,
         rowButton, rowActions, coalesce } from "../ui.js";

export default async function floatingIps(view, { api, stream }) {
  const list = h("div");
  let nets = [];
  let behind = new Set();  // the servers the listed addresses point to
  view.append(pageHeading("Floating IPs", h("button", { type: "button", onclick: () => allocate() }, "Allocate IP")), list);

  async function load() {
    // The project's own (an admin's list would otherwise hold every project's).
    const [f, n, s] = await Promise.all([
      api.get("network", "/floatingips", { project_id: api.current().project.id }), api.get("network", "/networks"),
      api.get("compute", "/servers").catch(() => ({ servers: [] }))]);
    nets = n.networks;
    // The ports behind the addresses only, asked for by id (fifty a call keeps the URL short).
    const ids = [...new Set(f.floatingips.map((ip) => ip.port_id).filter(Boolean))];
    const batches = [];
    for (let i = 0; i < ids.length; i += 50) batches.push(api.get("network", "/ports", { id: ids.slice(i, i + 50) }));
    const ports = new Map((await Promise.all(batches)).flatMap((b) => b.ports).map((port) => [port.id, port]));
    const servers = new Map(s.servers.map((x) => [x.id, x.name]));
    const serverOf = (ip) => {
      const port = ports.get(ip.port_id);
      return port && port.device_owner?.startsWith("compute:") ? { id: port.device_id, name: servers.get(port.device_id) } : null;
    };
    behind = new Set(f.floatingips.map(serverOf).filter(Boolean).map((x) => x.id));
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
  ready(view);
  // Live, from the tab's event stream: a server behind one of these deleted (the association
  // goes with its port), or a server whose floating addresses changed (associated elsewhere,
  // from the server's page or the CLI). Other servers' changes leave the page alone.
  const reload = coalesce(load);
  const floating = new Map();
  const floatingOf = (addresses) => Object.values(addresses || {}).flat()
    .filter((a) => a["OS-EXT-IPS:type"] === "floating").map((a) => a.addr).sort().join(" ");
  const unsubscribe = stream.subscribe((type, data) => {
    if (type !== "server") return;
    if (data.deleted) {
      if (behind.has(data.id)) reload();
      return;
    }
    const now = floatingOf(data.addresses);
    if ((floating.get(data.id) ?? "") !== now || (behind.has(data.id) && !now)) reload();
    floating.set(data.id, now);
  });
  return () => { reload.cancel(); unsubscribe(); };
}
