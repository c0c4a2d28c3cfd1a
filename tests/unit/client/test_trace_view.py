"""Reading a trace back: records of one msg id, grouped, old SubAfters completed."""

from __future__ import annotations

from mqcore.client.trace_view import build_trace
from mqcore.message import MessageExt

C, F = "\x01", "\x02"


def rec(*fields: str) -> str:
    return C.join(fields) + F


def carrier(body: str, host: str = "10.0.0.1") -> MessageExt:
    return MessageExt(topic="RMQ_SYS_TRACE_TOPIC", body=body.encode(), born_host=(host, 1))


def test_timeline_of_one_message() -> None:
    producer_side = carrier(
        rec("Pub", "100", "R", "PG", "T", "M", "t", "k", "b:1", "3", "2", "1", "O", "true")
        + rec("EndTransaction", "105", "R", "PG", "T", "M", "t", "k", "b:1", "2", "M",
              "COMMIT_MESSAGE", "true")
        + rec("Pub", "100", "R", "PG", "T", "OTHER", "t", "k", "b:1", "3", "2", "0", "O", "true"),
        host="10.0.0.1",
    )  # fmt: skip
    consumer_side = carrier(
        # an old client's SubAfter: no time, no group (taken from its SubBefore)
        rec("SubAfter", "Q1", "M", "9", "false", "k")
        + rec("SubBefore", "200", "R", "CG", "Q1", "M", "0", "k")
        + rec("SubBefore", "300", "R", "CG", "Q2", "M", "1", "k")
        + rec("SubAfter", "Q2", "M", "4", "true", "k", "0", "304", "CG")
        + rec("SubBefore", "250", "R", "CG2", "Q3", "M", "0", "k")
        + "garbage"
        + F,
        host="10.0.0.2",
    )
    trace = build_trace("M", "RMQ_SYS_TRACE_TOPIC", [consumer_side, producer_side])
    assert trace.unreadable == 1
    assert [(e.type, e.client_host, e.outcome) for e in trace.pubs] == [
        ("Pub", "10.0.0.1", "success"),
        ("EndTransaction", "10.0.0.1", "COMMIT_MESSAGE (check)"),
    ]
    assert sorted(trace.consumers) == ["CG", "CG2"]
    cg = [(e.type, e.timestamp, e.outcome, e.retry_times) for e in trace.consumers["CG"]]
    assert cg == [
        ("SubBefore", 200, "-", 0),
        ("SubAfter", 200, "failed", 0),
        ("SubBefore", 300, "-", 1),
        ("SubAfter", 304, "success", 1),
    ]
    assert [e.type for e in trace.consumers["CG2"]] == ["SubBefore"]
    doc = trace.to_json()
    assert doc["msgId"] == "M" and doc["consumers"]["CG"][1]["status"] == "failed"


def test_no_records_is_an_empty_trace() -> None:
    trace = build_trace("M", "T", [carrier("")])
    assert trace.empty and trace.to_json()["pub"] == []
