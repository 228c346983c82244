"""Reading a running engine's Prometheus `/metrics` (benchmarks, the container cluster's tools): one scrape, parsed by
prometheus_client's own text parser, with the few questions the tools ask of it (a family's total, its samples by
label, a histogram's quantile)."""

from __future__ import annotations

import math
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


class Metrics:
    """The samples of one scrape (or exposition text)."""

    def __init__(self, text: str):
        self.samples = [Sample(s.name, dict(s.labels), float(s.value))
                        for family in text_string_to_metric_families(text) for s in family.samples]

    @classmethod
    def scrape(cls, url: str, timeout: float = 10.0) -> Metrics:
        """GET `url` (an engine's http://host:port/metrics) and parse it; OSError when it does not answer."""
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback / the project's containers
            return cls(r.read().decode())

    def select(self, name: str, **labels: str) -> list[Sample]:
        """The samples named exactly `name` whose labels include `labels`."""
        return [s for s in self.samples
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]

    def total(self, name: str, **labels: str) -> float:
        """Sum of the samples named `name` (a counter's `_total`, a gauge) over every other label."""
        return sum(s.value for s in self.select(name, **labels))

    def by_label(self, name: str, label: str, **labels: str) -> dict[str, float]:
        """{value of `label`: sum of the samples named `name` with it}."""
        out: dict[str, float] = {}
        for s in self.select(name, **labels):
            key = s.labels.get(label, "")
            out[key] = out.get(key, 0.0) + s.value
        return out

    def buckets(self, histogram: str, **labels: str) -> list[tuple[float, float]]:
        """Cumulative (upper bound, count) of a histogram's buckets, summed over the series that match `labels`."""
        by_le = self.by_label(f"{histogram}_bucket", "le", **labels)
        return sorted((math.inf if le == "+Inf" else float(le), v) for le, v in by_le.items())

    def quantile(self, histogram: str, q: float, **labels: str) -> float:
        """Prometheus' histogram_quantile over `buckets`; nan when the histogram has no observations."""
        return histogram_quantile(self.buckets(histogram, **labels), q)


def histogram_quantile(buckets: list[tuple[float, float]], q: float) -> float:
    """Prometheus' histogram_quantile: linear interpolation inside the bucket that holds the q-quantile (the
    highest finite bound when it falls in +Inf)."""
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound
