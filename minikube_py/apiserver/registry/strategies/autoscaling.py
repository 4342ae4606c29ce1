"""HorizontalPodAutoscaler strategies: autoscaling/v2 (stored) and autoscaling/v1 (converted).

Upstream: pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go, the defaults of
pkg/apis/autoscaling/v2/defaults.go and the rules of pkg/apis/autoscaling/validation.
Both versions store the v2 shape; the v1 strategy converts at the edges
(apiserver/registry/hpa_conversion.py), so every hook reads v2 field names.
"""

from __future__ import annotations

import copy
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.autoscaling import generate_scale_down_rules, generate_scale_up_rules
from minikube_py.api.defaulting import as_dict, set_default
from minikube_py.api.quantity import QuantityError, parse_quantity
from minikube_py.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_dns1123_label,
    validate_nonnegative,
)
from minikube_py.apiserver.registry.hpa_conversion import (
    DEFAULT_CPU_UTILIZATION,
    hpa_v1_to_v2,
    hpa_v2_to_v1,
)
from minikube_py.apiserver.registry.strategies.base import KindStrategy
from minikube_py.apiserver.registry.strategies.fields import (
    as_invalid,
    child,
    index,
    path_segment_name,
)

MAX_PERIOD_SECONDS = 1800
MAX_STABILIZATION_WINDOW_SECONDS = 3600
METRIC_SOURCE_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]
SELECT_POLICIES = ["Disabled", "Max", "Min"]
POLICY_TYPES = ["Percent", "Pods"]
METRIC_TARGET_TYPES = ("Utilization", "Value", "AverageValue")
# The field of a MetricSpec each source type fills.
_SOURCE_FIELDS = {"Object": "object", "Pods": "pods", "Resource": "resource",
                  "External": "external", "ContainerResource": "containerResource"}


def set_defaults_horizontal_pod_autoscaler(hpa: Obj) -> None:
    """SetDefaults_HorizontalPodAutoscaler (v2): minReplicas 1, an 80% CPU target when
    no metric is given, and full behavior rules once any behavior is set."""
    spec = hpa.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    set_default(spec, "minReplicas", 1)
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = generate_scale_up_rules(behavior.get("scaleUp"))
        behavior["scaleDown"] = generate_scale_down_rules(behavior.get("scaleDown"))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _sign(value: Any) -> int | None:
    """The sign of a quantity (None when it does not parse: the decoder's to refuse)."""
    try:
        amount = parse_quantity(value)
    except (QuantityError, TypeError, ValueError):
        return None
    return (amount > 0) - (amount < 0)


def validate_cross_version_object_reference(ref: Any, path: str) -> list[FieldError]:
    """ValidateCrossVersionObjectReference: kind and name are set path segments."""
    ref = as_dict(ref)
    errors: list[FieldError] = []
    for name in ("kind", "name"):
        value = ref.get(name) or ""
        if not value:
            errors.append(required(child(path, name)))
        else:
            errors += as_invalid(child(path, name), value, path_segment_name(str(value)))
    return errors


def _validate_metric_target(target: Obj, path: str) -> list[FieldError]:
    """validateMetricTarget."""
    errors: list[FieldError] = []
    kind = target.get("type") or ""
    if not kind:
        errors.append(required(child(path, "type"), "must specify a metric target type"))
    if kind not in METRIC_TARGET_TYPES:
        errors.append(invalid(child(path, "type"), kind,
                              "must be either Utilization, Value, or AverageValue"))
    for name in ("value", "averageValue"):
        if target.get(name) is not None and _sign(target[name]) != 1:
            errors.append(invalid(child(path, name), target[name], "must be positive"))
    utilization = target.get("averageUtilization")
    if utilization is not None and (_int(utilization) or 0) < 1:
        errors.append(invalid(child(path, "averageUtilization"), utilization,
                              "must be greater than 0"))
    return errors


def _validate_metric_identifier(identifier: Obj, path: str) -> list[FieldError]:
    name = identifier.get("name") or ""
    if not name:
        return [required(child(path, "name"), "must specify a metric name")]
    return as_invalid(child(path, "name"), name, path_segment_name(str(name)))


def _validate_source(kind: str, source: Obj, path: str) -> list[FieldError]:
    """validateObjectSource / validatePodsSource / validateResourceSource / ...: the
    identifier, the target, and which target values the source type needs."""
    target = as_dict(source.get("target"))
    target_path = child(path, "target")
    errors: list[FieldError] = []
    if kind == "object":
        errors += validate_cross_version_object_reference(
            source.get("describedObject"), child(path, "describedObject"))
    if kind in ("object", "pods", "external"):
        errors += _validate_metric_identifier(as_dict(source.get("metric")),
                                              child(path, "metric"))
    if kind in ("resource", "containerResource"):
        name = source.get("name") or ""
        if not name:
            errors.append(required(child(path, "name"), "must specify a resource name"))
    if kind == "containerResource":
        container = source.get("container") or ""
        if not container:
            errors.append(required(child(path, "container"), "must specify a container"))
        else:
            errors += as_invalid(child(path, "container"), container,
                                 validate_dns1123_label(str(container)))
    errors += _validate_metric_target(target, target_path)
    value, average = target.get("value"), target.get("averageValue")
    if kind == "object" and value is None and average is None:
        errors.append(required(child(target_path, "averageValue"),
                               "must set either a target value or averageValue"))
    if kind == "external":
        if value is None and average is None:
            errors.append(required(child(target_path, "averageValue"),
                                   "must set either a target value for metric or a per-pod "
                                   "target"))
        if value is not None and average is not None:
            errors.append(forbidden(child(target_path, "value"),
                                    "may not set both a target value for metric and a "
                                    "per-pod target"))
    if kind == "pods" and average is None:
        errors.append(required(child(target_path, "averageValue"),
                               "must specify a positive target averageValue"))
    if kind in ("resource", "containerResource"):
        utilization = target.get("averageUtilization")
        if utilization is None and average is None:
            errors.append(required(child(target_path, "averageUtilization"),
                                   "must set either a target raw value or a target "
                                   "utilization"))
        if utilization is not None and average is not None:
            errors.append(forbidden(child(target_path, "averageValue"),
                                    "may not set both a target raw value and a target "
                                    "utilization"))
    return errors


def _validate_metric_spec(metric: Obj, path: str) -> list[FieldError]:
    """validateMetricSpec: a known type, and exactly the source that type names."""
    errors: list[FieldError] = []
    kind = metric.get("type") or ""
    if not kind:
        errors.append(required(child(path, "type"), "must specify a metric source type"))
    if kind not in METRIC_SOURCE_TYPES:
        errors.append(not_supported(child(path, "type"), kind, METRIC_SOURCE_TYPES))
    present = [name for name in ("object", "external", "pods", "resource",
                                 "containerResource") if metric.get(name) is not None]
    if present:
        errors += _validate_source(present[0], as_dict(metric[present[0]]),
                                   child(path, present[0]))
    expected = _SOURCE_FIELDS.get(kind, "")
    if expected and metric.get(expected) is None:
        errors.append(required(child(path, expected),
                               "must populate information for the given metric source"))
    if kind not in METRIC_SOURCE_TYPES:
        errors.append(not_supported(child(path, "type"), kind, METRIC_SOURCE_TYPES))
    if len(present) != 1:
        for name in present:
            if name != expected:
                errors.append(forbidden(child(path, name),
                                        "must populate the given metric source only"))
    return errors


def _validate_scaling_rules(rules: Any, path: str) -> list[FieldError]:
    """validateScalingRules: window in [0, 3600], a known selectPolicy, at least one
    policy, each with a known type, a positive value and a period in (0, 1800]."""
    if not isinstance(rules, dict):
        return []
    errors: list[FieldError] = []
    window = rules.get("stabilizationWindowSeconds")
    if window is not None:
        if (_int(window) or 0) < 0:
            errors.append(invalid(child(path, "stabilizationWindowSeconds"), window,
                                  "must be greater than or equal to zero"))
        if (_int(window) or 0) > MAX_STABILIZATION_WINDOW_SECONDS:
            errors.append(invalid(child(path, "stabilizationWindowSeconds"), window,
                                  "must be less than or equal to "
                                  f"{MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        errors.append(not_supported(child(path, "selectPolicy"), select, SELECT_POLICIES))
    tolerance = rules.get("tolerance")
    if tolerance is not None and (_sign(tolerance) or 0) < 0:
        errors.append(invalid(child(path, "tolerance"), tolerance,
                              "must be greater than or equal to zero"))
    policies = rules.get("policies") or []
    if not policies:
        errors.append(required(child(path, "policies"), "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        policy = as_dict(policy)
        policy_path = index(child(path, "policies"), i)
        if policy.get("type") not in POLICY_TYPES:
            errors.append(not_supported(child(policy_path, "type"), policy.get("type", ""),
                                        POLICY_TYPES))
        if (_int(policy.get("value")) or 0) <= 0:
            errors.append(invalid(child(policy_path, "value"), policy.get("value", 0),
                                  "must be greater than zero"))
        period = _int(policy.get("periodSeconds")) or 0
        if period <= 0:
            errors.append(invalid(child(policy_path, "periodSeconds"),
                                  policy.get("periodSeconds", 0), "must be greater than zero"))
        if period > MAX_PERIOD_SECONDS:
            errors.append(invalid(child(policy_path, "periodSeconds"), period,
                                  f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return errors


def validate_horizontal_pod_autoscaler_spec(spec: Obj, min_replicas_lower_bound: int = 1
                                            ) -> list[FieldError]:
    """validateHorizontalPodAutoscalerSpec."""
    errors: list[FieldError] = []
    min_replicas = spec.get("minReplicas")
    max_replicas = _int(spec.get("maxReplicas")) or 0
    if min_replicas is not None and (_int(min_replicas) or 0) < min_replicas_lower_bound:
        errors.append(invalid("spec.minReplicas", min_replicas,
                              f"must be greater than or equal to {min_replicas_lower_bound}"))
    if max_replicas < 1:
        errors.append(invalid("spec.maxReplicas", max_replicas, "must be greater than 0"))
    if min_replicas is not None and max_replicas < (_int(min_replicas) or 0):
        errors.append(invalid("spec.maxReplicas", max_replicas,
                              "must be greater than or equal to `minReplicas`"))
    errors += validate_cross_version_object_reference(spec.get("scaleTargetRef"),
                                                      "spec.scaleTargetRef")
    metrics = spec.get("metrics") or []
    has_object_or_external = False
    for i, metric in enumerate(metrics):
        metric = as_dict(metric)
        errors += _validate_metric_spec(metric, index("spec.metrics", i))
        has_object_or_external |= metric.get("type") in ("Object", "External")
    if min_replicas == 0 and not has_object_or_external:
        errors.append(forbidden("spec.metrics", "must specify at least one Object or External "
                                "metric to support scaling to zero replicas"))
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        errors += _validate_scaling_rules(behavior.get("scaleUp"), "spec.behavior.scaleUp")
        errors += _validate_scaling_rules(behavior.get("scaleDown"),
                                          "spec.behavior.scaleDown")
    return errors


class HorizontalPodAutoscalerStrategy(KindStrategy):
    """autoscaling/v2 HorizontalPodAutoscalers: the stored form."""

    def prepare_for_create(self, obj: Obj) -> None:
        """A client may not set status; it starts empty (Go writes desiredReplicas)."""
        super().prepare_for_create(obj)
        obj["status"] = {"desiredReplicas": 0}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """A /status write keeps the stored spec."""
        super().prepare_for_status_update(new, old)
        new["spec"] = copy.deepcopy(old.get("spec"))

    def default(self, obj: Obj) -> None:
        set_defaults_horizontal_pod_autoscaler(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateHorizontalPodAutoscaler (HPAScaleToZero off: minReplicas >= 1)."""
        return validate_horizontal_pod_autoscaler_spec(as_dict(obj.get("spec")))

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateHorizontalPodAutoscalerUpdate: an HPA already at minReplicas 0 may
        keep it."""
        bound = 0 if as_dict(old.get("spec")).get("minReplicas") == 0 else 1
        return validate_horizontal_pod_autoscaler_spec(as_dict(new.get("spec")), bound)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateHorizontalPodAutoscalerStatusUpdate: replica counts are not negative."""
        status = as_dict(new.get("status"))
        errors: list[FieldError] = []
        for name in ("currentReplicas", "desiredReplicas"):
            errors += validate_nonnegative(status.get(name, 0), f"status.{name}")
        return errors


class HorizontalPodAutoscalerV1Strategy(HorizontalPodAutoscalerStrategy):
    """autoscaling/v1 HorizontalPodAutoscalers: the same objects, a CPU target in the spec
    and the rest in annotations."""

    storage_kind = ("autoscaling/v2", "HorizontalPodAutoscaler")
    stored_is_external = False

    def to_internal(self, obj: Obj) -> Obj:
        return hpa_v1_to_v2(obj)

    def to_external(self, obj: Obj) -> Obj:
        return hpa_v2_to_v1(obj)
