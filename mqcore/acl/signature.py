"""The request signature of RocketMQ's plain ACL, for both ends of the wire.

A signed request carries ``AccessKey``, ``Signature`` and (from Alibaba's clients and the
C++ core) ``OnsChannel`` in its ext fields. The signature is base64(HmacSHA1(secret,
content)) where content is the values of the ext fields, sorted by key, ``Signature``
left out, joined without separators, in UTF-8, followed by the body bytes. The server
also leaves out ``_UNIQUE_KEY_QUERY`` (4.9.8 does) but accepts a signature that covers it,
since clients add it before signing.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from mqcore.protocol import RemotingCommand
from mqcore.protocol.command import Body

__all__ = [
    "ACCESS_KEY",
    "ONS_CHANNEL",
    "SECURITY_TOKEN",
    "SIGNATURE",
    "SessionCredentials",
    "calc_signature",
    "request_content",
    "sign_request",
    "signature_matches",
]

ACCESS_KEY: Final = "AccessKey"
SIGNATURE: Final = "Signature"
ONS_CHANNEL: Final = "OnsChannel"
SECURITY_TOKEN: Final = "SecurityToken"
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"
"""RocketMQ's ``MixAll.UNIQUE_MSG_QUERY_FLAG``."""


@dataclass(frozen=True, slots=True)
class SessionCredentials:
    """What a client signs with. ``ons_channel`` is sent (and signed) only when set."""

    access_key: str
    secret_key: str
    ons_channel: str | None = None
    security_token: str | None = None

    def __repr__(self) -> str:  # never print the secret
        return f"SessionCredentials(access_key={self.access_key!r}, secret_key='***')"


def request_content(
    ext_fields: Mapping[str, str], body: Body, *, skip: frozenset[str] = frozenset()
) -> bytes:
    """The bytes a signature covers (see the module docstring)."""
    text = "".join(
        ext_fields[key] for key in sorted(ext_fields) if key != SIGNATURE and key not in skip
    )
    return text.encode() + bytes(body)


def calc_signature(content: bytes, secret_key: str) -> str:
    digest = hmac.new(secret_key.encode(), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


_SERVER_SKIP: Final = frozenset({UNIQUE_KEY_QUERY})


def signature_matches(request: RemotingCommand, secret_key: str) -> bool:
    """Whether the request's ``Signature`` was made with ``secret_key`` (constant time)."""
    given = request.ext_fields.get(SIGNATURE)
    if not given:
        return False
    fields, body = request.ext_fields, request.body
    expected = calc_signature(request_content(fields, body, skip=_SERVER_SKIP), secret_key)
    if hmac.compare_digest(expected.encode(), given.encode()):
        return True
    if UNIQUE_KEY_QUERY in fields:
        expected = calc_signature(request_content(fields, body), secret_key)
        return hmac.compare_digest(expected.encode(), given.encode())
    return False


def sign_request(request: RemotingCommand, credentials: SessionCredentials) -> RemotingCommand:
    """A copy of ``request`` with the credential fields and its signature added."""
    fields = dict(request.ext_fields)
    fields[ACCESS_KEY] = credentials.access_key
    if credentials.security_token is not None:
        fields[SECURITY_TOKEN] = credentials.security_token
    if credentials.ons_channel is not None:
        fields[ONS_CHANNEL] = credentials.ons_channel
    fields.pop(SIGNATURE, None)
    fields[SIGNATURE] = calc_signature(
        request_content(fields, request.body), credentials.secret_key
    )
    return dataclasses.replace(request, ext_fields=fields)
