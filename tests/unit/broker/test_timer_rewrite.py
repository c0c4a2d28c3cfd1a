"""The send's timer rewrite (RocketMQ 5's HookUtils) with a fake clock."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqcore.broker.send_checks import SendRefused
from mqcore.broker.timer import TimerRewrite
from mqcore.broker.timer.recall import RecallHandle, recall_handle_of
from mqcore.message.const import SysFlag
from mqcore.message.model import MessageExt
from mqcore.protocol import ResponseCode
from mqcore.store.store_config import MessageStoreConfig

NOW = 1_800_000_000_123
MAX_MS = 3 * 86_400_000


def rewrite(
    props: dict[str, str],
    *,
    precision: int = 1000,
    reject: bool = False,
    sys_flag: int = 0,
    **config: object,
) -> MessageExt:
    woken: list[bool] = []
    cfg = MessageStoreConfig(timer_precision_ms=precision, **config)  # type: ignore[arg-type]
    r = TimerRewrite(
        cfg, clock=lambda: NOW, is_reject=lambda _t: reject, on_rewrite=lambda: woken.append(True)
    )
    msg = MessageExt(topic="Orders", body=b"x", properties=dict(props), queue_id=3)
    msg.sys_flag = sys_flag
    out = r.rewrite(msg)
    assert bool(woken) == (out.topic == "rmq_sys_wheel_timer")
    return out


@given(st.integers(1, MAX_MS), st.sampled_from([100, 200, 500, 1000]))
def test_deliver_time_goes_to_the_tick_before_it(ahead: int, precision: int) -> None:
    deliver = NOW + ahead
    out = rewrite({"TIMER_DELIVER_MS": str(deliver)}, precision=precision)
    tick = int(out.properties["TIMER_OUT_MS"])
    assert tick % precision == 0 and tick < deliver <= tick + precision
    assert out.topic == "rmq_sys_wheel_timer" and out.queue_id == 0
    assert out.properties["REAL_TOPIC"] == "Orders" and out.properties["REAL_QID"] == "3"


def test_relative_properties_and_their_precedence() -> None:
    out = rewrite({"TIMER_DELAY_SEC": "10", "TIMER_DELAY_MS": "99", "TIMER_DELIVER_MS": "1"})
    assert int(out.properties["TIMER_OUT_MS"]) == (NOW + 10_000) // 1000 * 1000
    out = rewrite({"TIMER_DELAY_MS": "2500"})
    assert int(out.properties["TIMER_OUT_MS"]) == (NOW + 2500) // 1000 * 1000


def test_past_time_and_other_messages_are_left_alone() -> None:
    for props in ({"TIMER_DELIVER_MS": str(NOW)}, {"TIMER_DELAY_MS": "0"}, {"A": "b"}):
        assert rewrite(props).topic == "Orders"
    assert rewrite({"TIMER_DELAY_SEC": "5", "TIMER_OUT_MS": "1"}).topic == "Orders"
    prepared = rewrite({"TIMER_DELAY_SEC": "5"}, sys_flag=SysFlag.TRANSACTION_PREPARED_TYPE)
    assert prepared.topic == "Orders"
    leveled = rewrite({"DELAY": "3", "TIMER_DELAY_SEC": "5", "TIMER_DELIVER_MS": "9"})
    assert leveled.topic == "Orders"
    assert "TIMER_DELAY_SEC" not in leveled.properties
    assert "TIMER_DELIVER_MS" not in leveled.properties


@pytest.mark.parametrize(
    ("props", "config", "code", "words"),
    [
        ({"TIMER_DELAY_SEC": "x"}, {}, ResponseCode.MESSAGE_ILLEGAL, "timer message illegal"),
        (
            {"TIMER_DELAY_MS": str(MAX_MS + 1)},
            {},
            ResponseCode.MESSAGE_ILLEGAL,
            f"max delay {MAX_MS}ms",
        ),
        (
            {"TIMER_DELIVER_MS": "5", "TIMER_DEL_UNIQKEY": "T+K"},
            {},
            ResponseCode.MESSAGE_ILLEGAL,
            "del msg",
        ),
        (
            {"TIMER_DELAY_SEC": "5"},
            {"timer_wheel_enable": False},
            ResponseCode.SYSTEM_ERROR,
            "timerWheelEnable is false",
        ),
        (
            {"TIMER_DELAY_SEC": "5"},
            {"timer_max_delay_sec": 4},
            ResponseCode.MESSAGE_ILLEGAL,
            "max delay 4000ms",
        ),
    ],
)
def test_refusals(props: dict[str, str], config: dict[str, object], code: int, words: str) -> None:
    with pytest.raises(SendRefused) as err:
        rewrite(props, **config)
    assert err.value.code == code and words in (err.value.remark or "")


def test_flow_control_refuses_a_crowded_slot() -> None:
    with pytest.raises(SendRefused) as err:
        rewrite({"TIMER_DELAY_SEC": "5"}, reject=True, timer_congest_num_each_slot=10)
    assert err.value.code == ResponseCode.SYSTEM_ERROR
    assert "flow control, max num limit is 20" in (err.value.remark or "")


def test_precision_is_rounded_as_rocketmq_5_sets_it() -> None:
    for given_ms, used in ((1, 100), (150, 100), (250, 200), (999, 500), (5000, 1000)):
        assert MessageStoreConfig(timer_precision_ms=given_ms).timer_precision_ms == used


def test_recall_handle_is_rocketmq_5s_v1() -> None:
    handle = RecallHandle("Orders", "broker-a", "1800000001001", "0A0B0C")
    encoded = handle.encode()
    assert base64.urlsafe_b64decode(encoded) == b"v1 Orders broker-a 1800000001001 0A0B0C"
    assert RecallHandle.decode(encoded) == handle
    for bad in ("", "!!!", base64.urlsafe_b64encode(b"v2 a b c d").decode(), "djEgYSBi"):
        with pytest.raises(ValueError, match="recall handle is invalid"):
            RecallHandle.decode(bad)


def test_recall_handle_of_a_parked_message() -> None:
    parked = rewrite({"TIMER_DELIVER_MS": str(NOW + 5000), "UNIQ_KEY": "K1"})
    handle = recall_handle_of(parked, "broker-a")
    assert handle is not None
    out_ms = int(parked.properties["TIMER_OUT_MS"])
    assert RecallHandle.decode(handle) == RecallHandle("Orders", "broker-a", str(out_ms + 1), "K1")
    assert recall_handle_of(rewrite({"UNIQ_KEY": "K2"}), "broker-a") is None


@given(st.text(min_size=0, max_size=40))
def test_recall_handle_decode_never_crashes(text: str) -> None:
    try:
        RecallHandle.decode(text)
    except ValueError:
        pass


def test_message_accessors_are_rocketmq_5s() -> None:
    msg = MessageExt(topic="Orders", body=b"x")
    msg.deliver_time_ms = NOW + 5000
    msg.delay_time_ms = 250
    assert msg.properties == {"TIMER_DELIVER_MS": str(NOW + 5000), "TIMER_DELAY_MS": "250"}
    assert (msg.deliver_time_ms, msg.delay_time_ms) == (NOW + 5000, 250)
    assert msg.user_properties == {}  # system properties, as 5.x's STRING_HASH_SET has them
    msg.delay_time_ms = None
    assert "TIMER_DELAY_MS" not in msg.properties and msg.delay_time_ms is None
