"""`MetricSet`: the metric families of one scrape, with the process's labels on each.

A collection builds a fresh set at every scrape from the figures as they are then
(RocketMQ 5's observable gauges and counters are read the same way), so nothing is
kept between scrapes and a deleted topic or group simply stops appearing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from mqcore.metrics import names as n

__all__ = ["Family", "Histogram", "MetricSet", "cumulative_buckets"]

_FREED_AT_ONCE = 4096
"""Samples freed in one go (about a millisecond) once rendered: between two such runs
another thread (the event loop) can take the GIL."""


def _le(bound: float) -> str:
    """A bucket bound as Prometheus writes ``le``: ``1024.0``, ``3.0``."""
    return repr(float(bound))


def cumulative_buckets(bounds: Sequence[float], counts: Sequence[int]) -> list[tuple[str, float]]:
    """Prometheus buckets (``le`` and how many are at most that) from per-bucket counts:
    ``counts[i]`` values fell at most ``bounds[i]`` and above the bound before it, the
    last count (``len(bounds)``) above every bound."""
    out: list[tuple[str, float]] = []
    running = 0
    for bound, count in zip(bounds, counts, strict=False):
        running += count
        out.append((_le(bound), float(running)))
    out.append(("+Inf", float(running + sum(counts[len(bounds) :]))))
    return out


class Family:
    """One gauge or counter family: :meth:`add` a sample per label set."""

    __slots__ = ("_base", "metric")

    def __init__(self, metric: GaugeMetricFamily | CounterMetricFamily, base: list[str]) -> None:
        self.metric = metric
        self._base = base

    def add(self, value: float, *labels: str) -> None:
        """A sample with the process's labels, then ``labels`` in the family's order."""
        self.metric.add_metric([*self._base, *labels], value)


class Histogram:
    """One histogram family: :meth:`add` a sample per label set."""

    __slots__ = ("_base", "bounds", "metric")

    def __init__(
        self, metric: HistogramMetricFamily, base: list[str], bounds: Sequence[float]
    ) -> None:
        self.metric = metric
        self._base = base
        self.bounds = bounds

    def add(self, counts: Sequence[int], total: float, *labels: str) -> None:
        """A histogram of per-bucket ``counts`` (see :func:`cumulative_buckets`) whose
        values add up to ``total``."""
        self.metric.add_metric(
            [*self._base, *labels], cumulative_buckets(self.bounds, counts), total
        )


class MetricSet:
    """The families of one scrape; ``base`` labels (``cluster``, ``node_type``,
    ``node_id``, ``metricsLabel``'s) come first on every sample."""

    def __init__(self, base: Mapping[str, str]) -> None:
        self._base_names = list(base)
        self._base_values = list(base.values())
        self._families: dict[str, Metric] = {}

    def _named(self, labels: Sequence[str]) -> list[str]:
        return [*self._base_names, *labels]

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Family:
        metric = self._families.get(name)
        if metric is None:
            metric = self._families[name] = GaugeMetricFamily(
                name, documentation, labels=self._named(labels)
            )
        assert isinstance(metric, GaugeMetricFamily)
        return Family(metric, self._base_values)

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Family:
        """A counter; ``name`` ends with ``_total`` (the family's name is without it)."""
        metric = self._families.get(name)
        if metric is None:
            metric = self._families[name] = CounterMetricFamily(
                name, documentation, labels=self._named(labels)
            )
        assert isinstance(metric, CounterMetricFamily)
        return Family(metric, self._base_values)

    def histogram(
        self,
        name: str,
        documentation: str,
        bounds: Sequence[float],
        labels: Sequence[str] = (),
    ) -> Histogram:
        metric = self._families.get(name)
        if metric is None:
            metric = self._families[name] = HistogramMetricFamily(
                name, documentation, labels=self._named(labels)
            )
        assert isinstance(metric, HistogramMetricFamily)
        return Histogram(metric, self._base_values, bounds)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._families.values())

    def drain(self) -> Iterator[Metric]:
        """Every family, each let go of as the caller moves past it: a scrape's set of
        100,000s of samples is freed a family at a time while it is rendered, rather
        than all at once at the end, with the GIL held throughout."""
        for name in list(self._families):
            family = self._families.pop(name)
            yield family
            samples = family.samples  # rendered: free it a few thousand at a time
            while samples:
                del samples[-_FREED_AT_ONCE:]


# -- families more than one server or the exporter fills -------------------------------


def event_loop_families(
    metrics: MetricSet, labels: Sequence[str] = ()
) -> tuple[Family, Family, Family]:
    """How late the event loop runs: its last wake-up, the worst of the last minute (both
    gauges, milliseconds) and the stalls past the warning threshold (a counter)."""
    return (
        metrics.gauge(
            n.EVENT_LOOP_LAG_LATENCY, "How late the event loop ran its last wake-up (ms)", labels
        ),
        metrics.gauge(
            n.EVENT_LOOP_LAG_MAX_LATENCY,
            "The longest the event loop ran late in the last minute (ms)",
            labels,
        ),
        metrics.counter(
            n.EVENT_LOOP_STALLS_TOTAL, "Event loop stalls past the warning threshold", labels
        ),
    )


def schedule_families(metrics: MetricSet, labels: Sequence[str]) -> tuple[Family, Family, Family]:
    """The delay levels: messages waiting, how overdue the next one is, and deliveries."""
    return (
        metrics.gauge(
            n.SCHEDULE_LAG_MESSAGES, "Delayed messages of the level not delivered yet", labels
        ),
        metrics.gauge(
            n.SCHEDULE_LAG_LATENCY,
            "How long the level's next message is overdue (milliseconds)",
            labels,
        ),
        metrics.counter(
            n.SCHEDULE_DELIVERED_MESSAGES_TOTAL,
            "Delayed messages of the level delivered to their topic",
            labels,
        ),
    )
