"""Applying a Glance v2.1 JSON patch (`openstack image set …`) to an image's attributes.

The image is seen as one flat document: core attributes and free-form properties side by
side, exactly as the API shows it. The result is validated again as a whole by the caller."""

from __future__ import annotations

from typing import Any

from nova_async.common import errors
from nova_async.image import schemas

# Core attributes may be replaced but never removed; only properties come and go.
_REMOVABLE_CORE: frozenset[str] = frozenset()


def _unescape(path: str) -> str:
    return path[1:].replace("~1", "/").replace("~0", "~")


def apply(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(doc)
    for op in ops:
        name = _unescape(op["path"])
        schemas.check_writable([name])
        if name == "id":
            raise errors.Forbidden("Attribute 'id' is read-only.")
        kind = op["op"]
        core = name in schemas.CORE
        if kind == "remove":
            if core and name not in _REMOVABLE_CORE:
                raise errors.Forbidden(f"Attribute '{name}' cannot be removed.")
            if name not in out:
                raise errors.Conflict(f"Property {name} does not exist.")
            del out[name]
            continue
        if "value" not in op:
            raise errors.InvalidInput(f"Operation '{kind}' on '{name}' needs a value.")
        if kind == "replace" and not core and name not in out:
            raise errors.Conflict(f"Property {name} does not exist.")
        out[name] = op["value"]
    return out
