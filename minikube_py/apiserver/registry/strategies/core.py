"""Strategies of the small core/v1 kinds: Node, Namespace, ConfigMap, Secret, Endpoints, ...

Pods, Services, volumes and events have their own modules; this one holds the kinds
whose rules fit on a page each (upstream pkg/registry/core/* and core validation).
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import (
    as_dict,
    as_list,
    defaulted_dict,
    items_of,
    set_default,
    set_default_if_zero,
)
from minikube_py.api.validation import (
    FieldError,
    duplicate,
    forbidden,
    go_json,
    invalid,
    not_supported,
    required,
    too_long,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_label_value,
    validate_port_number,
    validate_qualified_name,
)
from minikube_py.apiserver.registry.strategies.base import NoGenerationStrategy
from minikube_py.apiserver.registry.strategies.fields import (
    PROTOCOLS,
    child,
    cidr_errors,
    config_key_errors,
    format_errors,
    index,
    ip_errors,
    key,
    required_enum,
)
from minikube_py.apiserver.registry.strategies.quotascopes import (
    validate_resource_quota_scopes,
    validate_scope_selector,
)
from minikube_py.apiserver.registry.strategies.resourcenames import (
    parse_amount,
    validate_container_resource_name,
    validate_quota_resource_name,
    validate_resource_amount,
    validate_resource_name,
)

MAX_SECRET_SIZE = 1024 * 1024  # also the limit of a ConfigMap's data
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


# --- Node --------------------------------------------------------------------------------


class NodeStrategy(NoGenerationStrategy):
    """Nodes: the kubelet registers with its status; podCIDRs and providerID are set once."""

    def prepare_for_create(self, obj: Obj) -> None:
        """Unlike most kinds, a node keeps the status it is created with."""
        obj["metadata"].pop("generation", None)

    def default(self, obj: Obj) -> None:
        """SetDefaults_NodeStatus: allocatable defaults to capacity."""
        status = obj.get("status")
        if isinstance(status, dict) and isinstance(status.get("capacity"), dict):
            set_default(status, "allocatable", dict(status["capacity"]))

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateNode."""
        spec = as_dict(obj.get("spec"))
        errors = _validate_taints(as_list(spec.get("taints")))
        errors += _validate_node_resources(as_dict(obj.get("status")))
        pod_cidrs = as_list(spec.get("podCIDRs"))
        for i, cidr in enumerate(pod_cidrs):
            errors += cidr_errors(cidr, index("spec.podCIDRs", i))
        if len(pod_cidrs) > 2:
            errors.append(
                invalid(
                    "spec.podCIDRs",
                    pod_cidrs,
                    "may specify no more than one CIDR for each IP family",
                )
            )
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateNodeUpdate: podCIDRs and providerID only go from unset to set."""
        spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
        errors = self.validate(new)
        old_cidrs = as_list(old_spec.get("podCIDRs"))
        if old_cidrs and as_list(spec.get("podCIDRs")) != old_cidrs:
            errors.append(
                forbidden(
                    "spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'
                )
            )
        if old_spec.get("providerID") and spec.get("providerID") != old_spec["providerID"]:
            errors.append(
                forbidden(
                    "spec.providerID",
                    'node updates may not change providerID except from "" to valid',
                )
            )
        return errors

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errors = _validate_node_resources(as_dict(new.get("status")))
        seen: list[Any] = []
        for i, address in enumerate(as_list(as_dict(new.get("status")).get("addresses"))):
            if address in seen:
                errors.append(duplicate(index("status.addresses", i), address))
            seen.append(address)
        return errors

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        unschedulable = as_dict(obj.get("spec")).get("unschedulable")
        fields["spec.unschedulable"] = "true" if unschedulable else "false"
        return fields


def _validate_taints(taints: list[Any]) -> list[FieldError]:
    """validateNodeTaints (upstream reports them under `metadata.taints`)."""
    errors: list[FieldError] = []
    seen: list[tuple[Any, Any]] = []
    for i, taint in enumerate(taints):
        taint = as_dict(taint)
        path = index("metadata.taints", i)
        taint_key = str(taint.get("key", ""))
        errors += format_errors(validate_qualified_name, taint_key, child(path, "key"))
        messages = validate_label_value(str(taint.get("value", "")))
        if messages:
            errors.append(invalid(child(path, "value"), taint.get("value"), ";".join(messages)))
        effect = taint.get("effect")
        if not effect:
            errors.append(required(child(path, "effect")))
        elif effect not in TAINT_EFFECTS:
            errors.append(not_supported(child(path, "effect"), effect, TAINT_EFFECTS))
        if (taint_key, effect) in seen:
            errors.append(
                FieldError("Duplicate", path, "taints must be unique by key and effect pair", taint)
            )
            continue
        seen.append((taint_key, effect))
    return errors


def _validate_node_resources(status: Obj) -> list[FieldError]:
    """ValidateNodeResources: capacity and allocatable are valid quantities."""
    errors: list[FieldError] = []
    for field in ("capacity", "allocatable"):
        for name, value in as_dict(status.get(field)).items():
            errors += validate_resource_amount(name, value, f"status.{field}.{name}")[1]
    return errors


# --- Namespace ---------------------------------------------------------------------------


class NamespaceStrategy(NoGenerationStrategy):
    """Namespaces: Active at birth, with the `kubernetes` finalizer the namespace
    controller removes once the namespace is empty."""

    return_deleted_object = True  # upstream answers a DELETE with the object

    name_validator = staticmethod(validate_dns1123_label)

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Active"}
        spec = defaulted_dict(obj, "spec")
        finalizers = as_list(spec.get("finalizers"))
        if "kubernetes" not in finalizers:
            spec["finalizers"] = [*finalizers, "kubernetes"]

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Finalizers change only through /finalize, status only through /status."""
        super().prepare_for_update(new, old)
        old_spec = as_dict(old.get("spec"))
        spec = new.setdefault("spec", {})
        if isinstance(spec, dict):
            if "finalizers" in old_spec:
                spec["finalizers"] = list(old_spec["finalizers"])
            else:
                spec.pop("finalizers", None)

    def default(self, obj: Obj) -> None:
        """SetDefaults_Namespace: a label with the name, for namespace selectors."""
        metadata = obj["metadata"]
        defaulted_dict(metadata, "labels")["kubernetes.io/metadata.name"] = metadata.get("name", "")

    def validate(self, obj: Obj) -> list[FieldError]:
        errors: list[FieldError] = []
        for finalizer in as_list(as_dict(obj.get("spec")).get("finalizers")):
            errors += _validate_finalizer_name(str(finalizer), "spec.finalizers")
        return errors

    def blocks_deletion(self, obj: Obj) -> bool:
        """A namespace goes only once its content is gone: no finalizer, in spec or metadata."""
        spec_finalizers = as_list(as_dict(obj.get("spec")).get("finalizers"))
        return bool(spec_finalizers) or super().blocks_deletion(obj)

    def prepare_for_delete(self, obj: Obj) -> None:
        """The first delete only marks the namespace Terminating."""
        defaulted_dict(obj, "status")["phase"] = "Terminating"

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateNamespaceStatusUpdate: the phase follows the deletion timestamp."""
        phase = as_dict(new.get("status")).get("phase")
        if new["metadata"].get("deletionTimestamp") is None:
            if phase != "Active":
                return [
                    invalid(
                        "status.Phase",
                        phase,
                        "may only be 'Active' if `deletionTimestamp` is empty",
                    )
                ]
        elif phase != "Terminating":
            return [
                invalid(
                    "status.Phase",
                    phase,
                    "may only be 'Terminating' if `deletionTimestamp` is not empty",
                )
            ]
        return []

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["status.phase"] = as_dict(obj.get("status")).get("phase", "")
        return fields


def _validate_finalizer_name(name: str, path: str) -> list[FieldError]:
    """validateFinalizerName: qualified, and `kubernetes` is the only bare name."""
    errors = format_errors(validate_qualified_name, name, path)
    if "/" not in name and name != "kubernetes":
        errors.append(
            invalid(
                path, name, "name is neither a standard finalizer name nor is it fully qualified"
            )
        )
    return errors


# --- ConfigMap and Secret ----------------------------------------------------------------


class ConfigMapStrategy(NoGenerationStrategy):
    """ConfigMaps: file-name keys, 1 MiB in all, frozen once `immutable`."""

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateConfigMap."""
        errors: list[FieldError] = []
        data, binary = as_dict(obj.get("data")), as_dict(obj.get("binaryData"))
        size = 0
        for name, value in data.items():
            errors += format_errors(config_key_errors, name, key("data", name))
            if name in binary:
                errors.append(
                    invalid(key("data", name), name, "duplicate of key present in binaryData")
                )
            size += len(str(value).encode())
        for name, value in binary.items():
            errors += format_errors(config_key_errors, name, key("binaryData", name))
            size += _decoded_size(value)
        if size > MAX_SECRET_SIZE:
            errors.append(too_long("", MAX_SECRET_SIZE))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errors = _immutable_data(new, old, ("data", "binaryData"))
        return errors + self.validate(new)


class SecretStrategy(NoGenerationStrategy):
    """Secrets: typed (Opaque by default), base64 data, frozen once `immutable`."""

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        merge_string_data(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        merge_string_data(new)

    def default(self, obj: Obj) -> None:
        set_default_if_zero(obj, "type", "Opaque")

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateSecret: keys, total size, and the keys each type requires."""
        errors: list[FieldError] = []
        data = as_dict(obj.get("data"))
        size = 0
        for name, value in data.items():
            errors += format_errors(config_key_errors, name, key("data", name))
            size += _decoded_size(value)
        if size > MAX_SECRET_SIZE:
            errors.append(too_long("data", MAX_SECRET_SIZE))
        return errors + _validate_secret_type(obj, data)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateSecretUpdate: the type never changes."""
        errors = validate_immutable(new.get("type"), old.get("type"), "type")
        errors += _immutable_data(new, old, ("data",))
        return errors + self.validate(new)

    def field_set(self, obj: Obj) -> dict[str, str]:
        fields = super().field_set(obj)
        fields["type"] = obj.get("type", "")
        return fields


def merge_string_data(secret: Obj) -> None:
    """stringData is a write-only convenience: its values overwrite `data`, encoded."""
    string_data = secret.pop("stringData", None)
    if not isinstance(string_data, dict) or not string_data:
        return
    data = defaulted_dict(secret, "data")
    for name, value in string_data.items():
        data[name] = base64.b64encode(str(value).encode()).decode()


def _decoded(value: Any) -> bytes | None:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        return None


def _decoded_size(value: Any) -> int:
    decoded = _decoded(value)
    return len(decoded) if decoded is not None else len(str(value))


def _validate_secret_type(secret: Obj, data: Obj) -> list[FieldError]:
    """The keys each well-known secret type must carry."""
    secret_type = secret.get("type")
    if secret_type == "kubernetes.io/service-account-token":
        annotations = as_dict(secret["metadata"].get("annotations"))
        if not annotations.get("kubernetes.io/service-account.name"):
            return [required("metadata.annotations[kubernetes.io/service-account.name]")]
    elif secret_type in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        data_key = ".dockercfg" if secret_type == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if data_key not in data:
            return [required(key("data", data_key))]
        try:
            json.loads(_decoded(data[data_key]) or b"")
        except ValueError as error:
            return [invalid(key("data", data_key), "<secret contents redacted>", str(error))]
    elif secret_type == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            return [required("data[username]"), required("data[password]")]
    elif secret_type == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            return [required("data[ssh-privatekey]")]
    elif secret_type == "kubernetes.io/tls":
        return [required(key("data", name)) for name in ("tls.crt", "tls.key") if name not in data]
    return []


def _immutable_data(new: Obj, old: Obj, fields: tuple[str, ...]) -> list[FieldError]:
    """An object with `immutable: true` stays so, and keeps its data."""
    if old.get("immutable") is not True:
        return []
    errors = []
    if new.get("immutable") is not True:
        errors.append(forbidden("immutable", IMMUTABLE_WHEN_SET))
    for field in fields:
        if as_dict(new.get(field)) != as_dict(old.get(field)):
            errors.append(forbidden(field, IMMUTABLE_WHEN_SET))
    return errors


# --- ServiceAccount, Endpoints, Binding --------------------------------------------------


class ServiceAccountStrategy(NoGenerationStrategy):
    """ServiceAccounts: only a name (a DNS subdomain)."""


class EndpointsStrategy(NoGenerationStrategy):
    """Endpoints: the addresses and ports behind a service (written by its controller)."""

    def default(self, obj: Obj) -> None:
        for _, subset in items_of(obj, "subsets"):
            for _, port in items_of(subset, "ports"):
                set_default_if_zero(port, "protocol", "TCP")

    def validate(self, obj: Obj) -> list[FieldError]:
        """validateEndpointSubsets."""
        errors: list[FieldError] = []
        for i, subset in items_of(obj, "subsets"):
            path = index("subsets", i)
            if not as_list(subset.get("addresses")) and not as_list(
                subset.get("notReadyAddresses")
            ):
                errors.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
            for field in ("addresses", "notReadyAddresses"):
                for j, address in items_of(subset, field):
                    errors += _validate_endpoint_address(address, index(child(path, field), j))
            ports = list(items_of(subset, "ports"))
            for j, port in ports:
                errors += _validate_endpoint_port(
                    port, len(ports) > 1, index(child(path, "ports"), j)
                )
        return errors


def _validate_endpoint_address(address: Obj, path: str) -> list[FieldError]:
    errors = ip_errors(address.get("ip"), child(path, "ip"))
    if address.get("hostname"):
        errors += format_errors(
            validate_dns1123_label, address["hostname"], child(path, "hostname")
        )
    if address.get("nodeName") is not None:
        errors += format_errors(
            validate_dns1123_subdomain, address["nodeName"], child(path, "nodeName")
        )
    return errors


def _validate_endpoint_port(port: Obj, require_name: bool, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    name = port.get("name")
    if require_name and not name:
        errors.append(required(child(path, "name")))
    elif name:
        errors += format_errors(validate_dns1123_label, name, child(path, "name"))
    errors += validate_port_number(port.get("port"), child(path, "port"))
    errors += required_enum(port.get("protocol"), PROTOCOLS, child(path, "protocol"))
    if port.get("appProtocol") is not None:
        app_protocol = str(port["appProtocol"])
        errors += format_errors(validate_qualified_name, app_protocol, child(path, "appProtocol"))
    return errors


class BindingStrategy(NoGenerationStrategy):
    """Binding: the scheduler's "put this pod on that node" (ValidatePodBinding)."""

    collection_is_subresource = "binding"

    def validate(self, obj: Obj) -> list[FieldError]:
        target = as_dict(obj.get("target"))
        errors: list[FieldError] = []
        if target.get("kind") and target["kind"] != "Node":
            errors.append(not_supported("target.kind", target["kind"], ["Node", "<empty>"]))
        if not target.get("name"):
            errors.append(required("target.name"))
        return errors


# --- LimitRange and ResourceQuota --------------------------------------------------------


LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
# (lower, higher, field reported, upstream's words for the higher one): the orderings a
# LimitRange item must respect.
_LIMIT_ORDER = (
    ("min", "max", "min", "max"),
    ("min", "defaultRequest", "defaultRequest", "default request"),
    ("defaultRequest", "max", "defaultRequest", "max"),
    ("defaultRequest", "default", "defaultRequest", "default limit"),
    ("min", "default", "default", "default"),
    ("default", "max", "default", "max"),
)
_LIMIT_WORDS = {"min": "min", "default": "default", "defaultRequest": "default request"}


class LimitRangeStrategy(NoGenerationStrategy):
    """LimitRanges: per-namespace defaults and bounds for container resources."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_LimitRangeItem: container defaults come from max, then min."""
        for _, item in items_of(as_dict(obj.get("spec")), "limits"):
            if item.get("type") != "Container":
                continue
            default = dict(as_dict(item.get("default")))
            for name, value in as_dict(item.get("max")).items():
                default.setdefault(name, value)
            default_request = dict(as_dict(item.get("defaultRequest")))
            for name, value in [*default.items(), *as_dict(item.get("min")).items()]:
                default_request.setdefault(name, value)
            if default:
                item["default"] = default
            if default_request:
                item["defaultRequest"] = default_request

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateLimitRange: known types, valid names and min <= default <= max."""
        errors: list[FieldError] = []
        seen_types: list[Any] = []
        for i, item in items_of(as_dict(obj.get("spec")), "limits"):
            path = index("spec.limits", i)
            limit_type = str(item.get("type", ""))
            errors += format_errors(validate_qualified_name, limit_type, child(path, "type"))
            if "/" not in limit_type and limit_type not in LIMIT_TYPES:
                errors.append(
                    invalid(
                        child(path, "type"),
                        limit_type,
                        "must be a standard limit type or fully qualified",
                    )
                )
            if limit_type in seen_types:
                errors.append(duplicate(child(path, "type"), limit_type))
            seen_types.append(limit_type)
            if limit_type == "Pod":
                for field in ("default", "defaultRequest"):
                    if as_dict(item.get(field)):
                        errors.append(
                            forbidden(
                                child(path, field), "may not be specified when `type` is 'Pod'"
                            )
                        )
            errors += _validate_limit_bounds(item, limit_type, path)
        return errors


def _validate_limit_bounds(item: Obj, limit_type: str, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    amounts: dict[str, dict[str, Any]] = {}
    for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
        for name, value in as_dict(item.get(field)).items():
            name_path = key(child(path, field), name)
            if limit_type in ("Pod", "Container"):
                errors += validate_container_resource_name(name, name_path)
            else:
                errors += validate_resource_name(name, name_path)
            amount, amount_errors = parse_amount(value, name_path)
            errors += amount_errors
            if amount is not None:
                amounts.setdefault(name, {})[field] = (amount, value)
    for name, found in amounts.items():
        for low, high, where, high_words in _LIMIT_ORDER:
            if low in found and high in found and found[low][0] > found[high][0]:
                message = (
                    f"{_LIMIT_WORDS[low]} value {found[low][1]} is greater than "
                    f"{high_words} value {found[high][1]}"
                )
                errors.append(invalid(key(child(path, where), name), found[where][1], message))
    return errors


class ResourceQuotaStrategy(NoGenerationStrategy):
    """ResourceQuotas: hard limits per namespace; the quota controller writes usage."""

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateResourceQuotaSpec: hard amounts, then the scopes and the scope selector."""
        spec = as_dict(obj.get("spec"))
        errors = _validate_quota_amounts(as_dict(spec.get("hard")), "spec.hard")
        errors += validate_resource_quota_scopes(spec, "spec.scopes")
        return errors + validate_scope_selector(spec, "spec.scopeSelector.matchExpressions")

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateResourceQuotaUpdate: the scopes are fixed."""
        errors = self.validate(new)
        scopes = as_dict(new.get("spec")).get("scopes")
        old_scopes = as_list(as_dict(old.get("spec")).get("scopes"))
        if set(as_list(scopes)) != set(old_scopes):
            errors.append(invalid("spec.scopes", go_json(scopes), "field is immutable"))
        return errors

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        status = as_dict(new.get("status"))
        errors = _validate_quota_amounts(as_dict(status.get("hard")), "status.hard")
        return errors + _validate_quota_amounts(as_dict(status.get("used")), "status.used")


def _validate_quota_amounts(amounts: Obj, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for name, value in amounts.items():
        errors += validate_quota_resource_name(name, key(path, name))
        errors += validate_resource_amount(name, value, key(path, name))[1]
    return errors
