"""`mq consume`: bad tag expressions fail in one line; --fail-rate 1.0 gets redeliveries."""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster, json_lines

# every retry level 1 s, so a redelivery comes back within the test
pytestmark = pytest.mark.cluster(messageDelayLevel=" ".join(["1s"] * 18))


@pytest.mark.parametrize("mode", ["--push", "--pull"])
@pytest.mark.parametrize("tag", ["||", " || ", "||||"])
def test_a_tag_expression_without_tags_is_one_line(cluster: Cluster, mode: str, tag: str) -> None:
    done = cluster.mq("consume", "-t", "CTags", "-g", "gt", mode, "--tag", tag, timeout=30)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error: invalid tag expression"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_fail_rate_one_redelivers_with_reconsume_times(cluster: Cluster) -> None:
    cluster.mq("produce", "-t", "CFail", "-q", input="only\n", check=True)
    done = cluster.mq(
        "consume", "-t", "CFail", "-g", "gf", "--json", "--from", "first",
        "--fail-rate", "1.0", "--count", "2", timeout=60, check=True,
    )  # fmt: skip
    first, again = json_lines(done.stdout)
    assert first["body"] == again["body"] == "only"
    assert first["consumeResult"] == again["consumeResult"] == "RECONSUME_LATER"
    assert first["reconsumeTimes"] == 0
    assert isinstance(again["reconsumeTimes"], int) and again["reconsumeTimes"] > 0
