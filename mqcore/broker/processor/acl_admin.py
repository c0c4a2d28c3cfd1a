"""The plain-ACL admin codes of 4.9.8's AdminBrokerProcessor: UPDATE_AND_CREATE_ACL_CONFIG
(50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52) and
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), what ``mqadmin updateAclConfig``,
``deleteAclConfig``, ``clusterAclConfigVersion`` and ``updateGlobalWhiteAddr`` send.

Each change rewrites the broker's ``plain_acl.yml`` (:mod:`mqcore.acl.updates`) and takes
effect at once. Failures answer 4.9.8's ``*_FAILED`` codes with its remarks; a change the
broker could not load is refused with the reason and the file stays as it was. The file
is written off the event loop, one change at a time (4.9.8's methods are synchronized).

Where 4.9.8 answers nothing useful, mq says why: with ``aclEnable=false`` 4.9.8 fails on a
missing validator (an empty remark, or no answer at all for code 52); mq answers the
failure code with "ACL is not enabled". GET_BROKER_CLUSTER_ACL_CONFIG (54) is not handled
by 4.9.8 either and stays "not supported".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

import orjson

from mqcore.acl.updates import AccountUpdate, split_list
from mqcore.broker.processor import reply
from mqcore.errors import ConfigError
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers import HeaderError
from mqcore.protocol.headers.acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from mqcore.remoting import Channel, Processor

if TYPE_CHECKING:
    from mqcore.acl.guard import AclGuard
    from mqcore.broker.context import BrokerContext

__all__ = ["AclAdminProcessor", "handlers"]

_NOT_ENABLED = "ACL is not enabled on this broker (aclEnable=false)"


class AclAdminProcessor:
    def __init__(
        self,
        guard: AclGuard | None,
        *,
        broker_name: str,
        cluster_name: str,
        broker_addr: Callable[[], str],
    ) -> None:
        self.guard = guard
        self.broker_name = broker_name
        self.cluster_name = cluster_name
        self.broker_addr = broker_addr
        self._lock = asyncio.Lock()

    async def _change(
        self, request: RemotingCommand, failed: int, change: Callable[[AclGuard], object]
    ) -> object:
        """Run ``change`` on the guard in a thread, one change at a time; the failure
        answer when ACL is off or the change is refused, else what ``change`` returned."""
        guard = self.guard
        if guard is None:
            return reply(request, failed, _NOT_ENABLED)
        try:
            async with self._lock:
                return await asyncio.to_thread(change, guard)
        except ConfigError as exc:
            return reply(request, failed, str(exc))

    async def update_account(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        failed = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        try:
            h = CreateAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        except HeaderError as exc:
            return reply(request, failed, str(exc))
        update = AccountUpdate(
            access_key=h.access_key,
            secret_key=h.secret_key,
            white_remote_address=h.white_remote_address,
            admin=h.admin,
            default_topic_perm=h.default_topic_perm,
            default_group_perm=h.default_group_perm,
            topic_perms=split_list(h.topic_perms),
            group_perms=split_list(h.group_perms),
        )
        done = await self._change(request, failed, lambda g: g.update_account(update))
        return done if isinstance(done, RemotingCommand) else reply(request)

    async def delete_account(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        failed = ResponseCode.DELETE_ACL_CONFIG_FAILED
        try:
            h = DeleteAccessConfigRequestHeader.from_ext_fields(request.ext_fields)
        except HeaderError as exc:
            return reply(request, failed, str(exc))
        done = await self._change(request, failed, lambda g: g.delete_account(h.access_key))
        if isinstance(done, RemotingCommand):
            return done
        if not done:
            remark = (
                f"The accesskey[{h.access_key}] corresponding to accessConfig has been "
                "deleted failed."
            )
            return reply(request, failed, remark)
        return reply(request)

    async def update_global_white_addresses(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        failed = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        try:
            h = UpdateGlobalWhiteAddrsConfigRequestHeader.from_ext_fields(request.ext_fields)
        except HeaderError as exc:
            return reply(request, failed, str(exc))
        own = self.guard.path if self.guard is not None else None
        if own is not None and h.acl_file_full_path and h.acl_file_full_path != str(own):
            return reply(
                request,
                failed,
                f"The globalWhiteAddresses[{h.global_white_addrs}] has been updated failed: "
                f"this broker's ACL file is {own}",
            )
        addresses = split_list(h.global_white_addrs) or []
        done = await self._change(
            request, failed, lambda g: g.update_global_white_addresses(addresses)
        )
        return done if isinstance(done, RemotingCommand) else reply(request)

    async def version(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        if self.guard is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, _NOT_ENABLED)
        guard = self.guard
        version = (await asyncio.to_thread(guard.data_version)).to_json()
        header = GetBrokerAclConfigResponseHeader(
            version=orjson.dumps(version).decode(),
            all_acl_file_version=orjson.dumps({str(guard.path): version}).decode(),
            broker_name=self.broker_name,
            broker_addr=self.broker_addr(),
            cluster_name=self.cluster_name,
        )
        return reply(request, header=header)


def handlers(ctx: BrokerContext) -> dict[int, Processor]:
    processor = AclAdminProcessor(
        ctx.acl_guard,
        broker_name=ctx.config.broker_name,
        cluster_name=ctx.config.broker_cluster_name,
        broker_addr=ctx.broker_addr,
    )
    return {
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: processor.update_account,
        RequestCode.DELETE_ACL_CONFIG: processor.delete_account,
        RequestCode.GET_BROKER_CLUSTER_ACL_INFO: processor.version,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: processor.update_global_white_addresses,
    }
