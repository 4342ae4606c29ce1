"""`describe hpa` (describe.go: HorizontalPodAutoscalerDescriber,
describeHorizontalPodAutoscalerV2).

    Name, Namespace, Labels, Annotations, CreationTimestamp, Reference
    Metrics: ( current / target ), one line per metric
    Min replicas, Max replicas, Behavior (when set), <Kind> pods: current / desired
    Conditions (a table), Events
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.quantity import QuantityError, canonical_quantity
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    print_annotations_multiline,
    print_labels_multiline,
    search_events,
)
from minikube_py.mkctl.describers.writer import (
    LEVEL_0,
    LEVEL_1,
    LEVEL_2,
    LEVEL_3,
    PrefixWriter,
    rfc1123z,
)

UNKNOWN = "<unknown>"


def _quantity(value: object) -> str:
    """Quantity.String()."""
    if not isinstance(value, (str, int, float)):
        return "0"
    try:
        return canonical_quantity(value)
    except QuantityError:
        return str(value)


def _go_quote(text: str) -> str:
    """%q of a metric name."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def horizontal_pod_autoscaler_describer(hpa: Obj, lookups: Lookups, settings: Settings
                                        ) -> str:
    """HorizontalPodAutoscalerDescriber: the autoscaler and its events."""
    meta = hpa.get("metadata") or {}
    events = search_events(lookups, meta.get("namespace", ""), meta.get("name", ""),
                           "HorizontalPodAutoscaler", meta.get("uid", ""), settings)
    return describe_horizontal_pod_autoscaler(hpa, events)


def _metric_line(w: PrefixWriter, spec: Obj, statuses: list[Obj], i: int) -> None:
    kind = spec.get("type")
    key = {"External": "external", "Pods": "pods", "Object": "object",
           "Resource": "resource", "ContainerResource": "containerResource"}.get(str(kind))
    if key is None:
        w.write(LEVEL_1, f"<unknown metric type {_go_quote(str(kind or ''))}>\n")
        return
    source = spec.get(key) or {}
    target = source.get("target") or {}
    status = statuses[i].get(key) if i < len(statuses) else None
    current_of = (status or {}).get("current") or {} if isinstance(status, dict) else {}
    name = _go_quote((source.get("metric") or {}).get("name", ""))
    if key in ("external", "object"):
        place = ""
        if key == "object":
            described = source.get("describedObject") or {}
            place = f" on {described.get('kind', '')}/{described.get('name', '')}"
        if target.get("averageValue") is not None:
            current = (_quantity(current_of["averageValue"])
                       if status and current_of.get("averageValue") is not None else UNKNOWN)
            w.write(LEVEL_1, f"{name}{place} (target average value):\t{current} / "
                             f"{_quantity(target['averageValue'])}\n")
        else:
            current = _quantity(current_of.get("value")) if status else UNKNOWN
            w.write(LEVEL_1, f"{name}{place} (target value):\t{current} / "
                             f"{_quantity(target.get('value'))}\n")
        return
    if key == "pods":
        current = _quantity(current_of.get("averageValue")) if status else UNKNOWN
        w.write(LEVEL_1, f"{name} on pods:\t{current} / "
                         f"{_quantity(target.get('averageValue'))}\n")
        return
    resource = source.get("name", "")
    what = (f"resource {resource} on pods" if key == "resource"
            else f'resource {resource} of container "{source.get("container", "")}" on pods')
    if target.get("averageValue") is not None:
        current = _quantity(current_of.get("averageValue")) if status else UNKNOWN
        w.write(LEVEL_1, f"{what}:\t{current} / {_quantity(target['averageValue'])}\n")
        return
    current = UNKNOWN
    if status and current_of.get("averageUtilization") is not None:
        current = (f"{current_of['averageUtilization']}% "
                   f"({_quantity(current_of.get('averageValue'))})")
    wanted = target.get("averageUtilization")
    shown = "<auto>" if wanted is None else f"{wanted}%"
    w.write(LEVEL_1, f"{what}  (as a percentage of request):\t{current} / {shown}\n")


def _direction(w: PrefixWriter, title: str, rules: Obj | None) -> None:
    """printDirectionBehavior."""
    if not isinstance(rules, dict):
        return
    w.write(LEVEL_1, f"{title}:\n")
    if rules.get("stabilizationWindowSeconds") is not None:
        w.write(LEVEL_2, f"Stabilization Window: {rules['stabilizationWindowSeconds']} "
                         "seconds\n")
    policies = [p for p in rules.get("policies") or [] if isinstance(p, dict)]
    if policies:
        w.write(LEVEL_2, f"Select Policy: {rules.get('selectPolicy') or 'Max'}\n")
        w.write(LEVEL_2, "Policies:\n")
        for policy in policies:
            w.write(LEVEL_3, f"- Type: {policy.get('type', '')}\tValue: "
                             f"{policy.get('value', 0)}\tPeriod: "
                             f"{policy.get('periodSeconds', 0)} seconds\n")


def describe_horizontal_pod_autoscaler(hpa: Obj, events: list[Obj] | None) -> str:
    """describeHorizontalPodAutoscalerV2."""
    meta, spec = hpa.get("metadata") or {}, hpa.get("spec") or {}
    status = hpa.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{meta.get('namespace', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, f"CreationTimestamp:\t{rfc1123z(meta.get('creationTimestamp'))}\n")
    w.write(LEVEL_0, f"Reference:\t{ref.get('kind', '')}/{ref.get('name', '')}\n")
    w.write(LEVEL_0, "Metrics:\t( current / target )\n")
    statuses = [s if isinstance(s, dict) else {} for s in status.get("currentMetrics") or []]
    for i, metric in enumerate(spec.get("metrics") or []):
        _metric_line(w, metric if isinstance(metric, dict) else {}, statuses, i)
    minimum = spec.get("minReplicas")
    w.write(LEVEL_0, f"Min replicas:\t{'<unset>' if minimum is None else minimum}\n")
    w.write(LEVEL_0, f"Max replicas:\t{spec.get('maxReplicas', 0)}\n")
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        w.write(LEVEL_0, "Behavior:\n")
        _direction(w, "Scale Up", behavior.get("scaleUp"))
        _direction(w, "Scale Down", behavior.get("scaleDown"))
    w.write(LEVEL_0, f"{ref.get('kind', '')} pods:\t")
    w.write(LEVEL_0, f"{status.get('currentReplicas', 0)} current / "
                     f"{status.get('desiredReplicas', 0)} desired\n")
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    if conditions:
        w.write(LEVEL_0, "Conditions:\n")
        w.write(LEVEL_1, "Type\tStatus\tReason\tMessage\n")
        w.write(LEVEL_1, "----\t------\t------\t-------\n")
        for c in conditions:
            w.write(LEVEL_1, f"{c.get('type', '')}\t{c.get('status', '')}\t"
                             f"{c.get('reason', '')}\t{c.get('message', '')}\n")
    if events is not None:
        describe_events(events, w)
    return w.tabbed()
