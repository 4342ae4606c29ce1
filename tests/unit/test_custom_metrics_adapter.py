"""The custom metrics adapter's pure steps (minikube_py/metrics/custom.py): reading a
pod's Prometheus text, and what its last two readings serve."""

from __future__ import annotations

from minikube_py.metrics.custom import parse_exposition, quantity, resource_for, served_series

TEXT = """# HELP http_requests_total Requests served.
# TYPE http_requests_total counter
http_requests_total{code="200",path="/"} 100
http_requests_total{code="500",path="/"} 4
queue_depth 7.5
broken_gauge NaN
temperature +Inf
"""


def test_exposition_keeps_finite_samples_with_their_labels() -> None:
    reading = parse_exposition(TEXT, 1000.0)
    assert reading.samples == {
        ("http_requests_total", (("code", "200"), ("path", "/"))): 100.0,
        ("http_requests_total", (("code", "500"), ("path", "/"))): 4.0,
        ("queue_depth", ()): 7.5}


def test_a_counter_is_served_as_its_rate_once_there_are_two_readings() -> None:
    first = parse_exposition(TEXT, 1000.0)
    assert [s.metric for s in served_series(None, first)] == ["queue_depth"]
    later = parse_exposition(TEXT.replace(" 100\n", " 160\n"), 1030.0)
    served = {(s.metric, s.labels.get("code")): s for s in served_series(first, later)}
    assert served[("http_requests", "200")].value == 2.0
    assert served[("http_requests", "200")].window == 30
    assert served[("http_requests", "500")].value == 0.0
    assert served[("queue_depth", None)].value == 7.5


def test_a_reset_counter_serves_no_rate_until_the_next_reading() -> None:
    before = parse_exposition(TEXT, 1000.0)
    restarted = parse_exposition(TEXT.replace(" 100\n", " 3\n"), 1010.0)
    served = [(s.metric, s.labels.get("code")) for s in served_series(before, restarted)]
    assert ("http_requests", "200") not in served
    assert ("http_requests", "500") in served


def test_values_are_milli_quantities_and_resources_are_group_qualified() -> None:
    assert (quantity(2.0), quantity(0.25), quantity(1234.5)) == ("2", "250m", "1234500m")
    service, deployment = resource_for("services"), resource_for("deployments.apps")
    assert service is not None and (service.kind, service.group) == ("Service", "")
    assert deployment is not None and deployment.kind == "Deployment"
    assert resource_for("deployments.batch") is None
    assert resource_for("nodes") is None  # not namespaced
