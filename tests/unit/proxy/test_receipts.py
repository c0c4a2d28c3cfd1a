"""Receipt handles: the broker's receipt and the commit log offset, as RocketMQ 5's
proxy builds and reads them."""

from __future__ import annotations

import pytest

from mqcore.protocol.extra_info import ExtraInfo
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.receipts import ReceiptHandle, create_handle
from mqcore.proxy.status import ProxyError

RECEIPT = ExtraInfo(7, 1_000, 30_000, 2, "1", "broker-a", 3, 9)


def test_a_handle_is_the_receipt_and_the_commit_log_offset() -> None:
    text = create_handle(RECEIPT.encode(), 4096)
    assert text == "7 1000 30000 2 1 broker-a 3 9 4096"
    handle = ReceiptHandle.decode(text)
    assert handle.receipt == RECEIPT and handle.commit_log_offset == 4096
    assert handle.text == text and handle.queue_offset == 9
    assert handle.next_visible_time == 31_000
    assert handle.receipt.real_topic("T", "g") == "%RETRY%g_T"


def test_a_handle_without_the_commit_log_offset_says_minus_one() -> None:
    assert ReceiptHandle.decode(RECEIPT.encode()).commit_log_offset == -1


def test_an_expired_handle_is_invalid() -> None:
    handle = ReceiptHandle.decode(create_handle(RECEIPT.encode(), 1))
    handle.check_not_expired(30_999)
    with pytest.raises(ProxyError) as caught:
        handle.check_not_expired(31_000)
    assert caught.value.code == pb.Code.INVALID_RECEIPT_HANDLE
    assert caught.value.message == "receipt handle is expired"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Parse failed, dataList size 1"),
        ("1 2 3 4 0 b 6", "Parse failed, dataList size 7"),
        ("x 2 3 4 0 b 6 7", "ckQueueOffset is not a number"),
        ("1 2 3 4 9 b 6 7", "unknown retry mark"),
        ("1 2 3 4 0 b 6 7 x", "invalid literal"),
    ],
)
def test_a_malformed_handle_is_refused_as_rocketmq_5_s_parser_does(text: str, message: str) -> None:
    with pytest.raises(ProxyError) as caught:
        ReceiptHandle.decode(text)
    assert caught.value.code == pb.Code.INTERNAL_SERVER_ERROR
    assert message in caught.value.message
