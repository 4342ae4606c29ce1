"""The Pod strategy (upstream pkg/registry/core/pod/strategy.go).

A new pod starts Pending with its QoS class computed once; after that its spec is
nearly frozen: only images, activeDeadlineSeconds, added tolerations, removed
scheduling gates (and, while gated, added node selectors) may change. The node is set
through the binding subresource, never by an update.

Priority and DefaultTolerationSeconds, which also change new pods, are admission
plugins (apiserver/auth/admission/).
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, items_of
from minikube_py.api.poddefaults import set_pod_defaults
from minikube_py.api.quantity import QuantityError, parse_quantity
from minikube_py.api.validation import (
    FieldError,
    forbidden,
    invalid,
    required,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_qualified_name,
)
from minikube_py.apiserver.registry.strategies.base import KindStrategy
from minikube_py.apiserver.registry.strategies.fields import (
    MAX_INT32,
    child,
    describe_changes,
    format_errors,
    index,
    ip_errors,
    semantic,
)
from minikube_py.apiserver.registry.strategies.podspec_validation import validate_pod_spec
from minikube_py.apiserver.registry.strategies.resourcenames import QOS_RESOURCES

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`,"
    "`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,"
    "`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)
_SYSTEM_CONDITIONS = ("PodScheduled", "Ready", "Initialized")
class PodStrategy(KindStrategy):
    """Pods: created Pending, then mostly immutable; kubelets write status."""

    return_deleted_object = True  # upstream answers a DELETE with the object

    def prepare_for_create(self, obj: Obj) -> None:
        """The server owns status: phase Pending and the QoS class, fixed for life."""
        super().prepare_for_create(obj)
        spec = as_dict(obj.get("spec"))
        status: Obj = {"phase": "Pending", "qosClass": qos_class(spec)}
        if as_list(spec.get("schedulingGates")):
            status["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }
            ]
        obj["status"] = status

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """Keep qosClass and observedGeneration when a (possibly old) kubelet drops them;
        read back podIP(s), hostIP(s) and container statuses as the Go types serialize."""
        super().prepare_for_status_update(new, old)
        status, old_status = new.get("status"), as_dict(old.get("status"))
        if not isinstance(status, dict):
            return
        for field in ("qosClass", "observedGeneration"):
            if not status.get(field) and old_status.get(field):
                status[field] = old_status[field]
        for single, plural in (("podIP", "podIPs"), ("hostIP", "hostIPs")):
            _keep_ips_consistent(status, single, plural)
        for list_name in ("initContainerStatuses", "containerStatuses",
                          "ephemeralContainerStatuses"):
            for _, container_status in items_of(status, list_name):
                for field, zero in _CONTAINER_STATUS_ZEROS.items():
                    container_status.setdefault(field, zero)

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> None:
        """pods/ephemeralcontainers (podEphemeralContainersStrategy): of the write, only
        spec.ephemeralContainers counts; everything else stays as stored."""
        ephemeral = as_dict(new.get("spec")).get("ephemeralContainers")
        metadata = new["metadata"]
        kept = {key: metadata[key] for key in ("resourceVersion", "managedFields")
                if key in metadata}
        new.clear()
        new.update(copy.deepcopy(old))
        new["metadata"].pop("managedFields", None)
        new["metadata"].update(kept)
        if ephemeral is None:
            new["spec"].pop("ephemeralContainers", None)
        else:
            new["spec"]["ephemeralContainers"] = ephemeral

    def validate_subresource_update(self, subresource: str, new: Obj, old: Obj
                                    ) -> list[FieldError]:
        """ValidatePodEphemeralContainersUpdate: a valid pod, and the ephemeral containers
        already there neither removed nor changed (they cannot be restarted)."""
        if MIRROR_POD_ANNOTATION in as_dict(old["metadata"].get("annotations")):
            return [forbidden("", "static pods do not support ephemeral containers")]
        errors = _validate_pod(new)
        path = "spec.ephemeralContainers"
        added = {c.get("name"): c for _, c in items_of(as_dict(new.get("spec")),
                                                       "ephemeralContainers")}
        for _, existing in items_of(as_dict(old.get("spec")), "ephemeralContainers"):
            name = existing.get("name")
            if name not in added:
                errors.append(forbidden(
                    path, f'existing ephemeral containers "{name}" may not be removed'))
            elif semantic(added[name]) != semantic(existing):
                errors.append(forbidden(
                    f"{path}.{name}", f'existing ephemeral containers "{name}" may not be '
                    "changed"))
        return errors

    def default(self, obj: Obj) -> None:
        set_pod_defaults(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidatePodCreate."""
        spec = as_dict(obj.get("spec"))
        errors = _validate_pod(obj)
        if as_list(spec.get("ephemeralContainers")):
            errors.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
        if spec.get("nodeName") and as_list(spec.get("schedulingGates")):
            errors.append(
                forbidden(
                    "spec.nodeName", "cannot be set until all schedulingGates have been cleared"
                )
            )
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidatePodUpdate: the new pod must be valid and differ only where allowed."""
        return _validate_pod(new) + validate_pod_spec_update(
            as_dict(new.get("spec")), as_dict(old.get("spec"))
        )

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidatePodStatusUpdate."""
        status, old_status = as_dict(new.get("status")), as_dict(old.get("status"))
        errors: list[FieldError] = []
        # Upstream reports custom condition types under `metadata.conditions`.
        for i, condition in items_of(status, "conditions"):
            condition_type = str(condition.get("type", ""))
            if condition_type not in _SYSTEM_CONDITIONS:
                errors += format_errors(
                    validate_qualified_name, condition_type, f"metadata.conditions[{i}].Type"
                )
        nominated = status.get("nominatedNodeName")
        if nominated and nominated != old_status.get("nominatedNodeName"):
            errors += format_errors(
                validate_dns1123_subdomain, nominated, "status.nominatedNodeName"
            )
        errors += validate_immutable(
            status.get("qosClass"), old_status.get("qosClass"), "status.qosClass"
        )
        restart_policy = as_dict(old.get("spec")).get("restartPolicy")
        errors += _container_state_transitions(
            status, old_status, "containerStatuses", restart_policy
        )
        for i, pod_ip in items_of(status, "podIPs"):
            errors += ip_errors(pod_ip.get("ip"), index("status.podIPs", i))
        return errors

    def graceful_delete_seconds(self, obj: Obj, requested: int | None) -> int | None:
        """CheckGracefulDelete: a running pod gets time to stop; others go at once."""
        spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
        period = requested
        if period is None:
            grace = spec.get("terminationGracePeriodSeconds")
            period = grace if isinstance(grace, int) else 0
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            return 0
        return 1 if period < 0 else period

    def field_set(self, obj: Obj) -> dict[str, str]:
        """pod.ToSelectableFields."""
        spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
        pod_ips = as_list(status.get("podIPs"))
        fields = super().field_set(obj)
        fields.update(
            {
                "spec.nodeName": spec.get("nodeName", ""),
                "spec.restartPolicy": spec.get("restartPolicy", ""),
                "spec.schedulerName": spec.get("schedulerName", ""),
                "spec.serviceAccountName": spec.get("serviceAccountName", ""),
                "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
                "status.phase": status.get("phase", ""),
                "status.podIP": as_dict(pod_ips[0]).get("ip", "") if pod_ips else "",
                "status.nominatedNodeName": status.get("nominatedNodeName", ""),
            }
        )
        return fields


# ContainerStatus fields Go always serializes (no omitempty): a writer that leaves them
# out reads them back as zero values, as clients such as the official Python one expect.
_CONTAINER_STATUS_ZEROS: dict[str, Any] = {"image": "", "imageID": "", "ready": False,
                                           "restartCount": 0}


def _keep_ips_consistent(status: Obj, single: str, plural: str) -> None:
    """Convert_v1_PodStatus_To_core_PodStatus: podIP and podIPs[0] agree (podIP wins).

    A client that writes only `podIP` (older kubelets, tests) gets `podIPs` filled in,
    and `podIP` always reads back as the first of `podIPs`; the same for hostIP(s).
    """
    address = status.get(single)
    addresses = as_list(status.get(plural))
    if address and (not addresses or as_dict(addresses[0]).get("ip") != address):
        status[plural] = [{"ip": address}]
    elif addresses and not address:
        status[single] = as_dict(addresses[0]).get("ip", "")


def _validate_pod(pod: Obj) -> list[FieldError]:
    """validatePodMetadataAndSpec: the spec, plus what only pods (not templates) check."""
    spec = as_dict(pod.get("spec"))
    errors = validate_pod_spec(spec, "spec", is_pod=True)
    for list_name in ("containers", "initContainers"):
        for i, container in items_of(spec, list_name):
            image = container.get("image")
            if isinstance(image, str) and image != image.strip():
                errors.append(
                    invalid(
                        child(index(f"spec.{list_name}", i), "image"),
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )
    return errors


def validate_pod_spec_update(spec: Obj, old_spec: Obj) -> list[FieldError]:
    """The pod spec part of ValidatePodUpdate."""
    spec, old_spec = semantic(spec), semantic(old_spec)
    errors: list[FieldError] = []
    for list_name in ("containers", "initContainers"):
        new_list, old_list = as_list(spec.get(list_name)), as_list(old_spec.get(list_name))
        list_path = f"spec.{list_name}"
        if len(new_list) != len(old_list):
            errors.append(forbidden(list_path, "pod updates may not add or remove containers"))
            return errors
        for i, container in enumerate(new_list):
            if not as_dict(container).get("image"):
                errors.append(required(child(index(list_path, i), "image")))

    deadline, old_deadline = (
        spec.get("activeDeadlineSeconds"),
        old_spec.get("activeDeadlineSeconds"),
    )
    if deadline is not None:
        if not isinstance(deadline, int) or not 0 <= deadline <= MAX_INT32:
            errors.append(
                invalid(
                    "spec.activeDeadlineSeconds",
                    deadline,
                    f"must be between 0 and {MAX_INT32}, inclusive",
                )
            )
            return errors
        if isinstance(old_deadline, int) and old_deadline < deadline:
            errors.append(
                invalid(
                    "spec.activeDeadlineSeconds",
                    deadline,
                    "must be less than or equal to previous value",
                )
            )
            return errors
    elif old_deadline is not None:
        errors.append(
            invalid(
                "spec.activeDeadlineSeconds",
                None,
                "must not update from a positive integer to nil value",
            )
        )

    errors += _only_added_tolerations(
        as_list(spec.get("tolerations")), as_list(old_spec.get("tolerations"))
    )
    errors += _only_removed_scheduling_gates(
        as_list(spec.get("schedulingGates")), as_list(old_spec.get("schedulingGates"))
    )
    if spec == old_spec:
        return errors

    munged = _munge_updatable_fields(spec, old_spec)
    if as_list(old_spec.get("schedulingGates")):
        errors += _only_added_node_selectors(munged, old_spec)
    if munged != old_spec:
        changes = "\n".join(describe_changes(old_spec, munged, "spec"))
        message = f"pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}"
        errors.append(forbidden("spec", f"{message}\n{changes}"))
    return errors


def _munge_updatable_fields(spec: Obj, old_spec: Obj) -> Obj:
    """The new spec with every field a pod update may change put back to its old value."""
    munged = copy.deepcopy(spec)
    for list_name in ("containers", "initContainers"):
        for container, old_container in zip(
            as_list(munged.get(list_name)), as_list(old_spec.get(list_name)), strict=True
        ):
            if isinstance(container, dict) and isinstance(old_container, dict):
                container["image"] = old_container.get("image")
                if "image" not in old_container:
                    del container["image"]
    for field in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        if field in old_spec:
            munged[field] = copy.deepcopy(old_spec[field])
        else:
            munged.pop(field, None)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if (
        isinstance(old_grace, int)
        and old_grace < 0
        and munged.get("terminationGracePeriodSeconds") == 1
    ):
        munged["terminationGracePeriodSeconds"] = old_grace
    return munged


def _only_added_tolerations(new: list[Any], old: list[Any]) -> list[FieldError]:
    """validateOnlyAddedTolerations: old tolerations stay (their tolerationSeconds may change)."""
    for old_toleration in old:
        old_toleration = as_dict(old_toleration)
        kept = any(
            {**old_toleration, "tolerationSeconds": as_dict(t).get("tolerationSeconds")}
            == {**as_dict(t), "tolerationSeconds": as_dict(t).get("tolerationSeconds")}
            for t in new
        )
        if not kept:
            return [
                forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            ]
    return []


def _only_removed_scheduling_gates(new: list[Any], old: list[Any]) -> list[FieldError]:
    """validateOnlyDeletedSchedulingGates: a gate, once lifted, never comes back."""
    old_names = {as_dict(gate).get("name") for gate in old}
    new_names = [as_dict(gate).get("name") for gate in new]
    return [
        forbidden(
            child(index("spec.schedulingGates", i), "name"),
            f"only deletion is allowed, but found new scheduling gate '{name}'",
        )
        for i, name in enumerate(new_names)
        if name not in old_names
    ]


def _only_added_node_selectors(munged: Obj, old_spec: Obj) -> list[FieldError]:
    """A gated pod may gain node selectors (no removals or changes) before it is scheduled."""
    new_selector = as_dict(munged.get("nodeSelector"))
    old_selector = as_dict(old_spec.get("nodeSelector"))
    if new_selector == old_selector:
        return []
    errors: list[FieldError] = []
    if any(new_selector.get(k) != v for k, v in old_selector.items()):
        errors.append(
            invalid(
                "spec.nodeSelector",
                new_selector,
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
            )
        )
    if "nodeSelector" in old_spec:
        munged["nodeSelector"] = copy.deepcopy(old_spec["nodeSelector"])
    else:
        munged.pop("nodeSelector", None)
    return errors


def _container_state_transitions(
    status: Obj, old_status: Obj, field: str, restart_policy: Any
) -> list[FieldError]:
    """ValidateContainerStateTransition: a container that will not restart stays terminated."""
    if restart_policy == "Always":
        return []
    new_by_name = {as_dict(s).get("name"): as_dict(s) for s in as_list(status.get(field))}
    errors: list[FieldError] = []
    for i, old in items_of(old_status, field):
        terminated = as_dict(old.get("state")).get("terminated")
        if terminated is None:
            continue
        if as_dict(terminated).get("exitCode", 0) != 0 and restart_policy == "OnFailure":
            continue
        new = new_by_name.get(old.get("name"))
        if new is not None and as_dict(new.get("state")).get("terminated") is None:
            errors.append(
                forbidden(
                    child(index(f"status.{field}", i), "state"),
                    "may not be transitioned to non-terminated state",
                )
            )
    return errors


# --- QoS class ---------------------------------------------------------------------------


def qos_class(spec: Obj) -> str:
    """qos.ComputePodQOS: Guaranteed, Burstable or BestEffort from cpu and memory.

    Requests default to limits (SetDefaults_Pod), so a resource with only a limit
    counts as requested at that limit, whatever the order the hooks ran in.
    """
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for list_name in ("containers", "initContainers"):
        for _, container in items_of(spec, list_name):
            resources = as_dict(container.get("resources"))
            container_limits = _positive_amounts(as_dict(resources.get("limits")))
            container_requests = {
                **container_limits,
                **_positive_amounts(as_dict(resources.get("requests")), keep_zero=True),
            }
            for name, amount in container_requests.items():
                if amount > 0:
                    requests[name] = requests.get(name, Decimal(0)) + amount
            for name, amount in container_limits.items():
                limits[name] = limits.get(name, Decimal(0)) + amount
            if not set(QOS_RESOURCES) <= set(container_limits):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and all(limits.get(name) == amount for name, amount in requests.items()):
        if len(requests) == len(limits):
            return "Guaranteed"
    return "Burstable"


def _positive_amounts(resources: Obj, keep_zero: bool = False) -> dict[str, Decimal]:
    """The cpu and memory amounts above zero (or all of them, with `keep_zero`)."""
    amounts = {}
    for name in QOS_RESOURCES:
        if name not in resources:
            continue
        try:
            amount = parse_quantity(resources[name])
        except QuantityError:
            continue
        if amount > 0 or keep_zero:
            amounts[name] = amount
    return amounts
