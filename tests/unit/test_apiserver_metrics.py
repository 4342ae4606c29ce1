"""The API server's plain counters and histograms expose what prometheus_client's would."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from minikube_py.apiserver.endpoints.metrics import PlainCounter, PlainHistogram

BOUNDS = (0.005, 0.1, 1.0)
VALUES = (0.001, 0.005, 0.0051, 0.1, 0.5, 1.0, 7.0, 60.0)


def samples(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry).decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples if not sample.name.endswith("_created")}


def test_histogram_buckets_count_values_at_or_below_each_bound_as_prometheus_client_does(
) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    plain = PlainHistogram("latency_seconds", "Latency.", ["verb"], BOUNDS, ours)
    reference = Histogram("latency_seconds", "Latency.", ["verb"], buckets=BOUNDS,
                          registry=theirs)
    for value in VALUES:
        plain.observe(("GET",), value)
        reference.labels("GET").observe(value)
    plain.observe(("LIST",), 0.2)
    reference.labels("LIST").observe(0.2)

    assert samples(ours) == samples(theirs)
    assert samples(ours)[("latency_seconds_bucket", (("le", "0.005"), ("verb", "GET")))] == 2


def test_counter_adds_per_label_set_and_exposes_the_total_suffix() -> None:
    registry = CollectorRegistry()
    counter = PlainCounter("requests_total", "Requests.", ["code"], registry)
    for code in ("200", "200", "404"):
        counter.inc((code,))

    assert samples(registry) == {("requests_total", (("code", "200"),)): 2.0,
                                 ("requests_total", (("code", "404"),)): 1.0}
