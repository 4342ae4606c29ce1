"""`describe node` (describe.go: NodeDescriber, describeNode, describeNodeResource).

    Name, Roles, Labels, Annotations, CreationTimestamp, Taints, Unschedulable, Lease
    Conditions, Addresses, Capacity, Allocatable, System Info, PodCIDR(s), ProviderID
    Non-terminated Pods: each pod's requests and limits, as a share of allocatable
    Allocated resources: their sums, Events
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    go_bool,
    print_annotations_multiline,
    print_labels_multiline,
    print_taints_multiline,
    search_events,
    since,
)
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, PrefixWriter, rfc1123z
from minikube_py.mkctl.errors import MkctlError, StatusError

NODE_LEASE_NAMESPACE = "kube-node-lease"
ROLE_LABEL_PREFIX = "node-role.kubernetes.io/"
ROLE_LABEL = "kubernetes.io/role"
STANDARD_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def node_describer(node: Obj, lookups: Lookups, settings: Settings) -> str:
    """NodeDescriber: the node, its Lease, the pods bound to it that have not finished,
    and its events (asked twice: by the node's UID, and by its name, which the kubelet
    puts in the UID field)."""
    from minikube_py.api.selectors import escape_field_value

    meta = node.get("metadata") or {}
    name = meta.get("name", "")
    params = {"fieldSelector": f"spec.nodeName={escape_field_value(name)},"
                               "status.phase!=Succeeded,status.phase!=Failed"}
    if settings.chunk_size > 0:
        params["limit"] = str(settings.chunk_size)
    pods: list[Obj] | None
    try:
        pods = lookups.list("/api/v1/pods", params)
    except StatusError as error:
        if error.reason != "Forbidden":
            raise
        pods = None
    try:
        lease: Obj | str = lookups.get(
            f"/apis/coordination.k8s.io/v1/namespaces/{NODE_LEASE_NAMESPACE}/leases/{name}")
    except MkctlError as error:
        lease = str(error)
    events = search_events(lookups, "", name, "Node", meta.get("uid", ""), settings)
    if events is not None:
        events += search_events(lookups, "", name, "Node", name, settings) or []
    return describe_node(node, pods, events, lease)


def find_node_roles(labels: dict[str, str] | None) -> list[str]:
    """findNodeRoles: node-role.kubernetes.io/<role> labels and kubernetes.io/role."""
    roles = set()
    for key, value in (labels or {}).items():
        if key.startswith(ROLE_LABEL_PREFIX):
            if key[len(ROLE_LABEL_PREFIX):]:
                roles.add(key[len(ROLE_LABEL_PREFIX):])
        elif key == ROLE_LABEL and value:
            roles.add(value)
    return sorted(roles)


def _describe_lease(lease: Obj | str, w: PrefixWriter) -> None:
    if isinstance(lease, str):
        w.write(LEVEL_0, f"Lease:\tFailed to get lease: {lease}\n")
        return
    spec = lease.get("spec") or {}
    w.write(LEVEL_0, "Lease:\n")
    w.write(LEVEL_1, f"HolderIdentity:\t{spec.get('holderIdentity') or '<unset>'}\n")
    for title, field in (("AcquireTime", "acquireTime"), ("RenewTime", "renewTime")):
        shown = rfc1123z(spec[field]) if spec.get(field) else "<unset>"
        w.write(LEVEL_1, f"{title}:\t{shown}\n")


def describe_node(node: Obj, pods: list[Obj] | None, events: list[Obj] | None,
                  lease: Obj | str) -> str:
    """describeNode."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get(
        "status") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Roles:\t{','.join(find_node_roles(meta.get('labels'))) or '<none>'}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, f"CreationTimestamp:\t{rfc1123z(meta.get('creationTimestamp'))}\n")
    print_taints_multiline(w, "Taints", spec.get("taints"))
    w.write(LEVEL_0, f"Unschedulable:\t{go_bool(spec.get('unschedulable'))}\n")
    _describe_lease(lease, w)
    conditions = status.get("conditions") or []
    if conditions:
        w.write(LEVEL_0, "Conditions:\n  Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\t"
                         "Reason\tMessage\n")
        w.write(LEVEL_1, "----\t------\t-----------------\t------------------\t------\t"
                         "-------\n")
        for c in conditions:
            w.write(LEVEL_1, f"{c.get('type', '')} \t{c.get('status', '')} \t"
                             f"{rfc1123z(c.get('lastHeartbeatTime'))} \t"
                             f"{rfc1123z(c.get('lastTransitionTime'))} \t"
                             f"{c.get('reason', '')} \t{c.get('message', '')}\n")
    w.write(LEVEL_0, "Addresses:\n")
    for address in status.get("addresses") or []:
        w.write(LEVEL_1, f"{address.get('type', '')}:\t{address.get('address', '')}\n")
    for title, field in (("Capacity", "capacity"), ("Allocatable", "allocatable")):
        resources = status.get(field) or {}
        if resources:
            w.write(LEVEL_0, f"{title}:\n")
            for name in sorted(resources):
                w.write(LEVEL_0, f"  {name}:\t{resources[name]}\n")
    info = status.get("nodeInfo") or {}
    w.write(LEVEL_0, "System Info:\n")
    for title, field in (("Machine ID", "machineID"), ("System UUID", "systemUUID"),
                         ("Boot ID", "bootID"), ("Kernel Version", "kernelVersion"),
                         ("OS Image", "osImage"), ("Operating System", "operatingSystem"),
                         ("Architecture", "architecture"),
                         ("Container Runtime Version", "containerRuntimeVersion"),
                         ("Kubelet Version", "kubeletVersion")):
        w.write(LEVEL_0, f"  {title}:\t{info.get(field, '')}\n")
    if spec.get("podCIDR"):
        w.write(LEVEL_0, f"PodCIDR:\t{spec['podCIDR']}\n")
    if spec.get("podCIDRs"):
        w.write(LEVEL_0, f"PodCIDRs:\t{','.join(spec['podCIDRs'])}\n")
    if spec.get("providerID"):
        w.write(LEVEL_0, f"ProviderID:\t{spec['providerID']}\n")
    if pods is None:
        w.write(LEVEL_0, "Pods:\tnot authorized\n")
    else:
        describe_node_resource(pods, status, w)
    describe_events(events, w)
    return w.tabbed()


def _milli(value: Any) -> int:
    """Quantity.MilliValue: thousandths, rounded up."""
    return math.ceil(value.amount * 1000)


def _whole(value: Any) -> int:
    """Quantity.Value: units, rounded up."""
    return math.ceil(value.amount)


def _percent(part: int, whole: int) -> int:
    """int64(float64(part) / float64(whole) * 100), as Go truncates it."""
    if whole == 0:
        return 0
    return int(part / whole * 100)


def describe_node_resource(pods: list[Obj], status: Obj, w: PrefixWriter) -> None:
    """describeNodeResource: the table of pods with their cpu and memory requests and
    limits as a share of allocatable (capacity if none), then the totals of every
    resource."""
    from minikube_py.api.quantity import Quantity
    from minikube_py.api.quota import parse_resource_list, pod_limits, pod_requests

    zero = Quantity(Decimal(0))
    allocatable = parse_resource_list(status.get("allocatable") or status.get("capacity"))
    cpu_total = _milli(allocatable.get("cpu", zero))
    memory_total = _whole(allocatable.get("memory", zero))
    w.write(LEVEL_0, f"Non-terminated Pods:\t({len(pods)} in total)\n")
    w.write(LEVEL_1, "Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\t"
                     "Memory Limits\tAge\n")
    w.write(LEVEL_1, "---------\t----\t\t------------\t----------\t---------------\t"
                     "-------------\t---\n")
    totals_requests: dict[str, Any] = {}
    totals_limits: dict[str, Any] = {}
    for pod in pods:
        requests, limits = pod_requests(pod), pod_limits(pod)
        cells = []
        for values, name, total, measure in (
                (requests, "cpu", cpu_total, _milli), (limits, "cpu", cpu_total, _milli),
                (requests, "memory", memory_total, _whole),
                (limits, "memory", memory_total, _whole)):
            value = values.get(name, zero)
            cells.append(f"{value} ({_percent(measure(value), total)}%)")
        meta = pod.get("metadata") or {}
        w.write(LEVEL_1, f"{meta.get('namespace', '')}\t{meta.get('name', '')}\t\t"
                         f"{chr(9).join(cells)}\t{since(meta.get('creationTimestamp'))}\n")
        for totals, values in ((totals_requests, requests), (totals_limits, limits)):
            for name, value in values.items():
                totals[name] = totals[name] + value if name in totals else value
    w.write(LEVEL_0, "Allocated resources:\n  (Total limits may be over 100 percent, i.e., "
                     "overcommitted.)\n")
    w.write(LEVEL_1, "Resource\tRequests\tLimits\n")
    w.write(LEVEL_1, "--------\t--------\t------\n")
    for name, measure in (("cpu", _milli), ("memory", _whole), ("ephemeral-storage", _whole)):
        request = totals_requests.get(name, zero)
        limit = totals_limits.get(name, zero)
        whole = measure(allocatable.get(name, zero))
        w.write(LEVEL_1, f"{name}\t{request} ({_percent(measure(request), whole)}%)\t"
                         f"{limit} ({_percent(measure(limit), whole)}%)\n")
    huge_pages = sorted(name for name in allocatable if name.startswith("hugepages-"))
    extended = sorted(name for name in allocatable if not name.startswith("hugepages-")
                      and name not in STANDARD_CONTAINER_RESOURCES and name != "pods")
    for name in huge_pages:
        request = totals_requests.get(name, zero)
        limit = totals_limits.get(name, zero)
        whole = _whole(allocatable[name])
        w.write(LEVEL_1, f"{name}\t{request} ({_percent(_whole(request), whole)}%)\t"
                         f"{limit} ({_percent(_whole(limit), whole)}%)\n")
    for name in extended:
        w.write(LEVEL_1, f"{name}\t{totals_requests.get(name, zero)}\t"
                         f"{totals_limits.get(name, zero)}\n")
