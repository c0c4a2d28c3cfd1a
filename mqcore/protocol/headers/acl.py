"""Headers of the plain-ACL admin codes (50-53), with 4.9.8's field names.

``topicPerms``/``groupPerms``/``globalWhiteAddrs`` are comma-separated lists on the wire
(``mqadmin updateAclConfig -t topicA=PUB,topicB=SUB``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mqcore.protocol.headers.base import CommandHeader

__all__ = [
    "CreateAccessConfigRequestHeader",
    "DeleteAccessConfigRequestHeader",
    "GetBrokerAclConfigResponseHeader",
    "UpdateGlobalWhiteAddrsConfigRequestHeader",
]


@dataclass(frozen=True, slots=True)
class CreateAccessConfigRequestHeader(CommandHeader):
    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool | None = None
    """4.9.8's clients always send it; mq's leaves it out to keep the account's value."""
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: str | None = None
    group_perms: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteAccessConfigRequestHeader(CommandHeader):
    access_key: str


@dataclass(frozen=True, slots=True)
class UpdateGlobalWhiteAddrsConfigRequestHeader(CommandHeader):
    global_white_addrs: str
    acl_file_full_path: str | None = None


@dataclass(frozen=True, slots=True)
class GetBrokerAclConfigResponseHeader(CommandHeader):
    version: str
    """The file's DataVersion as JSON (``{"counter":N,"timestamp":T}``)."""
    all_acl_file_version: str
    """File path -> DataVersion, as JSON."""
    broker_name: str
    broker_addr: str
    cluster_name: str
