"""autoscaling: HorizontalPodAutoscalers (upstream's printHorizontalPodAutoscaler)."""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict
from minikube_py.api.quantity import canonical_quantity
from minikube_py.apiserver.endpoints.tables.cells import age, name_of
from minikube_py.apiserver.endpoints.tables.table import AGE, NAME, Cells, column
from minikube_py.apiserver.registry.hpa_conversion import hpa_v1_to_v2

HORIZONTAL_POD_AUTOSCALER_COLUMNS = (
    NAME,
    column("Reference", "string", "scaleTargetRef points to the target resource to scale, "
           "and is used to the pods for which metrics should be collected, as well as to "
           "actually change the replica count."),
    column("Targets", "string", "metrics contains the specifications for which to use to "
           "calculate the desired replica count (the maximum replica count across all "
           "metrics will be used)."),
    column("MinPods", "string", "minReplicas is the lower limit for the number of replicas "
           "to which the autoscaler can scale down.  It defaults to 1 pod."),
    column("MaxPods", "string", "maxReplicas is the upper limit for the number of replicas "
           "to which the autoscaler can scale up. It cannot be less that minReplicas."),
    column("Replicas", "string", "currentReplicas is current number of replicas of pods "
           "managed by this autoscaler, as last seen by the autoscaler."),
    AGE,
)
UNKNOWN = "<unknown>"
MAX_SHOWN_METRICS = 2


def _quantity(value: object) -> str:
    """Quantity.String(): the canonical form ("0" for an unset quantity)."""
    if value is None:
        return "0"
    if not isinstance(value, (str, int, float)):
        return str(value)
    try:
        return canonical_quantity(value)
    except ValueError:
        return str(value)


def _status_source(statuses: list[Obj], i: int, key: str) -> Obj | None:
    if i < len(statuses) and isinstance(statuses[i].get(key), dict):
        return statuses[i][key]
    return None


def _format_metric(spec: Obj, statuses: list[Obj], i: int) -> str:
    """One metric of TARGETS: `current/target`, `<unknown>` until a status has it."""
    kind = spec.get("type")
    key = {"External": "external", "Pods": "pods", "Object": "object", "Resource": "resource",
           "ContainerResource": "containerResource"}.get(str(kind))
    if key is None:
        return "<unknown type>"
    source = as_dict(spec.get(key))
    target = as_dict(source.get("target"))
    status = _status_source(statuses, i, key)
    current_of = as_dict(as_dict(status).get("current"))
    if key in ("external", "object"):
        if target.get("averageValue") is not None:
            current = (_quantity(current_of["averageValue"])
                       if status is not None and current_of.get("averageValue") is not None
                       else UNKNOWN)
            return f"{current}/{_quantity(target['averageValue'])} (avg)"
        current = _quantity(current_of.get("value")) if status is not None else UNKNOWN
        return f"{current}/{_quantity(target.get('value'))}"
    if key == "pods":
        current = _quantity(current_of.get("averageValue")) if status is not None else UNKNOWN
        return f"{current}/{_quantity(target.get('averageValue'))}"
    name = source.get("name", "")
    if target.get("averageValue") is not None:
        current = _quantity(current_of.get("averageValue")) if status is not None else UNKNOWN
        return f"{name}: {current}/{_quantity(target['averageValue'])}"
    utilization = current_of.get("averageUtilization")
    current = f"{utilization}%" if status is not None and utilization is not None else UNKNOWN
    wanted = target.get("averageUtilization")
    return f"{name}: {current}/{'<auto>' if wanted is None else f'{wanted}%'}"


def format_hpa_metrics(specs: list[Obj], statuses: list[Obj]) -> str:
    """formatHPAMetrics: the first two metrics, then `+ N more...`."""
    if not specs:
        return "<none>"
    shown = [_format_metric(spec, statuses, i) for i, spec in enumerate(specs)]
    text = ", ".join(shown[:MAX_SHOWN_METRICS])
    if len(shown) > MAX_SHOWN_METRICS:
        return f"{text} + {len(shown) - MAX_SHOWN_METRICS} more..."
    return text


def print_horizontal_pod_autoscaler(hpa: Obj, now: datetime) -> Cells:
    """printHorizontalPodAutoscaler: reference, targets, min and max pods, replicas; an
    autoscaling/v1 object is read in its v2 form, as upstream prints the internal one."""
    if hpa.get("apiVersion") == "autoscaling/v1":
        hpa = hpa_v1_to_v2(hpa)
    spec, status = as_dict(hpa.get("spec")), as_dict(hpa.get("status"))
    ref = as_dict(spec.get("scaleTargetRef"))
    min_replicas = spec.get("minReplicas")
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    current = [m if isinstance(m, dict) else {} for m in status.get("currentMetrics") or []]
    return [
        name_of(hpa),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        format_hpa_metrics(metrics, current),
        "<unset>" if min_replicas is None else str(min_replicas),
        spec.get("maxReplicas", 0),
        status.get("currentReplicas", 0),
        age(hpa, now),
    ]
