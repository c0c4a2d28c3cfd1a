"""`mq produce` end to end against real name server and broker processes.

Every send mode (sync, --async, --oneway, --batch, --order-key, stdin lines, --file) is
checked by reading the topic back with `mq consume --pull --no-follow`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, json_lines


def read_all(cluster: Cluster, topic: str, group: str) -> list[dict[str, object]]:
    done = cluster.mq(
        "consume", "-t", topic, "-g", group, "--pull", "--from", "first", "--no-follow", "--json",
        check=True,
    )  # fmt: skip
    return json_lines(done.stdout)


def test_rows_and_json_fields(cluster: Cluster) -> None:
    done = cluster.mq(
        "produce", "-t", "PTags", "--tag", "TagA", "--key", "k1", "--key", "k2",
        "--prop", "color=red", "--body", "hello {{Count}}", "--count", "3",
        check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["STATUS", "MSG-ID", "BROKER", "QUEUE", "OFFSET"]
    assert len(lines) == 4 and all(line.startswith("SEND_OK") for line in lines[1:])
    assert "3 sent to PTags" in done.stderr
    done = cluster.mq("produce", "-t", "PTags", "--body", "one", "--json", check=True)
    (row,) = json_lines(done.stdout)
    assert row["sendStatus"] == "SEND_OK" and row["topic"] == "PTags"
    assert row["brokerName"] == "broker-a" and isinstance(row["queueOffset"], int)
    assert len(str(row["msgId"])) == 32 and len(str(row["offsetMsgId"])) == 32
    msgs = read_all(cluster, "PTags", "g-read")
    assert sorted(str(m["body"]) for m in msgs) == ["hello 1", "hello 2", "hello 3", "one"]
    first = next(m for m in msgs if m["body"] == "hello 1")
    assert first["tags"] == "TagA" and first["keys"] == "k1 k2"
    assert first["properties"]["color"] == "red"  # type: ignore[index]


def test_stdin_lines_batch_async_oneway_and_file(cluster: Cluster, tmp_path: Path) -> None:
    lines = "".join(f"line-{i}\n" for i in range(10)) + "\n"
    done = cluster.mq("produce", "-t", "PModes", "-q", input=lines, check=True)
    assert done.stdout == "" and "10 sent" in done.stderr and "1 empty line" in done.stderr
    batch = "".join(f"batch-{i}\n" for i in range(25))
    done = cluster.mq("produce", "-t", "PModes", "--batch", "10", "--json", input=batch, check=True)
    rows = json_lines(done.stdout)
    assert len(rows) == 25 and {r["sendStatus"] for r in rows} == {"SEND_OK"}
    # Messages of one batch request share a queue and have consecutive offsets.
    by_queue: dict[tuple[object, object], list[int]] = defaultdict(list)
    for r in rows[:10]:
        by_queue[r["brokerName"], r["queueId"]].append(int(r["queueOffset"]))  # type: ignore[call-overload]
    ((offsets),) = by_queue.values()
    assert offsets == list(range(offsets[0], offsets[0] + 10))
    done = cluster.mq("produce", "-t", "PModes", "--body", "a{{Count}}", "-c", "20", "--async")
    assert done.returncode == 0 and done.stdout.count("SEND_OK") == 20
    done = cluster.mq("produce", "-t", "PModes", "--body", "o{{Count}}", "-c", "5", "--oneway")
    assert done.returncode == 0 and done.stdout.count("ONEWAY") == 5
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00\x01binary\xff")
    cluster.mq("produce", "-t", "PModes", "--file", str(blob), "-q", check=True)
    msgs = read_all(cluster, "PModes", "g-modes")
    bodies = sorted(str(m["body"]) for m in msgs)
    expected = sorted(
        [f"line-{i}" for i in range(10)]
        + [f"batch-{i}" for i in range(25)]
        + [f"a{i}" for i in range(1, 21)]
        + [f"o{i}" for i in range(1, 6)]
        + ["AAFiaW5hcnn/"]
    )
    assert bodies == expected
    assert [m["bodyEncoding"] for m in msgs if "bodyEncoding" in m] == ["base64"]


def test_order_key_keeps_per_key_order(cluster: Cluster) -> None:
    for key in ("alice", "bob", "carol"):
        body = "".join(f"{key}-{i}\n" for i in range(8))
        cluster.mq("produce", "-t", "POrder", "--order-key", key, "-q", input=body, check=True)
    msgs = read_all(cluster, "POrder", "g-order")
    assert len(msgs) == 24
    for key in ("alice", "bob", "carol"):
        mine = [m for m in msgs if str(m["body"]).startswith(key)]
        assert len({(m["brokerName"], m["queueId"]) for m in mine}) == 1
        mine.sort(key=lambda m: int(m["queueOffset"]))  # type: ignore[call-overload]
        assert [m["body"] for m in mine] == [f"{key}-{i}" for i in range(8)]


def test_wrong_input(cluster: Cluster) -> None:
    cases = [
        (["--body", "x", "--async", "--oneway"], "exclude each other"),
        (["--body", "x", "--batch", "2", "--delay", "3"], "cannot be batched"),
        (["--body", "x", "--order-key", "k", "--async"], "drop --async"),
        (["--body", "x", "--prop", "novalue"], "bad --prop"),
        (["--body", "{{Nope}}"], "unknown template {{Nope}}"),
        (["--body", "x", "-n", "127.0.0.1:1"], "name server 127.0.0.1:1 unreachable"),
        (["--file", "/nonexistent/f"], "cannot read"),
    ]
    for args, needle in cases:
        done = cluster.mq("produce", "-t", "PBad", *args)
        assert done.returncode != 0, args
        assert needle in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    bad_topic = cluster.mq("produce", "-t", "bad topic!", "--body", "x")
    assert bad_topic.returncode == 1 and "illegal characters" in bad_topic.stderr
    unknown_flag = cluster.mq("produce", "-t", "PBad", "--bogus")
    assert unknown_flag.returncode == 2 and "Traceback" not in unknown_flag.stderr


def test_interactive_prompt(cluster: Cluster) -> None:
    """Type messages and :commands into `mq produce -i` through a pseudo-terminal."""
    import sys

    import pexpect

    env = {**cluster.env, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm"}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "mqcli.main", "produce", "-t", "PInter", "-i"],
        env=env,
        encoding="utf-8",
        timeout=20,
        dimensions=(40, 160),
    )
    try:
        child.expect("PInter>")
        child.sendline("plain one")
        child.expect("SEND_OK")
        child.sendline(":tag X")
        child.expect(r"tag=X\]>")
        child.sendline("tagged two")
        child.expect("SEND_OK")
        child.sendline(":prop color=blue")
        child.expect("properties:")
        child.sendline("::colon three")
        child.expect("SEND_OK")
        child.sendline(":nope")
        child.expect("unknown command :nope")
        child.sendline(":topic PKnown")
        child.expect("topic: PKnown")
        child.sendline("elsewhere")
        child.expect("SEND_OK")
        child.sendline(":quit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    msgs = read_all(cluster, "PInter", "g-inter")
    got = sorted((m["body"], m["tags"], m["properties"].get("color")) for m in msgs)  # type: ignore[attr-defined]
    assert got == [
        (":colon three", "X", "blue"),
        ("plain one", None, None),
        ("tagged two", "X", None),
    ]
    (moved,) = read_all(cluster, "PKnown", "g-inter")
    assert moved["body"] == "elsewhere" and moved["tags"] == "X"
    history = (cluster.base / "config" / "produce_history").read_text()
    assert "+tagged two" in history and "+:tag X" in history


def test_unreachable_name_server_with_stdin_is_one_clean_error(tmp_path: Path) -> None:
    """The stdin reader must not leave a never-awaited coroutine behind when the loop
    closes on the error (it used to print RuntimeWarning lines first)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", "produce", "-t", "T", "-n", "127.0.0.1:1", "-q"],
        input="".join(f"{i}\n" for i in range(1, 6)),
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200"},
    )
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert [line.split(":")[0] for line in lines] == ["error"], done.stderr
    assert "name server 127.0.0.1:1 unreachable" in lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["produce", "-t", "T", "-g", "bad.group", "--body", "x"],
        ["consume", "-t", "T", "-g", "bad group"],
        ["group", "lag", "bad/group"],
        ["message", "resend", "X", "-g", "bad!"],
        ["consume", "-t", "T", "-g", "g" * 256],
    ],
)
def test_group_names_are_checked_before_connecting(args: list[str], tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "mqcli.main", *args, "-n", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200"},
    )
    assert done.returncode == 1, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("error: bad ") and "group name" in first, done.stderr
    assert "unreachable" not in done.stderr


def test_delay_help_and_negative_delay(tmp_path: Path) -> None:
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mqcli.main", "produce", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COLUMNS": "200"},
        )

    assert "do not have is refused" in " ".join(run("--help").stdout.split())
    negative = run("-t", "T", "--delay", "-1", "--body", "x", "-n", "127.0.0.1:1")
    assert negative.returncode == 2 and "--delay" in negative.stderr


def test_one_message_loads_only_what_a_send_needs(cluster: Cluster) -> None:
    """What keeps `mq produce -t T --body x` quick (bench/startup.py has the CPU figure):
    no rich console (the rows are plain text), no transaction, admin, consumer or trace
    module, and only the header and body modules a send and a route lookup use."""
    cluster.mq("produce", "-t", "PLean", "--body", "first", check=True)  # the topic exists
    code = (
        "import sys\n"
        f"sys.argv = ['mq', 'produce', '-n', {cluster.namesrv!r}, '-t', 'PLean', '-b', 'x']\n"
        "from mqcli.main import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "import json\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=cluster.env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith("SEND_OK")
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert "mqcore.client.producer" in loaded
    unwanted = {
        "rich.console",
        "mqcore.client.transaction",
        "mqcore.client.admin",
        "mqcore.client.push_consumer",
        "mqcore.client.trace_dispatcher",
        "mqcore.protocol.headers.admin",
        "mqcore.protocol.bodies.stats",
        "mqcore.acl.config",
        "yaml",
    }
    assert loaded & unwanted == set()
