"""Strategies of the smaller API groups: EndpointSlice, Lease, PriorityClass, PodDisruptionBudget.

discovery.k8s.io, coordination.k8s.io, scheduling.k8s.io and policy, following
upstream pkg/registry/{discovery,coordination,scheduling,policy} and their validation.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import (
    as_dict,
    as_list,
    items_of,
    set_default,
    set_default_if_zero,
    text,
)
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
    validate_dns1035_label,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_label_selector,
    validate_labels,
    validate_nonnegative,
    validate_qualified_name,
)
from minikube_py.apiserver.registry.strategies.base import (
    KindStrategy,
    NoGenerationStrategy,
    bump_generation_if_metadata_changed,
    keep_stored_generation,
)
from minikube_py.apiserver.registry.strategies.fields import (
    PROTOCOLS,
    child,
    format_errors,
    index,
    path_segment_name,
    special_ip_errors,
    validate_positive_int_or_percent,
)

ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000


# --- EndpointSlice -----------------------------------------------------------------------


class EndpointSliceStrategy(KindStrategy):
    """EndpointSlices: a service's endpoints, at most 1000 to a slice."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Any change outside metadata, or to the labels, is a new generation."""
        super().prepare_for_update(new, old)
        bump_generation_if_metadata_changed(new, old, "labels")

    def default(self, obj: Obj) -> None:
        """SetDefaults_EndpointPort: an unnamed TCP port."""
        for _, port in items_of(obj, "ports"):
            set_default(port, "name", "")
            set_default(port, "protocol", "TCP")

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateEndpointSlice."""
        address_type = obj.get("addressType")
        errors: list[FieldError] = []
        if not address_type:
            errors.append(required("addressType"))
        elif address_type not in ADDRESS_TYPES:
            errors.append(not_supported("addressType", address_type, ADDRESS_TYPES))
        return errors + _validate_endpoints(obj, address_type) + _validate_slice_ports(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errors = self.validate(new)
        return errors + validate_immutable(
            new.get("addressType"), old.get("addressType"), "addressType"
        )


def _validate_endpoints(obj: Obj, address_type: Any) -> list[FieldError]:
    endpoints = as_list(obj.get("endpoints"))
    if len(endpoints) > MAX_ENDPOINTS:
        return [too_many("endpoints", len(endpoints), MAX_ENDPOINTS)]
    errors: list[FieldError] = []
    for i, endpoint in items_of(obj, "endpoints"):
        path = index("endpoints", i)
        addresses_path = child(path, "addresses")
        addresses = as_list(endpoint.get("addresses"))
        if not addresses:
            errors.append(required(addresses_path, "must contain at least 1 address"))
        elif len(addresses) > MAX_ADDRESSES:
            errors.append(too_many(addresses_path, len(addresses), MAX_ADDRESSES))
        for j, address in enumerate(addresses):
            errors += _address_errors(address, address_type, index(addresses_path, j))
        if endpoint.get("nodeName") is not None:
            errors += format_errors(
                validate_dns1123_subdomain, endpoint["nodeName"], child(path, "nodeName")
            )
        if endpoint.get("zone") is not None:
            errors += validate_labels(
                {"topology.kubernetes.io/zone": endpoint["zone"]}, child(path, "zone")
            )
        if endpoint.get("hostname") is not None:
            hostname = str(endpoint["hostname"])
            errors += format_errors(validate_dns1123_label, hostname, child(path, "hostname"))
    return errors


def _address_errors(address: Any, address_type: Any, path: str) -> list[FieldError]:
    """An address of the slice's type (IPv4, IPv6 or FQDN); other types are not checked."""
    if address_type in ("IPv4", "IPv6"):
        version = 4 if address_type == "IPv4" else 6
        try:
            ip = ipaddress.ip_address(address) if isinstance(address, str) else None
        except ValueError:
            ip = None
        if ip is None or ip.version != version:
            return [invalid(path, address, f"must be a valid {address_type} address")]
        return special_ip_errors(str(address), path)
    elif address_type == "FQDN":
        name = str(address)
        errors = format_errors(validate_dns1123_subdomain, name, path)
        if "." not in name:
            errors.append(
                invalid(
                    path, name, "should be a domain with at least two segments separated by dots"
                )
            )
        return errors
    return []


def _validate_slice_ports(obj: Obj) -> list[FieldError]:
    ports = as_list(obj.get("ports"))
    if len(ports) > MAX_PORTS:
        return [too_many("ports", len(ports), MAX_PORTS)]
    errors: list[FieldError] = []
    names: list[Any] = []
    for i, port in items_of(obj, "ports"):
        path = index("ports", i)
        name = port.get("name") or ""
        if name:
            errors += format_errors(validate_dns1123_label, name, child(path, "name"))
        if name in names:
            errors.append(duplicate(child(path, "name"), name))
        names.append(name)
        protocol = port.get("protocol")
        if protocol is None:
            errors.append(required(child(path, "protocol")))
        elif protocol not in PROTOCOLS:
            errors.append(not_supported(child(path, "protocol"), protocol, PROTOCOLS))
        if port.get("appProtocol") is not None:
            app_protocol = str(port["appProtocol"])
            errors += format_errors(
                validate_qualified_name, app_protocol, child(path, "appProtocol")
            )
    return errors


# --- Lease -------------------------------------------------------------------------------


class LeaseStrategy(NoGenerationStrategy):
    """Leases: heartbeats of nodes and locks of leader election."""

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateLeaseSpec."""
        spec = as_dict(obj.get("spec"))
        errors: list[FieldError] = []
        duration = spec.get("leaseDurationSeconds")
        if duration is not None and (not isinstance(duration, int) or duration <= 0):
            errors.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
        transitions = spec.get("leaseTransitions")
        if transitions is not None and (not isinstance(transitions, int) or transitions < 0):
            errors.append(
                invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")
            )
        if spec.get("preferredHolder") and not spec.get("strategy"):
            errors.append(
                forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined")
            )
        return errors


# --- PriorityClass -----------------------------------------------------------------------


SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2000000000,
    "system-node-critical": 2000001000,
}
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000
PREEMPTION_POLICIES = ["PreemptLowerPriority", "Never"]


class PriorityClassStrategy(KindStrategy):
    """PriorityClasses: a named pod priority; value and preemption policy never change."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """The generation stays 1: upstream never bumps it for priority classes."""
        keep_stored_generation(new, old)

    def default(self, obj: Obj) -> None:
        set_default_if_zero(obj, "preemptionPolicy", "PreemptLowerPriority")

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidatePriorityClass: `system-` names are reserved, user values at most 1e9."""
        name = obj["metadata"].get("name", "")
        value = obj.get("value", 0)
        errors: list[FieldError] = []
        if name.startswith("system-"):
            problem = _system_class_problem(name, value, obj.get("globalDefault", False))
            if problem:
                errors.append(
                    forbidden(
                        "metadata.name",
                        "priority class names with 'system-' prefix are reserved for system use "
                        f"only. error: {problem}",
                    )
                )
        elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
            errors.append(
                forbidden(
                    "value",
                    "maximum allowed value of a user defined priority is "
                    f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
                )
            )
        policy = obj.get("preemptionPolicy")
        if policy is not None and policy not in PREEMPTION_POLICIES:
            errors.append(not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errors = self.validate(new)
        if new.get("value", 0) != old.get("value", 0):
            errors.append(forbidden("value", "may not be changed in an update."))
        return errors + validate_immutable(
            new.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy"
        )


def _system_class_problem(name: str, value: Any, global_default: Any) -> str:
    """IsKnownSystemPriorityClass: why a `system-` class is not one of the built-in ones."""
    if name not in SYSTEM_PRIORITY_CLASSES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_PRIORITY_CLASSES[name]:
        return f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""


# --- PodDisruptionBudget -----------------------------------------------------------------


UNHEALTHY_POD_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]
PDB_STATUS_COUNTS = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")


class PodDisruptionBudgetStrategy(KindStrategy):
    """PodDisruptionBudgets: how many selected pods voluntary evictions may take down."""

    def prepare_for_create(self, obj: Obj) -> None:
        """Status starts at zero counts (Go writes its non-optional counters)."""
        super().prepare_for_create(obj)
        obj["status"] = {field: 0 for field in PDB_STATUS_COUNTS}

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidatePodDisruptionBudgetSpec."""
        spec = as_dict(obj.get("spec"))
        errors: list[FieldError] = []
        if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
            errors.append(
                invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set")
            )
        for field in ("minAvailable", "maxUnavailable"):
            if spec.get(field) is not None:
                errors += validate_positive_int_or_percent(spec[field], f"spec.{field}")
        if spec.get("selector") is not None:
            errors += validate_label_selector(as_dict(spec["selector"]), "spec.selector")
        policy = spec.get("unhealthyPodEvictionPolicy")
        if policy is not None and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
            errors.append(
                not_supported(
                    "spec.unhealthyPodEvictionPolicy", policy, UNHEALTHY_POD_EVICTION_POLICIES
                )
            )
        return errors

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        status = as_dict(new.get("status"))
        errors: list[FieldError] = []
        for field in PDB_STATUS_COUNTS:
            errors += validate_nonnegative(status.get(field, 0), f"status.{field}")
        return errors


# --- APIService ---------------------------------------------------------------------------


class APIServiceStrategy(NoGenerationStrategy):
    """APIServices: which server serves a group-version. Named `<version>.<group>`; a Local
    one (no service) is this server's own."""

    name_validator = staticmethod(path_segment_name)

    def default(self, obj: Obj) -> None:
        """SetDefaults_ServiceReference: the Service's port is 443."""
        service = as_dict(obj.get("spec")).get("service")
        if isinstance(service, dict):
            set_default(service, "port", 443)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateAPIService."""
        spec = as_dict(obj.get("spec"))
        group, version = text(spec.get("group")), text(spec.get("version"))
        wanted = f"{version}.{group}"
        name = obj["metadata"].get("name", "")
        errors: list[FieldError] = []
        if name and name != wanted:
            errors.append(invalid("metadata.name", name,
                                  f'must be `spec.version+"."+spec.group`: "{wanted}"'))
        if not group and version != "v1":
            errors.append(required("spec.group", "only v1 may have an empty group and it "
                                                 "better be legacy kube"))
        if group:
            errors += [invalid("spec.group", group, problem)
                       for problem in validate_dns1123_subdomain(group)]
        errors += [invalid("spec.version", version, problem)
                   for problem in validate_dns1035_label(version)]
        for field, maximum in (("groupPriorityMinimum", 20000), ("versionPriority", 1000)):
            value = spec.get(field, 0)
            if not isinstance(value, int) or not 0 < value <= maximum:
                errors.append(invalid(f"spec.{field}", value,
                                      f"must be positive and less than {maximum}"))
        service = spec.get("service")
        if service is None:
            if spec.get("caBundle"):
                errors.append(invalid("spec.caBundle", f"{len(spec['caBundle'])} bytes",
                                      "local APIServices may not have a caBundle"))
            if spec.get("insecureSkipTLSVerify"):
                errors.append(invalid("spec.insecureSkipTLSVerify", True,
                                      "local APIServices may not have insecureSkipTLSVerify"))
            return errors
        service = as_dict(service)
        for field in ("namespace", "name"):
            if not service.get(field):
                errors.append(required(f"spec.service.{field}"))
        port = service.get("port", 443)
        if not isinstance(port, int) or not 0 < port < 65536:
            errors.append(invalid("spec.service.port", port, "port is not valid: must be "
                                                             "between 1 and 65535, inclusive"))
        if spec.get("insecureSkipTLSVerify") and spec.get("caBundle"):
            errors.append(invalid("spec.insecureSkipTLSVerify", True,
                                  "may not be true if caBundle is present"))
        return errors
