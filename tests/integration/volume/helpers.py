"""What the volume API tests share: a volume made and waited for, through the HTTP API."""

from __future__ import annotations

V3 = "/volume/v3"


async def settled(h) -> None:
    """Until the volume role's background work (creates, deletes, extends) is done."""
    await h.roles["volume"].work.idle()


async def call(h, method: str, path: str, headers, body=None):
    resp = await h.http.request(method, V3 + path, json=body, headers=headers)
    text = await resp.text()
    try:
        data = await resp.json(content_type=None) if text else None
    except ValueError:
        data = text
    return resp.status, data


async def make_volume(h, headers, **fields):
    fields.setdefault("size", 1)
    status, body = await call(h, "POST", "/volumes", headers, {"volume": fields})
    assert status == 202, body
    await settled(h)
    status, body = await call(h, "GET", f"/volumes/{body['volume']['id']}", headers)
    assert status == 200, body
    return body["volume"]


async def make_snapshot(h, headers, volume_id, **fields):
    status, body = await call(h, "POST", "/snapshots", headers, {"snapshot": {"volume_id": volume_id, **fields}})
    assert status == 202, body
    await settled(h)
    status, body = await call(h, "GET", f"/snapshots/{body['snapshot']['id']}", headers)
    assert status == 200, body
    return body["snapshot"]
