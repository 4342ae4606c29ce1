"""storage.k8s.io/v1 StorageClass strategy (upstream pkg/registry/storage/storageclass,
pkg/apis/storage/v1/defaults.go and pkg/apis/storage/validation).

A class names the provisioner that creates volumes for its claims, the reclaim policy
those volumes get (Delete unless said) and when they are bound (Immediate unless said).
The provisioner, its parameters, the reclaim policy and the binding mode never change.
"""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, set_default
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    validate_immutable,
    validate_qualified_name,
)
from minikube_py.apiserver.registry.strategies.base import NoGenerationStrategy
from minikube_py.apiserver.registry.strategies.fields import as_invalid, child, index

MAX_PROVISIONER_PARAMETER_SIZE = 256 * (1 << 10)  # 256 kB
MAX_PROVISIONER_PARAMETER_LEN = 512
RECLAIM_POLICIES = ["Delete", "Retain"]
VOLUME_BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]


class StorageClassStrategy(NoGenerationStrategy):
    """StorageClasses: how volumes of a class are provisioned, reclaimed and bound."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_StorageClass: reclaim Delete, bind Immediate."""
        set_default(obj, "reclaimPolicy", "Delete")
        set_default(obj, "volumeBindingMode", "Immediate")

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateStorageClass."""
        errors = _validate_provisioner(obj.get("provisioner", ""))
        errors += _validate_parameters(as_dict(obj.get("parameters")))
        policy = obj.get("reclaimPolicy")
        if policy and policy not in RECLAIM_POLICIES:
            errors.append(not_supported("reclaimPolicy", policy, RECLAIM_POLICIES))
        mode = obj.get("volumeBindingMode")
        if mode is None:
            errors.append(required("volumeBindingMode"))
        elif mode not in VOLUME_BINDING_MODES:
            errors.append(not_supported("volumeBindingMode", mode, VOLUME_BINDING_MODES))
        return errors + _validate_allowed_topologies(as_list(obj.get("allowedTopologies")))

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateStorageClassUpdate: parameters, provisioner, reclaim policy and binding
        mode are fixed."""
        errors = self.validate(new)
        if as_dict(new.get("parameters")) != as_dict(old.get("parameters")):
            errors.append(forbidden("parameters", "updates to parameters are forbidden."))
        if new.get("provisioner") != old.get("provisioner"):
            errors.append(forbidden("provisioner", "updates to provisioner are forbidden."))
        if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
            errors.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
        return errors + validate_immutable(
            new.get("volumeBindingMode"), old.get("volumeBindingMode"), "volumeBindingMode")


def _validate_provisioner(provisioner: object) -> list[FieldError]:
    """validateProvisioner: required, and a qualified name once lower-cased."""
    if not provisioner:
        return [required("provisioner")]
    lowered = str(provisioner).lower()
    return as_invalid("provisioner", lowered, validate_qualified_name(lowered))


def _validate_parameters(parameters: Obj) -> list[FieldError]:
    """validateParameters: at most 512 keys, none empty, 256 kB in all."""
    if len(parameters) > MAX_PROVISIONER_PARAMETER_LEN:
        return [too_long("parameters", MAX_PROVISIONER_PARAMETER_LEN)]
    errors: list[FieldError] = []
    total = 0
    for name, value in parameters.items():
        if not name:
            errors.append(invalid("parameters", name, "field can not be empty."))
        total += len(name) + len(str(value))
    if total > MAX_PROVISIONER_PARAMETER_SIZE:
        errors.append(too_long("parameters", MAX_PROVISIONER_PARAMETER_SIZE))
    return errors


def _validate_allowed_topologies(terms: list[object]) -> list[FieldError]:
    """validateAllowedTopologies: valid terms, no two alike."""
    errors: list[FieldError] = []
    seen: list[dict[str, set[str]]] = []
    for i, term in enumerate(terms):
        path = index("allowedTopologies", i)
        expressions, term_errors = _validate_topology_selector_term(as_dict(term), path)
        errors += term_errors
        if expressions in seen:
            errors.append(duplicate(child(path, "matchLabelExpressions"), ""))
        seen.append(expressions)
    return errors


def _validate_topology_selector_term(term: Obj, path: str
                                     ) -> tuple[dict[str, set[str]], list[FieldError]]:
    """ValidateTopologySelectorTerm: each label once, each with distinct values."""
    errors: list[FieldError] = []
    expressions: dict[str, set[str]] = {}
    for i, requirement in enumerate(as_list(term.get("matchLabelExpressions"))):
        requirement_path = index(child(path, "matchLabelExpressions"), i)
        requirement = as_dict(requirement)
        values_path = child(requirement_path, "values")
        values = as_list(requirement.get("values"))
        if not values:
            errors.append(required(values_path))
        value_set: set[str] = set()
        for j, value in enumerate(values):
            if value in value_set:
                errors.append(duplicate(index(values_path, j), value))
            value_set.add(str(value))
        label = str(requirement.get("key", ""))
        errors += as_invalid(child(requirement_path, "key"), label,
                             validate_qualified_name(label))
        if label in expressions:
            errors.append(duplicate(child(requirement_path, "key"), label))
        expressions[label] = value_set
    return expressions, errors
