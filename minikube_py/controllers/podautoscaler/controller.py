"""The HorizontalPodAutoscaler controller (upstream's pkg/controller/podautoscaler/horizontal.go).

Every HPA is synced every --horizontal-pod-autoscaler-sync-period (15 s), whatever happens;
a new or changed one waits for the next period too, as upstream's queue makes it (so a new
HPA shows `<unknown>` targets for up to a period):

    get the target's scale subresource          (AbleToScale: SucceededGetScale | FailedGetScale)
    current replicas 0 -> scaling disabled       (ScalingActive: ScalingDisabled)
    the scale's selector: required, and its pods selected by no other HPA
                                                 (ScalingActive: InvalidSelector,
                                                  AmbiguousSelector)
    outside [min, max] -> back to the bound
    otherwise, for each metric: fetch it (metrics.k8s.io for Resource and ContainerResource,
        custom.metrics.k8s.io for Pods and Object, external.metrics.k8s.io for External),
        ask the replica calculator; the largest proposal wins (ScalingActive: ValidMetricFound)
    normalize: stabilization windows and behavior policies, min/max (ScalingLimited)
    write the scale subresource when the count changes (SuccessfulRescale event)
    write status: current and desired replicas, current metrics, conditions

What it remembers between syncs (recent recommendations and scale events, normalization.py)
is what upstream keeps in memory too: a restart forgets it.
"""

from __future__ import annotations

import copy
import logging
from datetime import datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import quote

from minikube_py.api import Obj
from minikube_py.api.autoscaling import generate_scale_down_rules, generate_scale_up_rules
from minikube_py.api.meta import parse_rfc3339, rfc3339
from minikube_py.api.quantity import QuantityError, canonical_quantity, cpu_millis
from minikube_py.api.resources import RESOURCES, Resource
from minikube_py.api.selectors import (
    LabelSelector,
    SelectorError,
    label_selector_to_string,
    parse_label_selector,
)
from minikube_py.client.errors import APIStatusError
from minikube_py.client.informer import EventHandler
from minikube_py.controllers.base import Controller, ControllerContext
from minikube_py.controllers.podautoscaler.normalization import (
    NormalizationArg,
    ScalingHistory,
    TimestampedRecommendation,
    convert_desired_replicas_with_rules,
)
from minikube_py.controllers.podautoscaler.replica_calculator import (
    ZERO_TIME,
    PodMetric,
    ReplicaCalculationError,
    ReplicaCalculator,
    Tolerances,
    pod_metrics_info,
)

log = logging.getLogger(__name__)

DEFAULT_WINDOW = timedelta(minutes=1)
"""metricServerDefaultMetricWindow: a custom metric's window when it gives none."""

METRICS_API = "/apis/metrics.k8s.io/v1beta1"
CUSTOM_METRICS_API = "/apis/custom.metrics.k8s.io/v1beta2"
EXTERNAL_METRICS_API = "/apis/external.metrics.k8s.io/v1beta1"


class MetricError(Exception):
    """A metric could not give a proposal: its condition reason, the error, and what the
    condition and event say (upstream's inner error, unless it is the same)."""

    def __init__(self, reason: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.reason = reason
        self.detail = detail or message


def milli_quantity(milli: int) -> str:
    """resource.NewMilliQuantity(milli, DecimalSI).String()."""
    return canonical_quantity(f"{milli}m")


def _time(value: Any) -> datetime:
    return parse_rfc3339(value) if isinstance(value, str) and value else ZERO_TIME


def _milli(value: Any) -> int:
    try:
        return cpu_millis(value)
    except (QuantityError, TypeError, ValueError):
        return 0


def go_selector(selector: Obj | None) -> str:
    """A metav1.LabelSelector as Go's %+v prints it (its generated String method)."""
    if selector is None:
        return "nil"
    labels = "".join(f"{key}: {value}," for key, value in
                     sorted((selector.get("matchLabels") or {}).items()))
    expressions = "".join(
        f"LabelSelectorRequirement{{Key:{e.get('key', '')},Operator:{e.get('operator', '')},"
        f"Values:[{' '.join(e.get('values') or [])}],}},"
        for e in selector.get("matchExpressions") or [])
    return (f"&LabelSelector{{MatchLabels:map[string]string{{{labels}}},"
            f"MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}")


def set_condition(hpa: Obj, condition_type: str, status: str, reason: str, message: str,
                  now: datetime) -> None:
    """setCondition: add or update one condition; its transition time moves only when the
    status changes."""
    conditions = hpa.setdefault("status", {}).setdefault("conditions", [])
    existing = next((c for c in conditions if c.get("type") == condition_type), None)
    if existing is None:
        existing = {"type": condition_type}
        conditions.append(existing)
    if existing.get("status") != status:
        existing["lastTransitionTime"] = rfc3339(now)
    existing.update(status=status, reason=reason, message=message)


def tolerances_for(hpa: Obj, default: float) -> Tolerances:
    """tolerancesForHpa: each direction's behavior tolerance, else the flag's."""
    behavior = (hpa.get("spec") or {}).get("behavior") or {}
    down = (behavior.get("scaleDown") or {}).get("tolerance")
    up = (behavior.get("scaleUp") or {}).get("tolerance")
    return Tolerances(_milli(down) / 1000 if down is not None else default,
                      _milli(up) / 1000 if up is not None else default)


def scale_resource_for(api_version: str, kind: str) -> Resource | None:
    """The REST mapping of a scale target: the served resource of that group and kind with
    a scale subresource."""
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    for resource in RESOURCES:
        if resource.group == group and resource.kind == kind and "scale" in resource.subresources:
            return resource
    return None


class HorizontalController(Controller):
    """Scales workloads' scale subresources to keep their metrics at the HPAs' targets."""

    name = "horizontalpodautoscaling"
    event_source = "horizontal-pod-autoscaler"
    workers: ClassVar[int] = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        options = ctx.options
        self.sync_period = options.horizontal_pod_autoscaler_sync_period
        self.tolerance = options.horizontal_pod_autoscaler_tolerance
        self.history = ScalingHistory(timedelta(
            seconds=options.horizontal_pod_autoscaler_downscale_stabilization))
        # hpaSelectors: the pod selector of each HPA's target, as last read from its scale
        self.hpa_selectors: dict[str, LabelSelector] = {}
        self.calculator = ReplicaCalculator(
            timedelta(seconds=options.horizontal_pod_autoscaler_cpu_initialization_period),
            timedelta(seconds=options.horizontal_pod_autoscaler_initial_readiness_delay))
        self.hpas = self.informer("horizontalpodautoscalers", "autoscaling")
        self.pods = self.informer("pods")
        self.traced = self.hpas
        self.hpas.add_event_handler(EventHandler(
            on_add=self._enqueue_hpa, on_update=lambda _old, new: self._enqueue_hpa(new),
            on_delete=self.enqueue))

    def _enqueue_hpa(self, hpa: Obj) -> None:
        """enqueueHPA: a new or changed HPA is synced one sync period later, as upstream's
        fixed-interval rate limiter does (a pending sync of it wins); only a deletion is
        handled at once (its memory is dropped)."""
        self.enqueue_after(hpa, self.sync_period)

    # -- sync ------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """reconcileKey: forget a deleted HPA, else reconcile it and come back next period."""
        hpa = self.hpas.store.get(key)
        if hpa is None:
            self.history.forget(key)
            self.hpa_selectors.pop(key, None)
            return
        try:
            await self.reconcile_autoscaler(copy.deepcopy(hpa), key)
        finally:
            if self.hpas.store.get(key) is not None:
                self.queue.add_after(key, self.sync_period)

    async def reconcile_autoscaler(self, hpa: Obj, key: str) -> None:
        """reconcileAutoscaler: one pass over one HPA (the pipeline in the module doc)."""
        now = self.now()
        original_status = copy.deepcopy(hpa.get("status") or {})
        spec = hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        namespace = hpa["metadata"]["namespace"]
        reference = f"{ref.get('kind')}/{namespace}/{ref.get('name')}"
        resource = scale_resource_for(ref.get("apiVersion", ""), ref.get("kind", ""))
        scale: Obj = {}
        scale_path = ""
        failed = ""
        if resource is None:
            failed = (f'no matches for kind "{ref.get("kind", "")}" in group '
                      f'"{ref.get("apiVersion", "").rpartition("/")[0]}"')
        else:
            scale_path = self.client.resource_for(resource).path(namespace, ref.get("name"),
                                                                 "scale")
            try:
                scale = await self.client.request("GET", scale_path)
            except APIStatusError as error:
                failed = str(error)
        if failed:
            self.recorder.event(hpa, "Warning", "FailedGetScale", failed)
            set_condition(hpa, "AbleToScale", "False", "FailedGetScale",
                          f"the HPA controller was unable to get the target's current scale: "
                          f"{failed}", now)
            await self._update_status_if_needed(original_status, hpa)
            raise RuntimeError(f"failed to query scale subresource for {reference}: {failed}")
        set_condition(hpa, "AbleToScale", "True", "SucceededGetScale",
                      "the HPA controller was able to get the target's current scale", now)
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        self.history.recommendations.setdefault(key, [TimestampedRecommendation(current, now)])
        min_replicas = spec.get("minReplicas", 1)
        max_replicas = int(spec.get("maxReplicas") or 0)
        statuses: list[Obj] = []
        desired = 0
        reason = ""
        rescale = True
        failure: Exception | None = None
        if current == 0 and min_replicas != 0:
            desired, rescale = 0, False
            set_condition(hpa, "ScalingActive", "False", "ScalingDisabled",
                          "scaling is disabled since the replica count of the target is zero",
                          now)
        elif current > max_replicas:
            reason, desired = "Current number of replicas above Spec.MaxReplicas", max_replicas
        elif current < min_replicas:
            reason, desired = "Current number of replicas below Spec.MinReplicas", min_replicas
        else:
            proposal, metric, statuses, failure = await self.compute_replicas_for_metrics(
                hpa, scale, now)
            if proposal == -1:
                self._set_status(hpa, current, (hpa.get("status") or {}).get(
                    "desiredReplicas", 0), statuses, False, now)
                await self._update_status_if_needed(original_status, hpa)
                self.recorder.event(hpa, "Warning", "FailedComputeMetricsReplicas",
                                    str(failure))
                raise RuntimeError(f"failed to compute desired number of replicas based on "
                                   f"listed metrics for {reference}: {failure}")
            desired = proposal
            if desired > current:
                reason = f"{metric} above target"
            if desired < current:
                reason = "All metrics below target"
            if spec.get("behavior") is None:
                desired = self.normalize_desired_replicas(hpa, key, current, desired,
                                                          min_replicas, now)
            else:
                desired = self.normalize_desired_replicas_with_behaviors(
                    hpa, key, current, desired, min_replicas, now)
            rescale = desired != current
        if rescale:
            scale["spec"]["replicas"] = desired
            try:
                await self.client.request("PUT", scale_path, body=scale)
            except APIStatusError as error:
                self.recorder.event(hpa, "Warning", "FailedRescale",
                                    f"New size: {desired}; reason: {reason}; error: {error}")
                set_condition(hpa, "AbleToScale", "False", "FailedUpdateScale",
                              f"the HPA controller was unable to update the target scale: "
                              f"{error}", now)
                self._set_status(hpa, current, (hpa.get("status") or {}).get(
                    "desiredReplicas", 0), statuses, False, now)
                await self._update_status_if_needed(original_status, hpa)
                raise RuntimeError(f"failed to rescale {reference}: {error}") from error
            set_condition(hpa, "AbleToScale", "True", "SucceededRescale",
                          f"the HPA controller was able to update the target scale to {desired}",
                          now)
            self.recorder.event(hpa, "Normal", "SuccessfulRescale",
                                f"New size: {desired}; reason: {reason}")
            self.history.store_scale_event(spec.get("behavior"), key, current, desired, now)
            log.info("Successfully rescaled HPA %s from %d to %d: %s", key, current, desired,
                     reason)
        else:
            desired = current
        self._set_status(hpa, current, desired, statuses, rescale, now)
        await self._update_status_if_needed(original_status, hpa)
        if failure is not None:
            raise failure

    # -- metrics ---------------------------------------------------------------------------

    async def compute_replicas_for_metrics(self, hpa: Obj, scale: Obj, now: datetime
                                           ) -> tuple[int, str, list[Obj], Exception | None]:
        """computeReplicasForMetrics: the largest proposal of the metrics that worked; -1
        when none did, or when a failed one might have asked for more than a scale-down."""
        selector_text = (scale.get("status") or {}).get("selector") or ""
        namespace = hpa["metadata"]["namespace"]
        if not selector_text:
            self.recorder.event(hpa, "Warning", "SelectorRequired", "selector is required")
            set_condition(hpa, "ScalingActive", "False", "InvalidSelector",
                          "the HPA target's scale is missing a selector", now)
            return -1, "", [], RuntimeError("selector is required")
        try:
            selector = parse_label_selector(selector_text)
        except SelectorError as error:
            message = ("couldn't convert selector into a corresponding internal selector "
                       f"object: {error}")
            self.recorder.event(hpa, "Warning", "InvalidSelector", message)
            set_condition(hpa, "ScalingActive", "False", "InvalidSelector", message, now)
            return -1, "", [], RuntimeError(message)
        key = f"{namespace}/{hpa['metadata']['name']}"
        self.hpa_selectors[key] = selector
        pods = [pod for pod in self.pods.store.list(namespace)
                if selector.matches(pod["metadata"].get("labels") or {})]
        selecting = sorted({other for other, chosen in self.hpa_selectors.items()
                            if other.startswith(f"{namespace}/") for pod in pods
                            if chosen.matches(pod["metadata"].get("labels") or {})})
        if len(selecting) > 1:
            names = " ".join("{" + other.split("/", 1)[1] + " " + namespace + "}"
                             for other in selecting)
            message = (f"pods by selector {selector_text} are controlled by multiple HPAs: "
                       f"[{names}]")
            self.recorder.event(hpa, "Warning", "AmbiguousSelector", message)
            set_condition(hpa, "ScalingActive", "False", "AmbiguousSelector", message, now)
            return -1, "", [], RuntimeError(message)
        spec_replicas = int((scale.get("spec") or {}).get("replicas") or 0)
        status_replicas = int((scale.get("status") or {}).get("replicas") or 0)
        metrics = [m for m in (hpa.get("spec") or {}).get("metrics") or [] if isinstance(m, dict)]
        statuses: list[Obj] = [{"type": ""} for _ in metrics]
        replicas, metric_name = 0, ""
        invalid = 0
        first_error: MetricError | None = None
        tolerances = tolerances_for(hpa, self.tolerance)
        for i, spec in enumerate(metrics):
            try:
                proposal, name, status = await self.compute_replicas_for_metric(
                    hpa, spec, spec_replicas, status_replicas, selector_text, pods, tolerances,
                    now)
            except MetricError as error:
                if first_error is None:
                    first_error = error
                invalid += 1
                continue
            statuses[i] = status
            if replicas == 0 or proposal > replicas:
                replicas, metric_name = proposal, name
        failure: Exception | None = None
        if first_error is not None:
            failure = RuntimeError(f"invalid metrics ({invalid} invalid out of {len(metrics)}),"
                                   f" first error is: {first_error}")
        if invalid >= len(metrics) or (invalid > 0 and replicas < spec_replicas):
            assert first_error is not None or not metrics
            if first_error is not None:
                set_condition(hpa, "ScalingActive", "False", first_error.reason,
                              "the HPA was unable to compute the replica count: "
                              f"{first_error.detail}", now)
            return -1, "", statuses, failure
        set_condition(hpa, "ScalingActive", "True", "ValidMetricFound",
                      f"the HPA was able to successfully calculate a replica count from "
                      f"{metric_name}", now)
        return replicas, metric_name, statuses, failure

    async def compute_replicas_for_metric(
            self, hpa: Obj, spec: Obj, spec_replicas: int, status_replicas: int,
            selector: str, pods: list[Obj], tolerances: Tolerances, now: datetime
    ) -> tuple[int, str, Obj]:
        """computeReplicasForMetric: one metric's proposal, its name and its status."""
        kind = spec.get("type")
        namespace = hpa["metadata"]["namespace"]
        if kind in ("Resource", "ContainerResource"):
            key = "resource" if kind == "Resource" else "containerResource"
            source = spec.get(key) or {}
            container = source.get("container", "") if kind == "ContainerResource" else ""
            reason = ("FailedGetResourceMetric" if kind == "Resource"
                      else "FailedGetContainerResourceMetric")
            resource_name = source.get("name", "")
            try:
                proposal, current, name = await self._resource_replicas(
                    spec_replicas, source.get("target") or {}, resource_name, namespace,
                    container, selector, pods, tolerances, kind, now)
            except (ReplicaCalculationError, ValueError) as error:
                target = source.get("target") or {}
                what = "usage" if target.get("averageValue") is not None else "utilization"
                detail = (f"failed to get {resource_name} {what}: {error}"
                          if isinstance(error, ReplicaCalculationError) else str(error))
                message = (f"failed to get {resource_name} resource metric value: {detail}"
                           if kind == "Resource"
                           else f"failed to get {container} container metric value: {detail}")
                raise self._unable(hpa, reason, detail, message) from error
            status: Obj = {"name": resource_name, "current": current}
            if container:
                status["container"] = container
            return proposal, name, {"type": kind, key: status}
        if kind == "Pods":
            return await self._pods_replicas(hpa, spec, spec_replicas, selector, pods,
                                             tolerances, now)
        if kind == "Object":
            return await self._object_replicas(hpa, spec, spec_replicas, status_replicas,
                                               pods, tolerances)
        if kind == "External":
            return await self._external_replicas(hpa, spec, spec_replicas, status_replicas,
                                                 pods, tolerances)
        message = f'unknown metric source type "{kind}"'
        self.recorder.event(hpa, "Warning", "InvalidMetricSourceType", message)
        raise MetricError("InvalidMetricSourceType", message)

    async def _resource_replicas(self, current: int, target: Obj, resource: str,
                                 namespace: str, container: str, selector: str,
                                 pods: list[Obj], tolerances: Tolerances, kind: str,
                                 now: datetime) -> tuple[int, Obj, str]:
        """computeStatusForResourceMetricGeneric: utilization or average value."""
        try:
            listed = await self.client.request(
                "GET", f"{METRICS_API}/namespaces/{namespace}/pods",
                params={"labelSelector": selector})
        except APIStatusError as error:
            raise ReplicaCalculationError(
                f"unable to get metrics for resource {resource}: unable to fetch metrics from "
                f"resource metrics API: {error}") from error
        try:
            metrics = pod_metrics_info(listed.get("items") or [], resource, container)
        except ReplicaCalculationError as error:
            raise ReplicaCalculationError(
                f"unable to get metrics for resource {resource}: {error}") from error
        if target.get("averageValue") is not None:
            proposal, raw, _ = self.calculator.get_metric_replicas(
                current, _milli(target["averageValue"]), tolerances, pods, metrics,
                resource=resource, now=now)
            return proposal, {"averageValue": milli_quantity(raw)}, f"{resource} resource"
        if target.get("averageUtilization") is None:
            raise ValueError("invalid resource metric source: neither an average utilization "
                             "target nor an average value (usage) target was set")
        proposal, utilization, raw, _ = self.calculator.get_resource_replicas(
            current, int(target["averageUtilization"]), resource, tolerances, pods, metrics,
            container, now=now)
        name = (f"{resource} resource utilization (percentage of request)" if kind == "Resource"
                else f"{resource} container resource utilization (percentage of request)")
        return proposal, {"averageUtilization": utilization,
                          "averageValue": milli_quantity(raw)}, name

    def _unable(self, hpa: Obj, reason: str, detail: str, message: str) -> MetricError:
        """getUnableComputeReplicaCountCondition: a Warning event with the inner error, and
        the metric's error."""
        self.recorder.event(hpa, "Warning", reason, detail)
        return MetricError(reason, message, detail)

    async def _pods_replicas(self, hpa: Obj, spec: Obj, spec_replicas: int, selector: str,
                             pods: list[Obj], tolerances: Tolerances, now: datetime
                             ) -> tuple[int, str, Obj]:
        """computeStatusForPodsMetric: a target average value of a custom metric per pod."""
        source = spec.get("pods") or {}
        metric = source.get("metric") or {}
        name = metric.get("name", "")
        try:
            metric_selector = label_selector_to_string(metric["selector"]) if metric.get(
                "selector") is not None else ""
        except SelectorError as error:
            raise self._unable(hpa, "FailedGetPodsMetric", str(error),
                               f"failed to get pods metric value: {error}") from error
        try:
            values = await self._raw_metric(hpa["metadata"]["namespace"], name, selector,
                                            metric_selector)
        except ReplicaCalculationError as error:
            detail = f"unable to get metric {name}: {error}"
            raise self._unable(hpa, "FailedGetPodsMetric", detail,
                               f"failed to get pods metric value: {detail}") from error
        target = _milli((source.get("target") or {}).get("averageValue"))
        try:
            proposal, usage, _ = self.calculator.get_metric_replicas(
                spec_replicas, target, tolerances, pods, values, now=now)
        except ReplicaCalculationError as error:
            raise self._unable(hpa, "FailedGetPodsMetric", str(error),
                               f"failed to get pods metric value: {error}") from error
        return proposal, f"pods metric {name}", {"type": "Pods", "pods": {
            "metric": metric, "current": {"averageValue": milli_quantity(usage)}}}

    async def _raw_metric(self, namespace: str, name: str, selector: str,
                          metric_selector: str) -> dict[str, PodMetric]:
        """GetRawMetric: a custom metric of every selected pod (custom.metrics.k8s.io)."""
        params = {"labelSelector": selector}
        if metric_selector:
            params["metricLabelSelector"] = metric_selector
        items = await self._metric_items(
            "custom", f"{CUSTOM_METRICS_API}/namespaces/{namespace}/pods/*/{quote(name)}",
            params)
        values: dict[str, PodMetric] = {}
        for item in items:
            window = item.get("windowSeconds")
            values[(item.get("describedObject") or {}).get("name", "")] = PodMetric(
                _milli(item.get("value")), _time(item.get("timestamp")),
                timedelta(seconds=window) if isinstance(window, int) else DEFAULT_WINDOW)
        return values

    async def _object_metric(self, namespace: str, described: Obj, name: str,
                             metric_selector: str) -> int:
        """GetObjectMetric: one object's custom metric (a Namespace's is root-scoped)."""
        kind = described.get("kind", "")
        group = (described.get("apiVersion") or "").rpartition("/")[0]
        if kind == "Namespace":
            path = f"{CUSTOM_METRICS_API}/namespaces/{namespace}/metrics/{quote(name)}"
        else:
            resource = next((r for r in RESOURCES if r.kind == kind and r.group == group),
                            None) or next((r for r in RESOURCES if r.kind == kind), None)
            if resource is None:
                raise ReplicaCalculationError(
                    f"unable to map kind {kind} to resource: no matches for kind "
                    f'"{kind}" in group "{group}"')
            group_resource = (f"{resource.plural}.{resource.group}" if resource.group
                              else resource.plural)  # qualResourceForKind
            path = (f"{CUSTOM_METRICS_API}/namespaces/{namespace}/{group_resource}/"
                    f"{described.get('name', '')}/{quote(name)}")
        items = await self._metric_items(
            "custom", path, {"metricLabelSelector": metric_selector} if metric_selector else None)
        return _milli(items[0].get("value"))

    async def _object_replicas(self, hpa: Obj, spec: Obj, spec_replicas: int,
                               status_replicas: int, pods: list[Obj], tolerances: Tolerances
                               ) -> tuple[int, str, Obj]:
        """computeStatusForObjectMetric: a value or an average value per pod of one object's
        metric (custom.metrics.k8s.io)."""
        source = spec.get("object") or {}
        described = source.get("describedObject") or {}
        metric = source.get("metric") or {}
        name = metric.get("name", "")
        target = source.get("target") or {}
        namespace = hpa["metadata"]["namespace"]

        def failed(detail: str) -> MetricError:
            return self._unable(hpa, "FailedGetObjectMetric", detail,
                                f"failed to get object metric value: {detail}")

        try:
            metric_selector = label_selector_to_string(metric["selector"]) if metric.get(
                "selector") is not None else ""
        except SelectorError as error:
            raise failed(str(error)) from error
        value_target = target.get("type") == "Value" and target.get("value") is not None
        average_target = (target.get("type") == "AverageValue"
                          and target.get("averageValue") is not None)
        if not value_target and not average_target:
            raise failed("invalid object metric source: neither a value target nor an "
                         "average value target was set")
        try:
            usage = await self._object_metric(namespace, described, name, metric_selector)
        except ReplicaCalculationError as error:
            detail = (f"unable to get metric {name}: {described.get('kind')} on "
                      f"{namespace} {described.get('name')}/{error}")
            if average_target:
                raise self._unable(hpa, "FailedGetObjectMetric", detail,
                                   f"failed to get object metric value: failed to get {name} "
                                   f"object metric: {detail}") from error
            raise failed(detail) from error
        status: Obj = {"describedObject": described, "metric": metric}
        if value_target:
            try:
                proposal, _ = self.calculator.get_object_metric_replicas(
                    spec_replicas, usage, _milli(target["value"]), tolerances, pods)
            except ReplicaCalculationError as error:
                raise failed(str(error)) from error
            status["current"] = {"value": milli_quantity(usage)}
            return proposal, f"{described.get('kind')} metric {name}", {
                "type": "Object", "object": status}
        proposal, average = self.calculator.get_object_per_pod_metric_replicas(
            status_replicas, usage, _milli(target["averageValue"]), tolerances)
        status["current"] = {"averageValue": milli_quantity(average)}
        return proposal, f"external metric {name}({go_selector(metric.get('selector'))})", {
            "type": "Object", "object": status}

    async def _external_replicas(self, hpa: Obj, spec: Obj, spec_replicas: int,
                                 status_replicas: int, pods: list[Obj], tolerances: Tolerances
                                 ) -> tuple[int, str, Obj]:
        """computeStatusForExternalMetric: the sum of an external metric's series against a
        value, or against an average value per pod (external.metrics.k8s.io)."""
        source = spec.get("external") or {}
        metric = source.get("metric") or {}
        name = metric.get("name", "")
        target = source.get("target") or {}
        namespace = hpa["metadata"]["namespace"]
        shown = f"{name}({go_selector(metric.get('selector'))})"
        per_pod = target.get("averageValue") is not None
        if not per_pod and target.get("value") is None:
            detail = ("invalid external metric source: neither a value target nor an average "
                      "value target was set")
            raise self._unable(hpa, "FailedGetExternalMetric", detail,
                               f"failed to get external metric value: {detail}")
        outer = (f"failed to get {name} external metric" if per_pod
                 else f"failed to get external metric {name}")
        try:
            selector = label_selector_to_string(metric["selector"]) if metric.get(
                "selector") is not None else ""
            values = await self._external_metric(namespace, name, selector)
        except (ReplicaCalculationError, SelectorError) as error:
            detail = (f"unable to get external metric {namespace}/{name}/"
                      f"{go_selector(metric.get('selector'))}: {error}")
            raise self._unable(hpa, "FailedGetExternalMetric", detail,
                               f"failed to get external metric value: {outer}: {detail}"
                               ) from error
        try:
            if per_pod:
                proposal, usage = self.calculator.get_external_per_pod_metric_replicas(
                    status_replicas, values, _milli(target["averageValue"]), tolerances)
                current = {"averageValue": milli_quantity(usage)}
            else:
                proposal, usage = self.calculator.get_external_metric_replicas(
                    spec_replicas, values, _milli(target["value"]), tolerances, pods)
                current = {"value": milli_quantity(usage)}
        except ReplicaCalculationError as error:
            raise self._unable(hpa, "FailedGetExternalMetric", str(error),
                               f"failed to get external metric value: {outer}: {error}"
                               ) from error
        return proposal, f"external metric {shown}", {"type": "External", "external": {
            "metric": metric, "current": current}}

    async def _external_metric(self, namespace: str, name: str, selector: str) -> list[int]:
        """GetExternalMetric: the values of an external metric's matching series."""
        items = await self._metric_items(
            "external", f"{EXTERNAL_METRICS_API}/namespaces/{namespace}/{quote(name)}",
            {"labelSelector": selector} if selector else None)
        return [_milli(item.get("value")) for item in items]

    async def _metric_items(self, api: str, path: str, params: dict[str, str] | None
                            ) -> list[Obj]:
        """A list from the custom or external metrics API: its items, or upstream's error
        when the call fails or returns none."""
        try:
            listed = await self.client.request("GET", path, params=params)
        except APIStatusError as error:
            raise ReplicaCalculationError(
                f"unable to fetch metrics from {api} metrics API: {error}") from error
        items: list[Obj] = listed.get("items") or []
        if not items:
            raise ReplicaCalculationError(f"no metrics returned from {api} metrics API")
        return items

    # -- normalization and status ----------------------------------------------------------

    def normalize_desired_replicas(self, hpa: Obj, key: str, current: int, prenormalized: int,
                                   min_replicas: int, now: datetime) -> int:
        """normalizeDesiredReplicas: an HPA without behavior."""
        stabilized = self.history.stabilize_recommendation(key, prenormalized, now)
        if stabilized != prenormalized:
            set_condition(hpa, "AbleToScale", "True", "ScaleDownStabilized",
                          "recent recommendations were higher than current one, applying the "
                          "highest recent recommendation", now)
        else:
            set_condition(hpa, "AbleToScale", "True", "ReadyForNewScale",
                          "recommended size matches current size", now)
        desired, reason, message = convert_desired_replicas_with_rules(
            current, stabilized, min_replicas, int(hpa["spec"].get("maxReplicas") or 0))
        set_condition(hpa, "ScalingLimited", "False" if desired == stabilized else "True",
                      reason, message, now)
        return desired

    def normalize_desired_replicas_with_behaviors(self, hpa: Obj, key: str, current: int,
                                                  prenormalized: int, min_replicas: int,
                                                  now: datetime) -> int:
        """normalizeDesiredReplicasWithBehaviors: stabilization windows, then the policies'
        rate; an unset scale-down window is the flag's."""
        behavior = hpa["spec"]["behavior"]
        scale_down = generate_scale_down_rules(behavior.get("scaleDown"))
        if scale_down.get("stabilizationWindowSeconds") is None:
            scale_down["stabilizationWindowSeconds"] = int(
                self.history.downscale_stabilisation_window.total_seconds())
        arg = NormalizationArg(key, generate_scale_up_rules(behavior.get("scaleUp")),
                               scale_down, min_replicas,
                               int(hpa["spec"].get("maxReplicas") or 0), current, prenormalized)
        stabilized, reason, message = self.history.stabilize_recommendation_with_behaviors(
            arg, now)
        arg.desired_replicas = stabilized
        if stabilized != prenormalized:
            set_condition(hpa, "AbleToScale", "True", reason, message, now)
        else:
            set_condition(hpa, "AbleToScale", "True", "ReadyForNewScale",
                          "recommended size matches current size", now)
        desired, reason, message = self.history.convert_desired_replicas_with_behavior_rate(
            arg, now)
        set_condition(hpa, "ScalingLimited", "False" if desired == stabilized else "True",
                      reason, message, now)
        return desired

    @staticmethod
    def _set_status(hpa: Obj, current: int, desired: int, metrics: list[Obj], rescale: bool,
                    now: datetime) -> None:
        """setStatus: replicas, metrics and conditions; lastScaleTime on a rescale."""
        old = hpa.get("status") or {}
        status: Obj = {"currentReplicas": current, "desiredReplicas": desired}
        if rescale:
            status["lastScaleTime"] = rfc3339(now)
        elif old.get("lastScaleTime"):
            status["lastScaleTime"] = old["lastScaleTime"]
        if metrics:
            status["currentMetrics"] = metrics
        if old.get("conditions"):
            status["conditions"] = old["conditions"]
        hpa["status"] = status

    async def _update_status_if_needed(self, original: Obj, hpa: Obj) -> None:
        """updateStatusIfNeeded: write /status only when it changed."""
        if original == (hpa.get("status") or {}):
            return
        try:
            await self.client.resource("horizontalpodautoscalers", "autoscaling").update_status(
                hpa)
        except APIStatusError as error:
            self.recorder.event(hpa, "Warning", "FailedUpdateStatus", str(error))
            raise RuntimeError(f"failed to update status for {hpa['metadata']['name']}: "
                               f"{error}") from error

