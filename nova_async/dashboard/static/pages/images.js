// Images (Glance v2): the list, an upload from the browser with its progress, delete.
// An upload is two calls, as the CLI makes them: POST /v2/images makes the record (queued),
// PUT /v2/images/{id}/file sends the bytes (XMLHttpRequest, for its progress events); the
// image is active once the service has stored them.

import { h, clear, pageHeading, ready, table, badge, age, bytes, field, select, modal, confirm, toast,
         fieldError, blame, rowButton, rowActions } from "../ui.js";

const DISK_FORMATS = ["qcow2", "raw", "iso", "vmdk", "vdi", "vhd", "vhdx", "ploop", "ami", "ari", "aki"];
const CONTAINER_FORMATS = ["bare", "ovf", "ova", "docker", "ami", "ari", "aki"];
const BY_EXTENSION = { qcow2: "qcow2", qcow: "qcow2", img: "raw", raw: "raw", iso: "iso", vmdk: "vmdk",
                       vdi: "vdi", vhd: "vhd", vhdx: "vhdx" };

// Uploads outlive a visit to the page: leaving it does not stop them, and coming back shows
// their progress where it was (this module, and so this panel, lives as long as the tab).
const uploads = h("div", { class: "uploads" });
let reloadList = null;
let sending = 0;
window.addEventListener("beforeunload", (ev) => { if (sending) ev.preventDefault(); });

export default async function images(view, { api }) {
  const project = api.current().project.id;
  const admin = api.isAdmin();
  const list = h("div");
  const start = async () => {
    const made = await uploadForm(api);
    if (made) await send(api, made);
  };
  view.append(pageHeading("Images", h("button", { type: "button", onclick: start }, "Upload image")), uploads, list);

  async function load() {
    const data = await api.get("image", "/images", { limit: 1000, sort: "name:asc" });
    const mine = (img) => admin || img.owner === project;
    clear(list, table([
      { label: "Name", value: (i) => h("span", {}, i.name || i.id) },
      { label: "Status", value: (i) => badge(i.status) },
      { label: "Size", class: "num", value: (i) => bytes(i.size) },
      { label: "Disk format", value: (i) => i.disk_format || "" },
      { label: "Container", value: (i) => i.container_format || "" },
      { label: "Visibility", value: (i) => i.visibility },
      { label: "Age", value: (i) => age(i.created_at) },
      { label: "", value: (i) => rowActions(mine(i) && !i.protected
          ? rowButton("Delete", `Delete image ${i.name || i.id}`, () => remove(i), { danger: true }) : null) },
    ], data.images, { rowKey: (i) => i.id, empty: "No images yet: upload one." }));
  }

  async function remove(img) {
    if (!await confirm(`Delete the image “${img.name || img.id}”? Servers booted from it keep running.`, { action: "Delete" })) return;
    try {
      await api.del("image", `/images/${img.id}`);
      toast(`Image ${img.name || img.id} deleted.`, "ok");
    } catch (err) { toast(err.message, "bad"); }
    await load();
  }

  await load();
  ready(view);
  reloadList = load;
  return () => { if (reloadList === load) reloadList = null; };
}

/** The form: what the image is. Its submit makes the record and hands it back with the file;
 *  the bytes are sent by `send`, shown on the page (an upload can take minutes: the page stays
 *  usable meanwhile). */
function uploadForm(api) {
  const admin = api.isAdmin();
  return modal("Upload an image", (form) => {
    const file = h("input", { type: "file", name: "file", required: true });
    const name = h("input", { name: "name", required: true, maxlength: 255 });
    const disk = select("disk_format", DISK_FORMATS.map((f) => [f, f]), { value: "qcow2" });
    file.addEventListener("change", () => {
      const chosen = file.files[0];
      if (!chosen) return;
      const [stem, ext] = [chosen.name.replace(/\.[^.]*$/, ""), chosen.name.split(".").pop().toLowerCase()];
      if (!name.value) name.value = stem;
      if (BY_EXTENSION[ext]) disk.value = BY_EXTENSION[ext];
    });
    form.append(
      field("File", file, "Sent straight from your browser to the image service."),
      field("Name", name),
      field("Disk format", disk),
      field("Container format", select("container_format", CONTAINER_FORMATS.map((f) => [f, f]), { value: "bare" })),
      admin ? field("Visibility", select("visibility", [["private", "private"], ["shared", "shared"],
                                                        ["community", "community"], ["public", "public"]],
                                       { value: "private" })) : null,
      field("Minimum disk (GiB)", h("input", { name: "min_disk", type: "number", min: 0, value: 0 })),
      field("Minimum RAM (MiB)", h("input", { name: "min_ram", type: "number", min: 0, value: 0 })));
  }, async (form) => {
    const chosen = form.elements.file.files[0];
    if (!chosen) throw fieldError("file", "Choose a file to upload.");
    const v = (n) => form.elements[n]?.value;
    const body = { name: v("name").trim(), disk_format: v("disk_format"), container_format: v("container_format"),
                   min_disk: Number(v("min_disk") || 0), min_ram: Number(v("min_ram") || 0) };
    if (!body.name) throw fieldError("name", "An image needs a name.");
    if (admin) body.visibility = v("visibility");
    try {
      return { record: await api.post("image", "/images", body), file: chosen };
    } catch (err) {
      throw blame(err, { disk_format: /disk.?format/i, container_format: /container.?format/i,
                         visibility: /visibility/i, min_disk: /min_disk/i, min_ram: /min_ram/i, name: /name/i });
    }
  }, { action: "Upload" });
}

/** Send the bytes of a made record, with its progress bar; the list is reloaded at the end. */
async function send(api, { record, file }) {
  const cancel = new AbortController();
  const progress = h("progress", { max: 100, value: 0, "aria-label": `Upload of ${record.name}` });
  const status = h("span", { class: "upload-status", "aria-live": "polite" }, `0 % of ${bytes(file.size)}`);
  const stop = h("button", { type: "button", class: "small ghost", onclick: () => cancel.abort() }, "Cancel");
  const row = h("div", { class: "panel upload", dataset: { image: record.id } },
    h("div", { class: "toolbar" }, h("strong", {}, record.name), status, h("span", { class: "spacer" }), stop), progress);
  uploads.append(row);
  const started = performance.now();
  sending += 1;
  try {
    await api.upload("image", `/images/${record.id}/file`, file, (sent, total) => {
      const pct = total ? Math.floor((sent / total) * 100) : 100;
      progress.value = pct;
      const secs = (performance.now() - started) / 1000;
      status.textContent = `${pct} % of ${bytes(total)}${secs > 0.2 ? ` · ${bytes(sent / secs)}/s` : ""}`;
    }, cancel.signal);
    const stored = await api.get("image", `/images/${record.id}`).catch(() => ({ name: record.name, status: "stored" }));
    status.textContent = `100 % of ${bytes(file.size)} · ${stored.status}`;
    toast(`Image ${stored.name} uploaded: ${stored.status}.`, "ok");
  } catch (err) {
    // The record without its bytes is of no use (queued for ever): it goes, so that trying
    // again does not leave one more behind.
    await api.del("image", `/images/${record.id}`).catch(() => {});
    status.textContent = `Not uploaded: ${err.message}`;
    status.classList.add("form-error");
    toast(`${record.name}: ${err.message}`, "bad");
  }
  sending -= 1;
  stop.textContent = "Dismiss";
  stop.onclick = () => row.remove();
  await reloadList?.();
}
