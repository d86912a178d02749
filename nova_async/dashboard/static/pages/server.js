// #/servers/<id>[/console|/log|/events]: one server. Overview (its facts and fault, the
// actions its state allows, volumes and floating IPs), Console (noVNC in a frame, the serial
// console in xterm.js), Log (os-getConsoleOutput, refreshed by hand) and Events (its
// instance actions with their events). Loaded over REST, then kept live by the stream
// (`server`, `action` and `fault` events for this server).

import { h, clear, badge, age, confirm, modal, field, select, toast, powerState, tabs, facts } from "../ui.js";
import { imageNames, addressText, imageText, when } from "../server_text.js";

// What each action needs the server to be (Nova's vm_state rules, as its status shows them).
const ACTIONS = [
  // [label, when(status, server) → enabled?, run(ctx, server) → promise, {ask: the question
  // asked first, danger: a red button}]
  ["Start", (st) => st === "SHUTOFF", (c, s) => c.api.serverAction(s.id, "os-start")],
  ["Stop", (st) => ["ACTIVE", "ERROR", "RESCUE"].includes(st), (c, s) => c.api.serverAction(s.id, "os-stop"),
    { ask: "Stop it? The guest is shut down." }],
  ["Reboot", (st) => st === "ACTIVE",
    (c, s) => c.api.serverAction(s.id, "reboot", { type: "SOFT" }), { ask: "Reboot it (soft: the guest is asked)?" }],
  ["Hard reboot", (st) => ["ACTIVE", "SHUTOFF", "PAUSED", "SUSPENDED", "ERROR", "REBOOT", "HARD_REBOOT"].includes(st),
    (c, s) => c.api.serverAction(s.id, "reboot", { type: "HARD" }), { ask: "Hard reboot it (power cycle, unsaved data is lost)?" }],
  ["Pause", (st) => st === "ACTIVE", (c, s) => c.api.serverAction(s.id, "pause")],
  ["Unpause", (st) => st === "PAUSED", (c, s) => c.api.serverAction(s.id, "unpause")],
  ["Suspend", (st) => st === "ACTIVE", (c, s) => c.api.serverAction(s.id, "suspend")],
  ["Resume", (st) => st === "SUSPENDED", (c, s) => c.api.serverAction(s.id, "resume")],
  ["Confirm resize", (st) => st === "VERIFY_RESIZE", (c, s) => c.api.serverAction(s.id, "confirmResize")],
  ["Revert resize", (st) => st === "VERIFY_RESIZE", (c, s) => c.api.serverAction(s.id, "revertResize"),
    { ask: "Revert the resize (back to the old flavor)?" }],
  ["Rebuild…", (st) => ["ACTIVE", "SHUTOFF", "ERROR"].includes(st), rebuild],
  ["Resize…", (st) => ["ACTIVE", "SHUTOFF"].includes(st), resize],
  ["Create image…", (st) => ["ACTIVE", "SHUTOFF", "PAUSED", "SUSPENDED"].includes(st), snapshot],
  ["Lock", (st, s) => !s.locked, (c, s) => c.api.serverAction(s.id, "lock")],
  ["Unlock", (st, s) => !!s.locked, (c, s) => c.api.serverAction(s.id, "unlock")],
  ["Attach volume…", (st) => ["ACTIVE", "SHUTOFF", "PAUSED", "SUSPENDED"].includes(st), attachVolume],
  ["Associate floating IP…", (st) => st !== "BUILD" && st !== "ERROR", associateFip],
  ["Delete", () => true, (c, s) => c.api.del("compute", `/servers/${s.id}`).then(() => c.navigate("#/servers")),
    { ask: "Delete this server? This cannot be undone.", danger: true }],
];

async function choose(title, label, name, options, action, run) {
  return modal(title, (form) => form.append(field(label, select(name, options, { required: true })),
    options.length ? "" : h("p", { class: "muted" }, "Nothing to choose from.")), async (form) => {
    const value = form.elements[name].value;
    if (!value) throw Object.assign(new Error("Choose one."), { field: name });
    await run(value);
  }, { action });
}

async function rebuild(c, s) {
  const { images } = await c.api.get("image", "/images", { limit: 1000 });
  const usable = images.filter((i) => i.status === "active" && !["aki", "ari"].includes(i.disk_format));
  return choose("Rebuild", "Image (the disk is replaced by it)", "imageRef",
    usable.map((i) => [i.id, i.name || i.id]), "Rebuild",
    (imageRef) => c.api.serverAction(s.id, "rebuild", { imageRef }));
}

async function resize(c, s) {
  const { flavors } = await c.api.get("compute", "/flavors/detail");
  return choose("Resize", "New flavor", "flavorRef",
    flavors.filter((f) => f.name !== s.flavor?.original_name)
      .map((f) => [f.id, `${f.name} — ${f.vcpus} vCPU, ${f.ram} MiB, ${f.disk} GB`]), "Resize",
    (flavorRef) => c.api.serverAction(s.id, "resize", { flavorRef }));
}

async function snapshot(c, s) {
  return modal("Create an image", (form) => form.append(field("Image name",
    h("input", { name: "name", required: true, value: `${s.name}-snapshot` }))), async (form) => {
    await c.api.serverAction(s.id, "createImage", { name: form.elements.name.value });
    toast("The image is being made; it shows under Images.", "ok");
  }, { action: "Create" });
}

async function attachVolume(c, s) {
  const { volumes } = await c.api.get("volume", "/volumes/detail");
  return choose("Attach a volume", "Volume", "volumeId",
    volumes.filter((v) => v.status === "available").map((v) => [v.id, `${v.name || v.id} (${v.size} GB)`]), "Attach",
    (volumeId) => c.api.post("compute", `/servers/${s.id}/os-volume_attachments`, { volumeAttachment: { volumeId } }));
}

/** A free floating IP of the project, or one allocated from an external network, put on the server's port. */
async function associateFip(c, s) {
  const project = c.api.current().project.id;
  const [{ ports }, { floatingips }, { networks }] = await Promise.all([
    c.api.get("network", "/ports", { device_id: s.id }),
    c.api.get("network", "/floatingips", { project_id: project }),
    c.api.get("network", "/networks", { "router:external": true })]);
  if (!ports.length) throw new Error("The server has no port to put a floating IP on.");
  const free = floatingips.filter((f) => !f.port_id);
  const options = [...free.map((f) => [f.id, `${f.floating_ip_address} (free)`]),
    ...networks.map((n) => [`new:${n.id}`, `Allocate a new one from ${n.name || n.id}`])];
  return modal("Associate a floating IP", (form) => form.append(
    field("Floating IP", select("fip", options, { required: true })),
    field("Port", select("port", ports.map((p) => [p.id, `${(p.fixed_ips || []).map((i) => i.ip_address).join(", ")} (${p.id.slice(0, 8)})`]),
                         { required: true }))), async (form) => {
    let fip = form.elements.fip.value;
    const port_id = form.elements.port.value;
    if (!fip) throw Object.assign(new Error("Choose one."), { field: "fip" });
    if (fip.startsWith("new:")) {
      const made = await c.api.post("network", "/floatingips", { floatingip: { floating_network_id: fip.slice(4), port_id } });
      toast(`${made.floatingip.floating_ip_address} allocated and associated.`, "ok");
    } else {
      await c.api.put("network", `/floatingips/${fip}`, { floatingip: { port_id } });
    }
  }, { action: "Associate" });
}

function faultBlock(fault) {
  if (!fault) return null;
  return h("div", { class: "panel fault", role: "note" },
    h("h2", {}, "Fault"),
    h("p", {}, h("strong", {}, `${fault.code ?? ""} `), fault.message || ""),
    explainFault(fault) ? h("p", { class: "muted" }, explainFault(fault)) : null,
    fault.details ? h("details", {}, h("summary", {}, "Details"), h("pre", { class: "log" }, fault.details)) : null,
    fault.created ? h("p", { class: "muted" }, "At ", new Date(fault.created).toLocaleString()) : null);
}

export default async function (view, ctx) {
  const { api, stream } = ctx;
  const id = ctx.params[0];
  const tab = ctx.params[1] || "overview";
  let server;
  await stream.ready();
  try {
    server = (await api.get("compute", `/servers/${id}`)).server;
  } catch (err) {
    if (err.status === 404) {
      clear(view, h("h1", {}, "Server not found"),
        h("p", { role: "alert" }, "No server ", h("code", {}, id), " here: it was deleted, or it is not in your project."),
        h("a", { href: "#/servers" }, "Back to the servers"));
      return;
    }
    throw err;
  }
  const title = h("span", {}, server.name);
  const status = h("span", {}, badge(server.status));
  const body = h("div");
  clear(view,
    h("p", { class: "crumbs" }, h("a", { href: "#/servers" }, "Servers"), " / "),
    h("h1", {}, title, status),
    tabs("Server", [["overview", "Overview", `#/servers/${id}`], ["console", "Console", `#/servers/${id}/console`],
                    ["log", "Log", `#/servers/${id}/log`], ["events", "Events", `#/servers/${id}/events`]], tab),
    body);
  const refresh = (s) => {
    server = s;
    title.textContent = s.name;
    status.replaceChildren(badge(s.status));
  };
  const show = { overview, console: consoleTab, log: logTab, events: eventsTab }[tab] || overview;
  const leaveTab = await show(body, ctx, server, refresh);
  const off = stream.subscribe((type, data) => {
    if (type === "server" && data.id === id) {
      if (data.deleted) {
        status.replaceChildren(badge("DELETED"));
        body.prepend(h("p", { class: "form-error", role: "alert" }, "This server was deleted."));
      } else {
        refresh({ ...server, ...data });
      }
    }
  });
  return () => { off(); if (typeof leaveTab === "function") leaveTab(); };
}

async function overview(body, ctx, initial, refresh) {
  const { api, stream } = ctx;
  let server = initial;
  const names = await imageNames(api);
  const factsBox = h("div", { class: "panel" });
  const actionsBox = h("div", { class: "toolbar actions-bar", role: "toolbar", "aria-label": "Actions" });
  const extras = h("div");
  const faultBox = h("div");
  let running = false;

  const detach = async (att) => {
    if (!(await confirm(`Detach volume ${att.volumeId} from this server?`, { action: "Detach" }))) return;
    await api.del("compute", `/servers/${server.id}/os-volume_attachments/${att.volumeId}`)
      .then(() => toast("Detaching.", "ok"), (e) => toast(e.message, "bad"));
  };
  const disassociate = async (fip) => {
    if (!(await confirm(`Disassociate ${fip.floating_ip_address} from this server?`, { action: "Disassociate" }))) return;
    await api.put("network", `/floatingips/${fip.id}`, { floatingip: { port_id: null } })
      .then(() => toast("Disassociated.", "ok"), (e) => toast(e.message, "bad"));
    loadExtras();
  };
  async function loadExtras() {
    const [attachments, fips] = await Promise.all([
      api.get("compute", `/servers/${server.id}/os-volume_attachments`).then((r) => r.volumeAttachments, () => []),
      api.get("network", "/ports", { device_id: server.id })
        .then(({ ports }) => Promise.all(ports.map((p) => api.get("network", "/floatingips", { port_id: p.id }).then((r) => r.floatingips))))
        .then((lists) => lists.flat(), () => [])]);
    extras.replaceChildren(
      h("h2", {}, "Volumes"),
      attachments.length ? h("ul", {}, attachments.map((a) => h("li", {}, h("span", { class: "mono" }, a.volumeId), ` on ${a.device || "?"} `,
        h("button", { class: "ghost", onclick: () => detach(a) }, "Detach")))) : h("p", { class: "muted" }, "None attached."),
      h("h2", {}, "Floating IPs"),
      fips.length ? h("ul", {}, fips.map((f) => h("li", {}, h("span", { class: "mono" }, f.floating_ip_address), ` → ${f.fixed_ip_address || ""} `,
        h("button", { class: "ghost", onclick: () => disassociate(f) }, "Disassociate")))) : h("p", { class: "muted" }, "None."));
  }

  // A keyboard user's focus stays in the toolbar when the button it is on turns disabled
  // (while the action is asked, or because the server's new state no longer allows it).
  const keepFocus = (button) => {
    const target = button.disabled ? buttons.find(([b]) => !b.disabled)?.[0] : button;
    (target || actionsBox).focus();
  };
  actionsBox.tabIndex = -1;
  const buttons = ACTIONS.map(([label, when, run, opts = {}]) => {
    const button = h("button", { class: opts.danger ? "danger" : "ghost", onclick: async () => {
      if (opts.ask && !(await confirm(opts.ask, { action: label, danger: !!opts.danger || label.includes("reboot") || label === "Stop" }))) return;
      running = true; render();
      try {
        const done = await run(ctx, server);
        if (done !== null || !label.endsWith("…")) toast(`${label.replace("…", "")}: asked.`, "ok");
        if (label.includes("volume") || label.includes("floating")) loadExtras();
      } catch (err) {
        toast(`${label.replace("…", "")}: ${err.message}`, "bad");
      } finally {
        running = false; render();
        if (document.activeElement === document.body || document.activeElement === actionsBox) keepFocus(button);
      }
    } }, label);
    return [button, label, when];
  });
  actionsBox.append(...buttons.map(([b]) => b));

  const render = () => {
    factsBox.replaceChildren(facts([
      ["ID", h("span", { class: "mono" }, server.id)],
      ["Status", badge(server.status)],
      ["Task state", server["OS-EXT-STS:task_state"] || "none"],
      ["Power state", powerState(server["OS-EXT-STS:power_state"])],
      ["VM state", server["OS-EXT-STS:vm_state"]],
      ["Host", server["OS-EXT-SRV-ATTR:host"]],
      ["Availability zone", server["OS-EXT-AZ:availability_zone"]],
      ["Addresses", addressText(server.addresses) || "none"],
      ["Flavor", server.flavor ? `${server.flavor.original_name ?? ""}${server.flavor.vcpus ? ` (${server.flavor.vcpus} vCPU, ${server.flavor.ram} MiB, ${server.flavor.disk} GB)` : ""}` : ""],
      ["Image", imageText(server.image, names)],
      ["Key pair", server.key_name],
      ["Security groups", (server.security_groups || []).map((g) => g.name).join(", ")],
      ["Locked", server.locked ? "yes" : "no"],
      ["Project", server.tenant_id],
      ["Created", server.created ? [new Date(server.created).toLocaleString(), " (", age(server.created), " ago)"] : ""],
      ["Updated", server.updated ? new Date(server.updated).toLocaleString() : ""],
    ]));
    const had = buttons.find(([b]) => b === document.activeElement)?.[0];
    for (const [button, label, when] of buttons) {
      const busy = !!server["OS-EXT-STS:task_state"] && label !== "Delete";
      button.disabled = running || busy || !when(server.status, server);
    }
    if (had && had.disabled) keepFocus(had);
    faultBox.replaceChildren(server.status === "ERROR" || server.fault ? faultBlock(server.fault) || "" : "");
  };
  render();
  body.replaceChildren(actionsBox, faultBox, factsBox, extras);
  loadExtras();

  // One read after subscribing closes the gap between the first read and the subscription.
  // A read's answer may arrive after a newer event (a busy machine): it is taken only if no
  // event for this server came in meanwhile, for those events then already say all it would.
  let events = 0;
  const read = (take) => {
    const asked = events;
    api.get("compute", `/servers/${server.id}`).then((r) => { if (events === asked) take(r.server); }, () => {});
  };
  const reread = () => read((s) => { server = s; refresh(server); render(); });
  const off = stream.subscribe((type, data) => {
    if (type === "server" && data.id === server.id && !data.deleted) {
      events += 1;
      server = { ...server, ...data };
      refresh(server);
      render();
      if (data.status === "ERROR" && !server.fault) {
        read((s) => { server = { ...server, fault: s.fault }; render(); });
      }
    } else if (type === "fault" && data.server_id === server.id) {
      server = { ...server, fault: data };
      render();
    } else if (type === "action" && data.server_id === server.id && (data.result || data.finish_time)) {
      // Attaching and detaching end after their 202: the lists follow when the action does.
      loadExtras();
    }
  });
  reread();
  return off;
}

/**
 * A console URL on this page's own origin: the API names its configured base URL, which may
 * be another name for this same process than the one the browser used (and the CSP allows
 * frames and sockets to this origin only). Path and token are kept.
 */
function here(consoleUrl, scheme) {
  const url = new URL(consoleUrl, location.href);
  const mine = new URL(location.href);
  url.host = mine.host;
  const secure = mine.protocol === "https:";
  url.protocol = scheme === "ws" ? (secure ? "wss:" : "ws:") : mine.protocol;
  return url.href;
}

async function consoleTab(body, ctx, server) {
  const { api, stream } = ctx;
  const graphical = h("div");
  const serial = h("div");
  body.replaceChildren(
    h("h2", {}, "Graphical console"), graphical,
    h("h2", {}, "Serial console"), serial);
  let socket = null;
  let term = null;
  let styles = null;

  const openVnc = async () => {
    try {
      const { remote_console: rc } = await api.post("compute", `/servers/${server.id}/remote-consoles`,
        { remote_console: { protocol: "vnc", type: "novnc" } });
      const src = here(rc.url, "http");
      graphical.replaceChildren(
        h("iframe", { class: "console", src, title: "Graphical console (noVNC)" }),
        h("p", {}, h("a", { href: src, target: "_blank", rel: "noopener" }, "Open in its own tab")));
    } catch (err) {
      graphical.replaceChildren(h("p", { class: "form-error", role: "alert" }, err.message));
    }
  };
  const openSerial = async () => {
    close();
    let rc;
    try {
      ({ remote_console: rc } = await api.post("compute", `/servers/${server.id}/remote-consoles`,
        { remote_console: { protocol: "serial", type: "serial" } }));
    } catch (err) {
      serial.replaceChildren(h("p", { class: "form-error", role: "alert" }, err.message));
      return;
    }
    const Terminal = await loadXterm();
    const host = h("div", { class: "terminal-host", "aria-label": "Serial console" });
    const state = h("span", { class: "muted", "aria-live": "polite" }, "Connecting…");
    serial.replaceChildren(h("div", { class: "toolbar" }, state,
      h("button", { class: "ghost", onclick: openSerial }, "Reconnect")), host);
    term = new Terminal({ convertEol: false, cursorBlink: true, fontSize: 14, rows: 24, scrollback: 2000 });
    styles = mirrorStyles(host);
    term.open(host);
    // A serial port keeps no history: what the guest printed before (its boot, a login
    // prompt) comes from its console log, dimmed, then the port's live bytes follow.
    try {
      const { output } = await api.serverAction(server.id, "os-getConsoleOutput", { length: 40 });
      if (output && term) term.write(`\x1b[2m${output.replace(/\r?\n/g, "\r\n")}\x1b[0m`);
    } catch { /* no log (a simulated host): the live port alone */ }
    if (!term) return;   // closed meanwhile
    // The proxy relays bytes both ways, in binary frames.
    socket = new WebSocket(here(rc.url, "ws"), ["binary"]);
    socket.binaryType = "arraybuffer";
    const encoder = new TextEncoder();
    socket.onopen = () => { state.textContent = "Connected: type to talk to the guest's serial port."; term.focus(); };
    socket.onmessage = (ev) => term.write(typeof ev.data === "string" ? ev.data : new Uint8Array(ev.data));
    socket.onclose = () => { state.textContent = "Disconnected."; };
    socket.onerror = () => { state.textContent = "The console could not be reached."; };
    term.onData((d) => { if (socket && socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(d)); });
  };
  function close() {
    if (socket) { socket.onclose = null; socket.close(); socket = null; }
    if (term) { term.dispose(); term = null; }
    if (styles) { styles(); styles = null; }
  }
  graphical.append(h("button", { class: "ghost", onclick: openVnc }, "Open the graphical console"));
  serial.append(h("button", { class: "ghost", onclick: openSerial }, "Connect to the serial console"));
  // A guest's serial port keeps no history: connected as soon as the server runs, the page
  // sees its boot from the start (a server still building connects when it turns ACTIVE).
  let opened = false;
  const openBoth = () => { if (opened) return; opened = true; openVnc(); openSerial(); };
  if (server.status === "ACTIVE") openBoth();
  else serial.append(h("p", { class: "muted" }, "Connects by itself when the server is running."));
  const off = stream.subscribe((type, data) => {
    if (type === "server" && data.id === server.id && data.status === "ACTIVE") openBoth();
  });
  // It may have turned ACTIVE between the page's read and the subscription.
  if (!opened) api.get("compute", `/servers/${server.id}`).then((r) => r.server.status === "ACTIVE" && openBoth(), () => {});
  return () => { off(); close(); };
}

let xtermLoading = null;
/** xterm.js (vendored, a UMD bundle) as a classic script, once; its stylesheet with it. */
function loadXterm() {
  if (window.Terminal) return Promise.resolve(window.Terminal);
  xtermLoading ||= new Promise((resolve, reject) => {
    document.head.append(h("link", { rel: "stylesheet", href: "vendor/xterm/xterm.css" }));
    const script = h("script", { src: "vendor/xterm/xterm.js" });
    script.onload = () => resolve(window.Terminal);
    script.onerror = () => { xtermLoading = null; reject(new Error("xterm.js could not be loaded.")); };
    document.head.append(script);
  });
  return xtermLoading;
}

/**
 * xterm.js sizes its rows and colours through <style> elements it writes; the page's CSP
 * (style-src 'self', no inline styles) keeps those from applying. Their text is copied into
 * a constructed stylesheet (document.adoptedStyleSheets), which the CSP does not block and
 * which holds no data of ours (only xterm's own rules). Returns the undo.
 */
function mirrorStyles(host) {
  const sheet = new CSSStyleSheet();
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  const copy = () => sheet.replaceSync([...host.querySelectorAll("style")].map((s) => s.textContent).join("\n"));
  const watcher = new MutationObserver(copy);
  watcher.observe(host, { subtree: true, childList: true, characterData: true });
  return () => {
    watcher.disconnect();
    document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== sheet);
  };
}

async function logTab(body, ctx, server) {
  const { api } = ctx;
  const lines = h("input", { type: "number", min: 1, max: 10000, value: 200, name: "lines", "aria-label": "Lines" });
  const out = h("pre", { class: "log", tabindex: 0, "aria-label": "Console log" });
  const note = h("span", { class: "muted", "aria-live": "polite" });
  const load = async () => {
    note.textContent = "Reading…";
    try {
      const { output } = await api.serverAction(server.id, "os-getConsoleOutput", { length: Number(lines.value) || 200 });
      out.textContent = output || "(empty)";
      out.scrollTop = out.scrollHeight;
      note.textContent = `Read at ${new Date().toLocaleTimeString()}.`;
    } catch (err) {
      out.textContent = "";
      note.textContent = err.message;
    }
  };
  body.replaceChildren(h("div", { class: "toolbar" }, h("label", { class: "inline" }, "Last ", lines, " lines"),
    h("button", { onclick: load }, "Refresh"), note), out);
  await load();
}

async function eventsTab(body, ctx, initial) {
  const { api, stream } = ctx;
  let server = initial;
  const faultBox = h("div");
  const list = h("div", { class: "actions-log" });
  const details = new Map();   // request_id → the action with its events

  const showFault = () => {
    faultBox.replaceChildren(server.fault ? faultBlock(server.fault) : "");
  };
  const eventItem = (e) => h("li", {}, `${e.event} `,
    badge(e.result || "running"),
    e.traceback ? h("details", {}, h("summary", {}, "Traceback"), h("pre", { class: "log" }, e.traceback)) : "");
  const actionRow = (a) => h("tr", { dataset: { key: a.request_id } },
    h("td", { "data-label": "Action" }, h("strong", {}, a.action)),
    h("td", { "data-label": "Request", class: "mono" }, a.request_id),
    h("td", { "data-label": "Started" }, a.start_time ? when(a.start_time) : ""),
    h("td", { "data-label": "User", class: "mono" }, (a.user_id || "").slice(0, 8)),
    h("td", { "data-label": "Message" }, a.message || ""),
    h("td", { "data-label": "Events" }, h("ul", { class: "plain" }, (a.events || []).map(eventItem))));
  const render = () => {
    const actions = [...details.values()].sort((a, b) => (a.start_time < b.start_time ? 1 : -1));
    if (!actions.length) return list.replaceChildren(h("p", { class: "muted" }, "No actions yet."));
    list.replaceChildren(h("table", { class: "cards", "aria-label": "Instance actions" },
      h("thead", {}, h("tr", {}, ["Action", "Request", "Started", "User", "Message", "Events"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, actions.map(actionRow))));
  };
  const loadOne = async (requestId) => {
    try {
      const { instanceAction } = await api.get("compute", `/servers/${server.id}/os-instance-actions/${requestId}`);
      details.set(requestId, instanceAction);
    } catch { /* deleted servers' actions stay listed as they were */ }
  };
  const { instanceActions } = await api.get("compute", `/servers/${server.id}/os-instance-actions`);
  for (const a of instanceActions) details.set(a.request_id, a);
  await Promise.all(instanceActions.slice(0, 20).map((a) => loadOne(a.request_id)));
  body.replaceChildren(faultBox, h("h2", {}, "Actions"), list);
  showFault();
  render();

  return stream.subscribe(async (type, data) => {
    if (type === "action" && data.server_id === server.id) {
      const known = details.get(data.request_id) || {};
      details.set(data.request_id, { ...known, ...data, events: known.events || [] });
      render();
      await loadOne(data.request_id);
      render();
    } else if (type === "fault" && data.server_id === server.id) {
      server = { ...server, fault: data };
      showFault();
    }
  });
}

/** What a fault usually means, in a sentence a user can act on. */
function explainFault(fault) {
  const m = fault.message || "";
  if (/no valid host/i.test(m)) {
    return "The scheduler found no compute host with room for this flavor (or allowed by the request's "
      + "zone, group or hints). The reason above lists what each step removed: pick a smaller flavor, free capacity, or add a host.";
  }
  if (fault.code === 500) return "The build or action failed on the compute host. The details (admins) show where.";
  return "";
}
