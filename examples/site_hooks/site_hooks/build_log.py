"""A JSON line for every server built, appended to the file SITE_HOOKS_BUILD_LOG names (no
file named: nothing is written). Each line is the post_build hook's payload (a Nova
InstanceActionPayload) with the time it was written."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import datetime, timezone

from nova_async.hooks import HOOK_API_VERSION

hook_api_version = HOOK_API_VERSION

LOG_ENV = "SITE_HOOKS_BUILD_LOG"


async def post_build(payload: dict) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    line = json.dumps({"logged_at": datetime.now(timezone.utc).isoformat(), "payload": payload}) + "\n"
    # A file write may block on a slow disk: not on the event loop.
    await asyncio.to_thread(_append, path, line)


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line)
