"""Cell formatting shared by every printer: ages, label selectors, container lists.

These are the small helpers of upstream's `pkg/printers/internalversion/printers.go`
and `metav1`/`labels` formatting that more than one kind's row uses.
"""

from __future__ import annotations

from datetime import datetime

from minikube_py.api import Obj
from minikube_py.api.duration import human_duration

NONE = "<none>"
UNKNOWN = "<unknown>"
UNSET = "<unset>"


def parse_time(value: str | None) -> datetime | None:
    """An RFC3339 timestamp ("2026-11-21T10:00:00Z", MicroTime too) or None when unset."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def translate_timestamp_since(value: str | None, now: datetime) -> str:
    """translateTimestampSince: the age of a timestamp, "<unknown>" when it is unset."""
    timestamp = parse_time(value)
    if timestamp is None:
        return UNKNOWN
    return human_duration(now - timestamp)


def name_of(obj: Obj) -> str:
    """metadata.name, "" when unset."""
    return (obj.get("metadata") or {}).get("name", "")


def age(obj: Obj, now: datetime) -> str:
    """The Age cell: how long ago metadata.creationTimestamp was."""
    return translate_timestamp_since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def format_labels(labels: dict[str, str] | None) -> str:
    """labels.FormatLabels: "a=1,b=2" sorted by key, "<none>" when empty."""
    if not labels:
        return NONE
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def label_selector_string(selector: Obj | None) -> str | None:
    """LabelSelectorAsSelector(...).String(): "app=web,tier in (a,b)"; None if invalid.

    An absent or empty selector gives "" (Nothing and Everything both print empty).
    """
    if not selector:
        return ""
    requirements: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        requirements.append((key, f"{key}={value}"))
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key", "")
        operator = expression.get("operator")
        values = ",".join(sorted(expression.get("values") or []))
        if operator == "In":
            requirements.append((key, f"{key} in ({values})"))
        elif operator == "NotIn":
            requirements.append((key, f"{key} notin ({values})"))
        elif operator == "Exists":
            requirements.append((key, key))
        elif operator == "DoesNotExist":
            requirements.append((key, f"!{key}"))
        else:
            return None
    requirements.sort(key=lambda requirement: requirement[0])
    return ",".join(text for _, text in requirements)


def format_label_selector(selector: Obj | None) -> str:
    """metav1.FormatLabelSelector: the selector string, "<none>" when empty."""
    text = label_selector_string(selector)
    if text is None:
        return "<error>"
    return text or NONE


def container_cells(pod_spec: Obj) -> list[str]:
    """layoutContainerCells: container names and images, each comma-joined."""
    containers = pod_spec.get("containers") or []
    names = ",".join(container.get("name", "") for container in containers)
    images = ",".join(container.get("image", "") for container in containers)
    return [names, images]


def template_spec(obj: Obj) -> Obj:
    """spec.template.spec of a workload (Deployment, ReplicaSet, Job...)."""
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def condition_true(status: Obj, condition_type: str) -> bool:
    """The first status condition of this type says True (pods and jobs alike)."""
    for condition in status.get("conditions") or []:
        if condition.get("type") == condition_type:
            return condition.get("status") == "True"
    return False
