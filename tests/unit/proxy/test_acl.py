"""ACL of gRPC calls: the 5.x SDK's signature, then the remoting ports' resource rules."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from mqcore.acl.config import parse_acl
from mqcore.protocol import RemotingCommand, RequestCode
from mqcore.proxy.acl import authenticate, authorize, parse_authorization
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.status import ProxyError

CONFIG = parse_acl(
    """\
globalWhiteRemoteAddresses: [10.9.9.*]
accounts:
  - accessKey: userKey1
    secretKey: userSecret
    defaultTopicPerm: DENY
    topicPerms: [pubOnly=PUB, subOnly=SUB]
  - accessKey: trustedKey
    secretKey: trustedSecret
    whiteRemoteAddress: 10.1.1.1
"""
)
DATE = "20261206T101010Z"


def signed(access_key: str, secret: str, date: str = DATE) -> dict[str, str]:
    """The metadata the 5.x SDK sends (its Signature.metadata)."""
    sign = hmac.new(secret.encode(), date.encode(), hashlib.sha1).hexdigest()
    return {
        "authorization": f"MQv2-HMAC-SHA1 Credential={access_key}, "
        f"SignedHeaders=x-mq-date-time, Signature={sign}",
        "x-mq-date-time": date,
    }


def refused(call: object) -> str:
    with pytest.raises(ProxyError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.code == pb.Code.UNAUTHORIZED
    return caught.value.message


def test_the_authorization_header_is_read() -> None:
    header = signed("userKey1", "userSecret")["authorization"]
    access_key, signature = parse_authorization(header)
    assert access_key == "userKey1" and len(signature) == 40
    assert "incorrect" in refused(lambda: parse_authorization("nonsense"))
    assert "incorrect" in refused(lambda: parse_authorization("MQv2-HMAC-SHA1 Credential=userKey1"))


def test_a_signed_call_is_its_account_s() -> None:
    assert authenticate(CONFIG, signed("userKey1", "userSecret"), "127.0.0.1") == "userKey1"
    assert authenticate(None, {}, "127.0.0.1") is None  # ACL off


def test_unsigned_unknown_or_badly_signed_calls_are_refused() -> None:
    assert "no AccessKey" in refused(lambda: authenticate(CONFIG, {}, "127.0.0.1"))
    anonymous = {"authorization": "MQv2-HMAC-SHA1 Credential=, SignedHeaders=x, Signature=ab"}
    assert "no AccessKey" in refused(lambda: authenticate(CONFIG, anonymous, "127.0.0.1"))
    unknown = signed("nobodyKey", "x")
    assert "no ACL config for accessKey=nobodyKey" in refused(
        lambda: authenticate(CONFIG, unknown, "127.0.0.1")
    )
    wrong = signed("userKey1", "notTheSecret")
    assert "signature check failed" in refused(lambda: authenticate(CONFIG, wrong, "127.0.0.1"))
    undated = signed("userKey1", "userSecret")
    del undated["x-mq-date-time"]
    assert "datetime" in refused(lambda: authenticate(CONFIG, undated, "127.0.0.1"))


def test_white_listed_peers_skip_the_checks() -> None:
    assert authenticate(CONFIG, {}, "10.9.9.7") is None
    trusted = signed("trustedKey", "not checked")
    assert authenticate(CONFIG, trusted, "10.1.1.1") is None


def _send(topic: str) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": topic, "b": topic})


def test_requests_need_the_account_s_permissions() -> None:
    authorize(CONFIG, "userKey1", _send("pubOnly"))
    assert "no PUB permission on topic=subOnly" in refused(
        lambda: authorize(CONFIG, "userKey1", _send("subOnly"))
    )
    authorize(CONFIG, "userKey1", None, topic="subOnly")  # a route: PUB or SUB will do
    assert "topic=other" in refused(lambda: authorize(CONFIG, "userKey1", None, topic="other"))
    authorize(CONFIG, None, _send("other"))  # ACL off or a white-listed peer
    authorize(None, "userKey1", _send("other"))
