"""``enableControllerInNamesrv``: the name server is also a controller, on its own port,
and stays a name server."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqcore.controller.server import ControllerConfig
from mqcore.namesrv import NamesrvConfig, NamesrvController
from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.headers.controller import GetMetaDataResponseHeader
from mqcore.remoting import RemotingClient
from tests.support.inproc import free_port
from tests.support.polling import until

pytestmark = pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <_io.FileIO name='[^']*raft\.journal\.meta'"
    ":pytest.PytestUnraisableExceptionWarning"
)


async def test_a_name_server_hosting_a_controller(tmp_path: Path) -> None:
    namesrv = NamesrvController(
        NamesrvConfig(
            listen_port=0,
            bind_address="127.0.0.1",
            kv_config_path=str(tmp_path / "kv.json"),
            enable_controller_in_namesrv=True,
        ),
        ControllerConfig(
            controller_d_leger_peers=f"n0-127.0.0.1:{free_port()}",
            controller_store_path=str(tmp_path / "controller"),
        ),
    )
    await namesrv.start()
    client = RemotingClient()
    try:
        addr = namesrv.listen_address

        async def leads() -> bool:
            request = RemotingCommand.request(RequestCode.CONTROLLER_GET_METADATA_INFO)
            answer = await client.invoke(addr, request, 5)
            return GetMetaDataResponseHeader.from_command(answer).is_leader

        await until(leads, 10, "the hosted controller leading its one-node group")
        # still a name server: the cluster table answers
        answer = await client.invoke(
            addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5
        )
        assert answer.code == ResponseCode.SUCCESS
    finally:
        await client.close()
        await namesrv.shutdown()
    assert namesrv.controller is not None and not namesrv.controller.raft.is_leader


async def test_a_plain_name_server_hosts_none(tmp_path: Path) -> None:
    namesrv = NamesrvController(
        NamesrvConfig(listen_port=0, bind_address="127.0.0.1", kv_config_path=str(tmp_path / "kv"))
    )
    await namesrv.start()
    client = RemotingClient()
    try:
        request = RemotingCommand.request(RequestCode.CONTROLLER_GET_METADATA_INFO)
        answer = await client.invoke(namesrv.listen_address, request, 5)
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert namesrv.controller is None
    finally:
        await client.close()
        await namesrv.shutdown()
