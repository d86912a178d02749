"""Managing projects, users and role assignments: what the `/v3` API and the `nova-async
project|user|role` commands both call.

Each change is one transaction. Changes that take access away (a user deleted, disabled or
given a new password, a project deleted or disabled, a role removed) record a token
revocation event in the same transaction (revocations.py), so tokens issued before stop
working at once in this process and within moments in every other.

Deleting a project does what Keystone does: the project and its role assignments go, and
whatever the project owned in the other services (servers, networks, images, quotas) is left
as it is, still owned by the old project id; an admin can list it (`--all-projects`) and
delete it. Nothing in the database refers to a project by foreign key outside identity."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg

from nova_async.common import errors
from nova_async.common.tokens import Revocations
from nova_async.db.pool import Pool
from nova_async.db.queries import queries
from nova_async.identity import revocations, store

Q = queries("identity")
KEEP = object()  # "leave this field as it is" where None is a value of its own


@dataclass
class IdentityAdmin:
    pool: Pool
    # How long a revocation event must be kept (IdentitySettings.revocation_horizon).
    horizon: float
    # This process's token checker, updated at once after a revoking change (others follow
    # through NOTIFY); None for the command line, which serves no tokens.
    local: Revocations | None = None

    # --- lookups -----------------------------------------------------------------------

    async def project(self, project_id: str) -> asyncpg.Record:
        row = await self.pool.fetchrow(Q.project_by_id, project_id)
        if row is None:
            raise errors.NotFound(f"Could not find project: {project_id}.")
        return row

    async def user(self, user_id: str) -> asyncpg.Record:
        row = await self.pool.fetchrow(Q.user_by_id, user_id)
        if row is None:
            raise errors.NotFound(f"Could not find user: {user_id}.")
        return row

    async def role(self, role_id: str) -> asyncpg.Record:
        row = await self.pool.fetchrow(Q.role_by_id, role_id)
        if row is None:
            raise errors.NotFound(f"Could not find role: {role_id}.")
        return row

    async def find_project(self, name_or_id: str) -> asyncpg.Record:
        row = (await self.pool.fetchrow(Q.project_by_name, name_or_id, store.DOMAIN_ID)
               or await self.pool.fetchrow(Q.project_by_id, name_or_id))
        if row is None:
            raise errors.NotFound(f"No project with a name or id of '{name_or_id}' exists.")
        return row

    async def find_user(self, name_or_id: str) -> asyncpg.Record:
        row = (await self.pool.fetchrow(Q.user_by_name, name_or_id, store.DOMAIN_ID)
               or await self.pool.fetchrow(Q.user_by_id, name_or_id))
        if row is None:
            raise errors.NotFound(f"No user with a name or id of '{name_or_id}' exists.")
        return row

    async def find_role(self, name_or_id: str) -> asyncpg.Record:
        row = (await self.pool.fetchrow(Q.role_by_name, name_or_id)
               or await self.pool.fetchrow(Q.role_by_id, name_or_id))
        if row is None:
            names = [r["name"] for r in await self.pool.fetch(Q.list_roles, None)]
            raise errors.NotFound(f"No role with a name or id of '{name_or_id}' exists "
                                  f"(roles: {', '.join(names)}).")
        return row

    async def projects(self, *, name: str | None = None, only: str | None = None,
                       enabled: bool | None = None) -> list[asyncpg.Record]:
        """Projects by name, enabled or not (None: any); `only` that one project (a
        member sees just their own)."""
        return await self.pool.fetch(Q.list_projects, name, only, enabled)

    async def projects_of(self, user_id: str) -> list[asyncpg.Record]:
        """The projects where the user has a role, disabled ones too (as Keystone lists them)."""
        return await self.pool.fetch(Q.projects_of_user, user_id, False)

    async def user_projects(self, user_id: str) -> list[asyncpg.Record]:
        """`projects_of` a user who must exist (else 404)."""
        await self.user(user_id)
        return await self.projects_of(user_id)

    async def users(self, *, name: str | None = None, enabled: bool | None = None) -> list[asyncpg.Record]:
        return await self.pool.fetch(Q.list_users, name, enabled)

    async def roles(self, name: str | None = None) -> list[asyncpg.Record]:
        return await self.pool.fetch(Q.list_roles, name)

    # --- projects ----------------------------------------------------------------------

    async def create_project(self, name: str, description: str = "", enabled: bool = True) -> asyncpg.Record:
        try:
            return await self.pool.fetchrow(Q.create_project, uuid.uuid4().hex, name, description, enabled)
        except asyncpg.UniqueViolationError:
            raise _duplicate("project", name) from None

    async def update_project(self, project_id: str, *, name: str | None = None,
                             description: str | None = None, enabled: bool | None = None) -> asyncpg.Record:
        async with self._changing() as conn:
            try:
                row = await conn.fetchrow(Q.update_project, project_id, name, description, enabled)
            except asyncpg.UniqueViolationError:
                raise _duplicate("project", name or "") from None
            if row is None:
                raise errors.NotFound(f"Could not find project: {project_id}.")
            if enabled is False:
                await revocations.record(conn, self.horizon, project_id=project_id)
        return row

    async def delete_project(self, project_id: str) -> None:
        async with self._changing() as conn:
            if await conn.fetchval(Q.delete_project, project_id) is None:
                raise errors.NotFound(f"Could not find project: {project_id}.")
            await revocations.record(conn, self.horizon, project_id=project_id)

    # --- users -------------------------------------------------------------------------

    async def create_user(self, name: str, password: str | None, *, enabled: bool = True,
                          default_project_id: str | None = None,
                          extra: dict[str, Any] | None = None) -> asyncpg.Record:
        hashed = await _hash(password)
        try:
            return await self.pool.fetchrow(Q.create_user, uuid.uuid4().hex, name, hashed, enabled,
                                            default_project_id, extra or {})
        except asyncpg.UniqueViolationError:
            raise _duplicate("user", name) from None
        except asyncpg.ForeignKeyViolationError:
            raise errors.InvalidInput(f"Could not find project: {default_project_id}.") from None

    async def update_user(self, user_id: str, *, name: str | None = None, password: Any = KEEP,
                          enabled: bool | None = None, default_project_id: Any = KEEP,
                          extra: dict[str, Any] | None = None) -> asyncpg.Record:
        hashed = None if password is KEEP else await _hash(password)
        set_project = default_project_id is not KEEP
        async with self._changing() as conn:
            try:
                row = await conn.fetchrow(Q.update_user, user_id, name, hashed, enabled, set_project,
                                          default_project_id if set_project else None, extra or {})
            except asyncpg.UniqueViolationError:
                raise _duplicate("user", name or "") from None
            except asyncpg.ForeignKeyViolationError:
                raise errors.InvalidInput(f"Could not find project: {default_project_id}.") from None
            if row is None:
                raise errors.NotFound(f"Could not find user: {user_id}.")
            if hashed is not None or enabled is False:
                await revocations.record(conn, self.horizon, user_id=user_id)
        return row

    async def delete_user(self, user_id: str) -> None:
        async with self._changing() as conn:
            if await conn.fetchval(Q.delete_user, user_id) is None:
                raise errors.NotFound(f"Could not find user: {user_id}.")
            await revocations.record(conn, self.horizon, user_id=user_id)

    # --- role assignments --------------------------------------------------------------

    async def grant(self, user_id: str, project_id: str, role: str) -> None:
        try:
            await self.pool.execute(Q.assign_role, user_id, project_id, role)
        except asyncpg.ForeignKeyViolationError:
            raise errors.NotFound("The user, project or role was deleted meanwhile.") from None

    async def revoke(self, user_id: str, project_id: str, role: str) -> None:
        async with self._changing() as conn:
            if await conn.fetchval(Q.unassign_role, user_id, project_id, role) is None:
                raise errors.NotFound(f"Could not find role assignment with role: {role}, "
                                      f"user: {user_id}, project: {project_id}.")
            await revocations.record(conn, self.horizon, user_id=user_id, project_id=project_id)

    # --- tokens ------------------------------------------------------------------------

    async def revoke_token(self, audit_id: str) -> None:
        """One token refused from now on, by its audit id (DELETE /v3/auth/tokens)."""
        async with self._changing() as conn:
            await revocations.record(conn, self.horizon, audit_id=audit_id)

    async def has_role(self, user_id: str, project_id: str, role: str) -> bool:
        return await self.pool.fetchval(Q.has_role, user_id, project_id, role)

    async def assignments(self, *, user_id: str | None = None, project_id: str | None = None,
                          role_id: str | None = None) -> list[asyncpg.Record]:
        return await self.pool.fetch(Q.list_assignments, user_id, project_id, role_id)

    @contextlib.asynccontextmanager
    async def _changing(self) -> AsyncIterator[asyncpg.Connection]:
        """A transaction whose revocation events, once committed, reach this process's checker."""
        async with self.pool.acquire() as conn:
            async with conn.transaction():
                yield conn
            if self.local is not None:
                await revocations.reload(conn, self.local)


def _duplicate(kind: str, name: str) -> errors.Conflict:
    return errors.Conflict(f"Conflict occurred attempting to store {kind} - Duplicate entry found "
                           f"with name {name} at domain ID {store.DOMAIN_ID}.")


async def _hash(password: str | None) -> str:
    # No password: nobody can log in as this user ("" never matches a scrypt hash).
    if password is None:
        return ""
    return await asyncio.to_thread(store.hash_password, password)
