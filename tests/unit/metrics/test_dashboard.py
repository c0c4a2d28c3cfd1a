"""grafana/mq-dashboard.json: Grafana's dashboard JSON with a Prometheus datasource
variable, whose every query names metrics mq serves."""

from __future__ import annotations

from mqcore.metrics import names
from tests.support.dashboard import METRIC, load, queries

_HISTOGRAM_PARTS = ("_bucket", "_sum", "_count")


def exported() -> set[str]:
    """Every metric name mq serves (the constants of mqcore.metrics.names), with the
    series names of its histograms."""
    found = {
        value
        for value in vars(names).values()
        if isinstance(value, str) and value.startswith("rocketmq_")
    }
    return found | {
        f"{h}{part}" for h in (names.MESSAGE_SIZE, names.RPC_LATENCY) for part in _HISTOGRAM_PARTS
    }


def test_the_dashboard_is_grafana_json_with_a_prometheus_variable() -> None:
    doc = load()
    assert doc["uid"] and doc["title"] and isinstance(doc["schemaVersion"], int)
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [panel["id"] for panel in doc["panels"]]
    assert len(ids) == len(set(ids))
    for panel in doc["panels"]:
        assert {"h", "w", "x", "y"} <= panel["gridPos"].keys()
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}"
            assert target["refId"] and target["expr"]


def test_every_query_names_a_metric_we_export() -> None:
    served = exported()
    for title, expr in queries(load()):
        named = set(METRIC.findall(expr))
        assert named, f"{title}: {expr} names no metric"
        assert named <= served, f"{title}: {sorted(named - served)} are not exported"


def test_the_dashboard_shows_what_operators_watch() -> None:
    """Throughput in and out, lag per group, delay levels, HA and disk, at least."""
    used = {m for _, expr in queries(load()) for m in METRIC.findall(expr)}
    for name in (
        names.MESSAGES_IN_TOTAL,
        names.MESSAGES_OUT_TOTAL,
        names.CONSUMER_LAG_MESSAGES,
        names.SCHEDULE_LAG_MESSAGES,
        names.HA_SLAVE_BEHIND_BYTES,
        names.STORAGE_DISK_RATIO,
    ):
        assert name in used, name
