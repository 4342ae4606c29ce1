"""autoscaling/v1 <-> v2 HorizontalPodAutoscalers (pkg/apis/autoscaling/v1/conversion.go)
and kubectl's TARGETS column (formatHPAMetrics), for every metric source type."""

from __future__ import annotations

import json

from minikube_py.api import Obj
from minikube_py.apiserver.endpoints.tables.autoscaling_columns import format_hpa_metrics
from minikube_py.apiserver.registry.hpa_conversion import (
    CONDITIONS_ANNOTATION,
    METRIC_SPECS_ANNOTATION,
    METRIC_STATUSES_ANNOTATION,
    hpa_v1_to_v2,
    hpa_v2_to_v1,
)

SELECTOR = {"matchLabels": {"queue": "jobs"}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
METRICS: list[Obj] = [
    {"type": "Pods", "pods": {"metric": {"name": "rps", "selector": SELECTOR},
                              "target": {"type": "AverageValue", "averageValue": "1k"}}},
    {"type": "Object", "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1",
                                                      "kind": "Ingress", "name": "main"},
                                  "metric": {"name": "hits"},
                                  "target": {"type": "Value", "value": "2k"}}},
    {"type": "External", "external": {"metric": {"name": "queue", "selector": SELECTOR},
                                      "target": {"type": "AverageValue",
                                                 "averageValue": "30"}}},
    {"type": "ContainerResource", "containerResource": {
        "name": "memory", "container": "app",
        "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
    {"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 60}}},
]
STATUSES: list[Obj] = [
    {"type": "Pods", "pods": {"metric": {"name": "rps"}, "current": {"averageValue": "900"}}},
    {"type": "Object", "object": {"describedObject": METRICS[1]["object"]["describedObject"],
                                  "metric": {"name": "hits"}, "current": {"value": "3k"}}},
    {"type": "External", "external": {"metric": {"name": "queue"},
                                      "current": {"value": "0", "averageValue": "12"}}},
    {"type": "ContainerResource", "containerResource": {
        "name": "memory", "container": "app", "current": {"averageValue": "80Mi"}}},
    {"type": "Resource", "resource": {"name": "cpu", "current": {
        "averageUtilization": 75, "averageValue": "150m"}}},
]


def v2_hpa() -> Obj:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": DEPLOYMENT, "minReplicas": 2, "maxReplicas": 9,
                     "metrics": METRICS},
            "status": {"currentReplicas": 3, "desiredReplicas": 4, "currentMetrics": STATUSES,
                       "conditions": [{"type": "AbleToScale", "status": "True",
                                       "reason": "ReadyForNewScale", "message": "ok"}]}}


def test_v1_shows_the_cpu_target_and_carries_the_rest_in_annotations() -> None:
    v1 = hpa_v2_to_v1(v2_hpa())
    assert v1["spec"] == {"scaleTargetRef": DEPLOYMENT, "minReplicas": 2, "maxReplicas": 9,
                          "targetCPUUtilizationPercentage": 60}
    assert v1["status"] == {"currentReplicas": 3, "desiredReplicas": 4,
                            "currentCPUUtilizationPercentage": 75}
    annotations = v1["metadata"]["annotations"]
    assert json.loads(annotations[METRIC_SPECS_ANNOTATION]) == [
        {"type": "Pods", "pods": {"metricName": "rps", "targetAverageValue": "1k",
                                  "selector": SELECTOR}},
        {"type": "Object", "object": {"target": METRICS[1]["object"]["describedObject"],
                                      "metricName": "hits", "targetValue": "2k"}},
        {"type": "External", "external": {"metricName": "queue", "metricSelector": SELECTOR,
                                          "targetAverageValue": "30"}},
        {"type": "ContainerResource", "containerResource": {
            "name": "memory", "targetAverageValue": "100Mi", "container": "app"}}]
    assert len(json.loads(annotations[METRIC_STATUSES_ANNOTATION])) == 5
    assert json.loads(annotations[CONDITIONS_ANNOTATION])[0]["reason"] == "ReadyForNewScale"


def test_a_v1_round_trip_gives_back_the_v2_object() -> None:
    """v2 -> v1 -> v2 loses nothing (the CPU metric moves last, as upstream appends it)."""
    back = hpa_v1_to_v2(hpa_v2_to_v1(v2_hpa()))
    original = v2_hpa()
    assert back["spec"] == original["spec"]
    assert back["status"] == original["status"]
    assert "annotations" not in back["metadata"]


def test_a_bare_v1_hpa_gets_the_80_percent_cpu_target() -> None:
    v2 = hpa_v1_to_v2({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                       "metadata": {"name": "web"},
                       "spec": {"scaleTargetRef": DEPLOYMENT, "maxReplicas": 3}})
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert "status" not in v2


def test_targets_column_formats_each_metric_type_and_counts_the_rest() -> None:
    assert format_hpa_metrics(METRICS[:2], STATUSES[:2]) == "900/1k, 3k/2k"
    assert format_hpa_metrics(METRICS[2:4], STATUSES[2:4]) == (
        "12/30 (avg), memory: 80Mi/100Mi")
    assert format_hpa_metrics(METRICS, STATUSES) == "900/1k, 3k/2k + 3 more..."
    assert format_hpa_metrics(METRICS[4:], []) == "cpu: <unknown>/60%"
    assert format_hpa_metrics([], []) == "<none>"
