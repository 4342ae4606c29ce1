"""The pieces of `mkctl describe`'s text that need no server: the tabwriter as describe
configures it, ages of events, tolerations, annotations, endpoints, probes and QoS."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from minikube_py.mkctl.describers.common import (
    event_interval,
    print_annotations_multiline,
    toleration_string,
)
from minikube_py.mkctl.describers.containers import describe_probe
from minikube_py.mkctl.describers.generic import smart_label_for
from minikube_py.mkctl.describers.node import find_node_roles
from minikube_py.mkctl.describers.pod import compute_qos
from minikube_py.mkctl.describers.service import format_endpoint_slices
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, PrefixWriter, rfc1123z

NOW = datetime(2026, 1, 2, 12, 0, 0, tzinfo=UTC)


def _at(**ago: float) -> str:
    return (NOW - timedelta(**ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_cells_align_with_two_spaces_past_the_widest_and_no_minimum_width() -> None:
    w = PrefixWriter()
    w.write(LEVEL_0, "Name:\tweb\n")
    w.write(LEVEL_0, "Namespace:\tdefault\n")
    w.write(LEVEL_0, "IPs:\n")
    w.write(LEVEL_1, "IP:\t10.0.0.1\n")
    assert w.tabbed() == ("Name:       web\nNamespace:  default\nIPs:\n  IP:  10.0.0.1\n")


def test_a_flush_starts_the_columns_afresh() -> None:
    w = PrefixWriter()
    w.write(LEVEL_0, "A-long-title:\tx\n")
    w.flush()
    w.write(LEVEL_0, "B:\ty\n")
    assert w.tabbed() == "A-long-title:  x\nB:  y\n"


def test_an_event_seen_several_times_shows_its_last_age_count_and_first_age() -> None:
    repeated = {"count": 4, "firstTimestamp": _at(hours=3), "lastTimestamp": _at(minutes=20)}
    assert event_interval(repeated, NOW) == "20m (x4 over 3h)"
    assert event_interval({"count": 1, "firstTimestamp": _at(seconds=10)}, NOW) == "10s"
    assert event_interval({}, NOW) == "<unknown>"
    series = {"eventTime": _at(minutes=5), "series": {"count": 2,
                                                      "lastObservedTime": _at(seconds=123)}}
    assert event_interval(series, NOW) == "2m3s (x2 over 5m)"


@pytest.mark.parametrize(("toleration", "text"), [
    ({"operator": "Exists"}, "op=Exists"),
    ({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
     "k:NoExecute op=Exists for 300s"),
    ({"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"},
     "dedicated=web:NoSchedule"),
])
def test_tolerations_read_as_kubectl_writes_them(toleration: dict, text: str) -> None:
    assert toleration_string(toleration) == text


def test_long_and_multiline_annotations_start_on_their_own_line() -> None:
    w = PrefixWriter()
    print_annotations_multiline(w, "Annotations", {
        "b": "x" * 150, "a": "one\ntwo\n", "c": "short",
        "kubectl.kubernetes.io/last-applied-configuration": "{}"})
    assert w.tabbed().splitlines() == [
        "Annotations:  a:", "                one", "                two",
        "              b:", "                " + "x" * 138 + "...", "              c: short"]


def test_endpoints_skip_the_unready_and_count_what_does_not_fit() -> None:
    slices = [{"ports": [{"name": "http", "port": 8080}],
               "endpoints": [{"addresses": [f"10.0.0.{i}"], "conditions": {"ready": i != 2}}
                             for i in range(1, 6)]}]
    assert format_endpoint_slices(slices, "http") == (
        "10.0.0.1:8080,10.0.0.3:8080,10.0.0.4:8080 + 1 more...")
    assert format_endpoint_slices(slices, "other") == ""
    assert format_endpoint_slices([], "http") == "<none>"
    headless = [{"endpoints": [{"addresses": ["fd00::1"]}]}]
    assert format_endpoint_slices(headless, "") == "fd00::1"


def test_probes_read_as_kubectl_writes_them() -> None:
    timing = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
              "failureThreshold": 3}
    assert describe_probe({"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                           **timing}) == ("http-get http://:8080/healthz delay=0s timeout=1s "
                                          "period=10s successThreshold=1 failureThreshold=3")
    assert describe_probe({"exec": {"command": ["cat", "/ready"]}, **timing}).startswith(
        "exec [cat /ready] delay=0s")


def test_qos_class_follows_the_requests_and_limits() -> None:
    def spec(**resources: dict) -> dict:
        return {"containers": [{"name": "c", "resources": resources}]}

    assert compute_qos(spec()) == "BestEffort"
    assert compute_qos(spec(requests={"cpu": "100m"})) == "Burstable"
    both = {"cpu": "1", "memory": "1Gi"}
    assert compute_qos(spec(limits=both, requests={"cpu": "1000m", "memory": "1Gi"})) == (
        "Guaranteed")
    assert compute_qos(spec(limits=both, requests={"cpu": "500m"})) == "Burstable"


def test_node_roles_come_from_role_labels() -> None:
    assert find_node_roles({"node-role.kubernetes.io/control-plane": "",
                            "node-role.kubernetes.io/": "x", "kubernetes.io/role": "edge",
                            "other": "y"}) == ["control-plane", "edge"]


def test_times_print_as_rfc1123z_in_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    try:
        assert rfc1123z("2026-01-02T03:04:05Z") == "Fri, 02 Jan 2026 03:04:05 +0000"
        assert rfc1123z(None) == "Mon, 01 Jan 0001 00:00:00 +0000"
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize(("field", "label"), [
    ("apiVersion", "API Version"), ("uid", "UID"), ("creationTimestamp", "Creation Timestamp"),
    ("URLPath", "URLPath"), ("podIPs", "Pod I Ps"), ("a_b", "a_b"), ("spec", "Spec")])
def test_generic_descriptions_label_fields_as_kubectl(field: str, label: str) -> None:
    assert smart_label_for(field) == label
