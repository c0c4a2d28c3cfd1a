"""A broker's answer as a 5.x status: RocketMQ 5's proxy table, the remark kept."""

from __future__ import annotations

import pytest

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.proxy.grpc_v2 import definition_pb2 as pb
from mqcore.proxy.status import code_of_response, ok, status, status_of_response


@pytest.mark.parametrize(
    ("response_code", "code"),
    [
        (ResponseCode.SUCCESS, pb.Code.OK),
        (ResponseCode.SYSTEM_BUSY, pb.Code.TOO_MANY_REQUESTS),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, pb.Code.NOT_IMPLEMENTED),
        (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, pb.Code.CONSUMER_GROUP_NOT_FOUND),
        (ResponseCode.NO_PERMISSION, pb.Code.FORBIDDEN),
        (ResponseCode.TOPIC_NOT_EXIST, pb.Code.TOPIC_NOT_FOUND),
        (ResponseCode.SYSTEM_ERROR, pb.Code.INTERNAL_SERVER_ERROR),
        (ResponseCode.MESSAGE_ILLEGAL, pb.Code.INTERNAL_SERVER_ERROR),
    ],
)
def test_response_codes(response_code: int, code: int) -> None:
    assert code_of_response(response_code) == code


def test_the_remark_or_the_number_is_the_message() -> None:
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, {})
    refused = RemotingCommand.response_to(request, ResponseCode.NO_PERMISSION, "no way")
    assert status_of_response(refused) == status(pb.Code.FORBIDDEN, "no way")
    silent = RemotingCommand.response_to(request, ResponseCode.SYSTEM_ERROR)
    assert status_of_response(silent).message == str(int(ResponseCode.SYSTEM_ERROR))
    assert ok() == pb.Status(code=pb.Code.OK, message="OK")
