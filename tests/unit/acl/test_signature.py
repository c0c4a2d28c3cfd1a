"""The request signature, checked against vectors computed here independently of
mqcore.acl (hmac + sha1 + base64 over the sorted values, then the body)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from mqcore.acl.signature import (
    SessionCredentials,
    calc_signature,
    request_content,
    sign_request,
    signature_matches,
)
from mqcore.protocol import RemotingCommand, RequestCode


def reference(fields: dict[str, str], body: bytes, secret: str) -> str:
    text = "".join(v for k, v in sorted(fields.items()) if k != "Signature")
    mac = hmac.new(secret.encode("utf-8"), text.encode("utf-8") + body, hashlib.sha1)
    return base64.b64encode(mac.digest()).decode()


def test_known_vector() -> None:
    # Worked by hand: values sorted by key are "RocketMQ" (AccessKey), "a" (b), "TopicA"...
    fields = {"b": "TopicA", "AccessKey": "RocketMQ", "a": "PG"}
    content = request_content(fields, b"body")
    assert content == b"RocketMQPGTopicAbody"
    expected = base64.b64encode(
        hmac.new(b"12345678", b"RocketMQPGTopicAbody", hashlib.sha1).digest()
    ).decode()
    assert calc_signature(content, "12345678") == expected == "" + expected


def test_sign_request_adds_fields_and_signature() -> None:
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "T"}, b"xyz")
    creds = SessionCredentials("RocketMQ", "12345678", ons_channel="ALIYUN")
    signed = sign_request(request, creds)
    fields = dict(signed.ext_fields)
    assert fields["AccessKey"] == "RocketMQ" and fields["OnsChannel"] == "ALIYUN"
    assert fields["Signature"] == reference(fields, b"xyz", "12345678")
    assert request.ext_fields == {"a": "PG", "b": "T"}  # the original is untouched
    assert signature_matches(signed, "12345678")
    assert not signature_matches(signed, "12345679")


def test_unicode_values_and_binary_body() -> None:
    fields = {"AccessKey": "ak-1234567", "topic": "tópico", "k": "値"}
    body = bytes(range(256))
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE, fields, body)
    signed = sign_request(request, SessionCredentials("ak-1234567", "sékrét!!"))
    assert signed.ext_fields["Signature"] == reference(dict(signed.ext_fields), body, "sékrét!!")


def test_tampered_field_or_body_fails() -> None:
    signed = sign_request(
        RemotingCommand.request(RequestCode.PULL_MESSAGE, {"topic": "T"}, b"b"),
        SessionCredentials("RocketMQ", "12345678"),
    )
    fields = dict(signed.ext_fields)
    fields["topic"] = "U"
    assert not signature_matches(RemotingCommand.request(11, fields, b"b"), "12345678")
    assert not signature_matches(
        RemotingCommand.request(11, dict(signed.ext_fields), b"c"), "12345678"
    )
    no_sig = {k: v for k, v in signed.ext_fields.items() if k != "Signature"}
    assert not signature_matches(RemotingCommand.request(11, no_sig, b"b"), "12345678")


def test_unique_key_flag_is_left_out_on_the_server_but_accepted_either_way() -> None:
    fields = {"AccessKey": "RocketMQ", "topic": "T", "_UNIQUE_KEY_QUERY": "true"}
    without = {k: v for k, v in fields.items() if k != "_UNIQUE_KEY_QUERY"}
    as_498 = {**fields, "Signature": reference(without, b"", "12345678")}
    as_client = {**fields, "Signature": reference(fields, b"", "12345678")}
    for f in (as_498, as_client):
        assert signature_matches(RemotingCommand.request(12, f), "12345678")


def test_credentials_repr_hides_the_secret() -> None:
    assert "12345678" not in repr(SessionCredentials("RocketMQ", "12345678"))
