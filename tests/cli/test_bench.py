"""`mq bench produce` against real name server and broker processes: the figures it prints
describe messages that really are in the topic."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from servers import Cluster, json_lines, running, wait_for

from mqcli.commands.bench import BenchStats, percentile, summarize


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running(tmp_path_factory.mktemp("bench")) as c:
        yield c


def stored(cluster: Cluster, topic: str) -> list[dict[str, object]]:
    done = cluster.mq(
        "consume", "-t", topic, "-g", f"read-{topic}", "--pull", "--from", "first",
        "--no-follow", "--json", check=True,
    )  # fmt: skip
    return json_lines(done.stdout)


def test_percentiles_are_nearest_rank() -> None:
    samples = [float(n) for n in range(1, 1001)]
    assert percentile(samples, 50) == 500 and percentile(samples, 99.9) == 999
    assert percentile(samples, 100) == 1000 and percentile([], 50) == 0
    summary = summarize(BenchStats(sent=2000, latencies_us=samples), 2.0, 1024 * 1024)
    assert summary["msgsPerSec"] == 1000 and summary["mibPerSec"] == 1000
    assert summary["latencyUs"] == {"p50": 500, "p90": 900, "p99": 990, "p99.9": 999, "max": 1000}


@pytest.mark.parametrize(
    ("args", "expected"),
    [(["--mode", "sync"], 300), (["--mode", "async", "--batch", "16"], 300),
     (["--mode", "oneway", "--keys"], 300)],
)  # fmt: skip
def test_sends_the_count_and_reports_it(cluster: Cluster, args: list[str], expected: int) -> None:
    topic = "Bench" + "".join(a.strip("-").title() for a in args if not a.isdigit())
    done = cluster.mq(
        "bench", "produce", "-t", topic, "--count", str(expected), "--size", "100",
        "--clients", "3", "--tags", "B", "--json", *args, check=True,
    )  # fmt: skip
    (summary,) = json_lines(done.stdout)
    assert summary["sent"] == expected and summary["failed"] == 0
    assert isinstance(summary["msgsPerSec"], float) and summary["msgsPerSec"] > 0
    latency = summary["latencyUs"]
    assert isinstance(latency, dict)
    if "oneway" in args:
        assert summary["requests"] == 0
    else:
        requests = expected // 16 + (expected % 16 > 0) if "16" in args else expected
        assert summary["requests"] == requests
        assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
    # The warm-up send plus the measured ones, every body of the asked size and tag.
    cluster_msgs: list[dict[str, object]] = []

    def all_there() -> bool:
        cluster_msgs[:] = stored(cluster, topic)
        return len(cluster_msgs) >= expected + 1

    wait_for(all_there, what=f"{expected + 1} messages in {topic}")
    assert len(cluster_msgs) == expected + 1
    assert {m["tags"] for m in cluster_msgs} == {"B"}
    assert all(len(str(m["body"])) == 100 for m in cluster_msgs)


def test_table_output_and_wrong_flags(cluster: Cluster) -> None:
    done = cluster.mq("bench", "produce", "-t", "BenchTable", "--count", "50", check=True)
    assert "msgs/s" in done.stdout and "p99.9 µs" in done.stdout
    bad = cluster.mq("bench", "produce", "--count", "5", "--duration", "1")
    assert bad.returncode == 1 and "not both" in bad.stderr
    bad = cluster.mq("bench", "produce", "--mode", "oneway", "--batch", "4")
    assert bad.returncode == 1 and "--batch does not go with --mode oneway" in bad.stderr


def test_duration_mode_stops_by_itself(cluster: Cluster) -> None:
    done = cluster.mq("bench", "produce", "-t", "BenchDur", "--duration", "1", "--json", check=True)
    (summary,) = json_lines(done.stdout)
    assert summary["sent"] > 0 and 0.9 < summary["seconds"] < 10  # type: ignore[operator]


def test_broker_down_is_one_line_and_exit_1(cluster: Cluster) -> None:
    done = cluster.mq("bench", "produce", "--count", "5", "-n", "127.0.0.1:1")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error:")
