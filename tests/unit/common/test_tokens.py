"""Signed tokens: what one key issues, only that key accepts, until it expires."""

import time

import msgspec
import pytest

from nova_async.common.errors import Unauthorized
from nova_async.common.tokens import TokenBody, TokenCodec, _b64


def body(expires_in=60.0):
    now = time.time()
    return TokenBody(user_id="u", user_name="admin", project_id="p", project_name="admin",
                     roles=("admin",), issued_at=now, expires_at=now + expires_in, audit_id="a")


def test_round_trip():
    codec = TokenCodec(b"k" * 32)
    assert codec.verify(codec.issue(body())).user_id == "u"


@pytest.mark.parametrize("mangle", [lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
                                    lambda t: "gA" + t[3:], lambda t: "garbage", lambda t: ""])
def test_tampered_tokens_are_refused(mangle):
    codec = TokenCodec(b"k" * 32)
    with pytest.raises(Unauthorized):
        codec.verify(mangle(codec.issue(body())))


def test_other_keys_and_expired_tokens_are_refused():
    token = TokenCodec(b"k" * 32).issue(body())
    with pytest.raises(Unauthorized):
        TokenCodec(b"x" * 32).verify(token)
    codec = TokenCodec(b"k" * 32)
    with pytest.raises(Unauthorized, match="expired"):
        codec.verify(codec.issue(body(expires_in=-1)))


def test_allow_expired_grace_accepts_a_token_expired_within_it():
    codec = TokenCodec(b"k" * 32)
    token = codec.issue(body(expires_in=-60))
    assert codec.verify(token, grace=120).user_id == "u"
    with pytest.raises(Unauthorized, match="expired"):
        codec.verify(token, grace=30)


def test_tokens_made_before_methods_were_recorded_read_as_password_tokens():
    codec = TokenCodec(b"k" * 32)
    old = {f: getattr(body(), f) for f in TokenBody.__struct_fields__ if f != "methods"}
    payload = _b64(msgspec.json.encode(old))
    assert codec.verify(f"gA{payload}.{codec._sign(payload)}").methods == ("password",)
