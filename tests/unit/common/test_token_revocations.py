"""Revocation events refuse the tokens issued up to them, by user, project, both, or one
token's audit id."""

import time

import pytest

from nova_async.common.errors import Unauthorized
from nova_async.common.tokens import TokenBody, TokenCodec


def token(codec: TokenCodec, user: str, project: str, issued_at: float) -> str:
    return codec.issue(TokenBody(user_id=user, user_name=user, project_id=project, project_name=project,
                                 roles=("member", "reader"), issued_at=issued_at,
                                 expires_at=time.time() + 3600, audit_id=f"audit-{user}/{project}"))


@pytest.mark.parametrize(("event", "refused"), [
    (("u1", None, None, 100.0), {"u1/p1", "u1/p2"}),
    ((None, "p1", None, 100.0), {"u1/p1", "u2/p1"}),
    (("u1", "p1", None, 100.0), {"u1/p1"}),
    (("u1", None, None, 99.0), set()),  # issued after the event: still good
    ((None, None, None, 100.0), set()),
    ((None, None, "audit-u2/p1", 100.0), {"u2/p1"}),  # one token, by its audit id
    ((None, None, "audit-u2/p1", 99.0), set()),
])
def test_events_match_by_user_project_both_or_audit_id(event, refused):
    codec = TokenCodec(b"k" * 32)
    codec.revocations.replace([event])
    for pair in ("u1/p1", "u1/p2", "u2/p1"):
        user, project = pair.split("/")
        issued = token(codec, user, project, 100.0)
        if pair in refused:
            with pytest.raises(Unauthorized, match="revoked"):
                codec.verify(issued)
        else:
            assert codec.verify(issued).user_id == user


def test_newest_event_of_a_kind_wins():
    codec = TokenCodec(b"k" * 32)
    codec.revocations.replace([("u1", None, None, 200.0), ("u1", None, None, 50.0)])
    with pytest.raises(Unauthorized):
        codec.verify(token(codec, "u1", "p1", 150.0))
    assert codec.verify(token(codec, "u1", "p1", 201.0)).user_id == "u1"
