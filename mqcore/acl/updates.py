"""Remote changes to a ``plain_acl.yml``, as 4.9.8's PlainPermissionManager makes them.

``mqadmin updateAclConfig``, ``deleteAclConfig`` and ``updateGlobalWhiteAddr`` send
UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG; the
broker edits the YAML document and writes it back. These functions are that edit, on the
parsed document (sans-IO), with 4.9.8's rules:

- an update names an account by ``accessKey``; fields the request leaves out (no secret,
  no white address, no default perms, no topic or group perms) keep their file values.
  4.9.8's clients always send ``admin`` (a Java boolean), so it is always written for
  them; mq's client leaves it out unless asked, and then the file's value stays;
- a new account is appended; deleting an unknown key fails;
- every write bumps the file's ``dataVersion`` (``[{counter, timestamp}]``), which
  GET_BROKER_CLUSTER_ACL_INFO reports.

The result is parsed with :func:`mqcore.acl.config.parse_acl` before it is written, so a
change the broker could not load (a bad perm, a short key, a bad address pattern) is
refused and the file stays as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mqcore.acl.config import KEY_MIN_LENGTH, PlainAclConfig, parse_acl
from mqcore.common.files import write_atomically
from mqcore.errors import ConfigError

__all__ = [
    "AccountUpdate",
    "DataVersion",
    "check_resource_perms",
    "data_version",
    "delete_account",
    "edit_acl_file",
    "set_global_white_addresses",
    "split_list",
    "upsert_account",
]


@dataclass(frozen=True, slots=True)
class AccountUpdate:
    """The fields of CreateAccessConfigRequestHeader; None means "not in the request"."""

    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool | None = None
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None


@dataclass(frozen=True, slots=True)
class DataVersion:
    counter: int = 0
    timestamp: int = 0

    def to_json(self) -> dict[str, int]:
        return {"counter": self.counter, "timestamp": self.timestamp}


def split_list(text: str | None) -> list[str] | None:
    """4.9.8's ``UtilAll.split(text, ",")``: None stays None, blanks are dropped."""
    if text is None:
        return None
    return [part.strip() for part in text.split(",") if part.strip()]


def data_version(doc: Mapping[str, Any]) -> DataVersion:
    """The ``dataVersion`` a document carries (zeros when it has none)."""
    versions = doc.get("dataVersion")
    if isinstance(versions, list) and versions and isinstance(versions[0], Mapping):
        try:
            return DataVersion(int(versions[0]["counter"]), int(versions[0]["timestamp"]))
        except (KeyError, TypeError, ValueError):
            pass
    return DataVersion()


def _bump(doc: dict[str, Any]) -> None:
    old = data_version(doc)
    now = time.time_ns() // 1_000_000
    doc["dataVersion"] = [{"counter": old.counter + 1, "timestamp": now}]


def _accounts(doc: dict[str, Any]) -> list[Any]:
    accounts = doc.get("accounts")
    if not isinstance(accounts, list):
        accounts = []
        doc["accounts"] = accounts
    return accounts


def _find(accounts: list[Any], access_key: str) -> int | None:
    for i, account in enumerate(accounts):
        if isinstance(account, dict) and str(account.get("accessKey")) == access_key:
            return i
    return None


_PERM_NAMES = frozenset({"DENY", "PUB", "SUB", "PUB|SUB", "SUB|PUB"})


def check_resource_perms(items: list[str] | None) -> None:
    """Each item is ``NAME=PERM`` with a known PERM. A file may hold a typo (read as
    DENY), but a remote change is checked first, as 4.9.8's checkResourcePerms does."""
    for item in items or ():
        parts = [p.strip() for p in item.split("=") if p.strip()]
        if len(parts) != 2:
            raise ConfigError(
                f"Parse Resource format error for {item}. The expected resource format is "
                "'Res=Perm'. For example: topicA=SUB"
            )
        if parts[1] not in _PERM_NAMES:
            raise ConfigError(
                f"Parse resource permission error for {item}. The expected permissions are "
                "'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )


def upsert_account(doc: dict[str, Any], update: AccountUpdate) -> None:
    """Change the account with ``update.access_key`` in place, or append it."""
    check_resource_perms(update.topic_perms)
    check_resource_perms(update.group_perms)
    if len(update.access_key) <= KEY_MIN_LENGTH:
        raise ConfigError(
            f"The accessKey={update.access_key} cannot be null and length should longer than "
            f"{KEY_MIN_LENGTH}"
        )
    if update.secret_key and len(update.secret_key) <= KEY_MIN_LENGTH:
        raise ConfigError(f"The secretKey value length should longer than {KEY_MIN_LENGTH}")
    accounts = _accounts(doc)
    at = _find(accounts, update.access_key)
    account: dict[str, Any] = accounts[at] if at is not None else {}
    if at is None:
        if not update.secret_key:
            raise ConfigError(f"a new account ({update.access_key}) needs a secretKey")
        accounts.append(account)
    account["accessKey"] = update.access_key
    fields: dict[str, object | None] = {
        "secretKey": update.secret_key or None,
        "whiteRemoteAddress": update.white_remote_address,
        "admin": update.admin,
        "defaultTopicPerm": update.default_topic_perm or None,
        "defaultGroupPerm": update.default_group_perm or None,
        "topicPerms": update.topic_perms,
        "groupPerms": update.group_perms,
    }
    account.update({key: value for key, value in fields.items() if value is not None})
    _bump(doc)


def delete_account(doc: dict[str, Any], access_key: str) -> bool:
    """Remove the account; False when the document has none with that key."""
    accounts = _accounts(doc)
    at = _find(accounts, access_key)
    if at is None:
        return False
    del accounts[at]
    _bump(doc)
    return True


def set_global_white_addresses(doc: dict[str, Any], addresses: list[str]) -> None:
    doc["globalWhiteRemoteAddresses"] = list(addresses)
    _bump(doc)


def edit_acl_file(
    path: Path, edit: Callable[[dict[str, Any]], bool | None]
) -> tuple[PlainAclConfig, DataVersion] | None:
    """Read ``path`` (absent: empty), apply ``edit`` to the document, check that the result
    loads, and write it atomically. ``edit`` returning False means "nothing to change":
    None is returned and nothing is written. Raises ConfigError (the file does not parse,
    or the edit would make it unloadable) with the file unchanged."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read ACL file {path}: {exc}") from None
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping at the top")
    if edit(doc) is False:
        return None
    out = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    config = parse_acl(out, str(path))  # refuse what the broker could not load
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_atomically(path, out.encode())
    except OSError as exc:
        raise ConfigError(f"cannot write ACL file {path}: {exc.strerror}") from None
    return config, data_version(doc)
