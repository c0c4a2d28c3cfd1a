"""The ``plain_acl.yml`` model: trusted addresses and accounts, in 4.9.8's file format.

::

    globalWhiteRemoteAddresses: [10.10.103.*, 192.168.0.*]
    accounts:
      - accessKey: RocketMQ          # both keys longer than 6 characters, as 4.9.8 asks
        secretKey: 12345678
        whiteRemoteAddress:           # requests from here skip the signature check
        admin: false
        defaultTopicPerm: DENY        # DENY, PUB, SUB or PUB|SUB; missing means DENY
        defaultGroupPerm: SUB
        topicPerms: [topicA=DENY, topicB=PUB|SUB]
        groupPerms: [groupA=DENY]     # kept under the group's %RETRY% topic, as 4.9.8

Values are read as text whatever YAML made of them (``secretKey: 12345678`` is a number to
YAML and a string to RocketMQ).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from mqcore.acl.address import AddressPattern
from mqcore.acl.permission import Perm, parse_perm
from mqcore.errors import ConfigError
from mqcore.message.const import RETRY_GROUP_TOPIC_PREFIX

__all__ = ["Account", "PlainAclConfig", "load_acl_file", "parse_acl"]

KEY_MIN_LENGTH: Final = 6
"""Keys must be longer than this (4.9.8's ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH)."""


@dataclass(frozen=True, slots=True)
class Account:
    access_key: str
    secret_key: str
    white_remote_address: AddressPattern
    admin: bool = False
    default_topic_perm: Perm = Perm.DENY
    default_group_perm: Perm = Perm.DENY
    resource_perms: Mapping[str, Perm] = field(default_factory=dict)
    """Topic -> perm, and ``%RETRY%group`` -> perm for groups."""

    @property
    def topic_perms(self) -> dict[str, Perm]:
        return {
            k: v
            for k, v in self.resource_perms.items()
            if not k.startswith(RETRY_GROUP_TOPIC_PREFIX)
        }

    @property
    def group_perms(self) -> dict[str, Perm]:
        n = len(RETRY_GROUP_TOPIC_PREFIX)
        return {
            k[n:]: v
            for k, v in self.resource_perms.items()
            if k.startswith(RETRY_GROUP_TOPIC_PREFIX)
        }


@dataclass(frozen=True, slots=True)
class PlainAclConfig:
    global_white_addresses: tuple[AddressPattern, ...] = ()
    accounts: Mapping[str, Account] = field(default_factory=dict)
    source: str = "<none>"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if value is True or value is False:
        return "true" if value else "false"
    return str(value).strip()


def _perms(items: Any, *, group: bool, where: str) -> dict[str, Perm]:
    perms: dict[str, Perm] = {}
    for item in items or ():
        parts = [p.strip() for p in str(item).split("=") if p.strip()]
        if len(parts) != 2:
            kind = "group" if group else "topic"
            raise ConfigError(f"{where}: bad {kind} permission {item!r}: use NAME=PERM")
        name = RETRY_GROUP_TOPIC_PREFIX + parts[0] if group else parts[0]
        perms[name] = parse_perm(parts[1])
    return perms


def _account(raw: Any, where: str) -> Account:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: an account must be a mapping, got {raw!r}")
    access_key = _text(raw.get("accessKey"))
    secret_key = _text(raw.get("secretKey"))
    if (
        not access_key
        or not secret_key
        or len(access_key) <= KEY_MIN_LENGTH
        or len(secret_key) <= KEY_MIN_LENGTH
    ):
        raise ConfigError(
            f"{where}: accessKey={access_key!r} needs an accessKey and a secretKey, "
            f"each longer than {KEY_MIN_LENGTH} characters"
        )
    resource_perms = _perms(raw.get("groupPerms"), group=True, where=where)
    resource_perms.update(_perms(raw.get("topicPerms"), group=False, where=where))
    return Account(
        access_key=access_key,
        secret_key=secret_key,
        white_remote_address=AddressPattern.parse(raw.get("whiteRemoteAddress")),
        admin=_text(raw.get("admin")) == "true",
        default_topic_perm=parse_perm(_text(raw.get("defaultTopicPerm"))),
        default_group_perm=parse_perm(_text(raw.get("defaultGroupPerm"))),
        resource_perms=resource_perms,
    )


def parse_acl(text: str, source: str = "<text>") -> PlainAclConfig:
    """The config in ``text``. Raises ConfigError (bad YAML, account or pattern)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    if doc is None:
        return PlainAclConfig(source=source)
    if not isinstance(doc, Mapping):
        raise ConfigError(f"{source}: expected a mapping at the top")
    white = tuple(AddressPattern.parse(a) for a in doc.get("globalWhiteRemoteAddresses") or () if a)
    accounts: dict[str, Account] = {}
    for index, raw in enumerate(doc.get("accounts") or ()):
        account = _account(raw, f"{source}: accounts[{index}]")
        accounts.setdefault(account.access_key, account)  # the first one wins, as 4.9.8
    return PlainAclConfig(white, accounts, source)


def load_acl_file(path: Path) -> PlainAclConfig:
    """The config in ``path``; an absent file is an empty config (nobody is let in)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return PlainAclConfig(source=str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read ACL file {path}: {exc}") from None
    return parse_acl(text, str(path))
