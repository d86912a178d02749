// The public APIs, as any OpenStack client calls them: a Keystone token in X-Auth-Token,
// each service under its prefix on this same origin. Nothing here can do more than the user.

const SESSION_KEY = "nova-async.session";
// The compute microversion the pages are written against (their fields and filters).
export const COMPUTE_VERSION = "2.100";

const PREFIXES = {
  identity: "/v3",
  compute: "/compute/v2.1",
  image: "/image/v2",
  network: "/network/v2.0",
  placement: "/placement",
  volume: (session) => `/volume/v3/${session.project.id}`,
};

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

let session = load();
const listeners = new Set();

function load() {
  try {
    const s = JSON.parse(sessionStorage.getItem(SESSION_KEY));
    return s && Date.parse(s.expires) > Date.now() ? s : null;
  } catch {
    return null;
  }
}

export function current() { return session; }
export function isAdmin() { return !!session && session.roles.includes("admin"); }
export function onSessionChange(fn) { listeners.add(fn); return () => listeners.delete(fn); }

function setSession(s) {
  session = s;
  if (s) sessionStorage.setItem(SESSION_KEY, JSON.stringify(s));
  else sessionStorage.removeItem(SESSION_KEY);
  for (const fn of listeners) fn(s);
}

/** Log in with a password, scoped to a project (Keystone v3), and keep the token for this tab. */
export async function login({ user, password, project, domain = "Default" }) {
  const body = { auth: {
    identity: { methods: ["password"], password: { user: { name: user, domain: { name: domain }, password } } },
    scope: { project: { name: project, domain: { name: domain } } },
  } };
  const resp = await fetch("/v3/auth/tokens", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const data = await parse(resp);
  if (!resp.ok) throw new ApiError(resp.status, faultMessage(data, resp), data);
  const t = data.token;
  setSession({ token: resp.headers.get("X-Subject-Token"), expires: t.expires_at,
               user: { id: t.user.id, name: t.user.name }, project: { id: t.project.id, name: t.project.name },
               domain, roles: t.roles.map((r) => r.name) });
  return session;
}

export async function logout() {
  const s = session;
  setSession(null);
  if (s) {
    // Revoked, not only forgotten: a copied token stops working too.
    await fetch("/v3/auth/tokens", { method: "DELETE",
      headers: { "X-Auth-Token": s.token, "X-Subject-Token": s.token } }).catch(() => {});
  }
}

async function parse(resp) {
  const text = await resp.text();
  if (!text) return null;
  try { return JSON.parse(text); } catch { return text; }
}

/** The human sentence in any of the services' fault formats. */
export function faultMessage(data, resp) {
  if (data && typeof data === "object") {
    const seen = [data, ...Object.values(data)];
    for (const v of seen) {
      if (v && typeof v === "object") {
        if (typeof v.message === "string" && v.message) return v.message;
        if (typeof v.detail === "string" && v.detail) return v.detail;
      }
    }
    if (Array.isArray(data.errors) && data.errors[0]) return data.errors[0].detail || data.errors[0].title;
  }
  if (typeof data === "string" && data.trim()) return data.trim().split("\n").slice(-1)[0].slice(0, 400);
  return `${resp.status} ${resp.statusText}`;
}

export function url(service, path, query) {
  if (!session) throw new ApiError(401, "Not logged in.");
  const prefix = typeof PREFIXES[service] === "function" ? PREFIXES[service](session) : PREFIXES[service];
  let u = prefix + path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v === undefined || v === null || v === "") continue;
      for (const one of Array.isArray(v) ? v : [v]) q.append(k, one);
    }
    const s = q.toString();
    if (s) u += (u.includes("?") ? "&" : "?") + s;
  }
  return u;
}

export function headers(service, extra = {}) {
  const h = { "X-Auth-Token": session.token, ...extra };
  if (service === "compute") h["OpenStack-API-Version"] = `compute ${COMPUTE_VERSION}`;
  if (service === "placement") h["OpenStack-API-Version"] = "placement 1.39";
  if (service === "volume") h["OpenStack-API-Version"] = "volume 3.0";
  return h;
}

/**
 * One call: request("compute", "GET", "/servers/detail", {query: {...}}) → parsed JSON body.
 * `body` is sent as JSON unless it is a Blob/File (sent as it is, for image uploads).
 * A 401 ends the session (the page shows the login form again).
 */
export async function request(service, method, path, { body, query, headers: extra, contentType } = {}) {
  const h = headers(service, extra);
  let payload;
  if (body instanceof Blob) {
    payload = body;
    h["Content-Type"] = contentType || "application/octet-stream";
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    h["Content-Type"] = contentType || "application/json";
  }
  const resp = await fetch(url(service, path, query), { method, headers: h, body: payload });
  const data = await parse(resp);
  if (resp.status === 401) {
    setSession(null);
    throw new ApiError(401, "Your session ended; log in again.", data);
  }
  if (!resp.ok) throw new ApiError(resp.status, faultMessage(data, resp), data);
  return data;
}

export const get = (service, path, query) => request(service, "GET", path, { query });
export const post = (service, path, body, opts = {}) => request(service, "POST", path, { ...opts, body });
export const put = (service, path, body, opts = {}) => request(service, "PUT", path, { ...opts, body });
export const del = (service, path, opts = {}) => request(service, "DELETE", path, opts);

/** A server action (POST /servers/{id}/action) with Nova's one-key body. */
export const serverAction = (id, name, arg = null) => post("compute", `/servers/${id}/action`, { [name]: arg });

// --- resources ---

/**
 * Send a file's bytes with PUT, reporting progress: onProgress(sentBytes, totalBytes).
 * XMLHttpRequest rather than fetch, because only it reports an upload's progress.
 * Resolves with the parsed answer; rejects with an ApiError as request() does. `signal` (an
 * AbortSignal) cancels it.
 */
export function upload(service, path, blob, onProgress = () => {}, signal = null) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    signal?.addEventListener("abort", () => xhr.abort());
    xhr.open("PUT", url(service, path));
    for (const [k, v] of Object.entries(headers(service, { "Content-Type": "application/octet-stream" }))) {
      xhr.setRequestHeader(k, v);
    }
    xhr.upload.addEventListener("progress", (ev) => onProgress(ev.loaded, ev.lengthComputable ? ev.total : blob.size));
    xhr.addEventListener("load", () => {
      let data = null;
      try { data = xhr.responseText ? JSON.parse(xhr.responseText) : null; } catch { data = xhr.responseText; }
      if (xhr.status === 401) { logout(); reject(new ApiError(401, "Your session ended; log in again.", data)); return; }
      if (xhr.status < 200 || xhr.status >= 300) {
        reject(new ApiError(xhr.status, faultMessage(data, { status: xhr.status, statusText: xhr.statusText }), data));
        return;
      }
      onProgress(blob.size, blob.size);
      resolve(data);
    });
    xhr.addEventListener("error", () => reject(new ApiError(0, "The upload was cut off (network error).")));
    xhr.addEventListener("abort", () => reject(new ApiError(0, "The upload was cancelled.")));
    xhr.send(blob);
  });
}

let catalogFor = null;
let catalogTypes = null;

/** Whether the token's catalog lists a service of this type (e.g. "block-storage"); asked once
 *  per session. */
export async function hasService(...types) {
  if (catalogFor !== session?.token) {
    const data = await get("identity", "/auth/catalog");
    catalogTypes = new Set((data.catalog || []).map((s) => s.type));
    catalogFor = session.token;
  }
  return types.some((t) => catalogTypes.has(t));
}
