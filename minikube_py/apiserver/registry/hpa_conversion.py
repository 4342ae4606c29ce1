"""Conversion between autoscaling/v1 and autoscaling/v2 HorizontalPodAutoscalers.

Both versions are the same objects in storage (/registry/horizontalpodautoscalers/), kept
in the v2 shape. autoscaling/v1 only has a CPU utilization target; everything else a v2
object carries rides in annotations of the v1 view, in the older v1 metric shapes
(upstream's pkg/apis/autoscaling/v1/conversion.go):

    autoscaling.alpha.kubernetes.io/metrics          spec.metrics other than the CPU target
    autoscaling.alpha.kubernetes.io/current-metrics  status.currentMetrics (all of them)
    autoscaling.alpha.kubernetes.io/conditions       status.conditions

A v1 write turns those annotations back into v2 fields and drops them.
"""

from __future__ import annotations

import copy

import orjson

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict

METRIC_SPECS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
METRIC_STATUSES_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
DEFAULT_CPU_UTILIZATION = 80


def _set(out: Obj, key: str, value: object) -> None:
    if value is not None:
        out[key] = value


def _is_cpu_utilization(metric: Obj) -> bool:
    resource = as_dict(metric.get("resource"))
    return (metric.get("type") == "Resource" and resource.get("name") == "cpu"
            and as_dict(resource.get("target")).get("averageUtilization") is not None)


def _metric_spec_to_v1(metric: Obj) -> Obj:
    """A v2 MetricSpec in autoscaling/v1's (v2beta1-like) shape."""
    out: Obj = {"type": metric.get("type", "")}
    if (source := metric.get("object")) is not None:
        target = as_dict(source.get("target"))
        identifier = as_dict(source.get("metric"))
        v1: Obj = {"target": as_dict(source.get("describedObject")),
                   "metricName": identifier.get("name", ""),
                   "targetValue": target.get("value", "0")}
        _set(v1, "selector", identifier.get("selector"))
        _set(v1, "averageValue", target.get("averageValue"))
        out["object"] = v1
    if (source := metric.get("pods")) is not None:
        identifier = as_dict(source.get("metric"))
        v1 = {"metricName": identifier.get("name", ""),
              "targetAverageValue": as_dict(source.get("target")).get("averageValue", "0")}
        _set(v1, "selector", identifier.get("selector"))
        out["pods"] = v1
    for key in ("resource", "containerResource"):
        if (source := metric.get(key)) is not None:
            target = as_dict(source.get("target"))
            v1 = {"name": source.get("name", "")}
            _set(v1, "targetAverageUtilization", target.get("averageUtilization"))
            _set(v1, "targetAverageValue", target.get("averageValue"))
            if key == "containerResource":
                v1["container"] = source.get("container", "")
            out[key] = v1
    if (source := metric.get("external")) is not None:
        target = as_dict(source.get("target"))
        identifier = as_dict(source.get("metric"))
        v1 = {"metricName": identifier.get("name", "")}
        _set(v1, "metricSelector", identifier.get("selector"))
        _set(v1, "targetValue", target.get("value"))
        _set(v1, "targetAverageValue", target.get("averageValue"))
        out["external"] = v1
    return out


def _metric_spec_from_v1(metric: Obj) -> Obj:
    """An autoscaling/v1 MetricSpec (from the annotation) in the v2 shape."""
    out: Obj = {"type": metric.get("type", "")}
    if (source := metric.get("object")) is not None:
        target: Obj = {"type": "Value" if source.get("averageValue") is None
                       else "AverageValue", "value": source.get("targetValue", "0")}
        _set(target, "averageValue", source.get("averageValue"))
        identifier: Obj = {"name": source.get("metricName", "")}
        _set(identifier, "selector", source.get("selector"))
        out["object"] = {"describedObject": as_dict(source.get("target")),
                         "metric": identifier, "target": target}
    if (source := metric.get("pods")) is not None:
        identifier = {"name": source.get("metricName", "")}
        _set(identifier, "selector", source.get("selector"))
        out["pods"] = {"metric": identifier, "target": {
            "type": "AverageValue", "averageValue": source.get("targetAverageValue", "0")}}
    for key in ("resource", "containerResource"):
        if (source := metric.get(key)) is not None:
            utilization = source.get("targetAverageUtilization")
            target = {"type": "AverageValue" if utilization is None else "Utilization"}
            _set(target, "averageUtilization", utilization)
            _set(target, "averageValue", source.get("targetAverageValue"))
            v2: Obj = {"name": source.get("name", ""), "target": target}
            if key == "containerResource":
                v2["container"] = source.get("container", "")
            out[key] = v2
    if (source := metric.get("external")) is not None:
        value = source.get("targetValue")
        target = {"type": "AverageValue" if value is None else "Value"}
        _set(target, "value", value)
        _set(target, "averageValue", source.get("targetAverageValue"))
        identifier = {"name": source.get("metricName", "")}
        _set(identifier, "selector", source.get("metricSelector"))
        out["external"] = {"metric": identifier, "target": target}
    return out


def _metric_status_to_v1(metric: Obj) -> Obj:
    """A v2 MetricStatus in autoscaling/v1's shape."""
    out: Obj = {"type": metric.get("type", "")}
    if (source := metric.get("object")) is not None:
        current = as_dict(source.get("current"))
        identifier = as_dict(source.get("metric"))
        v1: Obj = {"target": as_dict(source.get("describedObject")),
                   "metricName": identifier.get("name", ""),
                   "currentValue": current.get("value", "0")}
        _set(v1, "selector", identifier.get("selector"))
        _set(v1, "averageValue", current.get("averageValue"))
        out["object"] = v1
    if (source := metric.get("pods")) is not None:
        identifier = as_dict(source.get("metric"))
        v1 = {"metricName": identifier.get("name", ""),
              "currentAverageValue": as_dict(source.get("current")).get("averageValue", "0")}
        _set(v1, "selector", identifier.get("selector"))
        out["pods"] = v1
    for key in ("resource", "containerResource"):
        if (source := metric.get(key)) is not None:
            current = as_dict(source.get("current"))
            v1 = {"name": source.get("name", "")}
            _set(v1, "currentAverageUtilization", current.get("averageUtilization"))
            v1["currentAverageValue"] = current.get("averageValue", "0")
            if key == "containerResource":
                v1["container"] = source.get("container", "")
            out[key] = v1
    if (source := metric.get("external")) is not None:
        current = as_dict(source.get("current"))
        identifier = as_dict(source.get("metric"))
        v1 = {"metricName": identifier.get("name", ""),
              "currentValue": current.get("value", "0")}
        _set(v1, "metricSelector", identifier.get("selector"))
        _set(v1, "currentAverageValue", current.get("averageValue"))
        out["external"] = v1
    return out


def _metric_status_from_v1(metric: Obj) -> Obj:
    """An autoscaling/v1 MetricStatus (from the annotation) in the v2 shape."""
    out: Obj = {"type": metric.get("type", "")}
    if (source := metric.get("object")) is not None:
        current: Obj = {"value": source.get("currentValue", "0")}
        _set(current, "averageValue", source.get("averageValue"))
        identifier: Obj = {"name": source.get("metricName", "")}
        _set(identifier, "selector", source.get("selector"))
        out["object"] = {"describedObject": as_dict(source.get("target")),
                         "metric": identifier, "current": current}
    if (source := metric.get("pods")) is not None:
        identifier = {"name": source.get("metricName", "")}
        _set(identifier, "selector", source.get("selector"))
        out["pods"] = {"metric": identifier, "current": {
            "averageValue": source.get("currentAverageValue", "0")}}
    for key in ("resource", "containerResource"):
        if (source := metric.get(key)) is not None:
            current = {"averageValue": source.get("currentAverageValue", "0")}
            _set(current, "averageUtilization", source.get("currentAverageUtilization"))
            v2: Obj = {"name": source.get("name", ""), "current": current}
            if key == "containerResource":
                v2["container"] = source.get("container", "")
            out[key] = v2
    if (source := metric.get("external")) is not None:
        current = {"value": source.get("currentValue", "0")}
        _set(current, "averageValue", source.get("currentAverageValue"))
        identifier = {"name": source.get("metricName", "")}
        _set(identifier, "selector", source.get("metricSelector"))
        out["external"] = {"metric": identifier, "current": current}
    return out


def _annotation_list(annotations: dict[str, str], key: str) -> list[Obj] | None:
    """A JSON list kept in an annotation (removed from `annotations`); None when absent
    or not a list of objects."""
    if key not in annotations:
        return None
    try:
        value = orjson.loads(annotations.pop(key))
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, list):
        return None
    return [item for item in value if isinstance(item, dict)]


def _dumps(value: list[Obj]) -> str:
    return orjson.dumps(value).decode()


def hpa_v2_to_v1(hpa: Obj) -> Obj:
    """A stored (v2) HorizontalPodAutoscaler as an autoscaling/v1 client reads it."""
    spec = as_dict(hpa.get("spec"))
    status = as_dict(hpa.get("status"))
    metadata = copy.deepcopy(as_dict(hpa.get("metadata")))
    out: Obj = {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
                "metadata": metadata}
    v1_spec: Obj = {"scaleTargetRef": copy.deepcopy(as_dict(spec.get("scaleTargetRef")))}
    _set(v1_spec, "minReplicas", spec.get("minReplicas"))
    v1_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    for metric in metrics:
        if metric.get("type") == "Resource" and as_dict(metric.get("resource")).get(
                "name") == "cpu":
            _set(v1_spec, "targetCPUUtilizationPercentage",
                 as_dict(as_dict(metric["resource"]).get("target")).get("averageUtilization"))
            break
    out["spec"] = v1_spec
    if "status" in hpa:
        v1_status: Obj = {}
        _set(v1_status, "observedGeneration", status.get("observedGeneration"))
        _set(v1_status, "lastScaleTime", status.get("lastScaleTime"))
        v1_status["currentReplicas"] = status.get("currentReplicas", 0)
        v1_status["desiredReplicas"] = status.get("desiredReplicas", 0)
        for metric in status.get("currentMetrics") or []:
            resource = as_dict(as_dict(metric).get("resource"))
            if metric.get("type") == "Resource" and resource.get("name") == "cpu":
                _set(v1_status, "currentCPUUtilizationPercentage",
                     as_dict(resource.get("current")).get("averageUtilization"))
        out["status"] = v1_status
    other_metrics = [_metric_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    current_metrics = [_metric_status_to_v1(m) for m in status.get("currentMetrics") or []
                       if isinstance(m, dict)]
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    if other_metrics or current_metrics or conditions:
        annotations = dict(metadata.get("annotations") or {})
        if other_metrics:
            annotations[METRIC_SPECS_ANNOTATION] = _dumps(other_metrics)
        if current_metrics:
            annotations[METRIC_STATUSES_ANNOTATION] = _dumps(current_metrics)
        if conditions:
            annotations[CONDITIONS_ANNOTATION] = _dumps(conditions)
        metadata["annotations"] = annotations
    return out


def hpa_v1_to_v2(hpa: Obj) -> Obj:
    """An autoscaling/v1 HorizontalPodAutoscaler in the stored (v2) shape."""
    spec = as_dict(hpa.get("spec"))
    metadata = copy.deepcopy(hpa.get("metadata")) if isinstance(
        hpa.get("metadata"), dict) else {}
    out: Obj = {"kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
                "metadata": metadata}
    v2_spec: Obj = {"scaleTargetRef": copy.deepcopy(as_dict(spec.get("scaleTargetRef")))}
    _set(v2_spec, "minReplicas", spec.get("minReplicas"))
    v2_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    metrics: list[Obj] = []
    cpu = spec.get("targetCPUUtilizationPercentage")
    annotations = metadata.get("annotations")
    annotations = dict(annotations) if isinstance(annotations, dict) else {}
    other = _annotation_list(annotations, METRIC_SPECS_ANNOTATION)
    metrics += [_metric_spec_from_v1(m) for m in other or []]
    if cpu is not None:
        metrics.append({"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}}})
    if not metrics:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}})
    v2_spec["metrics"] = metrics
    out["spec"] = v2_spec
    if isinstance(hpa.get("status"), dict):
        status = hpa["status"]
        v2_status: Obj = {}
        _set(v2_status, "observedGeneration", status.get("observedGeneration"))
        _set(v2_status, "lastScaleTime", status.get("lastScaleTime"))
        _set(v2_status, "currentReplicas", status.get("currentReplicas"))
        v2_status["desiredReplicas"] = status.get("desiredReplicas", 0)
        if status.get("currentCPUUtilizationPercentage") is not None:
            v2_status["currentMetrics"] = [{"type": "Resource", "resource": {
                "name": "cpu", "current": {
                    "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
        out["status"] = v2_status
    current = _annotation_list(annotations, METRIC_STATUSES_ANNOTATION)
    if current is not None:
        out.setdefault("status", {"desiredReplicas": 0})["currentMetrics"] = [
            _metric_status_from_v1(m) for m in current]
    conditions = _annotation_list(annotations, CONDITIONS_ANNOTATION)
    if conditions is not None:
        out.setdefault("status", {"desiredReplicas": 0})["conditions"] = conditions
    if "annotations" in metadata:
        if annotations:
            metadata["annotations"] = annotations
        else:
            metadata.pop("annotations")
    return out
