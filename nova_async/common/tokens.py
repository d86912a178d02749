"""Signed, self-contained tokens (in the spirit of Keystone's Fernet tokens).

The identity role issues them; every API validates them with the shared key and an
in-memory list of revocation events (a user deleted, disabled or given a new password, a
project deleted, a role taken away), so no request pays a database round trip to
authenticate; an event may also name one token, by its audit id (`DELETE /v3/auth/tokens`).
The identity role keeps that list in step with the database."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time

import msgspec

from nova_async.common.context import RequestContext
from nova_async.common.errors import Unauthorized


class TokenBody(msgspec.Struct, frozen=True, omit_defaults=True):
    user_id: str
    user_name: str
    project_id: str
    project_name: str
    roles: tuple[str, ...]
    issued_at: float
    expires_at: float
    audit_id: str
    # How the token was obtained, shown back when it is validated; tokens issued before this
    # field existed were all password tokens.
    methods: tuple[str, ...] = ("password",)
    # A token from an application credential (identity/app_credentials.py): which one, and
    # whether it may not manage application credentials itself.
    app_cred_id: str = ""
    app_cred_name: str = ""
    app_cred_restricted: bool = False


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Revocations:
    """Revocation events: a token issued at or before an event that matches it is refused.
    Events match by user, by project, by both, or by one token's audit id; the newest event of
    each kind wins. An event is (user_id, project_id, audit_id, revoked_at), None: any."""

    def __init__(self) -> None:
        self._by_user: dict[str, float] = {}
        self._by_project: dict[str, float] = {}
        self._by_pair: dict[tuple[str, str], float] = {}
        self._by_audit: dict[str, float] = {}

    def replace(self, events: list[tuple[str | None, str | None, str | None, float]]) -> None:
        by_user: dict[str, float] = {}
        by_project: dict[str, float] = {}
        by_pair: dict[tuple[str, str], float] = {}
        by_audit: dict[str, float] = {}
        for user_id, project_id, audit_id, at in events:
            if audit_id:
                table, key = by_audit, audit_id
            elif user_id and project_id:
                table, key = by_pair, (user_id, project_id)
            elif user_id:
                table, key = by_user, user_id
            elif project_id:
                table, key = by_project, project_id
            else:
                continue
            table[key] = max(at, table.get(key, at))
        self._by_user, self._by_project, self._by_pair = by_user, by_project, by_pair
        self._by_audit = by_audit

    def revoked(self, body: TokenBody) -> bool:
        t = body.issued_at
        return (self._by_user.get(body.user_id, -1.0) >= t
                or self._by_project.get(body.project_id, -1.0) >= t
                or self._by_pair.get((body.user_id, body.project_id), -1.0) >= t
                or self._by_audit.get(body.audit_id, -1.0) >= t
                # a deleted application credential's tokens (its event's audit id names it)
                or (body.app_cred_id != "" and self._by_audit.get(f"app-cred:{body.app_cred_id}", -1.0) >= t))


class TokenCodec:
    def __init__(self, key: bytes) -> None:
        self._key = key
        self.revocations = Revocations()

    def issue(self, body: TokenBody) -> str:
        payload = _b64(msgspec.json.encode(body))
        return f"gA{payload}.{self._sign(payload)}"

    def verify(self, token: str, *, grace: float = 0.0) -> TokenBody:
        """The token's body when this key signed it, it has not expired (or did so at most
        `grace` seconds ago: Keystone's allow_expired) and no revocation event matches it."""
        if not token.startswith("gA") or "." not in token:
            raise Unauthorized("The request you have made requires authentication.")
        payload, _, signature = token[2:].rpartition(".")
        if not hmac.compare_digest(signature, self._sign(payload)):
            raise Unauthorized("The request you have made requires authentication.")
        try:
            body = msgspec.json.decode(_unb64(payload), type=TokenBody)
        except (msgspec.DecodeError, ValueError):
            raise Unauthorized("The request you have made requires authentication.") from None
        if body.expires_at + grace < time.time():
            raise Unauthorized("The token has expired.", code="token_expired")
        if self.revocations.revoked(body):
            raise Unauthorized("The token has been revoked.", code="token_revoked")
        return body

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())


def context_from_token(body: TokenBody, request_id: str) -> RequestContext:
    return RequestContext(user_id=body.user_id, user_name=body.user_name, project_id=body.project_id,
                          project_name=body.project_name, roles=body.roles, request_id=request_id)
