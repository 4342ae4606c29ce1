"""Resource names and amounts: `cpu`, `hugepages-2Mi`, `example.com/gpu`, `count/pods`.

Upstream's pkg/apis/core/helper and the quantity checks of core validation, used for
container resources, LimitRanges and ResourceQuotas.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from minikube_py.api.quantity import QuantityError, canonical_quantity, parse_quantity
from minikube_py.api.validation import (
    FieldError,
    invalid,
    validate_qualified_name,
    validate_quantity,
)
from minikube_py.apiserver.registry.strategies.fields import format_errors

_STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
_STANDARD_RESOURCES = _STANDARD_CONTAINER_RESOURCES | {
    "requests.cpu", "requests.memory", "requests.ephemeral-storage", "limits.cpu",
    "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage",
    "requests.storage", "services.nodeports", "services.loadbalancers",
}  # fmt: skip
_STANDARD_QUOTA_RESOURCES = _STANDARD_RESOURCES - {"storage"}
_INTEGER_RESOURCES = {
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
}  # fmt: skip
QOS_RESOURCES = ("cpu", "memory")


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_native(name: str) -> bool:
    """Unprefixed (`cpu`) or in the kubernetes.io domain."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    """An extended resource such as `example.com/gpu`: counted, never overcommitted."""
    if is_native(name) or name.startswith("requests."):
        return False
    return not validate_qualified_name("requests." + name)


def overcommit_allowed(name: str) -> bool:
    """May a container request less than its limit? Not for hugepages or extended ones."""
    return is_native(name) and not is_hugepages(name)


def _is_standard(name: str) -> bool:
    return (
        name in _STANDARD_RESOURCES or is_hugepages(name) or name.startswith("requests.hugepages-")
    )


def validate_resource_name(name: str, path: str) -> list[FieldError]:
    """validateResourceName: qualified, and standard unless it carries a domain."""
    errors = format_errors(validate_qualified_name, name, path)
    if errors:
        return errors
    if "/" not in name and not _is_standard(name):
        errors.append(invalid(path, name, "must be a standard resource type or fully qualified"))
    return errors


def validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    """validateContainerResourceName: cpu, memory, ephemeral-storage, hugepages, extended."""
    if name in _STANDARD_CONTAINER_RESOURCES:
        return []  # qualified and standard: nearly every name a pod's resources give
    errors = validate_resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not is_hugepages(name):
            errors.append(invalid(path, name, "must be a standard resource for containers"))
    elif not is_native(name) and not is_extended(name):
        errors.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errors


def is_standard_quota_resource(name: str) -> bool:
    """IsStandardQuotaResourceName: a resource the quota system knows by its bare name."""
    return name in _STANDARD_QUOTA_RESOURCES or name.startswith(
        ("hugepages-", "requests.hugepages-"))


def validate_quota_resource_name(name: str, path: str) -> list[FieldError]:
    """ValidateResourceQuotaResourceName: what a ResourceQuota may count."""
    errors = validate_resource_name(name, path)
    if "/" not in name and not is_standard_quota_resource(name):
        errors.append(invalid(path, name, "must be a standard resource for quota"))
    return errors


def parse_amount(value: Any, path: str) -> tuple[Decimal | None, list[FieldError]]:
    """Parse a quantity; on failure the errors say why."""
    if value is None:
        return Decimal(0), []  # upstream reads a null quantity as zero
    errors = validate_quantity(value, path)
    if errors:
        return None, errors
    try:
        return parse_quantity(value), []
    except QuantityError as error:
        return None, [invalid(path, value, str(error))]


def validate_resource_amount(
    name: str, value: Any, path: str
) -> tuple[Decimal | None, list[FieldError]]:
    """ValidateResourceQuantityValue: a valid, non-negative quantity; whole for counted ones."""
    amount, errors = parse_amount(value, path)
    if amount is None:
        return None, errors
    if amount < 0:
        errors.append(invalid(path, show_amount(value), "must be greater than or equal to 0"))
    if (name in _INTEGER_RESOURCES or is_extended(name)) and amount != amount.to_integral_value():
        errors.append(invalid(path, show_amount(value), "must be an integer"))
    return amount, errors


def show_amount(value: Any) -> str:
    """A quantity as upstream prints it in messages: canonical (`1Gi`, `500m`)."""
    return "0" if value is None else canonical_quantity(value)
