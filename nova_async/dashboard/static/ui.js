// Small helpers every page uses. Text always goes in as text (textContent), never as HTML:
// a server's name or an error message cannot inject markup.

/** h("button", {class: "ghost", onclick: fn}, "Delete") → an element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style" && typeof v === "object") Object.assign(el.style, v);
    else if (k in el && typeof v !== "string") el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A page's heading with its actions beside it (outside the <h1>, whose name stays its title). */
export const heading = (text, ...actions) =>
  h("div", { class: "page-head" }, h("h1", {}, text), h("div", { class: "head-actions" }, actions));

/**
 * A table: columns [{label, value: row => node|text, class?, key?}], rows of data.
 * `rowKey` names each row (data-key), so a live update can find and replace it.
 * On phones it becomes cards; each cell carries its column's name.
 */
export function table(columns, rows, { rowKey, empty = "Nothing here yet.", onRow } = {}) {
  const body = h("tbody");
  const t = h("table", { class: "cards" },
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.class, scope: "col" }, c.header ?? c.label)))), body);
  const render = (row) => {
    const tr = h("tr", { dataset: rowKey ? { key: rowKey(row) } : {} },
      columns.map((c) => h("td", { class: c.class, "data-label": c.label || null }, c.value(row))));
    if (onRow) onRow(tr, row);
    return tr;
  };
  const placeholder = h("tr", { class: "placeholder" }, h("td", { colspan: columns.length, class: "empty" }, empty));
  for (const r of rows) body.append(render(r));
  // The "nothing here" row is there exactly when no other row shows; a page that adds and
  // removes rows live (renderRow) calls refreshEmpty() after.
  t.refreshEmpty = () => {
    const shown = [...body.rows].some((tr) => tr !== placeholder && !tr.hidden);
    if (shown) placeholder.remove();
    else if (!placeholder.isConnected) body.append(placeholder);
  };
  t.refreshEmpty();
  t.renderRow = render;
  t.body = body;
  return t;
}

const STATUS_KIND = {
  ACTIVE: "ok", available: "ok", "in-use": "info", ERROR: "bad", error: "bad", DOWN: "bad", BUILD: "info",
  REBOOT: "info", HARD_REBOOT: "info", RESIZE: "info", VERIFY_RESIZE: "warn", SHUTOFF: "muted",
  PAUSED: "warn", SUSPENDED: "warn", SHELVED: "muted", SHELVED_OFFLOADED: "muted", RESCUE: "warn",
  DELETED: "muted", Success: "ok", Error: "bad", running: "info", active: "ok", queued: "info", saving: "info", UP: "ok", enabled: "ok",
};

/** Nova's power_state numbers, as words. */
export const POWER_STATES = { 0: "no state", 1: "running", 3: "paused", 4: "shut down", 6: "crashed", 7: "suspended" };
export const powerState = (n) => (n === undefined || n === null ? "" : POWER_STATES[n] ?? String(n));

/** Tabs as links (#/servers/<id>/console): the router shows the chosen one. */
export function tabs(label, items, selected) {
  return h("div", { class: "tabs", role: "tablist", "aria-label": label },
    items.map(([key, text, href]) => h("a", { href, role: "tab", "aria-selected": String(key === selected),
                                            dataset: { tab: key } }, text)));
}

/** A definition list of facts: [[term, node|text], …]; empty values are left out. */
export function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

export function badge(status) {
  const s = status ?? "";
  return h("span", { class: `badge ${STATUS_KIND[s] || "info"}` }, s || "—");
}

export function age(iso) {
  if (!iso) return "";
  const secs = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  const text = secs < 60 ? `${Math.floor(secs)} s` : secs < 3600 ? `${Math.floor(secs / 60)} min`
    : secs < 86400 ? `${Math.floor(secs / 3600)} h` : `${Math.floor(secs / 86400)} d`;
  return h("time", { datetime: iso, title: new Date(iso).toLocaleString() }, text);
}

export function bytes(n) {
  if (n === null || n === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i && n < 10 ? 1 : 0)} ${units[i]}`;
}

/** A notice in the corner; kind "ok" | "bad" | "info". */
export function toast(message, kind = "info") {
  const t = h("div", { class: `toast ${kind}` }, message);
  document.getElementById("toasts").append(t);
  setTimeout(() => t.remove(), kind === "bad" ? 9000 : 4000);
}

/** Ask before something destructive; resolves true only when confirmed. */
export function confirm(message, { action = "Confirm", danger = true } = {}) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { "aria-label": "Confirm" },
      h("p", {}, message),
      h("div", { class: "actions" },
        h("button", { class: "ghost", value: "no", onclick: () => dialog.close("no") }, "Cancel"),
        h("button", { class: danger ? "danger" : "", value: "yes", onclick: () => dialog.close("yes") }, action)));
    dialog.addEventListener("close", () => { resolve(dialog.returnValue === "yes"); dialog.remove(); });
    document.body.append(dialog);
    dialog.showModal();
    dialog.querySelector("button.ghost").focus();
  });
}

/** A modal with a form: fields built by `build(form)`; `submit(form)` may throw to show an error. */
export function modal(title, build, submit, { action = "Save" } = {}) {
  return new Promise((resolve) => {
    const error = h("div", { class: "form-error", role: "alert" });
    const form = h("form", { method: "dialog", class: "form" });
    const dialog = h("dialog", { "aria-label": title }, h("h2", {}, title), form);
    build(form);
    form.append(error, h("div", { class: "actions" },
      h("button", { type: "button", class: "ghost", onclick: () => dialog.close() }, "Cancel"),
      h("button", { type: "submit" }, action)));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      clearErrors(form);
      error.textContent = "";
      const button = form.querySelector("button[type=submit]");
      button.disabled = true;
      try {
        const result = await submit(form);
        dialog.close();
        resolve(result ?? true);
      } catch (err) {
        showError(form, err, error);
      } finally {
        button.disabled = false;
      }
    });
    dialog.addEventListener("close", () => { resolve(null); dialog.remove(); });
    document.body.append(dialog);
    dialog.showModal();
  });
}

/** A labelled form field; `input` is the control (its name is the field's name). */
export function field(labelText, input, hint) {
  const id = input.id || (input.id = `f-${Math.random().toString(36).slice(2, 9)}`);
  return h("div", { class: "field", dataset: { field: input.name || "" } },
    h("label", { for: id }, labelText), input, hint ? h("div", { class: "hint" }, hint) : null,
    h("div", { class: "error", role: "alert" }));
}

export function clearErrors(form) {
  for (const f of form.querySelectorAll(".field.invalid")) {
    f.classList.remove("invalid");
    f.querySelector(".error").textContent = "";
  }
}

/** An error next to its field (err.field names it) or in the form's error line. */
export function showError(form, err, fallback) {
  const f = err.field && form.querySelector(`.field[data-field="${CSS.escape(err.field)}"]`);
  if (f) {
    f.classList.add("invalid");
    f.querySelector(".error").textContent = err.message;
    f.querySelector("input, select, textarea")?.focus();
  } else if (fallback) {
    fallback.textContent = err.message;
  } else {
    toast(err.message, "bad");
  }
}

export function select(name, options, { value, multiple, required } = {}) {
  return h("select", { name, multiple, required },
    options.map(([v, label]) => h("option", { value: v, selected: multiple ? (value || []).includes(v) : v === value }, label)));
}

/** A usage bar (used of limit; limit -1 is unlimited). */
export function usageBar(used, limit) {
  const unlimited = limit === -1 || limit === undefined || limit === null;
  const pct = unlimited ? 0 : limit === 0 ? 100 : Math.min(100, (used / limit) * 100);
  const cls = pct >= 100 ? "bar full" : pct >= 80 ? "bar high" : "bar";
  return h("div", { class: cls, role: "meter", "aria-valuenow": used, "aria-valuemin": 0,
                    "aria-valuemax": unlimited ? null : limit, title: `${used} of ${unlimited ? "∞" : limit}` },
    h("span", { style: { width: `${pct}%` } }));
}

// --- resources ---
// Helpers of the resource pages (images, networks, volumes, overview…).

const SVG_NS = "http://www.w3.org/2000/svg";

/** svg("circle", {r: 10}) → an SVG element (attributes set as they are, text as text). */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

/** An error that belongs next to the form field named `field` (see showError). */
export function fieldError(field, message) {
  return Object.assign(new Error(message), { field });
}

/** Point an API's error at the field it is about: blame(err, {cidr: /cidr/i}) sets err.field to
 *  the first field whose pattern the message matches (the services name the field in words). */
export function blame(err, fields) {
  if (!err.field && err.message) {
    for (const [name, pattern] of Object.entries(fields)) {
      if (pattern.test(err.message)) { err.field = name; break; }
    }
  }
  return err;
}

/** A row's buttons: small, labelled with what they act on (for screen readers and keyboards). */
export function rowButton(text, label, onclick, { danger = false, disabled = false } = {}) {
  return h("button", { type: "button", class: danger ? "small ghost danger-text" : "small ghost",
                       "aria-label": label, title: label, onclick, disabled }, text);
}

export const rowActions = (...buttons) => h("div", { class: "row-actions" }, buttons);

/** A checkbox with its label beside it, as a form field. */
export function checkbox(labelText, name, { checked = false, hint } = {}) {
  const input = h("input", { type: "checkbox", name, checked });
  return h("div", { class: "field check", dataset: { field: name } },
    h("label", {}, input, " ", labelText), hint ? h("div", { class: "hint" }, hint) : null,
    h("div", { class: "error", role: "alert" }));
}

/** Follow a transitional thing (a volume being made, an image being stored) until `done(thing)`,
 *  asking again at growing intervals for at most `limit` ms, and stop when `signal` aborts.
 *  The event stream carries servers only; this is the bounded fallback for the rest. */
export async function settle(fetchOne, done, { signal, limit = 120000 } = {}) {
  let delay = 500;
  const until = Date.now() + limit;
  for (;;) {
    const thing = await fetchOne();
    if (done(thing) || Date.now() > until || signal?.aborted) return thing;
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 1.6, 5000);
  }
}

/** A resource page's title with its buttons beside it (outside the heading, so that the
 *  heading's name is the title alone). The buttons wait for the page's first load, as their
 *  forms offer what it fetched: `ready(view)` enables them. */
export function pageHeading(text, ...actions) {
  for (const b of actions.flat()) if (b instanceof HTMLButtonElement) b.disabled = true;
  return heading(text, ...actions);
}

export function ready(view) {
  for (const b of view.querySelectorAll(".page-head .head-actions button")) b.disabled = false;
}

/** fn, called once `ms` after the first of a burst of calls, the calls meanwhile joining it:
 *  a page reloading on live events does so at most once every `ms`, however many arrive.
 *  `.cancel()` drops a pending call (when the page is left). */
export function coalesce(fn, ms = 300) {
  let timer = null;
  const call = () => {
    if (timer !== null) return;
    timer = setTimeout(() => { timer = null; Promise.resolve(fn()).catch((err) => console.warn(err)); }, ms);
  };
  call.cancel = () => { clearTimeout(timer); timer = null; };
  return call;
}
