"""GET /v2/info/import: the interoperable image import methods this service offers. There
is no staging area or POST /v2/images/{id}/import here (data arrives by PUT …/file only), so
the list is empty; clients then fall back to the upload they already use."""

from __future__ import annotations

from aiohttp import web

from nova_async.common.web import dump

IMPORT_METHODS: list[str] = []


async def show_import_info(request: web.Request) -> web.Response:
    return dump({"import-methods": {"description": "Import methods available.", "type": "array",
                                    "value": IMPORT_METHODS}})
