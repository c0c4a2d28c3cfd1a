"""`mq query` and `mq message view|resend` against two real brokers.

The --max cap counts over all brokers (apache/rocketmq#7526): each broker alone holds
more than the cap.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.support.cluster import Cluster, json_lines

pytestmark = pytest.mark.cluster(brokers=2)


@pytest.fixture(scope="module", autouse=True)
def _seeded(cluster: Cluster) -> None:
    body = "".join(f"order-{i}\n" for i in range(40))
    cluster.mq("produce", "-t", "QOrders", "--key", "shared", "--tag", "T", "-q", input=body,
               check=True)  # fmt: skip
    cluster.mq("produce", "-t", "QOrders", "--key", "solo", "--prop", "p=1", "--body", "alone",
               "-q", check=True)  # fmt: skip


def test_by_key_caps_the_total_across_brokers(cluster: Cluster) -> None:
    done = cluster.mq("query", "-t", "QOrders", "--key", "shared", "--max", "30", "--json")
    msgs = json_lines(done.stdout)
    assert done.returncode == 0 and len(msgs) == 30
    assert {m["brokerName"] for m in msgs} == {"broker-a", "broker-b"}
    assert "there are more" in done.stderr
    everything = json_lines(cluster.mq("query", "-t", "QOrders", "--key", "shared", "-j").stdout)
    assert sorted(str(m["body"]) for m in everything) == sorted(f"order-{i}" for i in range(40))
    done = cluster.mq("query", "-t", "QOrders", "--key", "solo", check=True)
    assert "alone" in done.stdout and "p=1" in done.stdout and "1 message(s)" in done.stderr
    # A time window before anything was stored finds nothing.
    done = cluster.mq("query", "-t", "QOrders", "--key", "solo", "--to", "@2001-01-01")
    assert done.returncode == 0 and done.stdout == "" and "no message matched" in done.stderr


def test_time_range_scan(cluster: Cluster) -> None:
    done = cluster.mq("query", "-t", "QOrders", "--from", "@-10m", "--max", "100", "-j")
    msgs = json_lines(done.stdout)
    assert len(msgs) == 41 and "there are more" not in done.stderr
    times = [int(m["storeTimestamp"]) for m in msgs]  # type: ignore[call-overload]
    assert times == sorted(times)
    capped = json_lines(cluster.mq("query", "-t", "QOrders", "--from", "first", "--max", "5",
                                   "-j").stdout)  # fmt: skip
    assert [m["msgId"] for m in capped] == [m["msgId"] for m in msgs[:5]]
    # A window in the middle (Admin.query_by_time): both ends inclusive, over both brokers.
    low, high = times[10], times[30]
    window = json_lines(cluster.mq("query", "-t", "QOrders", "--from", f"@{low}", "--to",
                                   f"@{high}", "-j", check=True).stdout)  # fmt: skip
    expected = sorted(str(m["msgId"]) for m, t in zip(msgs, times, strict=True)
                      if low <= t <= high)  # fmt: skip
    assert sorted(str(m["msgId"]) for m in window) == expected
    before = cluster.mq("query", "-t", "QOrders", "--from", "@-10m", "--to", "@-9m")
    assert before.returncode == 0 and "no message matched" in before.stderr
    backwards = cluster.mq("query", "-t", "QOrders", "--from", "@+1h")
    assert backwards.returncode == 1 and "is before --from" in backwards.stderr


def test_piped_query_is_plain_lines_with_whole_times_ids_and_bodies(cluster: Cluster) -> None:
    """At 80 columns a pipe gets one line per message: the store time, the msg id and the
    body whole (the wide columns, no ellipsis, nothing wrapped); -o table still fits."""
    msgs = json_lines(cluster.mq("query", "-t", "QOrders", "--key", "shared", "-j").stdout)
    done = cluster.mq("query", "-t", "QOrders", "--key", "shared", columns=80, check=True)
    header, *lines = done.stdout.splitlines()
    assert header.split()[:3] == ["QUEUE", "OFFSET", "STORE-TIME"] and "MSG-ID" in header
    assert len(lines) == len(msgs) == 40 and "…" not in done.stdout
    for m in msgs:
        (line,) = [x for x in lines if str(m["msgId"]) in x]
        assert line.rstrip().endswith(str(m["body"]))
        assert re.search(r" \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} ", line)
    fitted = cluster.mq("query", "-t", "QOrders", "--key", "shared", "-o", "table", columns=80)
    assert all(len(x) <= 80 for x in fitted.stdout.splitlines())
    stamps = re.findall(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}", fitted.stdout)
    assert len(stamps) == 40  # the store time is never wrapped onto two lines


def test_by_id_and_unique_key_and_view(cluster: Cluster) -> None:
    (msg,) = json_lines(cluster.mq("query", "-t", "QOrders", "--key", "solo", "-j").stdout)
    by_id = cluster.mq("query", "--id", str(msg["msgId"]), check=True)
    assert "alone" in by_id.stdout and "p=1" in by_id.stdout and "Store Host" in by_id.stdout
    by_uniq = json_lines(cluster.mq("query", "-t", "QOrders", "-u", str(msg["uniqKey"]),
                                    "-j").stdout)  # fmt: skip
    assert [m["msgId"] for m in by_uniq] == [msg["msgId"]]
    # `--id` falls back to the unique key when the topic is given, like queryMsgById.
    assert "alone" in cluster.mq("query", "--id", str(msg["uniqKey"]), "-t", "QOrders").stdout
    view = cluster.mq("message", "view", str(msg["msgId"]), check=True)
    assert "Unique Key" in view.stdout and str(msg["uniqKey"]) in view.stdout
    # In a pipe at 40 columns: one whole line per field, nothing folded.
    narrow = cluster.mq("message", "view", str(msg["msgId"]), columns=40, check=True).stdout
    assert re.search(rf"^Msg ID +{msg['msgId']}$", narrow, re.M), narrow
    assert re.search(
        r"^Store Time +\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} \(\d+\)$", narrow, re.M
    )
    (viewed,) = json_lines(cluster.mq("message", "view", str(msg["msgId"]), "--json").stdout)
    assert viewed == msg


def test_by_id_names_the_broker_and_explains_a_missing_offset(cluster: Cluster) -> None:
    from mqcore.message.ids import create_offset_msg_id, decode_offset_msg_id

    (msg,) = json_lines(cluster.mq("query", "-t", "QOrders", "--key", "solo", "-j").stdout)
    by_id = cluster.mq("query", "--id", str(msg["msgId"]), check=True).stdout
    by_uniq = cluster.mq("query", "-t", "QOrders", "-u", str(msg["uniqKey"]), check=True).stdout
    queue = f"{msg['brokerName']}/{msg['queueId']}"
    ip, port, _ = decode_offset_msg_id(str(msg["msgId"]))
    assert queue in by_id and queue in by_uniq and f"{ip}:{port}/" not in by_id
    gone = create_offset_msg_id((ip, port), 3_000_000)
    for args in (["query", "--id", gone], ["message", "view", gone], ["message", "resend", gone]):
        done = cluster.mq(*args)
        assert done.returncode == 1, done.stderr
        assert done.stderr.splitlines() == [
            f"error: no message at commit log offset 3000000 on broker {msg['brokerName']}: "
            "was it deleted by retention, or is the id from another cluster?"
        ], done.stderr


def test_an_address_that_is_not_a_broker_is_one_error_line(cluster: Cluster) -> None:
    import socket
    import threading

    from mqcore.message.ids import create_offset_msg_id

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer() -> None:  # an HTTP server's reply: a "frame" far too large
        with server:
            conn, _ = server.accept()
            with conn:
                conn.recv(64)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    done = cluster.mq("message", "view", create_offset_msg_id(("127.0.0.1", port), 1))
    thread.join(10)
    assert done.returncode == 1
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("error:"), done.stderr


def test_resend_a_dead_letter_to_its_topic(cluster: Cluster) -> None:
    # A dead letter as the broker writes one: in %DLQ%group, original topic in RETRY_TOPIC.
    cluster.mq(
        "produce", "-t", "%DLQ%billing", "--prop", "RETRY_TOPIC=QBills", "--prop", "cost=7",
        "--tag", "bill", "--key", "b-1", "--body", "unpaid", "-q", check=True,
    )  # fmt: skip
    (dead,) = json_lines(cluster.mq("query", "-t", "%DLQ%billing", "--key", "b-1", "-j").stdout)
    done = cluster.mq("message", "resend", str(dead["uniqKey"]), "-t", "%DLQ%billing", "--json")
    assert done.returncode == 0, done.stderr
    (row,) = json_lines(done.stdout)
    assert row["sendStatus"] == "SEND_OK" and row["topic"] == "QBills"
    assert "from %DLQ%billing to QBills" in done.stderr
    (copy,) = json_lines(cluster.mq("query", "-t", "QBills", "--key", "b-1", "-j").stdout)
    assert copy["body"] == "unpaid" and copy["tags"] == "bill"
    assert copy["properties"]["cost"] == "7"  # type: ignore[index]
    assert "RETRY_TOPIC" not in copy["properties"]  # type: ignore[operator]
    assert copy["uniqKey"] != dead["uniqKey"]
    # No original topic to be found: say what to do.
    cluster.mq("produce", "-t", "%DLQ%orphan", "--key", "o-1", "--body", "?", "-q", check=True)
    (orphan,) = json_lines(cluster.mq("query", "-t", "%DLQ%orphan", "--key", "o-1", "-j").stdout)
    done = cluster.mq("message", "resend", str(orphan["msgId"]))
    assert done.returncode == 1 and "pass --to TOPIC" in done.stderr


def test_wrong_input(cluster: Cluster) -> None:
    started = time.monotonic()
    cases = [
        (["--key", "k"], "needs the topic"),
        (["-t", "QOrders"], "nothing to look for"),
        (["-t", "QOrders", "--key", "k", "--id", "X"], "give one of"),
        (["-t", "QOrders", "--from", "12"], "is an offset, but a time is needed"),
        (["-t", "QOrders", "--from", "@soon"], "bad time '@soon'"),
        (["--id", "00000000000000000000000000000000"], "not an offset msg id"),
        (["-t", "NoSuch", "--key", "k"], "no route for topic NoSuch"),
    ]
    for args, needle in cases:
        done = cluster.mq("query", *args)
        assert done.returncode == 1, (args, done.stderr)
        assert needle in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    bad = cluster.mq("message", "view", "ZZZ")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert time.monotonic() - started < 60
