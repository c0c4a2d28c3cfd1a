"""A gRPC client's channel as the broker sees it: a check-back becomes a Telemetry
command, closing tells the broker, and only clients that said who they are are kept."""

from __future__ import annotations

import pytest

from mqcore.message.record import encode_record
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.protocol.headers import CheckTransactionStateRequestHeader
from mqcore.proxy.clients import ClientRegistry, GrpcClientChannel
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.transactions import TransactionDataStore
from mqcore.remoting import Channel, ChannelClosedError


def check_request() -> RemotingCommand:
    body = encode_record(
        topic="Orders",
        body=b"half",
        properties={"UNIQ_KEY": "01AB", "PGROUP": "Orders", "TAGS": "tx", "TRAN_MSG": "true"},
        queue_id=1,
        flag=0,
        sys_flag=0,
        born_timestamp=1,
        born_host=("10.0.0.1", 1),
        store_host=("10.0.0.2", 2),
        store_timestamp=2,
        queue_offset=5,
        physical_offset=4096,
    )
    header = CheckTransactionStateRequestHeader(
        tran_state_table_offset=5, commit_log_offset=4096, msg_id="01AB", transaction_id="01AB"
    )
    return RemotingCommand.request(
        RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), bytes(body), oneway=True
    )


async def test_a_check_back_is_a_recover_orphaned_transaction_command() -> None:
    transactions = TransactionDataStore()
    channel = GrpcClientChannel("c1", "10.0.0.1:5000", transactions)
    assert channel.remote_host == "10.0.0.1"
    with pytest.raises(ChannelClosedError):  # no stream: the check service counts a miss
        channel.send(check_request())
    stream = channel.attach_stream()
    channel.send(check_request())
    command = stream.get_nowait()
    assert command is not None
    recover = command.recover_orphaned_transaction_command
    assert recover.transaction_id == "01AB"
    assert recover.message.topic.name == "Orders" and recover.message.body == b"half"
    assert recover.message.system_properties.tag == "tx"
    assert recover.message.system_properties.message_type == pb.MessageType.TRANSACTION
    data = transactions.take("Orders", "01AB")  # noted for the producer's EndTransaction
    assert data is not None and (data.tran_state_table_offset, data.commit_log_offset) == (5, 4096)
    notify = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {}, oneway=True)
    channel.send(notify)  # means nothing to a 5.x client
    assert stream.empty()


async def test_a_newer_stream_ends_the_older_and_closing_ends_both() -> None:
    closed: list[Channel] = []
    channel = GrpcClientChannel("c1", "10.0.0.1:5000", TransactionDataStore(), closed.append)
    first = channel.attach_stream()
    second = channel.attach_stream()
    assert first.get_nowait() is None
    channel.close()
    assert second.get_nowait() is None
    assert channel.closed and closed == [channel]
    with pytest.raises(ChannelClosedError):
        await channel.invoke(RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {}))


async def test_the_registry_keeps_only_clients_that_said_who_they_are() -> None:
    told: list[Channel] = []
    registry = ClientRegistry(TransactionDataStore(), on_close=told.append)
    once = registry.channel("anonymous", "10.0.0.1:1")
    assert registry.channel("anonymous", "10.0.0.1:1") is not once  # nothing kept
    kept = registry.channel("producer", "10.0.0.1:2", keep=True)
    registry.update_settings("producer", pb.Settings(client_type=pb.ClientType.PRODUCER))
    assert registry.channel("producer", "10.0.0.1:2") is kept
    kept.close()  # the broker expired it: the settings go with it
    assert told == [kept] and registry.settings("producer") is None
    assert registry.channel("producer", "10.0.0.1:2") is not kept


def producer_of(*topics: str) -> pb.Settings:
    publishing = pb.Publishing(topics=[pb.Resource(name=t) for t in topics])
    return pb.Settings(client_type=pb.ClientType.PRODUCER, publishing=publishing)


def consumer_of(group: str) -> pb.Settings:
    subscription = pb.Subscription(group=pb.Resource(name=group))
    return pb.Settings(client_type=pb.ClientType.SIMPLE_CONSUMER, subscription=subscription)


async def test_a_check_back_of_the_proxy_goes_to_a_producer_of_the_group_with_a_stream() -> None:
    transactions = TransactionDataStore()
    registry = ClientRegistry(transactions)
    silent = registry.channel("silent", "10.0.0.1:1", keep=True)  # no stream: skipped
    registry.update_settings("silent", producer_of("Orders"))
    other = registry.channel("other", "10.0.0.1:2", keep=True)  # another group: skipped
    registry.update_settings("other", producer_of("Payments"))
    other_stream = other.attach_stream()
    registry.check_transaction(check_request(), "broker-b")  # nobody can take it: dropped
    assert other_stream.empty() and len(transactions) == 0
    listening = registry.channel("listening", "10.0.0.1:3", keep=True)
    registry.update_settings("listening", producer_of("Orders", "Payments"))
    stream = listening.attach_stream()
    registry.check_transaction(check_request(), "broker-b")
    command = stream.get_nowait()
    assert command is not None
    assert command.recover_orphaned_transaction_command.transaction_id == "01AB"
    assert other_stream.empty() and not silent.has_stream
    data = transactions.take("Orders", "01AB")  # the broker it came from, for the end
    assert data is not None and data.broker_name == "broker-b"


def test_the_groups_a_leaving_client_alone_was_in() -> None:
    registry = ClientRegistry(TransactionDataStore())
    registry.update_settings("p1", producer_of("Orders", "Payments"))
    registry.update_settings("p2", producer_of("Payments"))
    registry.update_settings("c1", consumer_of("billing"))
    registry.update_settings("c2", consumer_of("billing"))
    registry.update_settings("c3", consumer_of("audit"))
    assert registry.groups_only_of("p1") == (["Orders"], [])
    assert registry.groups_only_of("c1") == ([], [])
    assert registry.groups_only_of("c3") == ([], ["audit"])
    assert registry.groups_only_of("unknown") == ([], [])


async def test_clients_silent_for_too_long_are_expired_with_their_settings() -> None:
    now = [100.0]
    told: list[Channel] = []
    registry = ClientRegistry(TransactionDataStore(), told.append, clock=lambda: now[0])
    quiet = registry.channel("quiet", "10.0.0.1:1", keep=True)
    registry.update_settings("quiet", producer_of("Orders"))
    busy = registry.channel("busy", "10.0.0.1:2", keep=True)
    registry.update_settings("busy", producer_of("Orders"))
    registry.channel("anonymous", "10.0.0.1:3")  # not kept, so not tracked either
    now[0] += 100
    assert registry.channel("busy", "10.0.0.1:2") is busy  # any call counts
    now[0] += 30
    assert registry.expire(120) == [quiet]
    assert quiet.closed and told == [quiet] and registry.settings("quiet") is None
    assert not busy.closed and registry.settings("busy") is not None
    assert registry.expire(120) == []
    now[0] += 121
    assert registry.expire(120) == [busy] and len(registry) == 0
