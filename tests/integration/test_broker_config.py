"""GET_BROKER_CONFIG / GET_NAMESRV_CONFIG key sets and UPDATE_BROKER_CONFIG's saving.

``tests/unit/data/rocketmq-4.9.8-config-fields.txt`` lists the instance fields of
RocketMQ 4.9.8's BrokerConfig, NettyServerConfig, NettyClientConfig, MessageStoreConfig
and NamesrvConfig (``<class> <field> <java type>``, declaration order), the keys
``Configuration.getAllConfigsFormatString`` prints (``MixAll.object2Properties``: every
non-static field whose value is not null). It was generated once from the Java sources:
for each class file of tag ``rocketmq-all-4.9.8`` (``git show <tag>:<path>``), comments
removed, every match of
``^\\s*(?:@\\w+\\s+)*(private|protected|public)\\s+((?:static|final|volatile|transient)\\s+)*
([\\w.<>\\[\\]]+)\\s+(\\w+)\\s*(=|;)`` without ``static``; its 177 broker and 21 name
server keys (with null fields left out) are the ones a running 4.9.8 printed.
"""

from __future__ import annotations

from pathlib import Path

from mqcli.commands.broker import load_config
from mqcore.broker.controller import BrokerController
from mqcore.common.properties import parse_properties
from mqcore.protocol import RequestCode, ResponseCode
from mqcore.protocol.bodies import KVTable
from mqcore.store.store_config import FlushDiskType
from tests.support.clients import TestClient, put
from tests.support.inproc import running_broker, running_namesrv

FIELDS = Path(__file__).parent.parent / "unit" / "data" / "rocketmq-4.9.8-config-fields.txt"
NULL_BY_DEFAULT = {
    "storePathCommitLog",
    "storePathDLedgerCommitLog",
    "readOnlyCommitLogStorePaths",
    "haMasterAddress",
    "dLegerGroup",
    "dLegerPeers",
    "dLegerSelfId",
    "preferredLeaderId",
    "rocketmqHome",  # $ROCKETMQ_HOME, unset in tests
    "namesrvAddr",  # $NAMESRV_ADDR or the config; these brokers have none
}


def rocketmq_fields(*classes: str) -> list[tuple[str, str]]:
    rows = [line.split() for line in FIELDS.read_text().splitlines() if line.strip()]
    return [(key, java_type) for cls, key, java_type in rows if cls in classes]


def check_java_formats(props: dict[str, str], fields: list[tuple[str, str]]) -> None:
    for key, java_type in fields:
        if key not in props:
            continue
        value = props[key]
        if java_type == "boolean":
            assert value in ("true", "false"), (key, value)
        elif java_type in ("int", "long"):
            assert value.lstrip("-").isdigit(), (key, value)


async def test_broker_config_has_every_4_9_8_key(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    fields = rocketmq_fields(
        "BrokerConfig", "NettyServerConfig", "NettyClientConfig", "MessageStoreConfig"
    )
    expected = {key for key, _ in fields} - NULL_BY_DEFAULT
    assert len(expected) == 177 - 2  # rocketmqHome and namesrvAddr aside
    async with running_broker(tmp_path, store={"ha_listen_port": None}) as broker:
        client = TestClient(broker.broker_addr, "admin")
        try:
            resp = await client.invoke(RequestCode.GET_BROKER_CONFIG)
        finally:
            await client.close()
        text = bytes(resp.body).decode()
        props = parse_properties(text)
        assert expected <= set(props), sorted(expected - set(props))
        assert not NULL_BY_DEFAULT & set(props)
        check_java_formats(props, fields)
        # mq's real values where it has the setting, 4.9.8's defaults elsewhere
        assert props["listenPort"] == str(broker.server.port) != "0"
        assert props["haListenPort"] == str(broker.server.port + 1)
        assert props["brokerIP2"] == "127.0.0.1" and props["brokerName"] == "broker-a"
        assert props["mappedFileSizeCommitLog"] == str(1024 * 1024)
        assert props["serverChannelMaxIdleTimeSeconds"] == "120"
        assert props["flushDiskType"] == "ASYNC_FLUSH"
        assert props["endTransactionPoolQueueCapacity"] == "100000"
        assert props["configBlackList"] == "configBlackList;brokerConfigPath"
        # mq's own keys stay
        assert props["channelExpiredTimeout"] == "120000" and props["logLevel"] == "INFO"
        assert text.endswith("\n") and all("=" in line for line in text.splitlines())


async def test_namesrv_config_has_every_4_9_8_key(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    fields = rocketmq_fields("NamesrvConfig", "NettyServerConfig")
    expected = {key for key, _ in fields} - NULL_BY_DEFAULT
    assert len(expected) == 21 - 1
    async with running_namesrv(tmp_path) as namesrv:
        client = TestClient(namesrv.listen_address, "admin")
        try:
            resp = await client.invoke(RequestCode.GET_NAMESRV_CONFIG)
        finally:
            await client.close()
    props = parse_properties(bytes(resp.body).decode())
    assert expected <= set(props), sorted(expected - set(props))
    check_java_formats(props, fields)
    assert props["kvConfigPath"] == str(tmp_path / "namesrv" / "kvConfig.json")
    assert props["productEnvName"] == "center" and props["clusterTest"] == "false"
    assert props["scanNotActiveBrokerInterval"] == "5000"  # mq's own key


async def test_a_restart_key_is_saved_with_a_backup_and_applies_after_a_restart(
    tmp_path: Path,
) -> None:
    conf = tmp_path / "broker.conf"
    original = (
        "# test broker\n"
        f"storePathRootDir={tmp_path / 'store'}\n"
        "brokerName=broker-a\nbrokerIP1=127.0.0.1\n"
        "mappedFileSizeCommitLog=1048576\nmaxHashSlotNum=1000\nmaxIndexNum=4000\n"
        "flushDiskType=ASYNC_FLUSH\n"
    )
    conf.write_text(original)

    async def start() -> BrokerController:
        broker_config, store_config = load_config(conf, listen="127.0.0.1:0")
        broker = BrokerController(broker_config, store_config)
        await broker.start()
        return broker

    broker = await start()
    try:
        client = TestClient(broker.broker_addr, "admin")
        try:
            body = b"flushDiskType=SYNC_FLUSH\nfileReservedTime=12\nsendMessageThreadPoolNums=3"
            resp = await client.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=body)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            assert resp.remark is not None
            assert f"flushDiskType saved in {conf}: takes effect when the broker restarts" in (
                resp.remark
            )
            assert "sendMessageThreadPoolNums" in resp.remark
            # read at use: at once; read at start: not yet
            assert broker.store_config.file_reserved_time == 12
            assert broker.store_config.flush_disk_type is FlushDiskType.ASYNC_FLUSH
            resp = await client.invoke(RequestCode.GET_BROKER_CONFIG)
            assert parse_properties(bytes(resp.body).decode())["flushDiskType"] == "ASYNC_FLUSH"
        finally:
            await client.close()
    finally:
        await broker.shutdown()
    assert conf.with_name("broker.conf.bak").read_text() == original
    saved = conf.read_text()
    assert saved == original.replace("ASYNC_FLUSH", "SYNC_FLUSH") + (
        "fileReservedTime=12\nsendMessageThreadPoolNums=3\n"
    )
    assert not conf.with_name("broker.conf.tmp").exists()

    broker = await start()
    try:
        assert broker.store_config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        client = TestClient(broker.broker_addr, "admin")
        try:
            resp = await client.invoke(RequestCode.GET_BROKER_CONFIG)
        finally:
            await client.close()
        props = parse_properties(bytes(resp.body).decode())
        assert props["flushDiskType"] == "SYNC_FLUSH" and props["fileReservedTime"] == "12"
    finally:
        await broker.shutdown()


async def test_earliest_message_time_as_4_9_8_reads_it(tmp_path: Path) -> None:
    """4.9.8 reads ``2 * maxMessageSize`` bytes at the oldest offset: the store time only
    once that much follows it in its file (mqadmin clusterList's #Hour comes from it)."""
    async with running_broker(tmp_path, store={"max_message_size": 1024}) as broker:
        client = TestClient(broker.broker_addr, "admin")

        async def earliest() -> tuple[str, str]:
            resp = await client.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
            info = KVTable.decode(resp.body).table
            return info["earliestMessageTimeStamp"], info["earliestStoredMessageTimeStamp"]

        try:
            assert await earliest() == ("-1", "-1")
            first = put(broker, "Early", body=b"x" * 100)
            assert await earliest() == ("-1", str(first.store_timestamp))
            while broker.store.max_phy_offset < 2 * 1024:
                put(broker, "Early", body=b"x" * 100)
            assert await earliest() == (str(first.store_timestamp),) * 2
        finally:
            await client.close()
