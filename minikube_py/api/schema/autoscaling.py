"""autoscaling HorizontalPodAutoscalers: v2 (metrics of every type, behavior) and v1 (a CPU
target only; v2-only data rides in annotations).

Upstream: k8s.io/api/autoscaling/v2/types.go and autoscaling/v1/types.go. The Scale kind
(the body of the scale subresource) is in others.py.
"""

from __future__ import annotations

from minikube_py.api.schema.dsl import (
    INTEGER,
    QUANTITY,
    STRING,
    atomic,
    f,
    merged,
    obj,
)
from minikube_py.api.schema.meta import LABEL_SELECTOR, TIME, api_object
from minikube_py.api.schema.types import Type

V2 = "io.k8s.api.autoscaling.v2"
V1 = "io.k8s.api.autoscaling.v1"


def _cross_version_object_reference(package: str) -> Type:
    return obj(
        f"{package}.CrossVersionObjectReference",
        "Enough information to identify the referred resource.",
        apiVersion=f(STRING, "API version of the referent."),
        kind=f(STRING, "Kind of the referent.", required=True),
        name=f(STRING, "Name of the referent.", required=True),
    )


CROSS_VERSION_OBJECT_REFERENCE = _cross_version_object_reference(V2)

METRIC_IDENTIFIER = obj(
    f"{V2}.MetricIdentifier",
    "A metric's name and, optionally, a selector narrowing its series.",
    name=f(STRING, "Name of the metric.", required=True),
    selector=f(LABEL_SELECTOR, "Selector passed to the metrics server to narrow scope."),
)

METRIC_TARGET = obj(
    f"{V2}.MetricTarget",
    "The target value, average value or average utilization of a metric.",
    averageUtilization=f(INTEGER, "Target average percentage of the pods' requests "
                         "(Resource metrics only)."),
    averageValue=f(QUANTITY, "Target value of the metric averaged over the pods."),
    type=f(STRING, "Utilization, Value or AverageValue.", required=True),
    value=f(QUANTITY, "Target value of the metric."),
)

METRIC_VALUE_STATUS = obj(
    f"{V2}.MetricValueStatus",
    "The current value of a metric.",
    averageUtilization=f(INTEGER, "Current average percentage of the pods' requests."),
    averageValue=f(QUANTITY, "Current value averaged over the pods."),
    value=f(QUANTITY, "Current value of the metric."),
)

METRIC_SPEC = obj(
    f"{V2}.MetricSpec",
    "One metric to scale on, and its target.",
    containerResource=f(obj(
        f"{V2}.ContainerResourceMetricSource",
        "A resource metric of one container in each pod of the target.",
        container=f(STRING, "Name of the container.", required=True),
        name=f(STRING, "Name of the resource.", required=True),
        target=f(METRIC_TARGET, "Target value.", required=True),
    ), "A container's resource metric."),
    external=f(obj(
        f"{V2}.ExternalMetricSource",
        "A metric not tied to any Kubernetes object.",
        metric=f(METRIC_IDENTIFIER, "The metric.", required=True),
        target=f(METRIC_TARGET, "Target value.", required=True),
    ), "An external metric."),
    object=f(obj(
        f"{V2}.ObjectMetricSource",
        "A metric describing one Kubernetes object.",
        describedObject=f(CROSS_VERSION_OBJECT_REFERENCE, "The object described.",
                          required=True),
        metric=f(METRIC_IDENTIFIER, "The metric.", required=True),
        target=f(METRIC_TARGET, "Target value.", required=True),
    ), "An object metric."),
    pods=f(obj(
        f"{V2}.PodsMetricSource",
        "A metric describing each pod of the target, averaged.",
        metric=f(METRIC_IDENTIFIER, "The metric.", required=True),
        target=f(METRIC_TARGET, "Target value.", required=True),
    ), "A pods metric."),
    resource=f(obj(
        f"{V2}.ResourceMetricSource",
        "A resource metric (cpu, memory) of each pod of the target.",
        name=f(STRING, "Name of the resource.", required=True),
        target=f(METRIC_TARGET, "Target value.", required=True),
    ), "A resource metric."),
    type=f(STRING, "Object, Pods, Resource, ContainerResource or External.", required=True),
)

METRIC_STATUS = obj(
    f"{V2}.MetricStatus",
    "The last read state of one metric.",
    containerResource=f(obj(
        f"{V2}.ContainerResourceMetricStatus",
        "The current value of a container's resource metric.",
        container=f(STRING, "Name of the container.", required=True),
        current=f(METRIC_VALUE_STATUS, "Current value.", required=True),
        name=f(STRING, "Name of the resource.", required=True),
    ), "A container's resource metric."),
    external=f(obj(
        f"{V2}.ExternalMetricStatus",
        "The current value of an external metric.",
        current=f(METRIC_VALUE_STATUS, "Current value.", required=True),
        metric=f(METRIC_IDENTIFIER, "The metric.", required=True),
    ), "An external metric."),
    object=f(obj(
        f"{V2}.ObjectMetricStatus",
        "The current value of an object metric.",
        current=f(METRIC_VALUE_STATUS, "Current value.", required=True),
        describedObject=f(CROSS_VERSION_OBJECT_REFERENCE, "The object described.",
                          required=True),
        metric=f(METRIC_IDENTIFIER, "The metric.", required=True),
    ), "An object metric."),
    pods=f(obj(
        f"{V2}.PodsMetricStatus",
        "The current value of a pods metric.",
        current=f(METRIC_VALUE_STATUS, "Current value.", required=True),
        metric=f(METRIC_IDENTIFIER, "The metric.", required=True),
    ), "A pods metric."),
    resource=f(obj(
        f"{V2}.ResourceMetricStatus",
        "The current value of a resource metric.",
        current=f(METRIC_VALUE_STATUS, "Current value.", required=True),
        name=f(STRING, "Name of the resource.", required=True),
    ), "A resource metric."),
    type=f(STRING, "Object, Pods, Resource, ContainerResource or External.", required=True),
)

HPA_SCALING_RULES = obj(
    f"{V2}.HPAScalingRules",
    "How fast the autoscaler may scale in one direction.",
    policies=atomic(obj(
        f"{V2}.HPAScalingPolicy",
        "One limit on the change of replicas within a period.",
        periodSeconds=f(INTEGER, "Window the policy holds over (1 to 1800 s).",
                        required=True),
        type=f(STRING, "Pods or Percent.", required=True),
        value=f(INTEGER, "Amount of change the policy allows.", required=True),
    ), "Policies that may be used while scaling."),
    selectPolicy=f(STRING, "Max, Min or Disabled."),
    stabilizationWindowSeconds=f(INTEGER, "Past recommendations considered (0 to 3600 s)."),
    tolerance=f(QUANTITY, "Ratio of current to desired metric within which nothing "
                "scales."),
)

CONDITION_V2 = obj(
    f"{V2}.HorizontalPodAutoscalerCondition",
    "The state of the autoscaler at a certain point.",
    lastTransitionTime=f(TIME, "Last time the condition changed status."),
    message=f(STRING, "Human-readable details of the transition."),
    observedGeneration=f(INTEGER, "Generation the condition was set for."),
    reason=f(STRING, "Reason for the last transition."),
    status=f(STRING, "True, False or Unknown.", required=True),
    type=f(STRING, "AbleToScale, ScalingActive, ScalingLimited or ScaledToZero.",
           required=True),
)

HORIZONTAL_POD_AUTOSCALER_V2 = api_object(
    f"{V2}.HorizontalPodAutoscaler",
    "Scales a resource with a scale subresource to hit metric targets.",
    spec=f(obj(
        f"{V2}.HorizontalPodAutoscalerSpec",
        "The desired behaviour of the autoscaler.",
        behavior=f(obj(
            f"{V2}.HorizontalPodAutoscalerBehavior",
            "Scaling rules for each direction.",
            scaleDown=f(HPA_SCALING_RULES, "Rules for scaling down."),
            scaleUp=f(HPA_SCALING_RULES, "Rules for scaling up."),
        ), "Scaling behaviour in both directions."),
        maxReplicas=f(INTEGER, "Upper limit of replicas.", required=True),
        metrics=atomic(METRIC_SPEC, "Metrics used to compute the desired replicas."),
        minReplicas=f(INTEGER, "Lower limit of replicas (default 1)."),
        scaleTargetRef=f(CROSS_VERSION_OBJECT_REFERENCE, "The resource to scale.",
                         required=True),
    ), "Desired behaviour of the autoscaler."),
    status=f(obj(
        f"{V2}.HorizontalPodAutoscalerStatus",
        "The observed state of the autoscaler.",
        conditions=merged(CONDITION_V2, "Conditions needed to scale the target.", key="type"),
        currentMetrics=atomic(METRIC_STATUS, "Last read state of the metrics."),
        currentReplicas=f(INTEGER, "Replicas of the target last seen by the autoscaler."),
        desiredReplicas=f(INTEGER, "Replicas desired last computed.", required=True),
        lastScaleTime=f(TIME, "Last time the autoscaler scaled the target."),
        observedGeneration=f(INTEGER, "Most recent generation observed."),
    ), "Observed state of the autoscaler. Read-only."),
)

HORIZONTAL_POD_AUTOSCALER_V1 = api_object(
    f"{V1}.HorizontalPodAutoscaler",
    "Scales a resource with a scale subresource to hit a CPU utilization target.",
    spec=f(obj(
        f"{V1}.HorizontalPodAutoscalerSpec",
        "The desired behaviour of the autoscaler.",
        maxReplicas=f(INTEGER, "Upper limit of replicas.", required=True),
        minReplicas=f(INTEGER, "Lower limit of replicas (default 1)."),
        scaleTargetRef=f(_cross_version_object_reference(V1), "The resource to scale.",
                         required=True),
        targetCPUUtilizationPercentage=f(INTEGER, "Target average CPU utilization, in "
                                         "percent of the pods' requests."),
    ), "Desired behaviour of the autoscaler."),
    status=f(obj(
        f"{V1}.HorizontalPodAutoscalerStatus",
        "The observed state of the autoscaler.",
        currentCPUUtilizationPercentage=f(INTEGER, "Current average CPU utilization."),
        currentReplicas=f(INTEGER, "Replicas of the target last seen.", required=True),
        desiredReplicas=f(INTEGER, "Replicas desired last computed.", required=True),
        lastScaleTime=f(TIME, "Last time the autoscaler scaled the target."),
        observedGeneration=f(INTEGER, "Most recent generation observed."),
    ), "Observed state of the autoscaler. Read-only."),
)
