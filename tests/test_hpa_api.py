"""autoscaling/v2 and autoscaling/v1 HorizontalPodAutoscalers through the real kubectl and
the official Python client: upstream's defaults, validation, the v1 <-> v2 conversion (v2
data kept in v1 annotations), the status subresource and kubectl's columns."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client import ApiException

Kubectl = Callable[..., subprocess.CompletedProcess[str]]

HPA_V2 = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
  - type: Pods
    pods:
      metric: {name: requests-per-second}
      target: {type: AverageValue, averageValue: 1k}
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 60
"""


def get_json(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def get_raw(kubectl: Kubectl, version: str, namespace: str, name: str) -> dict[str, Any]:
    """An HPA as `version` of autoscaling serves it."""
    path = f"/apis/autoscaling/{version}/namespaces/{namespace}/horizontalpodautoscalers/{name}"
    return json.loads(kubectl("get", "--raw", path).stdout)


def table(text: str) -> list[list[str]]:
    """`kubectl get` output as rows of cells, the AGE cell dropped."""
    return [re.split(r"\s{2,}", line.strip())[:-1] for line in text.strip().splitlines()]


@pytest.fixture
def autoscaling_v2(kubeconfig: Path) -> Iterator[client.AutoscalingV2Api]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.AutoscalingV2Api(api)
    api.close()


@pytest.fixture
def autoscaling_v1(kubeconfig: Path) -> Iterator[client.AutoscalingV1Api]:
    api = config.new_client_from_config(config_file=str(kubeconfig))
    yield client.AutoscalingV1Api(api)
    api.close()


def test_api_resources_lists_both_versions_with_v2_preferred(kubectl: Kubectl) -> None:
    out = kubectl("api-resources", "--api-group=autoscaling", "--no-headers").stdout
    assert out.split() == ["horizontalpodautoscalers", "hpa", "autoscaling/v2", "true",
                           "HorizontalPodAutoscaler"]
    versions = kubectl("api-versions").stdout.split()
    assert "autoscaling/v1" in versions and "autoscaling/v2" in versions
    priorities = {name: get_json(kubectl, "apiservice", name)["spec"]["versionPriority"]
                  for name in ("v1.autoscaling", "v2.autoscaling")}
    assert priorities == {"v1.autoscaling": 15, "v2.autoscaling": 30}


def test_create_defaults_min_replicas_and_behavior_rules(kubectl: Kubectl,
                                                          namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=HPA_V2)
    hpa = get_raw(kubectl, "v2", namespace, "web")

    assert hpa["spec"]["minReplicas"] == 1
    assert hpa["spec"]["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]}}
    assert hpa["status"] == {"desiredReplicas": 0}
    assert hpa["metadata"]["generation"] == 1


def test_an_hpa_without_metrics_gets_an_80_percent_cpu_target(kubectl: Kubectl,
                                                               namespace: str) -> None:
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bare"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"}, "maxReplicas": 3}}))
    hpa = get_json(kubectl, "hpa", "bare", "-n", namespace)
    assert hpa["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert "behavior" not in hpa["spec"]


def test_v1_reads_the_cpu_target_and_keeps_the_rest_in_annotations(
        kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=HPA_V2)
    v1 = get_raw(kubectl, "v1", namespace, "web")

    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                             "name": "web"},
                          "minReplicas": 1, "maxReplicas": 5,
                          "targetCPUUtilizationPercentage": 50}
    assert v1["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    other = json.loads(v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"])
    assert other == [{"type": "Pods", "pods": {"metricName": "requests-per-second",
                                               "targetAverageValue": "1k"}}]


def test_a_v1_write_keeps_the_v2_metrics_it_carried_in_annotations(
        kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=HPA_V2)
    v1 = get_raw(kubectl, "v1", namespace, "web")
    v1["spec"]["maxReplicas"] = 7
    v1["spec"]["targetCPUUtilizationPercentage"] = 60
    kubectl("replace", "-n", namespace, "-f", "-", input=json.dumps(v1))

    v2 = get_raw(kubectl, "v2", namespace, "web")
    assert v2["spec"]["maxReplicas"] == 7
    assert v2["spec"]["metrics"] == [
        {"type": "Pods", "pods": {"metric": {"name": "requests-per-second"},
                                  "target": {"type": "AverageValue", "averageValue": "1k"}}},
        {"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 60}}}]
    assert "autoscaling.alpha.kubernetes.io/metrics" not in (
        v2["metadata"].get("annotations") or {})
    assert v2["metadata"]["generation"] == 2


def test_the_status_subresource_writes_status_only(
        autoscaling_v2: client.AutoscalingV2Api, autoscaling_v1: client.AutoscalingV1Api,
        kubectl: Kubectl, namespace: str) -> None:
    kubectl("apply", "-n", namespace, "-f", "-", input=HPA_V2)
    autoscaling_v2.patch_namespaced_horizontal_pod_autoscaler_status("web", namespace, {
        "spec": {"maxReplicas": 9},
        "status": {"currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {
                "averageUtilization": 12, "averageValue": "60m"}}}],
            "conditions": [{"type": "AbleToScale", "status": "True",
                            "reason": "ReadyForNewScale",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})

    hpa = autoscaling_v2.read_namespaced_horizontal_pod_autoscaler("web", namespace)
    assert hpa.spec.max_replicas == 5
    assert (hpa.status.current_replicas, hpa.status.desired_replicas) == (2, 3)
    v1 = autoscaling_v1.read_namespaced_horizontal_pod_autoscaler("web", namespace)
    assert v1.status.current_cpu_utilization_percentage == 12
    conditions = json.loads(v1.metadata.annotations["autoscaling.alpha.kubernetes.io/conditions"])
    assert conditions[0]["reason"] == "ReadyForNewScale"
    current = json.loads(
        v1.metadata.annotations["autoscaling.alpha.kubernetes.io/current-metrics"])
    assert current == [{"type": "Resource", "resource": {
        "name": "cpu", "currentAverageUtilization": 12, "currentAverageValue": "60m"}}]

    out = kubectl("get", "hpa", "-n", namespace).stdout
    assert table(out) == [["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS"],
                          ["web", "Deployment/web", "cpu: 12%/50%, <unknown>/1k", "1", "5",
                           "2"]]


def test_kubectl_get_hpa_shows_unknown_until_the_controller_reports(
        kubectl: Kubectl, namespace: str) -> None:
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"},
                 "minReplicas": 2, "maxReplicas": 4, "targetCPUUtilizationPercentage": 50}}))
    out = kubectl("get", "hpa", "-n", namespace).stdout
    assert table(out) == [["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS"],
                          ["web", "Deployment/web", "cpu: <unknown>/50%", "2", "4", "0"]]


@pytest.mark.parametrize(("spec", "message"), [
    ({"maxReplicas": 0, "minReplicas": 2},
     "spec.maxReplicas: Invalid value: 0: must be greater than 0"),
    ({"maxReplicas": 1, "minReplicas": 2},
     "spec.maxReplicas: Invalid value: 1: must be greater than or equal to `minReplicas`"),
    ({"maxReplicas": 3, "minReplicas": 0},
     "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"),
    ({"maxReplicas": 3, "metrics": [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization"}}}]},
     "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a "
     "target raw value or a target utilization"),
    ({"maxReplicas": 3, "metrics": [{"type": "Pods", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 5}}}]},
     "spec.metrics[0].pods: Required value: must populate information for the given metric "
     "source"),
    ({"maxReplicas": 3, "behavior": {"scaleUp": {"selectPolicy": "Fastest", "policies": [
        {"type": "Pods", "value": 0, "periodSeconds": 1801}]}}},
     'spec.behavior.scaleUp.selectPolicy: Unsupported value: "Fastest": supported values: '
     '"Disabled", "Max", "Min"'),
    ({"maxReplicas": 3, "behavior": {"scaleDown": {"policies": [
        {"type": "Pods", "value": 1, "periodSeconds": 1801}]}}},
     "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: must be less "
     "than or equal to 1800"),
])
def test_invalid_hpas_get_upstreams_errors(kubectl: Kubectl, namespace: str,
                                           spec: dict[str, Any], message: str) -> None:
    body = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "bad"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                        "name": "web"}, **spec}}
    result = kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(body),
                     check=False)
    assert result.returncode == 1
    assert result.stderr.startswith('The HorizontalPodAutoscaler "bad" is invalid: ')
    assert message in result.stderr


def test_python_client_reads_both_versions(autoscaling_v2: client.AutoscalingV2Api,
                                           autoscaling_v1: client.AutoscalingV1Api,
                                           namespace: str) -> None:
    created = autoscaling_v1.create_namespaced_horizontal_pod_autoscaler(namespace, {
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"}, "maxReplicas": 3}})
    assert created.spec.target_cpu_utilization_percentage == 80
    listed = autoscaling_v2.list_namespaced_horizontal_pod_autoscaler(namespace).items
    assert [h.spec.metrics[0].resource.target.average_utilization for h in listed] == [80]
    with pytest.raises(ApiException) as refused:
        autoscaling_v2.create_namespaced_horizontal_pod_autoscaler(namespace, {
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                     "maxReplicas": 3}})
    assert refused.value.status == 409


def test_kubectl_autoscale_creates_a_v2_hpa_that_get_and_describe_print(
        kubectl: Kubectl, namespace: str) -> None:
    """`kubectl autoscale` sends its HPA as protobuf (client-go's typed client)."""
    kubectl("create", "deployment", "web", "--image=busybox", "-n", namespace)
    out = kubectl("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=5",
                  "-n", namespace).stdout
    assert out == "horizontalpodautoscaler.autoscaling/web autoscaled\n"
    hpa = get_json(kubectl, "hpa", "web", "-n", namespace)
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 1, "maxReplicas": 5,
        "metrics": [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}]}
    assert table(kubectl("get", "hpa", "-n", namespace).stdout)[1] == [
        "web", "Deployment/web", "cpu: <unknown>/50%", "1", "5", "0"]
    described = kubectl("describe", "hpa", "web", "-n", namespace).stdout
    assert re.search(r"Reference:\s+Deployment/web\n", described)
    assert re.search(r"resource cpu on pods  \(as a percentage of request\):\s+"
                     r"<unknown> / 50%\n", described)
    assert re.search(r"Min replicas:\s+1\nMax replicas:\s+5\n", described)


def test_kubectl_explain_reads_the_v2_schema(kubectl: Kubectl) -> None:
    out = kubectl("explain", "hpa.spec.behavior.scaleUp").stdout
    assert out.startswith("GROUP:      autoscaling\nKIND:       HorizontalPodAutoscaler\n"
                          "VERSION:    v2\n\nFIELD: scaleUp <HPAScalingRules>\n")
    assert "stabilizationWindowSeconds\t<integer>" in out


MANY_METRICS = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "many", "labels": {"tier": "db"}},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
             "maxReplicas": 4, "metrics": [
                 {"type": "Object", "object": {
                     "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "s"},
                     "metric": {"name": "hits"}, "target": {"type": "Value", "value": "2k"}}},
                 {"type": "Object", "object": {
                     "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "s"},
                     "metric": {"name": "hits"},
                     "target": {"type": "AverageValue", "averageValue": "2"}}},
                 {"type": "External", "external": {"metric": {"name": "q"}, "target": {
                     "type": "Value", "value": "30"}}},
                 {"type": "External", "external": {"metric": {"name": "q"}, "target": {
                     "type": "AverageValue", "averageValue": "30"}}},
                 {"type": "ContainerResource", "containerResource": {
                     "name": "memory", "container": "app",
                     "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                 {"type": "ContainerResource", "containerResource": {
                     "name": "cpu", "container": "app",
                     "target": {"type": "Utilization", "averageUtilization": 40}}},
                 {"type": "Resource", "resource": {"name": "memory", "target": {
                     "type": "AverageValue", "averageValue": "1Gi"}}}],
             "behavior": {"scaleUp": {"selectPolicy": "Min"}, "scaleDown": {"policies": [
                 {"type": "Pods", "value": 1, "periodSeconds": 60}]}}}}


def test_mkctl_describe_hpa_prints_what_kubectl_prints(
        kubectl: Kubectl, kubeconfig: Path, namespace: str, tmp_path: Path) -> None:
    """Every metric source type, behavior, conditions (describeHorizontalPodAutoscalerV2)."""
    from tests.test_mkctl import Clis

    kubectl("apply", "-n", namespace, "-f", "-", input=HPA_V2)
    kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(MANY_METRICS))
    kubectl("patch", "hpa", "web", "-n", namespace, "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {
                "currentReplicas": 2, "desiredReplicas": 3, "currentMetrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "current": {
                        "averageUtilization": 12, "averageValue": "120"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "requests-per-second"},
                                              "current": {"averageValue": "900"}}}],
                "conditions": [{"type": "AbleToScale", "status": "True",
                                "reason": "ReadyForNewScale",
                                "message": "recommended size matches current size",
                                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
    clis = Clis(kubeconfig, tmp_path)
    for args in (("describe", "hpa", "web", "-n", namespace),
                 ("describe", "hpa", "many", "-n", namespace),
                 ("describe", "hpa", "-n", namespace)):
        expected, actual = clis.compare(*args)
        assert expected.code == 0 and "Metrics:" in expected.out
        assert actual == expected


AUTOSCALE_CASES = [
    "deployment web --max=0", "deployment web --min=3 --max=2",
    "deployment/web --max=4 --cpu=70% --dry-run=client -o yaml",
    "deployment/web --max=4 --cpu=70% --min=2 --dry-run=client -o json",
    "deployment/web --max=4 --cpu=500m --memory=1Gi --name=x --dry-run=server -o name",
    "deployment/web --max=4 --cpu=500m --dry-run=server",
    "deployment nope --max=3", "deployment --max=3", "deployment web --max=3 --cpu=abc",
    "deployment web --max=3 --cpu-percent=40 --dry-run=client",
]


def test_mkctl_autoscale_prints_what_kubectl_prints(
        kubectl: Kubectl, kubeconfig: Path, namespace: str, tmp_path: Path) -> None:
    """Bad flags, dry runs of both kinds and every metric flag; then a real create by each
    (the same HPA), and one over an existing HPA (kubectl's fallback to v1)."""
    from tests.test_mkctl import Clis

    kubectl("create", "deployment", "web", "--image=busybox", "-n", namespace)
    clis = Clis(kubeconfig, tmp_path)
    for case in AUTOSCALE_CASES:
        expected, actual = clis.compare("autoscale", *case.split(), "-n", namespace)
        assert actual == expected, case
    made = []
    for cli in (clis.kubectl, clis.mkctl):
        result = cli("autoscale", "deployment", "web", "--max=5", "--cpu=50%", "--min=2",
                     "-n", namespace)
        made.append((result.out, result.err, result.code,
                     get_json(kubectl, "hpa", "web", "-n", namespace)["spec"]))
        again = [cli("autoscale", "deployment", "web", "--max=5", *extra, "-n", namespace)
                 for extra in ((), ("--cpu=60%",))]
        made.append(tuple((r.err, r.code) for r in again))
        kubectl("delete", "hpa", "web", "-n", namespace)
    assert made[0] == made[2]
    assert made[1] == made[3]
    assert made[0][0] == "horizontalpodautoscaler.autoscaling/web autoscaled\n"
