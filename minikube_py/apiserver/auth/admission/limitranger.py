"""LimitRanger (upstream plugin/pkg/admission/limitranger): a namespace's LimitRanges
fill in and bound what its pods and claims ask for.

    admit (a new pod): each container without a request or a limit for a resource a
        Container LimitRange defaults gets `defaultRequest` / `default`; the pod is
        annotated kubernetes.io/limit-ranger with what was set
    validate (a new pod, a new or changed claim):
        Container: each container's request >= min, limit <= max (a limit must then be
                   given), limit / request <= maxLimitRequestRatio
        Pod:       the same bounds on the pod's total
        PersistentVolumeClaim: min <= requested storage <= max
    refused: 403 `pods "x" is forbidden: maximum cpu usage per Container is 1, but
             limit is 2` (several problems: listed in brackets)

Pods are not looked at again on update: their containers' resources cannot change.
LimitRanges are read from the watch cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from minikube_py.api import Obj, errors
from minikube_py.api.quantity import QuantityError, canonical_quantity, parse_quantity
from minikube_py.apiserver.auth.admission import CREATE, UPDATE, Attributes, Plugin

LimitRangeLister = Callable[[str], list[Obj]]  # a namespace's LimitRanges

ANNOTATION = "kubernetes.io/limit-ranger"


class LimitRanger(Plugin):
    name = "LimitRanger"
    operations = frozenset((CREATE, UPDATE))
    mutating = True
    validating = True

    def __init__(self, limit_ranges: LimitRangeLister) -> None:
        self.limit_ranges = limit_ranges

    def handles(self, attributes: Attributes) -> bool:
        """SupportsAttributes: new pods, and claims, written directly (no subresource)."""
        if attributes.subresource or not isinstance(attributes.obj, dict):
            return False
        if attributes.is_resource("", "pods"):
            return attributes.operation == CREATE
        return (attributes.is_resource("", "persistentvolumeclaims")
                and attributes.operation in self.operations)

    async def admit(self, attributes: Attributes) -> bool:
        """Admit: the Container defaults of every LimitRange of the namespace."""
        if not attributes.is_resource("", "pods"):
            return False
        pod = attributes.obj
        assert pod is not None
        changed = False
        for item in self._items(attributes.namespace, "Container"):
            changed = set_container_defaults(pod, item) or changed
        return changed

    async def validate(self, attributes: Attributes) -> None:
        """Validate: every bound of every LimitRange of the namespace."""
        obj = attributes.obj
        assert obj is not None
        problems: list[str] = []
        if attributes.is_resource("", "pods"):
            spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
            for item in self._items(attributes.namespace, "Container"):
                for container in _containers(spec):
                    resources = container.get("resources") or {}
                    problems += bounds("Container", item, resources.get("requests") or {},
                                       resources.get("limits") or {})
            for item in self._items(attributes.namespace, "Pod"):
                requests, limits = pod_totals(spec)
                problems += bounds("Pod", item, requests, limits)
        else:
            resources = (obj.get("spec") or {}).get("resources") or {}
            for item in self._items(attributes.namespace, "PersistentVolumeClaim"):
                problems += bounds("PersistentVolumeClaim", item,
                                   resources.get("requests") or {}, {}, claim=True)
        if problems:
            why = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
            resource = attributes.resource
            raise errors.forbidden(resource.plural, resource.group, attributes.name, why)

    def _items(self, namespace: str, kind: str) -> Iterator[Obj]:
        for limit_range in self.limit_ranges(namespace):
            for item in (limit_range.get("spec") or {}).get("limits") or []:
                if isinstance(item, dict) and item.get("type") == kind:
                    yield item


def _containers(spec: Obj) -> Iterator[Obj]:
    for list_name in ("containers", "initContainers"):
        for container in spec.get(list_name) or []:
            if isinstance(container, dict):
                yield container


def set_container_defaults(pod: Obj, item: Obj) -> bool:
    """mergeContainerResources for every container; True when anything was set."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return False
    notes = []
    for list_name, prefix in (("initContainers", "init container"),
                              ("containers", "container")):
        for container in spec.get(list_name) or []:
            if not isinstance(container, dict):
                continue
            resources = container.setdefault("resources", {})
            set_limits = _fill(resources, "limits", item.get("default") or {})
            set_requests = _fill(resources, "requests", item.get("defaultRequest") or {})
            name = container.get("name", "")
            if set_requests:
                notes.append(f"{', '.join(sorted(set_requests))} request for {prefix} {name}")
            if set_limits:
                notes.append(f"{', '.join(sorted(set_limits))} limit for {prefix} {name}")
            if not resources:
                del container["resources"]
    if not notes:
        return False
    metadata = pod.setdefault("metadata", {})
    annotations = metadata.get("annotations") or {}
    metadata["annotations"] = {**annotations,
                               ANNOTATION: f"LimitRanger plugin set: {'; '.join(notes)}"}
    return True


def _fill(resources: Obj, field: str, defaults: Obj) -> list[str]:
    have = resources.get(field) or {}
    missing = [name for name in defaults if name not in have]
    if missing:
        resources[field] = {**have, **{name: defaults[name] for name in missing}}
    return missing


def pod_totals(spec: Obj) -> tuple[Obj, Obj]:
    """The pod's requests and limits: its containers' sums, or an init container's
    own when larger (init containers run one at a time)."""
    totals: list[dict[str, Decimal]] = [{}, {}]
    for position, field in enumerate(("requests", "limits")):
        total = totals[position]
        for container in spec.get("containers") or []:
            for name, value in _amounts(container, field).items():
                total[name] = total.get(name, Decimal(0)) + value
        for container in spec.get("initContainers") or []:
            for name, value in _amounts(container, field).items():
                total[name] = max(total.get(name, Decimal(0)), value)
    return totals[0], totals[1]


def _amounts(container: Any, field: str) -> dict[str, Decimal]:
    if not isinstance(container, dict):
        return {}
    found = {}
    for name, value in ((container.get("resources") or {}).get(field) or {}).items():
        try:
            found[name] = parse_quantity(value)
        except QuantityError:
            continue
    return found


def bounds(kind: str, item: Obj, requests: Obj, limits: Obj, *, claim: bool = False
           ) -> list[str]:
    """minConstraint, maxConstraint (maxRequestConstraint for claims) and
    limitRequestRatioConstraint of one LimitRange item."""
    problems = []
    for name, enforced in (item.get("min") or {}).items():
        problems += _minimum(kind, name, enforced, requests.get(name), limits.get(name))
    for name, enforced in (item.get("max") or {}).items():
        if claim:
            problems += _maximum_request(kind, name, enforced, requests.get(name))
        else:
            problems += _maximum(kind, name, enforced, requests.get(name), limits.get(name))
    for name, enforced in (item.get("maxLimitRequestRatio") or {}).items():
        problems += _ratio(kind, name, enforced, requests.get(name), limits.get(name))
    return problems


def _show(value: Any) -> str:
    try:
        return canonical_quantity(value)
    except QuantityError:
        return str(value)


def _value(value: Any) -> Decimal:
    try:
        return parse_quantity(value)
    except QuantityError:
        return Decimal(0)


def _minimum(kind: str, name: str, enforced: Any, request: Any, limit: Any) -> list[str]:
    least = f"minimum {name} usage per {kind} is {_show(enforced)}"
    if request is None:
        return [f"{least}.  No request is specified"]
    if _value(request) < _value(enforced):
        return [f"{least}, but request is {_show(request)}"]
    if limit is not None and _value(limit) < _value(enforced):
        return [f"{least}, but limit is {_show(limit)}"]
    return []


def _maximum(kind: str, name: str, enforced: Any, request: Any, limit: Any) -> list[str]:
    most = f"maximum {name} usage per {kind} is {_show(enforced)}"
    if limit is None:
        return [f"{most}.  No limit is specified"]
    if _value(limit) > _value(enforced):
        return [f"{most}, but limit is {_show(limit)}"]
    if request is not None and _value(request) > _value(enforced):
        return [f"{most}, but request is {_show(request)}"]
    return []


def _maximum_request(kind: str, name: str, enforced: Any, request: Any) -> list[str]:
    most = f"maximum {name} usage per {kind} is {_show(enforced)}"
    if request is None:
        return [f"{most}.  No request is specified"]
    if _value(request) > _value(enforced):
        return [f"{most}, but request is {_show(request)}"]
    return []


def _ratio(kind: str, name: str, enforced: Any, request: Any, limit: Any) -> list[str]:
    most = f"{name} max limit to request ratio per {kind} is {_show(enforced)}"
    if request is None or _value(request) == 0:
        return [f"{most}, but no request is specified or request is 0"]
    if limit is None or _value(limit) == 0:
        return [f"{most}, but no limit is specified or limit is 0"]
    observed = _value(limit) / _value(request)
    if observed > _value(enforced):
        return [f"{most}, but provided ratio is {float(observed):.6f}"]
    return []
