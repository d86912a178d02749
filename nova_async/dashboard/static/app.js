// The shell: log-in, the menu, the hash router (#/servers/…), the tab's live stream. Each
// page is a module under pages/ exporting `default async function (view, ctx)`; it fills
// `view` and may return a function called when the user leaves the page (to unsubscribe).

import * as api from "./api.js";
import * as stream from "./stream.js";
import { h, clear, field, toast } from "./ui.js";

// [hash prefix, menu label, module, who sees it] — the menu is built from this list.
const PAGES = [
  { group: "Project" },
  ["overview", "Overview", "overview.js"],
  ["servers", "Servers", "servers.js"],
  ["activity", "Activity", "activity.js"],
  ["images", "Images", "images.js"],
  ["flavors", "Flavors", "flavors.js"],
  ["keypairs", "Key pairs", "keypairs.js"],
  ["volumes", "Volumes", "volumes.js"],
  { group: "Network" },
  ["networks", "Networks", "networks.js"],
  ["routers", "Routers", "routers.js"],
  ["floating-ips", "Floating IPs", "floating_ips.js"],
  ["security-groups", "Security groups", "security_groups.js"],
];

const view = document.getElementById("view");
let leave = null;
let rendering = 0;

function parseHash() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const query = new URLSearchParams(location.hash.split("?")[1] || "");
  if (parts.length) parts[parts.length - 1] = parts[parts.length - 1].split("?")[0];
  return { parts, query };
}

export function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

async function route() {
  const ticket = ++rendering;
  if (leave) { try { leave(); } catch (err) { console.error(err); } leave = null; }
  if (!api.current()) return showLogin();
  const { parts, query } = parseHash();
  const name = parts[0] || "servers";
  const page = PAGES.find((p) => Array.isArray(p) && p[0] === name);
  markMenu(name);
  document.getElementById("nav").classList.remove("open");
  if (!page) return clear(view, h("h1", {}, "Not found"), h("p", {}, `No page “${name}”.`));
  clear(view, h("p", { class: "muted" }, "Loading…"));
  try {
    const mod = await import(`./pages/${page[2]}`);
    if (ticket !== rendering) return;
    view.replaceChildren();
    const ctx = { params: parts.slice(1), query, api, stream, navigate };
    const cleanup = await mod.default(view, ctx);
    if (ticket !== rendering) { if (typeof cleanup === "function") cleanup(); return; }
    leave = typeof cleanup === "function" ? cleanup : null;
    document.title = `${page[1]} · nova-async`;
    view.focus({ preventScroll: true });
  } catch (err) {
    if (ticket !== rendering) return;
    if (err instanceof api.ApiError && err.status === 401) return;
    console.error(err);
    clear(view, h("h1", {}, page[1]), h("p", { class: "form-error", role: "alert" }, err.message || String(err)));
  }
}

function markMenu(name) {
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.page === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

function buildShell(session) {
  const nav = document.getElementById("nav");
  nav.replaceChildren(...PAGES.map((p) => Array.isArray(p)
    ? h("a", { href: `#/${p[0]}`, dataset: { page: p[0] } }, p[1])
    : h("div", { class: "group" }, p.group)));
  document.getElementById("who").textContent =
    `${session.user.name} · ${session.project.name}${api.isAdmin() ? " (admin)" : ""}`;
  document.getElementById("top").hidden = false;
  nav.hidden = false;
  document.body.classList.remove("anonymous");
}

function showLogin() {
  stream.stop();
  document.getElementById("top").hidden = true;
  document.getElementById("nav").hidden = true;
  document.body.classList.add("anonymous");
  document.title = "Log in · nova-async";
  const error = h("div", { class: "form-error", role: "alert" });
  const remembered = JSON.parse(localStorage.getItem("nova-async.login") || "{}");
  const input = (name, attrs = {}) => h("input", { name, required: true, autocomplete: "on", ...attrs });
  const form = h("form", { class: "panel form login", "aria-label": "Log in" },
    h("h1", {}, "nova-async"),
    field("User", input("user", { value: remembered.user || "", autocomplete: "username", autofocus: true })),
    field("Password", input("password", { type: "password", autocomplete: "current-password" })),
    field("Project", input("project", { value: remembered.project || "" })),
    field("Domain", input("domain", { value: remembered.domain || "Default" })),
    error,
    h("button", { type: "submit" }, "Log in"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    error.textContent = "";
    const data = Object.fromEntries(new FormData(form));
    form.querySelector("button").disabled = true;
    try {
      await api.login(data);
      localStorage.setItem("nova-async.login", JSON.stringify({ user: data.user, project: data.project, domain: data.domain }));
    } catch (err) {
      error.textContent = err.status === 401 ? "The user, password or project is not right." : err.message;
      form.querySelector("button").disabled = false;
    }
  });
  clear(view, form);
  (form.querySelector("input[value='']") || form.querySelector("input[name=password]")).focus();
}

function startSession(session) {
  buildShell(session);
  stream.start();
  route();
}

function setupChrome() {
  const root = document.documentElement;
  const saved = localStorage.getItem("nova-async.theme");
  if (saved) root.dataset.theme = saved;
  document.getElementById("theme").addEventListener("click", () => {
    const dark = root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "light" : "dark";
    localStorage.setItem("nova-async.theme", root.dataset.theme);
  });
  document.getElementById("logout").addEventListener("click", () => api.logout());
  const menu = document.getElementById("menu");
  menu.addEventListener("click", () => {
    const open = document.getElementById("nav").classList.toggle("open");
    menu.setAttribute("aria-expanded", String(open));
  });
  const dot = document.getElementById("live");
  stream.onState((state) => {
    dot.dataset.state = state;
    dot.title = { on: "Live", retry: "Reconnecting…", off: "Not live" }[state];
  });
  // A gap too old to replay: the page reloads what it shows — by itself when its cleanup
  // function carries an `onReset` (a form keeps what the user typed), else by routing again.
  stream.subscribe((type) => {
    if (type !== "reset") return;
    if (leave && typeof leave.onReset === "function") leave.onReset();
    else route();
  });
  window.addEventListener("hashchange", route);
  api.onSessionChange((s) => {
    if (s) startSession(s);
    else { toast("Logged out."); showLogin(); }
  });
}

setupChrome();
if (api.current()) startSession(api.current());
else showLogin();
