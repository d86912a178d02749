// Security groups (Neutron v2): each group with its rules; add and delete a rule; create and
// delete a group.

import { h, clear, pageHeading, ready, table, field, select, modal, confirm, toast, fieldError, blame,
         rowButton } from "../ui.js";

const PROTOCOLS = [["", "any"], ["tcp", "TCP"], ["udp", "UDP"], ["icmp", "ICMP"], ["ipv6-icmp", "ICMPv6"]];

export default async function securityGroups(view, { api }) {
  const list = h("div");
  let groups = [];
  view.append(pageHeading("Security groups", h("button", { type: "button", onclick: () => createGroup() }, "Create group")), list);

  const groupName = (id) => groups.find((g) => g.id === id)?.name || id;

  async function load() {
    // The project's own groups (an admin would otherwise get every project's "default").
    groups = (await api.get("network", "/security-groups", { project_id: api.current().project.id })).security_groups;
    if (!groups.length) return clear(list, h("p", { class: "empty" }, "No security groups."));
    clear(list, groups.map((g) => h("section", { class: "sg", dataset: { group: g.id }, "aria-label": `Security group ${g.name}` },
      h("h2", {}, g.name, g.description ? h("span", { class: "muted" }, g.description) : null,
        rowButton("Add rule", `Add a rule to ${g.name}`, () => addRule(g)),
        g.name === "default" ? null : rowButton("Delete group", `Delete security group ${g.name}`, () => removeGroup(g), { danger: true })),
      table([
        { label: "Direction", value: (r) => r.direction },
        { label: "Ether type", value: (r) => r.ethertype },
        { label: "Protocol", value: (r) => r.protocol ?? "any" },
        { label: "Ports", value: (r) => ports(r) },
        { label: "Remote", value: (r) => (r.remote_group_id ? `group ${groupName(r.remote_group_id)}`
                                          : h("span", { class: "mono" }, r.remote_ip_prefix || (r.ethertype === "IPv6" ? "::/0" : "0.0.0.0/0"))) },
        { label: "Description", value: (r) => r.description || "" },
        { label: "", value: (r) => rowButton("Delete", `Delete the rule ${describe(r)} of ${g.name}`, () => removeRule(g, r), { danger: true }) },
      ], order(g.security_group_rules), { rowKey: (r) => r.id, empty: "No rules: nothing gets in, nothing out." }))));
  }

  function createGroup() {
    return modal("Create a security group", (form) => {
      form.append(field("Name", h("input", { name: "name", required: true, maxlength: 255 })),
                  field("Description", h("input", { name: "description", maxlength: 255 })));
    }, async (form) => {
      const body = { name: form.elements.name.value.trim(), description: form.elements.description.value.trim() };
      let made;
      try {
        made = (await api.post("network", "/security-groups", { security_group: body })).security_group;
      } catch (err) { throw blame(err, { description: /description/i, name: /name|exists/i }); }
      toast(`Security group ${made.name} created.`, "ok");
      await load();
      return made;
    }, { action: "Create" });
  }

  function addRule(g) {
    return modal(`Add a rule to ${g.name}`, (form) => {
      const protocol = select("protocol", PROTOCOLS, { value: "tcp" });
      const portMin = h("input", { name: "port_range_min", type: "number", min: 0, max: 65535, placeholder: "22" });
      const portMax = h("input", { name: "port_range_max", type: "number", min: 0, max: 65535, placeholder: "same" });
      const portFields = [field("Port (or from)", portMin, "ICMP: the type."), field("To port", portMax, "ICMP: the code.")];
      protocol.addEventListener("change", () => {
        for (const f of portFields) f.hidden = !protocol.value;
      });
      form.append(
        field("Direction", select("direction", [["ingress", "ingress (in)"], ["egress", "egress (out)"]], { value: "ingress" })),
        field("Protocol", protocol), ...portFields,
        field("Remote", select("remote", [["cidr", "an address range (CIDR)"], ...groups.map((x) => [`group:${x.id}`, `members of ${x.name}`])],
                               { value: "cidr" })),
        field("Remote CIDR", h("input", { name: "remote_ip_prefix", value: "0.0.0.0/0", autocomplete: "off" }),
              "0.0.0.0/0 is every IPv4 address; ::/0 every IPv6 one."),
        field("Description", h("input", { name: "description", maxlength: 255 })));
    }, async (form) => {
      const v = (n) => form.elements[n].value.trim();
      const body = { security_group_id: g.id, direction: v("direction") };
      if (v("protocol")) body.protocol = v("protocol");
      if (v("description")) body.description = v("description");
      if (body.protocol && v("port_range_min") !== "") {
        body.port_range_min = Number(v("port_range_min"));
        body.port_range_max = v("port_range_max") === "" ? body.port_range_min : Number(v("port_range_max"));
        if (["tcp", "udp"].includes(body.protocol) && body.port_range_max < body.port_range_min) {
          throw fieldError("port_range_max", "The range ends before it starts.");
        }
      } else if (v("port_range_max") !== "" && body.protocol) {
        throw fieldError("port_range_min", "Give the first port too.");
      }
      if (v("remote").startsWith("group:")) {
        body.remote_group_id = v("remote").slice(6);
        body.ethertype = "IPv4";
      } else {
        const cidr = v("remote_ip_prefix") || "0.0.0.0/0";
        if (!/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(cidr)) throw fieldError("remote_ip_prefix", "Write an address range, e.g. 192.0.2.0/24.");
        body.remote_ip_prefix = cidr;
        body.ethertype = cidr.includes(":") ? "IPv6" : "IPv4";
      }
      try {
        await api.post("network", "/security-group-rules", { security_group_rule: body });
      } catch (err) {
        throw blame(err, { port_range_max: /port_range_max|maximum/i, port_range_min: /port/i, protocol: /protocol/i,
                           remote_ip_prefix: /prefix|cidr|ethertype|address/i, direction: /direction/i });
      }
      toast(`Rule added to ${g.name}.`, "ok");
      await load();
      return true;
    }, { action: "Add rule" });
  }

  async function removeRule(g, r) {
    if (!await confirm(`Delete the rule ${describe(r)} of ${g.name}?`, { action: "Delete" })) return;
    try {
      await api.del("network", `/security-group-rules/${r.id}`);
      toast("Rule deleted.", "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  async function removeGroup(g) {
    if (!await confirm(`Delete the security group “${g.name}” and its rules? No port may still use it.`, { action: "Delete" })) return;
    try {
      await api.del("network", `/security-groups/${g.id}`);
      toast(`Security group ${g.name} deleted.`, "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  await load();
  ready(view);
}

function ports(r) {
  if (r.port_range_min === null || r.port_range_min === undefined) return "any";
  return r.port_range_min === r.port_range_max ? String(r.port_range_min) : `${r.port_range_min}–${r.port_range_max}`;
}

function describe(r) {
  return `${r.direction} ${r.protocol ?? "any"} ${ports(r)} ${r.remote_ip_prefix || (r.remote_group_id ? "group" : "")}`.trim();
}

const order = (rules) => [...rules].sort((a, b) => a.direction.localeCompare(b.direction) || a.ethertype.localeCompare(b.ethertype));
