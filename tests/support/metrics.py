"""Reading Prometheus metrics in tests: scrape an endpoint (or a collector) into samples
and pick one by name and labels."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterable

from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


def samples_of(families: Iterable[Metric]) -> list[Sample]:
    return [sample for family in families for sample in family.samples]


def scrape_text(url: str, timeout: float = 10.0) -> str:
    """GET ``url`` (blocking: call it in a thread from a test's event loop)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return bytes(response.read()).decode()


def parse(text: str) -> list[Sample]:
    return samples_of(text_string_to_metric_families(text))


def find(samples: Iterable[Sample], name: str, **labels: str) -> list[Sample]:
    """The samples named ``name`` whose labels include ``labels``."""
    return [
        s
        for s in samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]


def value(samples: Iterable[Sample], name: str, **labels: str) -> float | None:
    """The value of the one sample ``name`` with ``labels`` (None when there is none;
    an AssertionError when several match)."""
    found = find(samples, name, **labels)
    assert len(found) <= 1, f"{name} {labels}: {len(found)} samples match: {found}"
    return found[0].value if found else None
