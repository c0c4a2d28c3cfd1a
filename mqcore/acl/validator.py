"""The access decision for one request, as 4.9.8's PlainPermissionManager.validate.

In order: a peer matching ``globalWhiteRemoteAddresses`` is let in; otherwise the request
must name a known ``AccessKey``; a peer matching that account's ``whiteRemoteAddress`` is
let in without a signature; otherwise the signature must verify, admin codes need an admin
account, and every topic and group the request touches needs the account's permission
(its own entry, else its default). Pure: no I/O, no clock; callers log and answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mqcore.acl.config import Account, PlainAclConfig
from mqcore.acl.permission import ADMIN_CODES, Perm, has_permission
from mqcore.acl.resources import TRACE_TOPIC, needed_resources
from mqcore.acl.signature import ACCESS_KEY, signature_matches
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX
from mqcore.protocol import RemotingCommand

__all__ = ["AccessDenied", "check_resources", "validate"]


@dataclass(frozen=True, slots=True)
class AccessDenied:
    """Why a request was refused (the remark of the NO_PERMISSION answer)."""

    reason: str
    access_key: str | None = None


def _describe(resource: str) -> str:
    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return f"group={resource[len(RETRY_GROUP_TOPIC_PREFIX) :]}"
    return f"topic={resource}"


def check_resources(account: Account, code: int, needs: Mapping[str, Perm]) -> AccessDenied | None:
    """The permission part of the decision (after the signature), also used by `mq acl
    check`: admin codes, then each resource against its entry or the default."""
    key = account.access_key
    if code in ADMIN_CODES and not account.admin:
        return AccessDenied(f"request code {code} needs an admin account; {key} is not", key)
    if not needs or (account.admin and not account.resource_perms):
        return None
    for resource, needed in needs.items():
        owned = account.resource_perms.get(resource)
        if owned is None:
            is_group = resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
            owned = account.default_group_perm if is_group else account.default_topic_perm
        if not has_permission(needed, owned):
            return AccessDenied(f"no {needed.name} permission on {_describe(resource)}", key)
    return None


def validate(
    config: PlainAclConfig, request: RemotingCommand, remote_host: str
) -> AccessDenied | None:
    """None when the request may proceed, else why not."""
    for pattern in config.global_white_addresses:
        if pattern.matches(remote_host):
            return None
    access_key = request.ext_fields.get(ACCESS_KEY)
    if not access_key:
        return AccessDenied("no AccessKey in the request (ACL is enabled)")
    account = config.accounts.get(access_key)
    if account is None:
        return AccessDenied(f"no ACL config for accessKey={access_key}", access_key)
    if account.white_remote_address.matches(remote_host):
        return None
    if not signature_matches(request, account.secret_key):
        return AccessDenied(f"signature check failed for accessKey={access_key}", access_key)
    try:
        needs = needed_resources(request)
    except ValueError as exc:
        return AccessDenied(str(exc), access_key)
    if needs.get(TRACE_TOPIC) == Perm.PUB:
        return None
    return check_resources(account, request.code, needs)
