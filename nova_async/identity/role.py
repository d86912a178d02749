"""The identity role: Keystone v3 password tokens, the catalog, projects, users and roles;
it also keeps this process's list of revoked tokens in step with the database."""

from __future__ import annotations

from aiohttp import web

from nova_async.identity import revocations, routes, store
from nova_async.role import Role


class IdentityRole(Role):
    name = "identity"

    def http(self) -> tuple[str, web.Application]:
        return "/v3", routes.build_app(self.deps)

    def root_routes(self) -> list[web.RouteDef]:
        return routes.root_routes(self.settings)

    async def run(self) -> None:
        password, generated = store.admin_password(self.deps.state_dir, self.settings.identity.admin_password)
        await store.bootstrap(self.pool, password)
        if generated:
            store.log.info("generated the admin password",
                           stored_in=str(self.deps.state_dir / "admin-password"))
        async with revocations.following(self.pool, self.deps.tokens.revocations):
            self.ready.set()
            await self.stopping.wait()
