"""Who is asking: the request context every API handler and bus message carries."""

from __future__ import annotations

import msgspec


class RequestContext(msgspec.Struct, frozen=True, kw_only=True):
    user_id: str
    project_id: str
    roles: tuple[str, ...] = ()
    request_id: str = ""
    user_name: str = ""
    project_name: str = ""

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles

    @property
    def is_manager(self) -> bool:
        """A project's manager (Keystone's role between admin and member), or an admin."""
        return "manager" in self.roles or self.is_admin

    def can_see(self, project_id: str) -> bool:
        return self.is_admin or project_id == self.project_id


def admin_context(request_id: str = "") -> RequestContext:
    """For work the service does on its own behalf (recovery, periodic tasks)."""
    return RequestContext(user_id="nova-async", project_id="", roles=("admin",), request_id=request_id)
