"""`mq produce --deliver-at/--delay-for` (RocketMQ 5 timer messages) and the timer part
of `mq broker status`, against real name server and broker processes; the flag grammar
without them."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mqcli.commands.produce_timer import timer_properties
from mqcli.timespec import TimespecError
from tests.support import until_sync
from tests.support.cluster import Cluster, json_lines

pytestmark = pytest.mark.cluster(timerPrecisionMs="100", recallMessageEnable="true")

NOW = 1_800_000_000_000


def test_deliver_at_grammar() -> None:
    assert timer_properties("+90s", None, NOW) == {"TIMER_DELIVER_MS": str(NOW + 90_000)}
    assert timer_properties("1800000123456", None, NOW) == {"TIMER_DELIVER_MS": "1800000123456"}
    local = datetime(2027, 1, 2, 10, 0).timestamp() * 1000
    assert timer_properties("2027-01-02T10:00", None, NOW)["TIMER_DELIVER_MS"] == str(int(local))
    at = int(timer_properties("10:30", None, NOW)["TIMER_DELIVER_MS"])
    when = datetime.fromtimestamp(at / 1000)
    assert (when.hour, when.minute, when.second) == (10, 30, 0)
    assert NOW < at <= NOW + 86_400_000  # today, or tomorrow when already past
    for bad in ("soon", "25:00", "+1x", ""):
        with pytest.raises(TimespecError):
            timer_properties(bad, None, NOW)


def test_delay_for_grammar() -> None:
    assert timer_properties(None, "90s", NOW) == {"TIMER_DELAY_MS": "90000"}
    assert timer_properties(None, "1h30m", NOW) == {"TIMER_DELAY_MS": "5400000"}
    assert timer_properties(None, "45", NOW) == {"TIMER_DELAY_MS": "45000"}
    assert timer_properties(None, None, NOW) == {}
    with pytest.raises(TimespecError):
        timer_properties("+1s", "1s", NOW)
    with pytest.raises(TimespecError):
        timer_properties(None, "soon", NOW)


@given(st.integers(0, 10**6), st.sampled_from(["ms", "s", "m", "h", "d"]))
def test_delay_for_units(n: int, unit: str) -> None:
    ms = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}[unit]
    assert timer_properties(None, f"{n}{unit}", NOW) == {"TIMER_DELAY_MS": str(n * ms)}


def test_flags_that_do_not_go_together(cluster: Cluster) -> None:
    for extra, words in (
        (["--delay", "2"], "no delay level"),
        (["--batch", "2"], "not batched"),
        (["--delay-for", "1s"], "not both"),
        (["--transaction", "commit"], "--deliver-at"),
    ):
        done = cluster.mq("produce", "-t", "T", "--body", "x", "--deliver-at", "+1s", *extra)
        assert done.returncode != 0 and words in done.stderr, (extra, done.stderr)


def timers(cluster: Cluster) -> dict[str, Any]:
    doc = orjson.loads(cluster.mq("broker", "status", "--json", check=True).stdout)
    out: dict[str, Any] = doc["timers"]
    return out


def test_timer_messages_wait_then_arrive_and_status_shows_the_wheel(cluster: Cluster) -> None:
    sent = int(time.time() * 1000)
    cluster.mq(
        "produce", "-t", "Timed", "--body", "later {{Count}}", "--count", "2",
        "--delay-for", "1500ms", "-q", check=True,
    )  # fmt: skip
    cluster.mq("produce", "-t", "Timed", "--body", "at", "--deliver-at", "+2s", "-q", check=True)
    cluster.mq(
        "produce", "-t", "TimedFar", "--body", "far", "--deliver-at", "+1h", "-q", check=True
    )
    done = cluster.mq(
        "produce", "-t", "Timed", "--body", "recalled", "--deliver-at", "+2s", "--json",
        check=True,
    )  # fmt: skip
    (row,) = json_lines(done.stdout)
    handle = str(row["recallHandle"])
    done = cluster.mq("message", "recall", handle, "-t", "Timed", "--json", check=True)
    assert orjson.loads(done.stdout) == {"topic": "Timed", "msgId": row["msgId"], "recalled": True}
    wrong = cluster.mq("message", "recall", handle, "-t", "TimedFar")
    assert wrong.returncode != 0 and "topic not match" in wrong.stderr
    bad = cluster.mq("message", "recall", "nothandle", "-t", "Timed")
    assert bad.returncode != 0 and "not a recall handle" in bad.stderr
    got: list[dict[str, Any]] = []

    def arrived() -> bool:
        done = cluster.mq(
            "consume", "-t", "Timed", "-g", "g-timed", "--pull", "--from", "first",
            "--no-follow", "--json", check=True,
        )  # fmt: skip
        got.extend(json_lines(done.stdout))  # each run reads on from the group's offsets
        return len(got) >= 3

    until_sync(arrived, 20, lambda: f"timer messages so far: {got}", interval=0.2)
    assert sorted(m["body"] for m in got) == ["at", "later 1", "later 2"]  # not "recalled"
    for m in got:
        assert m["storeTimestamp"] >= sent + 1500  # type: ignore[operator]
    wheel = timers(cluster)
    assert wheel["waiting"] == 1 and wheel["precisionMs"] == 100  # the one an hour away
    assert wheel["deleted"] == 1
    assert wheel["notEnqueued"] == 0
    text = cluster.mq("broker", "status", check=True).stdout
    assert "Timer messages" in text and "waiting in the wheel" in text
    store = cluster.base / "broker-a" / "store"  # offline, on the live store
    doc = orjson.loads(cluster.mq("store", "inspect", str(store), "--json", check=True).stdout)
    assert doc["timer"]["waiting"] >= 1 and doc["timer"]["precision_ms"] == 100
    text = cluster.mq("store", "inspect", str(store), check=True).stdout
    assert "Timer wheel" in text
