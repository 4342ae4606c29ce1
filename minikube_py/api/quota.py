"""Resource quota evaluation: what an object charges against a ResourceQuota.

Shared by the resourcequota controller (which sums a namespace into `status.used`) and
quota admission (which charges one request against it). Pure functions, no I/O.
Upstream: pkg/quota/v1/evaluator/core (pods.go, services.go,
persistent_volume_claims.go), k8s.io/apiserver/pkg/quota/v1 (resources.go, the generic
object-count evaluator) and the admission plugin's message (controller.go).

    usage(plural, group, obj)                  what one object counts for, by name
    matching_resources(plural, group, names)   which quota names its evaluator tracks
    matches_scopes(spec, obj, plural, group)   do the quota's scopes select the object?
    matches(quota, plural, group, obj)         ... and does the quota track it at all?
    constraints(plural, group, required, obj)  a pod's missing cpu/memory, as a message
    update_changes_usage(plural, group, old, new)   may an update change its usage?
    calculate_usage(spec, resources, list)     a namespace's usage of a quota's names
    exceeded(hard, used, requested)            the names a request would push over hard
    exceeded_quota_message(...)                admission's "exceeded quota: ..." text
    add, subtract, mask, equals, remove_zeros, negative    ResourceList arithmetic

What each resource counts for (its evaluator):

    pods                    pods, count/pods, requests.{cpu,memory,ephemeral-storage},
                            cpu/memory/ephemeral-storage (the same as requests.*),
                            limits.{cpu,memory,ephemeral-storage}, hugepages-<size> and
                            requests.hugepages-<size>, requests.<extended resource>
    services                services, count/services, services.nodeports,
                            services.loadbalancers
    persistentvolumeclaims  persistentvolumeclaims, count/persistentvolumeclaims,
                            requests.storage, and per storage class
                            <class>.storageclass.storage.k8s.io/{persistentvolumeclaims,
                            requests.storage}
    anything else           count/<plural> (core) or count/<plural>.<group>; configmaps,
                            secrets, replicationcontrollers and resourcequotas also under
                            their legacy bare names

A ResourceList maps names to `Quantity` values (api/quantity.py); `parse_resource_list`
and `format_resource_list` convert from and to the wire's {"name": "500m"}.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import ROUND_UP, Decimal
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339
from minikube_py.api.quantity import Quantity
from minikube_py.api.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    SelectorError,
    new_requirement,
)
from minikube_py.api.validation import validate_qualified_name

ResourceList = dict[str, Quantity]

# Resources quota never counts: virtual ones, never stored, and events (DefaultIgnoredResources).
IGNORED_RESOURCES = frozenset({
    ("", "bindings"), ("", "componentstatuses"), ("", "events"), ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"), ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
})
# Object counts that also answer to their pre-`count/` name (legacyObjectCountAliases).
_LEGACY_COUNT_ALIASES = {"configmaps", "resourcequotas", "replicationcontrollers", "secrets"}

_ONE = Quantity(Decimal(1))
_ZERO = Quantity(Decimal(0))
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_POD_RESOURCES = frozenset({
    "count/pods", "pods", *_COMPUTE, *(f"requests.{name}" for name in _COMPUTE),
    *(f"limits.{name}" for name in _COMPUTE),
})
# A quota on one of these makes admission insist that every container states it.
_VALIDATED = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
                        "limits.memory"})
_SERVICE_RESOURCES = frozenset({"count/services", "services", "services.nodeports",
                                "services.loadbalancers"})
_PVC_RESOURCES = ("persistentvolumeclaims", "requests.storage")
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
_TERMINAL_PHASES = ("Succeeded", "Failed")
_SELECTOR_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS,
                       "DoesNotExist": DOES_NOT_EXIST}


# -- resource lists (k8s.io/apiserver/pkg/quota/v1/resources.go) ----------------------------


def parse_resource_list(raw: Mapping[str, Any] | None) -> ResourceList:
    """A wire ResourceList ({"cpu": "500m"}) as Quantities. Raises QuantityError."""
    return {name: Quantity.parse(value) for name, value in (raw or {}).items()}


def format_resource_list(resources: ResourceList) -> dict[str, str]:
    """A ResourceList for the wire: canonical quantities, names sorted."""
    return {name: str(resources[name]) for name in sorted(resources)}


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    """Add: a + b for every name in either."""
    result = dict(a)
    for name, value in b.items():
        result[name] = result[name] + value if name in result else value
    return result


def subtract(a: ResourceList, b: ResourceList) -> ResourceList:
    """Subtract: a - b for every name in either (a name only in b comes out negative)."""
    result = dict(a)
    for name, value in b.items():
        result[name] = result[name] - value if name in result else -value
    return result


def mask(resources: ResourceList, names: Iterable[str]) -> ResourceList:
    """Mask: only the entries whose names are listed (a quota's `hard`, say)."""
    keep = set(names)
    return {name: value for name, value in resources.items() if name in keep}


def equals(a: ResourceList, b: ResourceList) -> bool:
    """Equals: the same names with the same amounts (formats aside)."""
    return a.keys() == b.keys() and all(a[name] == b[name] for name in a)


def remove_zeros(resources: ResourceList) -> ResourceList:
    """RemoveZeros: drop the entries that are zero."""
    return {name: value for name, value in resources.items() if not value.is_zero()}


def negative(resources: ResourceList) -> list[str]:
    """IsNegative: the names whose amount is below zero, sorted."""
    return sorted(name for name, value in resources.items() if value.amount < 0)


# -- which names an evaluator tracks -------------------------------------------------------------


def object_count_name(plural: str, group: str) -> str:
    """ObjectCountQuotaResourceNameFor: count/pods, count/deployments.apps."""
    return f"count/{plural}" if not group else f"count/{plural}.{group}"


def _is_native(name: str) -> bool:
    """IsNativeResource: unprefixed, or in the kubernetes.io domain."""
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    """IsExtendedResourceName: `example.com/gpu`, counted only as requests.<name>."""
    if _is_native(name) or name.startswith("requests."):
        return False
    return not validate_qualified_name("requests." + name)


def matching_resources(plural: str, group: str, names: Iterable[str]) -> list[str]:
    """MatchingResources: of `names` (a quota's hard), those this resource's evaluator
    tracks, sorted. Nothing for ignored resources."""
    if (group, plural) in IGNORED_RESOURCES:
        return []
    return sorted({name for name in names if _tracks(plural, group, name)})


def _tracks(plural: str, group: str, name: str) -> bool:
    if (group, plural) == ("", "pods"):
        return (name in _POD_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-"))
                or (not _is_native(name) and name.startswith("requests.")))
    if (group, plural) == ("", "services"):
        return name in _SERVICE_RESOURCES
    if (group, plural) == ("", "persistentvolumeclaims"):
        return (name == "count/persistentvolumeclaims" or name in _PVC_RESOURCES
                or name.endswith(tuple(STORAGE_CLASS_SUFFIX + r for r in _PVC_RESOURCES)))
    legacy = not group and plural in _LEGACY_COUNT_ALIASES and name == plural
    return name == object_count_name(plural, group) or legacy


# -- usage: what one object counts for ------------------------------------------------------------


def usage(plural: str, group: str, obj: Obj, now: datetime | None = None) -> ResourceList:
    """Usage: what one object of `group`/`plural` charges, by quota resource name.

    A pod counts its requests and limits while it lives (see `quota_v1_pod`); `count/pods`
    counts every pod in storage. `now` (default: the clock) decides whether a deleted
    pod's grace period is over.
    """
    if (group, plural) in IGNORED_RESOURCES:
        return {}
    if (group, plural) == ("", "pods"):
        return _pod_usage(obj, now or datetime.now(UTC))
    if (group, plural) == ("", "services"):
        return _service_usage(obj)
    if (group, plural) == ("", "persistentvolumeclaims"):
        return _pvc_usage(obj)
    result = {object_count_name(plural, group): _ONE}
    if not group and plural in _LEGACY_COUNT_ALIASES:
        result[plural] = _ONE
    return result


def quota_v1_pod(pod: Obj, now: datetime) -> bool:
    """QuotaV1Pod: does the pod still count? Not once it reached Succeeded or Failed, nor
    once it was deleted and its grace period has passed (a pod stuck terminating on a
    lost node must not keep its owner from scaling up)."""
    if (pod.get("status") or {}).get("phase") in _TERMINAL_PHASES:
        return False
    metadata = pod.get("metadata") or {}
    deleted, grace = metadata.get("deletionTimestamp"), metadata.get("deletionGracePeriodSeconds")
    if deleted and grace is not None:
        return not now > parse_rfc3339(deleted) + timedelta(seconds=grace)
    return True


def _pod_usage(pod: Obj, now: datetime) -> ResourceList:
    """PodUsageFunc: count/pods always; the rest only while the pod counts."""
    result = {"count/pods": _ONE}
    if not quota_v1_pod(pod, now):
        return result
    return add(result, _pod_compute_usage(pod_requests(pod), pod_limits(pod)))


def _pod_compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """podComputeUsageHelper: a pod's requests and limits under their quota names."""
    result = {"pods": _ONE}
    for name in _COMPUTE:
        if name in requests:
            result[name] = result[f"requests.{name}"] = requests[name]
        if name in limits:
            result[f"limits.{name}"] = limits[name]
    for name, request in requests.items():
        if name.startswith("hugepages-"):
            result[name] = result[f"requests.{name}"] = request
        if _is_extended(name):
            result[f"requests.{name}"] = request
    return result


def _max(into: ResourceList, other: ResourceList) -> None:
    """maxResourceList: raise each entry of `into` to `other`'s where that is larger."""
    for name, value in other.items():
        if name not in into or value > into[name]:
            into[name] = value


def _aggregate_containers(spec: Obj, field: str) -> ResourceList:
    """The containers' sum, at least the peak of any init container (running alone next
    to the sidecars started before it); sidecars (restartPolicy Always) add up."""
    def of(container: Obj) -> ResourceList:
        return parse_resource_list((container.get("resources") or {}).get(field))

    total: ResourceList = {}
    for container in spec.get("containers") or []:
        total = add(total, of(container))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container in spec.get("initContainers") or []:
        if container.get("restartPolicy") == "Always":
            total = add(total, of(container))
            sidecars = add(sidecars, of(container))
            _max(init_peak, sidecars)
        else:
            _max(init_peak, add(of(container), sidecars))
    _max(total, init_peak)
    return total


def _pod_level(spec: Obj, field: str) -> ResourceList:
    """Pod-level resources (spec.resources): cpu, memory and hugepages only."""
    raw = ((spec.get("resources") or {}).get(field)) or {}
    return {name: value for name, value in parse_resource_list(raw).items()
            if name in ("cpu", "memory") or name.startswith("hugepages-")}


def pod_requests(pod: Obj) -> ResourceList:
    """resourcehelper.PodRequests: the containers' aggregate, replaced by pod-level
    requests where the pod sets them, plus the pod overhead."""
    spec = pod.get("spec") or {}
    requests = {**_aggregate_containers(spec, "requests"), **_pod_level(spec, "requests")}
    return add(requests, parse_resource_list(spec.get("overhead")))


def pod_limits(pod: Obj) -> ResourceList:
    """resourcehelper.PodLimits: as requests, but the overhead only adds to a non-zero
    limit (no limit stays no limit)."""
    spec = pod.get("spec") or {}
    limits = {**_aggregate_containers(spec, "limits"), **_pod_level(spec, "limits")}
    for name, value in parse_resource_list(spec.get("overhead")).items():
        if name in limits and not limits[name].is_zero():
            limits[name] = limits[name] + value
    return limits


def _service_usage(service: Obj) -> ResourceList:
    """serviceEvaluator.Usage: one service; NodePort and LoadBalancer ones count a node
    port per port (a LoadBalancer with allocateLoadBalancerNodePorts false only the
    ports that name one), and a LoadBalancer counts a load balancer."""
    spec = service.get("spec") or {}
    ports = spec.get("ports") or []
    node_ports = load_balancers = 0
    if spec.get("type") == "NodePort":
        node_ports = len(ports)
    elif spec.get("type") == "LoadBalancer":
        load_balancers = 1
        if spec.get("allocateLoadBalancerNodePorts") is False:
            node_ports = sum(1 for port in ports if port.get("nodePort"))
        else:
            node_ports = len(ports)
    return {"count/services": _ONE, "services": _ONE,
            "services.nodeports": Quantity(Decimal(node_ports)),
            "services.loadbalancers": Quantity(Decimal(load_balancers))}


def storage_class_of(claim: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return (claim.get("spec") or {}).get("storageClassName") or ""


def _whole_bytes(value: Quantity) -> Quantity:
    """RoundUp(0): storage counts in whole bytes (quota validation wants integers)."""
    return Quantity(value.amount.to_integral_value(rounding=ROUND_UP), value.format)


def _pvc_usage(claim: Obj) -> ResourceList:
    """pvcEvaluator.Usage: one claim and its requested storage (the allocated size when
    an expansion made it larger), also charged to its storage class."""
    storage_class = storage_class_of(claim)
    result = {"persistentvolumeclaims": _ONE, "count/persistentvolumeclaims": _ONE}
    if storage_class:
        result[f"{storage_class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = _ONE
    requested = parse_resource_list(
        ((claim.get("spec") or {}).get("resources") or {}).get("requests")).get("storage")
    if requested is None:
        return result
    storage = _whole_bytes(requested)
    allocated = parse_resource_list(
        (claim.get("status") or {}).get("allocatedResources")).get("storage")
    if allocated is not None and allocated > storage:
        storage = _whole_bytes(allocated)
    result["requests.storage"] = storage
    if storage_class:
        result[f"{storage_class}{STORAGE_CLASS_SUFFIX}requests.storage"] = storage
    return result


def update_changes_usage(plural: str, group: str, old: Obj, new: Obj,
                         now: datetime | None = None) -> bool:
    """DefaultUpdateFilter: could this update change what the object charges? A pod that
    stops counting (finished, or deleted past its grace), a service changing between
    counted types, a claim whose allocated storage changed. Other updates cannot."""
    if (group, plural) == ("", "pods"):
        moment = now or datetime.now(UTC)
        return quota_v1_pod(old, moment) and not quota_v1_pod(new, moment)
    if (group, plural) == ("", "services"):
        return _quota_service_type(old) != _quota_service_type(new)
    if (group, plural) == ("", "persistentvolumeclaims"):
        return (((old.get("status") or {}).get("allocatedResources") or {}).get("storage")
                != ((new.get("status") or {}).get("allocatedResources") or {}).get("storage"))
    return False


def _quota_service_type(service: Obj) -> str:
    """GetQuotaServiceType: NodePort or LoadBalancer, the types quota counts; else ""."""
    kind = (service.get("spec") or {}).get("type")
    return kind if kind in ("NodePort", "LoadBalancer") else ""


# -- scopes ---------------------------------------------------------------------------------------


def scope_selectors(quota_spec: Obj) -> list[Obj]:
    """getScopeSelectorsFromQuota: spec.scopes (as Exists) then spec.scopeSelector."""
    selectors = [{"scopeName": scope, "operator": "Exists"}
                 for scope in quota_spec.get("scopes") or []]
    return selectors + list((quota_spec.get("scopeSelector") or {}).get("matchExpressions") or [])


def matches_scopes(quota_spec: Obj, obj: Obj, plural: str = "pods", group: str = "") -> bool:
    """Does the quota's scopes and scopeSelector select this object (all must match)?

    Only pods have scopes: any other object matches only a quota without scopes
    (MatchesNoScopeFunc), so a scoped quota counts no services or config maps.
    """
    selectors = scope_selectors(quota_spec)
    if (group, plural) != ("", "pods"):
        return not selectors
    return all(_pod_matches_scope(selector, obj) for selector in selectors)


def _pod_matches_scope(selector: Obj, pod: Obj) -> bool:
    """podMatchesScopeFunc: one scope, or one scopeSelector expression."""
    scope = selector.get("scopeName")
    if scope == "Terminating":
        return _is_terminating(pod)
    if scope == "NotTerminating":
        return not _is_terminating(pod)
    if scope == "BestEffort":
        return _is_best_effort(pod)
    if scope == "NotBestEffort":
        return not _is_best_effort(pod)
    if scope == "CrossNamespacePodAffinity":
        return _uses_cross_namespace_pod_affinity(pod)
    if scope == "PriorityClass":
        priority_class = (pod.get("spec") or {}).get("priorityClassName") or ""
        if selector.get("operator") == "Exists":
            return bool(priority_class)
        return _priority_class_selected(selector, priority_class)
    return False


def _priority_class_selected(selector: Obj, priority_class: str) -> bool:
    """The expression as a label selector on {"PriorityClass": <name>} (no label when the
    pod names no class): In, NotIn, Exists, DoesNotExist. A malformed one selects nothing."""
    operator = _SELECTOR_OPERATORS.get(selector.get("operator", ""))
    if operator is None:
        return False
    try:
        requirement = new_requirement("PriorityClass", operator, selector.get("values") or [])
    except SelectorError:
        return False
    return requirement.matches({"PriorityClass": priority_class} if priority_class else {})


def _is_terminating(pod: Obj) -> bool:
    """isTerminating: the pod has an activeDeadlineSeconds (>= 0)."""
    deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    return deadline is not None and deadline >= 0


def _is_best_effort(pod: Obj) -> bool:
    """GetPodQOS(pod) == BestEffort: the recorded status.qosClass, else computed: no cpu
    or memory requested or limited, by any container or the pod itself."""
    recorded = (pod.get("status") or {}).get("qosClass")
    if recorded:
        return recorded == "BestEffort"
    spec = pod.get("spec") or {}
    holders = [*(spec.get("containers") or []), *(spec.get("initContainers") or []), spec]
    for holder in holders:
        resources = holder.get("resources") or {}
        for field in ("requests", "limits"):
            amounts = parse_resource_list(resources.get(field))
            if any(amounts[name].amount > 0 for name in ("cpu", "memory") if name in amounts):
                return False
    return True


def _uses_cross_namespace_pod_affinity(pod: Obj) -> bool:
    """usesCrossNamespacePodAffinity: an (anti-)affinity term naming namespaces or a
    namespaceSelector."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = affinity.get(kind) or {}
        required = terms.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        preferred = [weighted.get("podAffinityTerm") or {} for weighted in
                     terms.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        if any(term.get("namespaces") or term.get("namespaceSelector") is not None
               for term in [*required, *preferred]):
            return True
    return False


def matches(quota: Obj, plural: str, group: str, obj: Obj) -> bool:
    """Evaluator.Matches: the quota's status.hard names something this resource's
    evaluator tracks, and its scopes select the object."""
    hard = (quota.get("status") or {}).get("hard") or {}
    return bool(matching_resources(plural, group, hard)) and matches_scopes(
        quota.get("spec") or {}, obj, plural, group)


def constraints(plural: str, group: str, required: Iterable[str], obj: Obj) -> str | None:
    """podEvaluator.Constraints: when a quota tracks cpu or memory (requests.*, limits.*)
    every container must state it; the "must specify ..." message when one does not,
    e.g. "must specify limits.memory for: app; requests.cpu for: app,init". Admission
    refuses with "failed quota: <quota name>: <message>". None for other resources."""
    if (group, plural) != ("", "pods"):
        return None
    wanted = set(required) & _VALIDATED
    missing: dict[str, set[str]] = {}
    spec = obj.get("spec") or {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        stated = _pod_compute_usage(parse_resource_list(resources.get("requests")),
                                    parse_resource_list(resources.get("limits")))
        for name in wanted - stated.keys():
            missing.setdefault(name, set()).add(container.get("name", ""))
    if not missing:
        return None
    parts = [f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)]
    return "must specify " + "; ".join(parts)


# -- the quota controller's sum -------------------------------------------------------------------


def calculate_usage(quota_spec: Obj, resources: Iterable[tuple[str, str]],
                    list_objects: Callable[[str, str], Iterable[Obj]],
                    now: datetime | None = None) -> ResourceList:
    """CalculateUsage: the usage of the quota's `spec.hard` names in one namespace.

    `resources` are the (group, plural) pairs the caller can list; `list_objects(group,
    plural)` lists that resource's objects in the quota's namespace. Every hard name
    some resource tracks is reported, as 0 when nothing counts for it (that is how a
    quota shows it has been measured); names no listed resource tracks are left out.
    """
    hard = list((quota_spec.get("hard") or {}).keys())
    moment = now or datetime.now(UTC)
    measured: set[str] = set()
    used: ResourceList = {}
    for group, plural in resources:
        names = matching_resources(plural, group, hard)
        if not names:
            continue
        measured.update(names)
        stats: ResourceList = dict.fromkeys(names, _ZERO)
        for obj in list_objects(group, plural):
            if matches_scopes(quota_spec, obj, plural, group):
                stats = add(stats, usage(plural, group, obj, moment))
        used = add(used, stats)
    return mask(used, measured)


# -- admission: over the limit --------------------------------------------------------------------


def exceeded(hard: ResourceList, used: ResourceList, requested: ResourceList) -> list[str]:
    """The names for which used + requested would pass hard, sorted (upstream's
    LessThanOrEqual on the request masked to the quota's names)."""
    charged = mask(requested, hard)
    new_usage = add(used, charged)
    return sorted(name for name in charged if new_usage[name] > hard[name])


def pretty_print(resources: ResourceList) -> str:
    """prettyPrint: "limits.cpu=2,pods=1", names sorted, quantities canonical."""
    return ",".join(f"{name}={resources[name]}" for name in sorted(resources))


def exceeded_quota_message(quota_name: str, names: Iterable[str], requested: ResourceList,
                           used: ResourceList, hard: ResourceList) -> str:
    """Quota admission's refusal, for the `names` that `exceeded` found:

        exceeded quota: <quota>, requested: <name>=<q>,..., used: ..., limited: ...

    Each list is restricted to `names` and printed by `pretty_print`. Admission wraps it
    in a Forbidden error (`pods "web" is forbidden: exceeded quota: ...`).
    """
    names = list(names)
    return (f"exceeded quota: {quota_name}, "
            f"requested: {pretty_print(mask(requested, names))}, "
            f"used: {pretty_print(mask(used, names))}, "
            f"limited: {pretty_print(mask(hard, names))}")

