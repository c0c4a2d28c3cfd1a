"""Remote plain-ACL administration (what mqadmin's updateAclConfig, deleteAclConfig,
updateGlobalWhiteAddr and clusterAclConfigVersion send): :class:`AclAdmin`, a part of
:class:`~mqcore.client.admin.Admin` (``admin.acl``, its methods also on the admin).

Every method takes the broker addresses to change: ACL files are per broker, so a cluster
is changed broker by broker (``Admin.masters_of`` gives the masters). A broker that
refuses raises :class:`MQBrokerError` with its remark; the others are still asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from mqcore.acl.updates import AccountUpdate, DataVersion
from mqcore.errors import MQBrokerError
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.headers.acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)

if TYPE_CHECKING:
    from mqcore.client.transport import Ask
    from mqcore.protocol.headers import CommandHeader

__all__ = ["AclAdmin", "AclVersion"]


@dataclass(frozen=True, slots=True)
class AclVersion:
    """GET_BROKER_CLUSTER_ACL_INFO's answer."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    version: DataVersion
    files: dict[str, DataVersion]


def _version(raw: object) -> DataVersion:
    if isinstance(raw, dict):
        return DataVersion(int(raw.get("counter", 0)), int(raw.get("timestamp", 0)))
    return DataVersion()


class AclAdmin:
    """ACL changes and versions, sent with ``ask`` (the admin's request to one broker)."""

    def __init__(self, ask: Ask) -> None:
        self._ask = ask

    async def _acl_each(self, addrs: Iterable[str], code: int, header: CommandHeader) -> None:
        responses = await asyncio.gather(*(self._ask(a, code, header) for a in sorted(set(addrs))))
        for response in responses:
            if response.code != ResponseCode.SUCCESS:
                raise MQBrokerError(response.code, response.remark)

    async def update_acl_account(self, addrs: Iterable[str], update: AccountUpdate) -> None:
        """Create the account or change the fields ``update`` sets (None: keep)."""
        header = CreateAccessConfigRequestHeader(
            access_key=update.access_key,
            secret_key=update.secret_key,
            white_remote_address=update.white_remote_address,
            admin=update.admin,
            default_topic_perm=update.default_topic_perm,
            default_group_perm=update.default_group_perm,
            topic_perms=None if update.topic_perms is None else ",".join(update.topic_perms),
            group_perms=None if update.group_perms is None else ",".join(update.group_perms),
        )
        await self._acl_each(addrs, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header)

    async def delete_acl_account(self, addrs: Iterable[str], access_key: str) -> None:
        header = DeleteAccessConfigRequestHeader(access_key=access_key)
        await self._acl_each(addrs, RequestCode.DELETE_ACL_CONFIG, header)

    async def update_global_white_addresses(
        self, addrs: Iterable[str], addresses: list[str], acl_file: str | None = None
    ) -> None:
        """Replace the trusted addresses (requests from them need no signature)."""
        header = UpdateGlobalWhiteAddrsConfigRequestHeader(
            global_white_addrs=",".join(addresses), acl_file_full_path=acl_file
        )
        await self._acl_each(addrs, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, header)

    async def acl_version(self, addr: str) -> AclVersion:
        response = await self._ask(addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError(response.code, response.remark)
        ext = response.ext_fields
        try:
            files = orjson.loads(ext.get("allAclFileVersion") or "{}")
            version = orjson.loads(ext.get("version") or "{}")
        except orjson.JSONDecodeError:
            files, version = {}, {}
        return AclVersion(
            broker_name=ext.get("brokerName", ""),
            broker_addr=ext.get("brokerAddr", addr),
            cluster_name=ext.get("clusterName", ""),
            version=_version(version),
            files={str(k): _version(v) for k, v in dict(files).items()},
        )
