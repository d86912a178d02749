// How a server's fields read on the pages that show servers (the list, one server's page,
// the activity feed): its image's name, its addresses, a time the API wrote.

/** The servers' image names by id (the list and the stream name images by id only). */
export async function imageNames(api) {
  try {
    const { images } = await api.get("image", "/images", { limit: 1000 });
    return new Map(images.map((i) => [i.id, i.name || i.id]));
  } catch {
    return new Map();
  }
}

/** "net: 10.0.0.3, 203.0.113.9 · other: …" from a server's addresses. */
export function addressText(addresses) {
  return Object.entries(addresses || {})
    .map(([net, list]) => `${net}: ${list.map((a) => a.addr).join(", ")}`).join(" · ");
}

export function imageText(image, names) {
  if (!image || !image.id) return "(volume)";
  return names.get(image.id) || image.id.slice(0, 8);
}

/** A time Nova wrote without a zone (it is UTC), as local time. */
export function when(iso) {
  return new Date(/(Z|[+-]\d\d:?\d\d)$/.test(iso) ? iso : `${iso}Z`).toLocaleString();
}
