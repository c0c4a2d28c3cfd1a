"""ACL for gRPC calls, by the accounts of the broker's ``plain_acl.yml``.

A 5.x SDK with credentials signs every call the same way: metadata ``authorization:
MQv2-HMAC-SHA1 Credential=<AccessKey>, SignedHeaders=x-mq-date-time, Signature=<hex>``,
the signature an HMAC-SHA1 of the ``x-mq-date-time`` value under the secret key. So a
call is authenticated once, from its metadata (:func:`authenticate`); what it may touch is
decided per remoting request it becomes, by the same rules the remoting ports apply
(:func:`authorize`: ``needed_resources`` and ``check_resources`` of :mod:`mqcore.acl`).
A peer in a white list skips both, as on the remoting ports. Refusals are UNAUTHORIZED,
RocketMQ 5's code for both kinds.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from mqcore.acl.config import PlainAclConfig
from mqcore.acl.permission import Perm
from mqcore.acl.resources import needed_resources
from mqcore.acl.validator import check_resources
from mqcore.protocol import RemotingCommand
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.status import ProxyError

__all__ = ["AUTHORIZATION", "DATE_TIME", "authenticate", "authorize", "parse_authorization"]

AUTHORIZATION = "authorization"
DATE_TIME = "x-mq-date-time"
_NO_ACCESS_KEY = "no AccessKey in the request (ACL is enabled)"


def parse_authorization(value: str) -> tuple[str, str]:
    """``(access key, hex signature)`` of an ``authorization`` value; ProxyError when it
    does not have both."""
    _, sep, items = value.partition(" ")
    if not sep:
        raise ProxyError(pb.Code.UNAUTHORIZED, "authentication header is incorrect.")
    access_key = signature = ""
    for item in items.split(","):
        name, sep, content = item.strip().partition("=")
        if not sep:
            raise ProxyError(pb.Code.UNAUTHORIZED, "authentication keyValues length is incorrect")
        if name == "Credential":
            access_key = content.split("/")[0]
        elif name == "Signature":
            signature = content
    if not access_key or not signature:
        raise ProxyError(pb.Code.UNAUTHORIZED, "authentication header is incorrect.")
    return access_key, signature


def authenticate(
    config: PlainAclConfig | None, metadata: Mapping[str, str], remote_host: str
) -> str | None:
    """The access key whose rights a call has, or None when no ACL applies to it (ACL
    off, or a white-listed peer). Raises ProxyError(UNAUTHORIZED) for a call that is not
    signed, or not by a known account, or whose signature does not verify."""
    if config is None:
        return None
    if any(pattern.matches(remote_host) for pattern in config.global_white_addresses):
        return None
    header = metadata.get(AUTHORIZATION, "")
    if not header or "Credential=," in header.replace(" ", ""):  # an SDK without credentials
        raise ProxyError(pb.Code.UNAUTHORIZED, _NO_ACCESS_KEY)
    access_key, signature = parse_authorization(header)
    account = config.accounts.get(access_key)
    if account is None:
        raise ProxyError(pb.Code.UNAUTHORIZED, f"no ACL config for accessKey={access_key}")
    if account.white_remote_address.matches(remote_host):
        return None
    date_time = metadata.get(DATE_TIME)
    if not date_time:
        raise ProxyError(pb.Code.UNAUTHORIZED, "datetime is null.")
    expected = hmac.new(account.secret_key.encode(), date_time.encode(), hashlib.sha1).hexdigest()
    if not hmac.compare_digest(expected, signature.lower()):
        raise ProxyError(pb.Code.UNAUTHORIZED, f"signature check failed for accessKey={access_key}")
    return access_key


def authorize(
    config: PlainAclConfig | None,
    access_key: str | None,
    request: RemotingCommand | None,
    *,
    topic: str | None = None,
) -> None:
    """Whether the account may make ``request`` (or touch ``topic``: PUB or SUB does);
    ProxyError(UNAUTHORIZED) when not. Nothing to check without ACL or account."""
    if config is None or access_key is None:
        return
    account = config.accounts.get(access_key)
    if account is None:  # the file changed since the call was authenticated
        raise ProxyError(pb.Code.UNAUTHORIZED, f"no ACL config for accessKey={access_key}")
    if request is None:
        code, needs = 0, {topic: Perm.ANY} if topic else {}
    else:
        try:
            code, needs = request.code, needed_resources(request)
        except ValueError as exc:
            raise ProxyError(pb.Code.UNAUTHORIZED, str(exc)) from None
    denied = check_resources(account, code, needs)
    if denied is not None:
        raise ProxyError(pb.Code.UNAUTHORIZED, denied.reason)
