"""Metric naming helpers: client versions, ``metricsLabel``, histogram buckets."""

from __future__ import annotations

import pytest

from mqcore.errors import ConfigError
from mqcore.metrics.families import MetricSet, cumulative_buckets
from mqcore.metrics.names import parse_metrics_label, version_desc
from mqcore.protocol import MQ_VERSION


@pytest.mark.parametrize(
    ("code", "desc"),
    [
        (MQ_VERSION, "v4_9_8"),
        (212, "v4_0_0_snapshot"),
        (213, "v4_0_0"),
        (413, "v5_0_0"),
        (455, "v5_2_1"),
        (10_000, "v5_9_9"),  # past the table: its last entry, as MQVersion
        (100, "100"),
    ],
)
def test_version_desc_is_mqversion_in_lower_case(code: int, desc: str) -> None:
    assert version_desc(code) == desc


def test_metrics_label_pairs() -> None:
    assert parse_metrics_label("") == {}
    assert parse_metrics_label("env:prod, dc:eu-1,") == {"env": "prod", "dc": "eu-1"}
    with pytest.raises(ConfigError, match="'env' is not key:value"):
        parse_metrics_label("env,dc:eu")


def test_buckets_are_cumulative_with_inf() -> None:
    assert cumulative_buckets((1.0, 10.0), [2, 0, 3]) == [
        ("1.0", 2.0),
        ("10.0", 2.0),
        ("+Inf", 5.0),
    ]


def test_every_sample_carries_the_process_labels_first() -> None:
    metrics = MetricSet({"cluster": "c", "node_id": "b"})
    metrics.gauge("g", "a gauge", ("topic",)).add(3, "T")
    metrics.counter("x_total", "a counter").add(4)
    metrics.histogram("h", "a histogram", (1.0,), ("k",)).add([1, 1], 5.0, "v")
    by_name = {f.name: f for f in metrics}
    assert by_name["g"].samples[0].labels == {"cluster": "c", "node_id": "b", "topic": "T"}
    assert by_name["x"].samples[0].name == "x_total"
    assert by_name["x"].samples[0].value == 4
    assert [(s.name, s.value) for s in by_name["h"].samples] == [
        ("h_bucket", 1.0),
        ("h_bucket", 2.0),
        ("h_count", 2.0),
        ("h_sum", 5.0),
    ]
