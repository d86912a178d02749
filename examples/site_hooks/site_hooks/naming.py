"""The site's naming rule for servers, enforced before anything is written.

The rule is a regular expression that the whole name must match, read from the environment
variable SITE_HOOKS_NAME_PATTERN when the hook runs (so a change needs no restart) and
defaulting to lowercase letters, digits and dashes, starting with a letter, at most 63
characters (a DNS label). A name that breaks it is refused: `openstack server create`
fails with a 400 that says why, and nothing is written. A rename later is not checked (no
hook point sees it)."""

from __future__ import annotations

import os
import re

from nova_async.hooks import HOOK_API_VERSION, HookVeto

hook_api_version = HOOK_API_VERSION

PATTERN_ENV = "SITE_HOOKS_NAME_PATTERN"
DEFAULT_PATTERN = r"[a-z][a-z0-9-]{0,62}"


async def pre_create(payload: dict) -> None:
    pattern = os.environ.get(PATTERN_ENV) or DEFAULT_PATTERN
    name = payload["nova_object.data"]["display_name"]
    if re.fullmatch(pattern, name) is None:
        raise HookVeto(f"Server name {name!r} does not follow this site's naming rule: "
                       f"it must match {pattern}")
