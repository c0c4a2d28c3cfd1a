"""The renewal of push consumers' receipt handles, driven scan by scan with a fake
broker: when a handle is renewed and by how much, what a client gone and a renewal
failing do, and which handle an ack gets."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from mqcore.protocol import RemotingCommand, RequestCode, ResponseCode
from mqcore.protocol.extra_info import ExtraInfo
from mqcore.protocol.headers.pop import ChangeInvisibleTimeResponseHeader
from mqcore.proxy.context import CallContext
from mqcore.proxy.receipts import ReceiptHandle, create_handle
from mqcore.proxy.renewal import ReceiptHandleRenewer, RenewTimings

CALL = CallContext(client_id="c@1", remote_address="127.0.0.1:1")
TIMINGS = RenewTimings(ahead_ms=10_000, max_ms=100_000, policy_ms=(60_000, 180_000))


@dataclass
class FakeBroker:
    """Answers CHANGE_MESSAGE_INVISIBLETIME as the broker does (popped now, for the
    time asked), or fails as told; records (handle, invisible ms) of each change."""

    now: int = 0
    fail: Exception | None = None
    code: int = ResponseCode.SUCCESS
    changes: list[tuple[str, int]] = field(default_factory=list)
    alive: bool = True

    async def change(
        self, call: CallContext, group: str, topic: str, handle: ReceiptHandle, invisible: int
    ) -> RemotingCommand:
        self.changes.append((handle.text, invisible))
        if self.fail is not None:
            raise self.fail
        request = RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME)
        header = ChangeInvisibleTimeResponseHeader(
            pop_time=self.now, invisible_time=invisible, revive_qid=1
        )
        return RemotingCommand.response_to(request, self.code, None, header.to_ext_fields())


def handle(pop_time: int = 0, invisible: int = 60_000) -> ReceiptHandle:
    receipt = ExtraInfo(5, pop_time, invisible, 1, "0", "broker-a", 2, 5)
    return ReceiptHandle.decode(create_handle(receipt.encode(), 777))


@pytest.fixture
def broker() -> FakeBroker:
    return FakeBroker()


def renewer_of(broker: FakeBroker) -> ReceiptHandleRenewer:
    return ReceiptHandleRenewer(broker.change, lambda client_id: broker.alive, TIMINGS)


async def test_a_handle_is_renewed_when_due_by_the_policy_s_steps(broker: FakeBroker) -> None:
    renewer = renewer_of(broker)
    given = handle()
    renewer.add(CALL, "g", "T", "id1", given)
    await renewer.renew_once(now=49_999)  # due in 10.001 s: not yet
    assert broker.changes == []
    broker.now = 50_000
    await renewer.renew_once(now=50_000)
    assert broker.changes == [(given.text, 60_000)]
    broker.now = 100_000
    await renewer.renew_once(now=100_000)  # the renewed one is due at 110 s
    assert broker.changes[1][1] == 180_000, "the second step"
    current = await renewer.take(CALL.client_id, "g", "id1", given.text)
    assert current is not None and current.next_visible_time == 100_000 + 180_000
    assert current.commit_log_offset == 777 and current.receipt.queue_offset == 5
    assert len(renewer) == 0
    renewer.close()


async def test_no_renewal_past_the_maximum(broker: FakeBroker) -> None:
    renewer = renewer_of(broker)
    renewer.add(CALL, "g", "T", "id1", handle())
    await renewer.renew_once(now=10**15)  # received long before, as far as it knows
    assert broker.changes == [] and len(renewer) == 0
    renewer.close()


async def test_a_gone_client_s_handles_come_back_soon(broker: FakeBroker) -> None:
    renewer = renewer_of(broker)
    live, expired = handle(pop_time=10**15), handle(pop_time=0)
    renewer.add(CALL, "g", "T", "id1", live)
    renewer.add(CALL, "g", "T", "id2", expired)
    broker.alive = False
    await renewer.renew_once(now=10**15 + 1)
    assert broker.changes == [(live.text, 1_000)], "the one still invisible, for 1 s"
    assert len(renewer) == 0
    renewer.close()


async def test_a_failing_renewal_is_retried_three_times(broker: FakeBroker) -> None:
    renewer = renewer_of(broker)
    renewer.add(CALL, "g", "T", "id1", handle())
    broker.fail = ConnectionError("gone")
    for attempt in range(1, 4):
        assert len(renewer) == 1
        await renewer.renew_once(now=55_000)
        assert len(broker.changes) == attempt
    assert len(renewer) == 0
    broker.fail, broker.code = None, ResponseCode.SYSTEM_ERROR
    renewer.add(CALL, "g", "T", "id2", handle())
    await renewer.renew_once(now=55_000)
    assert len(renewer) == 0, "a refused renewal is not retried"
    renewer.close()


async def test_take_names_the_message_by_the_handle_it_was_given(broker: FakeBroker) -> None:
    renewer = renewer_of(broker)
    given = handle()
    renewer.add(CALL, "g", "T", "id1", given)
    assert await renewer.take(CALL.client_id, "g", "id1", "another handle") is None
    assert await renewer.take("other@1", "g", "id1", given.text) is None
    assert await renewer.take(CALL.client_id, "g", "id1", given.text) == given
    assert await renewer.take(CALL.client_id, "g", "id1", given.text) is None
    renewer.close()
