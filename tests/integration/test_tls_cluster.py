"""A name server and brokers with ``tls.server.mode`` set: our clients send and consume
over TLS, plain clients are refused (enforcing) or served beside TLS ones on the same
port (permissive), and a master/slave pair replicates over TLS."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from mqcore.broker.controller import BrokerController
from mqcore.client import Admin, ClientConfig, LitePullConsumer, Producer, make_message
from mqcore.client.rebalance import ConsumeFromWhere
from mqcore.errors import MQError
from mqcore.namesrv.controller import NamesrvController
from mqcore.remoting import Channel, RemotingServer
from mqcore.remoting.tls import TlsMode
from mqcore.store.store_config import BrokerRole
from tests.support import poll_messages
from tests.support.inproc import running_broker, running_namesrv
from tests.support.polling import until
from tests.support.tls_certs import Pki, make_pki

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def server_keys(pki: Pki, mode: TlsMode) -> dict[str, Any]:
    return {
        "tls_server_mode": mode,
        "tls_server_cert_path": str(pki.server_cert),
        "tls_server_key_path": str(pki.server_key),
    }


def broker_keys(pki: Pki, mode: TlsMode, *, tls_enable: bool = True) -> dict[str, Any]:
    """Server keys, and the client keys of the broker's own connections."""
    return {
        **server_keys(pki, mode),
        "tls_enable": tls_enable,
        "tls_client_trust_cert_path": str(pki.ca),
    }


def tls_namesrv(
    tmp_path: Path, pki: Pki, mode: TlsMode
) -> AbstractAsyncContextManager[NamesrvController]:
    return running_namesrv(tmp_path, **server_keys(pki, mode))


def tls_client(pki: Pki) -> ClientConfig:
    return ClientConfig(tls=True, tls_ca_path=str(pki.ca))


def is_tls(channel: Channel) -> bool:
    transport = channel._transport
    return transport is not None and transport.get_extra_info("ssl_object") is not None


def tls_kinds(server: RemotingServer) -> set[bool]:
    return {is_tls(c) for c in server.channels}


async def registered(namesrv: NamesrvController, broker: BrokerController) -> None:
    await until(lambda: bool(broker.outer_api.last_results), 10, "a registration")
    assert all(broker.outer_api.last_results.values()), broker.outer_api.last_results


def producer(namesrv: str, config: ClientConfig, name: str) -> Producer:
    return Producer(f"pg-{name}", namesrv, instance_name=name, client_config=config)


async def send_with(p: Producer, topic: str, count: int, name: str) -> None:
    for i in range(count):
        result = await p.send(make_message(topic, f"{name}-{i}".encode()))
        assert result.status.name == "SEND_OK"


async def send(namesrv: str, topic: str, count: int, config: ClientConfig, name: str) -> None:
    async with producer(namesrv, config, name) as p:
        await send_with(p, topic, count, name)


async def consume(
    namesrv: str, topic: str, want: int, config: ClientConfig, name: str
) -> list[bytes]:
    consumer = LitePullConsumer(
        f"cg-{name}",
        namesrv=namesrv,
        consume_from_where=ConsumeFromWhere.FIRST,
        instance_name=name,
        client_config=config,
    )
    consumer.subscribe(topic, "*")
    async with consumer:
        return [m.body for m in await poll_messages(consumer, want, 20)]


async def test_enforcing_cluster_serves_tls_clients_only(tmp_path: Path, pki: Pki) -> None:
    async with (
        tls_namesrv(tmp_path, pki, TlsMode.ENFORCING) as ns,
        running_broker(tmp_path, ns.listen_address, **broker_keys(pki, TlsMode.ENFORCING)) as b,
    ):
        await registered(ns, b)  # the broker's own calls to the name server use TLS
        assert tls_kinds(ns.server) == {True}
        async with producer(ns.listen_address, tls_client(pki), "tls-p") as p:
            await send_with(p, "TlsTopic", 10, "tls-p")
            assert tls_kinds(b.server) == {True}
        got = await consume(ns.listen_address, "TlsTopic", 10, tls_client(pki), "tls-c")
        assert sorted(got) == sorted(f"tls-p-{i}".encode() for i in range(10))

        plain = ClientConfig(tls=False, tls_ca_path=None)
        async with Admin(ns.listen_address, instance_name="plain", client_config=plain) as a:
            with pytest.raises(MQError):
                await a.cluster_info()
        # Refused without harm: TLS clients are still served.
        got = await consume(ns.listen_address, "TlsTopic", 10, tls_client(pki), "tls-c2")
        assert len(got) == 10


async def test_permissive_serves_tls_and_plain_on_the_same_port(tmp_path: Path, pki: Pki) -> None:
    keys = broker_keys(pki, TlsMode.PERMISSIVE, tls_enable=False)  # registers in plain
    async with (
        tls_namesrv(tmp_path, pki, TlsMode.PERMISSIVE) as ns,
        running_broker(tmp_path, ns.listen_address, **keys) as b,
    ):
        await registered(ns, b)
        plain = ClientConfig(tls=False, tls_ca_path=None)
        async with (
            producer(ns.listen_address, tls_client(pki), "tls-p") as secure,
            producer(ns.listen_address, plain, "plain-p") as clear,
        ):
            await send_with(secure, "MixedTopic", 5, "tls-p")
            await send_with(clear, "MixedTopic", 5, "plain-p")
            assert tls_kinds(ns.server) == {True, False}  # one port each, both kinds
            assert tls_kinds(b.server) == {True, False}
        got = await consume(ns.listen_address, "MixedTopic", 10, plain, "plain-c")
        assert len(got) == 10
        got = await consume(ns.listen_address, "MixedTopic", 10, tls_client(pki), "tls-c")
        assert len(got) == 10


async def test_wrong_ca_fails_with_one_clear_line(tmp_path: Path, pki: Pki) -> None:
    async with tls_namesrv(tmp_path, pki, TlsMode.ENFORCING) as ns:
        wrong = ClientConfig(tls=True, tls_ca_path=str(pki.other_ca))
        async with Admin(ns.listen_address, instance_name="wrong", client_config=wrong) as a:
            with pytest.raises(MQError) as info:
                await a.cluster_info()
        assert "not trusted" in str(info.value)


async def test_master_and_slave_replicate_over_tls(tmp_path: Path, pki: Pki) -> None:
    keys = broker_keys(pki, TlsMode.ENFORCING)
    async with (
        tls_namesrv(tmp_path, pki, TlsMode.ENFORCING) as ns,
        running_broker(tmp_path / "m", ns.listen_address, **keys) as master,
        running_broker(
            tmp_path / "s",
            ns.listen_address,
            broker_id=1,
            store={"broker_role": BrokerRole.SLAVE},
            **keys,
        ) as slave,
    ):
        ha = master.ha
        assert ha is not None and slave.ha_client is not None
        await until(lambda: any(c.request_offset >= 0 for c in ha.connections), 30, "a slave")
        conn = next(iter(ha.connections))
        assert conn._writer.get_extra_info("ssl_object") is not None
        await send(ns.listen_address, "HaTls", 20, tls_client(pki), "ha-p")
        await until(
            lambda: slave.store.max_phy_offset == master.store.max_phy_offset > 0, 30, "caught up"
        )
        files = sorted(master.store_config.commit_log_path.iterdir())
        for f in files:
            assert (slave.store_config.commit_log_path / f.name).read_bytes() == f.read_bytes()
