"""RocketMQ 5's controller vocabulary: the codes' wire values, every header under the keys
RocketMQ 5's field names give, and every body read from the JSON fastjson writes for it.

The expected keys and texts are written from RocketMQ 5's Java classes (field names for
headers; getters, sorted, nulls left out, bare ``Map<Long,…>`` keys for bodies).
"""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqcore.common.jsonfields import now_ms
from mqcore.protocol import RequestCode, ResponseCode, bodies, headers
from mqcore.protocol.bodies import (
    BodyError,
    BrokerMemberGroup,
    BrokerReplicasInfo,
    ElectMasterResponseBody,
    EpochEntry,
    EpochEntryCache,
    RemotingBody,
    ReplicaIdentity,
    ReplicasInfo,
    SyncStateSet,
    decode_broker_names,
    encode_broker_names,
)
from mqcore.protocol.bodies import controller as controller_bodies
from mqcore.protocol.headers import (
    AlterSyncStateSetRequestHeader,
    AlterSyncStateSetResponseHeader,
    ApplyBrokerIdRequestHeader,
    ApplyBrokerIdResponseHeader,
    BrokerHeartbeatRequestHeader,
    CleanControllerBrokerDataRequestHeader,
    CommandHeader,
    ElectMasterRequestHeader,
    ElectMasterResponseHeader,
    GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader,
    GetReplicaInfoRequestHeader,
    GetReplicaInfoResponseHeader,
    HeaderError,
    NotifyBrokerRoleChangedRequestHeader,
    RegisterBrokerToControllerRequestHeader,
    RegisterBrokerToControllerResponseHeader,
)
from mqcore.protocol.headers import controller as controller_headers
from mqcore.protocol.headers.base import parse_java_int, parse_java_long

# --- codes -----------------------------------------------------------------------------


def test_request_codes_are_rocketmq_5s() -> None:
    assert {
        code.name: code.value
        for code in RequestCode
        if code.value == 904 or 1000 < code.value < 2000
    } == {
        "BROKER_HEARTBEAT": 904,
        "CONTROLLER_ALTER_SYNC_STATE_SET": 1001,
        "CONTROLLER_ELECT_MASTER": 1002,
        "CONTROLLER_REGISTER_BROKER": 1003,
        "CONTROLLER_GET_REPLICA_INFO": 1004,
        "CONTROLLER_GET_METADATA_INFO": 1005,
        "CONTROLLER_GET_SYNC_STATE_DATA": 1006,
        "GET_BROKER_EPOCH_CACHE": 1007,
        "NOTIFY_BROKER_ROLE_CHANGED": 1008,
        "UPDATE_CONTROLLER_CONFIG": 1009,
        "GET_CONTROLLER_CONFIG": 1010,
        "CLEAN_BROKER_DATA": 1011,
        "CONTROLLER_GET_NEXT_BROKER_ID": 1012,
        "CONTROLLER_APPLY_BROKER_ID": 1013,
    }


def test_response_codes_are_rocketmq_5s() -> None:
    assert {code.name: code.value for code in ResponseCode if code.value >= 2000} == {
        "CONTROLLER_FENCED_MASTER_EPOCH": 2000,
        "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH": 2001,
        "CONTROLLER_INVALID_MASTER": 2002,
        "CONTROLLER_INVALID_REPLICAS": 2003,
        "CONTROLLER_MASTER_NOT_AVAILABLE": 2004,
        "CONTROLLER_INVALID_REQUEST": 2005,
        "CONTROLLER_BROKER_NOT_ALIVE": 2006,
        "CONTROLLER_NOT_LEADER": 2007,
        "CONTROLLER_BROKER_METADATA_NOT_EXIST": 2008,
        "CONTROLLER_INVALID_CLEAN_BROKER_METADATA": 2009,
        "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED": 2010,
        "CONTROLLER_MASTER_STILL_EXIST": 2011,
        "CONTROLLER_ELECT_MASTER_FAILED": 2012,
        "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED": 2013,
        "CONTROLLER_BROKER_ID_INVALID": 2014,
        "CONTROLLER_JRAFT_INTERNAL_ERROR": 2015,
        "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS": 2016,
    }


@pytest.mark.parametrize("enum", [RequestCode, ResponseCode])
def test_no_code_is_an_alias_of_another(enum: type[RequestCode] | type[ResponseCode]) -> None:
    """An IntEnum member with a value already taken silently becomes an alias."""
    assert len(enum.__members__) == len(list(enum))


# --- headers ---------------------------------------------------------------------------

# One ext map per header with every field set, keys as RocketMQ 5's field names.
JAVA_EXT: dict[type[CommandHeader], dict[str, str]] = {
    BrokerHeartbeatRequestHeader: {
        "clusterName": "DefaultCluster",
        "brokerAddr": "127.0.0.1:30911",
        "brokerName": "broker-a",
        "brokerId": "1",
        "epoch": "3",
        "maxOffset": "4096",
        "confirmOffset": "4000",
        "heartbeatTimeoutMills": "10000",
        "electionPriority": "2147483647",
    },
    AlterSyncStateSetRequestHeader: {
        "brokerName": "broker-a",
        "masterBrokerId": "1",
        "masterEpoch": "3",
        "invokeTime": "1700000000000",
    },
    AlterSyncStateSetResponseHeader: {"newSyncStateSetEpoch": "4"},
    ElectMasterRequestHeader: {
        "clusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "brokerId": "2",
        "designateElect": "true",
        "invokeTime": "1700000000000",
    },
    ElectMasterResponseHeader: {
        "masterBrokerId": "2",
        "masterAddress": "127.0.0.1:30921",
        "masterEpoch": "4",
        "syncStateSetEpoch": "5",
    },
    RegisterBrokerToControllerRequestHeader: {
        "clusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "brokerId": "1",
        "brokerAddress": "127.0.0.1:30911",
        "invokeTime": "1700000000000",
    },
    RegisterBrokerToControllerResponseHeader: {
        "clusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "masterBrokerId": "1",
        "masterAddress": "127.0.0.1:30911",
        "masterEpoch": "3",
        "syncStateSetEpoch": "4",
    },
    GetReplicaInfoRequestHeader: {"brokerName": "broker-a"},
    GetReplicaInfoResponseHeader: {
        "masterBrokerId": "1",
        "masterAddress": "127.0.0.1:30911",
        "masterEpoch": "3",
    },
    GetMetaDataResponseHeader: {
        "group": "group1",
        "controllerLeaderId": "n0",
        "controllerLeaderAddress": "127.0.0.1:9878",
        "isLeader": "true",
        "peers": "n0-127.0.0.1:9877;n1-127.0.0.1:9878",
    },
    NotifyBrokerRoleChangedRequestHeader: {
        "masterAddress": "127.0.0.1:30921",
        "masterEpoch": "4",
        "syncStateSetEpoch": "5",
        "masterBrokerId": "2",
    },
    CleanControllerBrokerDataRequestHeader: {
        "clusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "brokerControllerIdsToClean": "1;2",
        "isCleanLivingBroker": "false",
        "invokeTime": "1700000000000",
    },
    GetNextBrokerIdRequestHeader: {"clusterName": "DefaultCluster", "brokerName": "broker-a"},
    GetNextBrokerIdResponseHeader: {
        "clusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "nextBrokerId": "3",
    },
    ApplyBrokerIdRequestHeader: {
        "clusterName": "DefaultCluster",
        "brokerName": "broker-a",
        "appliedBrokerId": "3",
        "registerCheckCode": "127.0.0.1:30931;1700000000000",
    },
    ApplyBrokerIdResponseHeader: {"clusterName": "DefaultCluster", "brokerName": "broker-a"},
}


def test_every_controller_header_has_a_java_example() -> None:
    assert {getattr(controller_headers, n) for n in controller_headers.__all__} == set(JAVA_EXT)


@pytest.mark.parametrize("cls", list(JAVA_EXT), ids=lambda cls: cls.__name__)
def test_headers_round_trip_under_java_keys(cls: type[CommandHeader]) -> None:
    ext = JAVA_EXT[cls]
    assert {key for _, key, *_ in cls._fields_spec()} == set(ext)  # no field more or less
    header = cls.from_ext_fields(ext)
    assert header.to_ext_fields() == ext
    assert getattr(headers, cls.__name__) is cls  # the package re-exports it


def test_header_values_are_typed() -> None:
    beat = BrokerHeartbeatRequestHeader.from_ext_fields(JAVA_EXT[BrokerHeartbeatRequestHeader])
    assert (beat.broker_id, beat.epoch, beat.max_offset, beat.heartbeat_timeout_mills) == (
        1,
        3,
        4096,
        10_000,
    )
    meta = GetMetaDataResponseHeader.from_ext_fields(JAVA_EXT[GetMetaDataResponseHeader])
    assert meta.is_leader is True and meta.controller_leader_id == "n0"
    elect = ElectMasterRequestHeader.from_ext_fields(JAVA_EXT[ElectMasterRequestHeader])
    assert elect.designate_elect is True and elect.invoke_time == 1_700_000_000_000


def test_a_name_server_heartbeat_carries_the_required_fields_only() -> None:
    ext = {"clusterName": "c", "brokerAddr": "127.0.0.1:10911", "brokerName": "broker-a"}
    beat = BrokerHeartbeatRequestHeader.from_ext_fields(ext)
    assert beat.broker_id is None and beat.epoch is None and beat.election_priority is None
    assert beat.to_ext_fields() == ext


def test_java_primitives_are_always_written() -> None:
    """Java never leaves out an int, long or boolean field: nor do we."""
    assert AlterSyncStateSetResponseHeader().to_ext_fields() == {"newSyncStateSetEpoch": "0"}
    assert GetMetaDataResponseHeader().to_ext_fields() == {"isLeader": "false"}
    clean = CleanControllerBrokerDataRequestHeader("broker-a").to_ext_fields()
    assert clean.keys() == {"brokerName", "isCleanLivingBroker", "invokeTime"}


def test_invoke_time_is_when_the_request_is_made() -> None:
    before = now_ms()
    for header in (
        AlterSyncStateSetRequestHeader("broker-a", 1, 1),
        RegisterBrokerToControllerRequestHeader("c", "broker-a", 1, "127.0.0.1:30911"),
        ElectMasterRequestHeader.of_broker_trigger("c", "broker-a", 1),
        CleanControllerBrokerDataRequestHeader("broker-a"),
    ):
        invoke_time = int(header.to_ext_fields()["invokeTime"])
        assert before <= invoke_time <= now_ms()


def test_elect_master_triggers() -> None:
    """The three origins of an election, as Java's factory methods fill the header."""
    by_controller = ElectMasterRequestHeader.of_controller_trigger("broker-a").to_ext_fields()
    del by_controller["invokeTime"]
    assert by_controller == {
        "clusterName": "",
        "brokerName": "broker-a",
        "brokerId": "-1",
        "designateElect": "false",
    }
    by_broker = ElectMasterRequestHeader.of_broker_trigger("c", "broker-a", 2)
    assert (by_broker.broker_id, by_broker.designate_elect) == (2, False)
    by_admin = ElectMasterRequestHeader.of_admin_trigger("c", "broker-a", 3)
    assert (by_admin.broker_id, by_admin.designate_elect) == (3, True)


@pytest.mark.parametrize(
    ("cls", "missing"),
    [
        (ElectMasterRequestHeader, "clusterName"),
        (ElectMasterRequestHeader, "brokerName"),
        (ElectMasterRequestHeader, "brokerId"),
        (ElectMasterRequestHeader, "designateElect"),
        (BrokerHeartbeatRequestHeader, "clusterName"),
        (BrokerHeartbeatRequestHeader, "brokerAddr"),
        (BrokerHeartbeatRequestHeader, "brokerName"),
        (CleanControllerBrokerDataRequestHeader, "brokerName"),
    ],
)
def test_cfnotnull_fields_are_required(cls: type[CommandHeader], missing: str) -> None:
    ext = dict(JAVA_EXT[cls])
    del ext[missing]
    with pytest.raises(HeaderError, match=f"<{missing}> is null"):
        cls.from_ext_fields(ext)


def test_fields_without_cfnotnull_may_be_missing() -> None:
    for cls in JAVA_EXT:
        required = {key for _, key, *_, req in cls._fields_spec() if req}
        ext = {k: v for k, v in JAVA_EXT[cls].items() if k in required}
        assert cls.from_ext_fields(ext).to_ext_fields().keys() >= required


@pytest.mark.parametrize(
    ("cls", "key", "text"),
    [
        (AlterSyncStateSetRequestHeader, "masterEpoch", "2147483648"),  # Java int
        (AlterSyncStateSetRequestHeader, "masterBrokerId", "9223372036854775808"),
        (AlterSyncStateSetResponseHeader, "newSyncStateSetEpoch", "x"),
        (BrokerHeartbeatRequestHeader, "electionPriority", "-2147483649"),
        (BrokerHeartbeatRequestHeader, "maxOffset", "1.5"),
        (ElectMasterRequestHeader, "brokerId", ""),
        (GetNextBrokerIdResponseHeader, "nextBrokerId", "three"),
        (NotifyBrokerRoleChangedRequestHeader, "syncStateSetEpoch", "4294967296"),
    ],
)
def test_wrong_numbers_are_header_errors(cls: type[CommandHeader], key: str, text: str) -> None:
    with pytest.raises(HeaderError, match=f"<{key}>"):
        cls.from_ext_fields({**JAVA_EXT[cls], key: text})


def _field_values(cls: type[CommandHeader]) -> st.SearchStrategy[dict[str, Any]]:
    """Any valid value of each field: Java's ranges for numbers, None where Java's object
    types allow null."""
    fields = {}
    hints = typing.get_type_hints(cls)
    for attr, _, parse, _, _ in cls._fields_spec():
        if parse is parse_java_int:
            values: st.SearchStrategy[Any] = st.integers(-(2**31), 2**31 - 1)
        elif parse is parse_java_long:
            values = st.integers(-(2**63), 2**63 - 1)
        elif parse is str:
            values = st.text()
        else:
            values = st.booleans()
        optional = type(None) in typing.get_args(hints[attr])
        fields[attr] = st.none() | values if optional else values
    return st.fixed_dictionaries(fields)


@given(data=st.data())
@pytest.mark.parametrize("cls", list(JAVA_EXT), ids=lambda cls: cls.__name__)
def test_any_header_round_trips(cls: type[CommandHeader], data: st.DataObject) -> None:
    header = cls(**data.draw(_field_values(cls)))
    assert cls.from_ext_fields(header.to_ext_fields()) == header


# --- bodies ----------------------------------------------------------------------------

# (fastjson's text for RocketMQ 5, the strict JSON we write for the same body)
JAVA_BODIES: dict[type[RemotingBody], tuple[str, str]] = {
    SyncStateSet: (
        '{"syncStateSet":[1,2],"syncStateSetEpoch":3}',
        '{"syncStateSet":[1,2],"syncStateSetEpoch":3}',
    ),
    BrokerMemberGroup: (
        '{"brokerAddrs":{1:"127.0.0.1:30911",2:"127.0.0.1:30921"},'
        '"brokerName":"broker-a","cluster":"DefaultCluster"}',
        '{"brokerAddrs":{"1":"127.0.0.1:30911","2":"127.0.0.1:30921"},'
        '"brokerName":"broker-a","cluster":"DefaultCluster"}',
    ),
    ElectMasterResponseBody: (
        '{"brokerMemberGroup":{"brokerAddrs":{1:"127.0.0.1:30911",2:"127.0.0.1:30921"},'
        '"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[2]}',
        '{"brokerMemberGroup":{"brokerAddrs":{"1":"127.0.0.1:30911","2":"127.0.0.1:30921"},'
        '"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[2]}',
    ),
    ReplicaIdentity: (
        '{"alive":true,"brokerAddress":"127.0.0.1:30911","brokerId":1,"brokerName":"broker-a"}',
        '{"alive":true,"brokerAddress":"127.0.0.1:30911","brokerId":1,"brokerName":"broker-a"}',
    ),
    ReplicasInfo: (
        '{"inSyncReplicas":[],"masterEpoch":0,"notInSyncReplicas":[],"syncStateSetEpoch":0}',
        '{"inSyncReplicas":[],"masterEpoch":0,"notInSyncReplicas":[],"syncStateSetEpoch":0}',
    ),
    BrokerReplicasInfo: (
        '{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,'
        '"brokerAddress":"127.0.0.1:30911","brokerId":1,"brokerName":"broker-a"}],'
        '"masterAddress":"127.0.0.1:30911","masterBrokerId":1,"masterEpoch":2,'
        '"notInSyncReplicas":[{"alive":false,"brokerAddress":"127.0.0.1:30921","brokerId":2,'
        '"brokerName":"broker-a"}],"syncStateSetEpoch":3}}}',
        '{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,'
        '"brokerAddress":"127.0.0.1:30911","brokerId":1,"brokerName":"broker-a"}],'
        '"masterAddress":"127.0.0.1:30911","masterBrokerId":1,"masterEpoch":2,'
        '"notInSyncReplicas":[{"alive":false,"brokerAddress":"127.0.0.1:30921","brokerId":2,'
        '"brokerName":"broker-a"}],"syncStateSetEpoch":3}}}',
    ),
    EpochEntry: (
        '{"endOffset":9223372036854775807,"epoch":2,"startOffset":1024}',
        '{"endOffset":9223372036854775807,"epoch":2,"startOffset":1024}',
    ),
    EpochEntryCache: (
        '{"brokerId":1,"brokerName":"broker-a","clusterName":"DefaultCluster","epochList":'
        '[{"endOffset":1024,"epoch":1,"startOffset":0},'
        '{"endOffset":9223372036854775807,"epoch":2,"startOffset":1024}],"maxOffset":2048}',
        '{"brokerId":1,"brokerName":"broker-a","clusterName":"DefaultCluster","epochList":'
        '[{"endOffset":1024,"epoch":1,"startOffset":0},'
        '{"endOffset":9223372036854775807,"epoch":2,"startOffset":1024}],"maxOffset":2048}',
    ),
}


def test_every_controller_body_has_a_java_example() -> None:
    exported = {getattr(controller_bodies, n) for n in controller_bodies.__all__}
    assert {cls for cls in exported if isinstance(cls, type)} == set(JAVA_BODIES)


@pytest.mark.parametrize("cls", list(JAVA_BODIES), ids=lambda cls: cls.__name__)
def test_bodies_read_fastjson_and_write_strict_json(cls: type[RemotingBody]) -> None:
    java, ours = JAVA_BODIES[cls]
    body = cls.decode(java.encode())
    assert body.encode() == ours.encode()
    assert cls.decode(body.encode()) == body
    assert getattr(bodies, cls.__name__) is cls  # the package re-exports it


def test_body_values_are_typed() -> None:
    body = ElectMasterResponseBody.decode(JAVA_BODIES[ElectMasterResponseBody][0].encode())
    assert body.sync_state_set == {2}
    assert body.broker_member_group == BrokerMemberGroup(
        "DefaultCluster", "broker-a", {1: "127.0.0.1:30911", 2: "127.0.0.1:30921"}
    )
    info = BrokerReplicasInfo.decode(JAVA_BODIES[BrokerReplicasInfo][0].encode())
    group = info.replicas_info_table["broker-a"]
    assert (group.master_broker_id, group.master_epoch, group.sync_state_set_epoch) == (1, 2, 3)
    assert group.in_sync_replicas == [ReplicaIdentity("broker-a", 1, "127.0.0.1:30911", True)]
    cache = EpochEntryCache.decode(JAVA_BODIES[EpochEntryCache][0].encode())
    assert cache.epoch_list == [EpochEntry(1, 0, 1024), EpochEntry(2, 1024)]
    assert cache.epoch_list[-1].end_offset == 2**63 - 1  # Long.MAX_VALUE: still open


def test_a_group_without_master_leaves_the_master_out() -> None:
    """Java's null masterBrokerId/masterAddress are not written, and read back as None."""
    info = ReplicasInfo(master_epoch=1)
    assert "masterBrokerId" not in info.to_json() and "masterAddress" not in info.to_json()
    assert ReplicasInfo.decode(info.encode()).master_broker_id is None
    assert ElectMasterResponseBody(sync_state_set={1}).encode() == b'{"syncStateSet":[1]}'
    assert ElectMasterResponseBody.decode(b'{"syncStateSet":[1]}').broker_member_group is None


def test_replica_identity_equality_ignores_liveness() -> None:
    assert ReplicaIdentity("broker-a", 1, "a", True) == ReplicaIdentity("broker-a", 1, "a")


def test_sets_are_written_sorted_and_read_in_any_order() -> None:
    assert SyncStateSet({3, 1, 2}, 7).encode() == b'{"syncStateSet":[1,2,3],"syncStateSetEpoch":7}'
    body = SyncStateSet.decode(b'{"syncStateSet":[3,"1",2,2],"syncStateSetEpoch":"7"}')
    assert body == SyncStateSet({1, 2, 3}, 7)


def test_missing_fields_take_java_defaults() -> None:
    assert SyncStateSet.decode(b"{}") == SyncStateSet(set(), 0)
    assert EpochEntry.decode(b'{"epoch":1,"startOffset":5}').end_offset == 2**63 - 1
    assert BrokerReplicasInfo.decode(b"{}").replicas_info_table == {}


@pytest.mark.parametrize(
    ("cls", "text"),
    [
        (SyncStateSet, '{"syncStateSetEpoch":2147483648}'),  # Java int
        (SyncStateSet, '{"syncStateSet":"1,2"}'),
        (SyncStateSet, '{"syncStateSet":["one"]}'),
        (SyncStateSet, '{"syncStateSet":[9223372036854775808]}'),  # Java long
        (SyncStateSet, "[1,2]"),
        (BrokerMemberGroup, '{"brokerAddrs":[1]}'),
        (BrokerMemberGroup, '{"brokerAddrs":{"one":"a"}}'),
        (ElectMasterResponseBody, '{"brokerMemberGroup":5}'),
        (ReplicasInfo, '{"masterEpoch":-2147483649}'),
        (ReplicasInfo, '{"inSyncReplicas":{}}'),
        (BrokerReplicasInfo, '{"replicasInfoTable":{"broker-a":[]}}'),
        (ReplicaIdentity, '{"brokerId":"x"}'),
        (EpochEntry, '{"epoch":4294967296}'),
        (EpochEntryCache, '{"epochList":[{"epoch":"x"}]}'),
        (EpochEntryCache, '{"maxOffset":1e999}'),
        (EpochEntryCache, "{"),
    ],
)
def test_wrong_types_are_body_errors(cls: type[RemotingBody], text: str) -> None:
    with pytest.raises(BodyError):
        cls.decode(text.encode())


def test_broker_names_are_a_bare_json_array() -> None:
    """CONTROLLER_GET_SYNC_STATE_DATA's request body (mqadmin ``getSyncStateSet``)."""
    assert encode_broker_names(["broker-a", "broker-b"]) == b'["broker-a","broker-b"]'
    assert decode_broker_names(b'["broker-a","broker-b"]') == ["broker-a", "broker-b"]
    for bad in (b'{"brokerNames":["a"]}', b'["a",1]', b"[null]", b"null", b""):
        with pytest.raises(BodyError):
            decode_broker_names(bad)


TEXT = st.text(st.characters(blacklist_categories=["Cs"]))  # UTF-8 holds no lone surrogate
IDS = st.integers(-(2**63), 2**63 - 1)
EPOCHS = st.integers(-(2**31), 2**31 - 1)
REPLICAS = st.builds(ReplicaIdentity, TEXT, IDS, TEXT, st.booleans())
GROUPS = st.builds(BrokerMemberGroup, TEXT, TEXT, st.dictionaries(IDS, TEXT))
BODIES: st.SearchStrategy[RemotingBody] = st.one_of(
    st.builds(SyncStateSet, st.sets(IDS), EPOCHS),
    st.builds(ElectMasterResponseBody, st.none() | GROUPS, st.sets(IDS)),
    st.builds(
        BrokerReplicasInfo,
        st.dictionaries(
            TEXT,
            st.builds(
                ReplicasInfo,
                st.none() | IDS,
                st.none() | TEXT,
                EPOCHS,
                EPOCHS,
                st.lists(REPLICAS, max_size=3),
                st.lists(REPLICAS, max_size=3),
            ),
            max_size=3,
        ),
    ),
    st.builds(
        EpochEntryCache,
        TEXT,
        TEXT,
        IDS,
        st.lists(st.builds(EpochEntry, EPOCHS, IDS, IDS), max_size=4),
        IDS,
    ),
)


@given(BODIES)
def test_any_body_round_trips(body: RemotingBody) -> None:
    again = type(body).decode(body.encode())
    assert again.to_json() == body.to_json()


@given(st.lists(TEXT))
def test_any_broker_names_round_trip(names: list[str]) -> None:
    assert decode_broker_names(encode_broker_names(names)) == names


@given(GROUPS)
def test_member_groups_read_with_bare_integer_keys(group: BrokerMemberGroup) -> None:
    """fastjson writes Map<Long,String> keys bare: the same group as with quoted keys."""
    addrs = ",".join(f"{k}:{json.dumps(v)}" for k, v in group.broker_addrs.items())
    text = (
        f'{{"brokerAddrs":{{{addrs}}},"brokerName":{json.dumps(group.broker_name)},'
        f'"cluster":{json.dumps(group.cluster)}}}'
    )
    assert BrokerMemberGroup.decode(text.encode()) == group
