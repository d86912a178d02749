// Key pairs: list, make one, import a public key, delete.
//
// At the dashboard's compute microversion (2.100) Nova no longer makes private keys
// (2.92 made `public_key` required): so the pair is made here, in the browser, with WebCrypto's
// Ed25519, and only its public half is sent. The private half never leaves the page: it is
// offered once as a file to save (OpenSSH's own format, which ssh reads; PKCS#8 PEM too).

import { h, clear, pageHeading, ready, table, field, modal, confirm, toast, fieldError, blame, rowButton,
         rowActions } from "../ui.js";

export default async function keypairs(view, { api }) {
  const list = h("div");
  view.append(pageHeading("Key pairs",
    h("button", { type: "button", onclick: () => generate(api, load) }, "Create key pair"),
    h("button", { type: "button", class: "ghost", onclick: () => importKey(api, load) }, "Import public key")), list);

  async function load() {
    const data = await api.get("compute", "/os-keypairs");
    const pairs = data.keypairs.map((k) => k.keypair);
    clear(list, table([
      { label: "Name", value: (k) => k.name },
      { label: "Type", value: (k) => k.type || "ssh" },
      { label: "Fingerprint", value: (k) => h("span", { class: "mono" }, k.fingerprint) },
      { label: "Public key", value: (k) => h("span", { class: "mono", title: k.public_key },
                                            `${(k.public_key || "").slice(0, 32)}…`) },
      { label: "", value: (k) => rowActions(rowButton("Delete", `Delete key pair ${k.name}`, () => remove(k), { danger: true })) },
    ], pairs, { rowKey: (k) => k.name, empty: "No key pairs yet: create or import one." }));
  }

  async function remove(k) {
    if (!await confirm(`Delete the key pair “${k.name}”? Servers that have it keep it.`, { action: "Delete" })) return;
    try {
      await api.del("compute", `/os-keypairs/${encodeURIComponent(k.name)}`);
      toast(`Key pair ${k.name} deleted.`, "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  await load();
  ready(view);
}

const nameField = () => field("Name", h("input", { name: "name", required: true, maxlength: 255,
                                                   pattern: "[A-Za-z0-9 _.@\\-]+", autocomplete: "off" }),
                              "Letters, digits, spaces, “_ - . @”.");

async function send(api, name, publicKey) {
  try {
    return (await api.post("compute", "/os-keypairs", { keypair: { name, public_key: publicKey, type: "ssh" } })).keypair;
  } catch (err) {
    throw blame(err, { name: /name|already exists|exists/i, public_key: /key|fingerprint/i });
  }
}

function importKey(api, reload) {
  return modal("Import a public key", (form) => {
    form.append(nameField(),
      field("Public key", h("textarea", { name: "public_key", required: true, placeholder: "ssh-ed25519 AAAA… you@host" }),
            "The one line of your ~/.ssh/id_*.pub."));
  }, async (form) => {
    const name = form.elements.name.value.trim();
    const key = form.elements.public_key.value.trim();
    if (!/^(ssh-|ecdsa-|sk-)/.test(key)) throw fieldError("public_key", "That is not an OpenSSH public key (it starts with ssh-… or ecdsa-…).");
    const made = await send(api, name, key);
    toast(`Key pair ${made.name} imported.`, "ok");
    await reload();
    return made;
  }, { action: "Import" });
}

async function generate(api, reload) {
  const made = await modal("Create a key pair", (form) => {
    form.append(nameField(), h("p", { class: "muted" },
      "An Ed25519 pair is made in this browser; only its public half is sent. You get the private half once, to save."));
  }, async (form) => {
    const name = form.elements.name.value.trim();
    let pair;
    try {
      pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]);
    } catch {
      throw new Error("This browser cannot make Ed25519 keys (WebCrypto). Make a pair with `ssh-keygen -t ed25519` and import its public key.");
    }
    const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
    const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey));
    const pub = fromBase64Url(jwk.x);
    const seed = fromBase64Url(jwk.d);
    const publicKey = `ssh-ed25519 ${toBase64(publicBlob(pub))} ${name}`;
    const keypair = await send(api, name, publicKey);
    return { keypair, openssh: opensshPrivate(seed, pub, name), pkcs8: pem("PRIVATE KEY", pkcs8) };
  }, { action: "Create" });
  if (!made) return;
  await reload();
  await showPrivate(made);
}

/** The private key, offered once: the dialog says so, and nothing keeps it after it closes. */
function showPrivate({ keypair, openssh, pkcs8 }) {
  const file = keypair.name.replace(/[^A-Za-z0-9_.-]+/g, "_");
  const link = (text, content, name) => {
    const href = URL.createObjectURL(new Blob([content], { type: "application/x-pem-file" }));
    return h("a", { class: "button", href, download: name, dataset: { href } }, text);
  };
  const links = [link("Download private key (OpenSSH)", openssh, `${file}`),
                 link("Download as PKCS#8 PEM", pkcs8, `${file}.pem`)];
  return new Promise((resolve) => {
    const dialog = h("dialog", { "aria-label": "Your private key" },
      h("h2", {}, `Key pair ${keypair.name} created`),
      h("p", {}, "Save the private key now: it was made in this browser and is not kept anywhere. ",
        "Use it with ", h("code", {}, `ssh -i ${file} user@server`), " (chmod 600 it first)."),
      h("div", { class: "downloads" }, links),
      h("textarea", { class: "secret", readonly: true, wrap: "off", "aria-label": "Private key", rows: 8 }, openssh),
      h("p", { class: "muted mono" }, `Fingerprint ${keypair.fingerprint}`),
      h("div", { class: "actions" }, h("button", { type: "button", onclick: () => dialog.close() }, "I have saved it")));
    dialog.addEventListener("close", () => {
      for (const a of links) URL.revokeObjectURL(a.dataset.href);
      dialog.remove();
      resolve();
    });
    document.body.append(dialog);
    dialog.showModal();
    links[0].focus();
  });
}

// --- OpenSSH's encodings (RFC 4251 strings; PROTOCOL.key for the private file) ---

function fromBase64Url(s) {
  const b64 = s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

function toBase64(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

const text = (s) => new TextEncoder().encode(s);

function u32(n) {
  return new Uint8Array([(n >>> 24) & 255, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
}

/** An SSH "string": its length as 4 bytes, then the bytes. */
function sshString(bytes) {
  return concat(u32(bytes.length), bytes);
}

function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

function publicBlob(pub) {
  return concat(sshString(text("ssh-ed25519")), sshString(pub));
}

/** An unencrypted "openssh-key-v1" file, as `ssh-keygen -t ed25519 -N ''` writes it. */
function opensshPrivate(seed, pub, comment) {
  const check = crypto.getRandomValues(new Uint8Array(4));
  let secret = concat(check, check, sshString(text("ssh-ed25519")), sshString(pub),
                      sshString(concat(seed, pub)), sshString(text(comment)));
  const pad = (8 - (secret.length % 8)) % 8;
  secret = concat(secret, Uint8Array.from({ length: pad }, (_, i) => i + 1));
  const body = concat(text("openssh-key-v1\0"), sshString(text("none")), sshString(text("none")),
                      sshString(new Uint8Array(0)), u32(1), sshString(publicBlob(pub)), sshString(secret));
  return pem("OPENSSH PRIVATE KEY", body, 70);
}

function pem(label, bytes, width = 64) {
  const b64 = toBase64(bytes).match(new RegExp(`.{1,${width}}`, "g")).join("\n");
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}
