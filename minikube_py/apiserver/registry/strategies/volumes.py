"""PersistentVolume and PersistentVolumeClaim strategies (upstream core validation).

A claim asks for storage (access modes and a size); a volume offers it. Both start
Pending; a claim's spec is frozen once created, except that its volumeName is set once
(when bound) and its storage request may grow.
"""

from __future__ import annotations

import copy

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, set_default, set_default_if_zero
from minikube_py.api.meta import now_rfc3339
from minikube_py.api.poddefaults import volume_sources
from minikube_py.api.validation import (
    FieldError,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_label_selector,
)
from minikube_py.apiserver.registry.strategies.base import NoGenerationStrategy
from minikube_py.apiserver.registry.strategies.fields import (
    describe_changes,
    format_errors,
    key,
    one_of_errors,
    semantic,
)
from minikube_py.apiserver.registry.strategies.resourcenames import parse_amount

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
VOLUME_MODES = ["Block", "Filesystem"]
RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]
# The sources a PersistentVolume may use (a pod's inline-only ones are not among them).
_PV_SOURCES = {
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "nfs", "iscsi", "glusterfs",
    "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "local",
    "storageos", "csi",
}  # fmt: skip


def _validate_access_modes(spec: Obj, missing: str = "") -> list[FieldError]:
    """spec.accessModes: at least one, each supported, ReadWriteOncePod only on its own.

    `missing` is the detail of the Required error (PVCs have one, PVs none).
    """
    path = "spec.accessModes"
    modes = as_list(spec.get("accessModes"))
    errors: list[FieldError] = []
    if not modes:
        errors.append(required(path, missing))
    for mode in modes:
        if mode not in ACCESS_MODES:
            errors.append(not_supported(path, mode, ACCESS_MODES))
    if "ReadWriteOncePod" in modes and any(
        m != "ReadWriteOncePod" and m in ACCESS_MODES for m in modes
    ):
        errors.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errors


def _validate_storage_size(value: object, path: str) -> list[FieldError]:
    """A storage quantity (a claim's request, a volume's capacity): valid and above zero."""
    amount, errors = parse_amount(value, path)
    if amount is not None and amount <= 0:
        errors.append(invalid(path, value, "must be greater than zero"))
    return errors


def _validate_class_and_mode(spec: Obj) -> list[FieldError]:
    """spec.storageClassName (a DNS subdomain when set) and spec.volumeMode (when set)."""
    errors: list[FieldError] = []
    if spec.get("storageClassName"):
        errors += format_errors(
            validate_dns1123_subdomain, spec["storageClassName"], "spec.storageClassName"
        )
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errors.append(not_supported("spec.volumeMode", mode, VOLUME_MODES))
    return errors


def _default_pending(obj: Obj) -> None:
    """Claims and volumes are Pending until the volume controller binds them."""
    status = obj.setdefault("status", {})
    if isinstance(status, dict):
        set_default_if_zero(status, "phase", "Pending")


class PersistentVolumeClaimStrategy(NoGenerationStrategy):
    """PVCs: a request for storage, bound to a PersistentVolume by its controller."""

    def default(self, obj: Obj) -> None:
        """SetDefaults_PersistentVolumeClaim: Filesystem mode, Pending until bound."""
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            set_default(spec, "volumeMode", "Filesystem")
        _default_pending(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidatePersistentVolumeClaimSpec."""
        spec = as_dict(obj.get("spec"))
        errors = _validate_access_modes(spec, missing="at least 1 access mode is required")
        if spec.get("selector") is not None:
            errors += validate_label_selector(as_dict(spec["selector"]), "spec.selector")
        storage_path = key("spec.resources", "storage")
        requests = as_dict(as_dict(spec.get("resources")).get("requests"))
        if "storage" not in requests:
            errors.append(required(storage_path))
        else:
            errors += _validate_storage_size(requests["storage"], storage_path)
        return errors + _validate_class_and_mode(spec)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidatePersistentVolumeClaimUpdate."""
        errors = self.validate(new)
        spec, old_spec = semantic(as_dict(new.get("spec"))), semantic(as_dict(old.get("spec")))
        comparable_new, comparable_old = copy.deepcopy(spec), copy.deepcopy(old_spec)
        if not old_spec.get("volumeName"):
            comparable_old.pop("volumeName", None)
            comparable_new.pop("volumeName", None)
        if as_dict(new.get("status")).get("phase") == "Bound":
            for comparable in (comparable_new, comparable_old):
                as_dict(as_dict(comparable.get("resources")).get("requests")).pop("storage", None)
                comparable.pop("volumeAttributesClassName", None)
        if comparable_new != comparable_old:
            changes = "\n".join(describe_changes(comparable_old, comparable_new, "spec"))
            errors.append(
                forbidden(
                    "spec",
                    "spec is immutable after creation except resources.requests and "
                    f"volumeAttributesClassName for bound claims\n{changes}",
                )
            )
        errors += _validate_shrink(new, old)
        errors += validate_immutable(
            spec.get("volumeMode"), old_spec.get("volumeMode"), "volumeMode"
        )
        return errors


def _validate_shrink(new: Obj, old: Obj) -> list[FieldError]:
    """A claim may shrink back only above what was actually provisioned (status.capacity)."""

    def storage(obj: Obj, *path: str) -> object:
        value: object = obj
        for name in path:
            value = as_dict(value).get(name)
        return value

    new_size, _ = parse_amount(storage(new, "spec", "resources", "requests", "storage"), "")
    old_size, _ = parse_amount(storage(old, "spec", "resources", "requests", "storage"), "")
    capacity, _ = parse_amount(storage(old, "status", "capacity", "storage") or "0", "")
    if new_size is None or old_size is None or capacity is None or new_size >= old_size:
        return []
    if new_size <= capacity:
        return [
            forbidden(
                "spec.resources.requests.storage", "field can not be less than status.capacity"
            )
        ]
    return []


class PersistentVolumeStrategy(NoGenerationStrategy):
    """PVs: a piece of storage with one source, a size and a reclaim policy."""

    def prepare_for_create(self, obj: Obj) -> None:
        """A new volume is Pending, since now (lastPhaseTransitionTime)."""
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": now_rfc3339()}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """A phase change is stamped with the time, unless the writer set one of its own;
        an unchanged phase keeps the stored time."""
        super().prepare_for_status_update(new, old)
        status, old_status = new.setdefault("status", {}), as_dict(old.get("status"))
        if not isinstance(status, dict):
            return
        stamp, old_stamp = status.get("lastPhaseTransitionTime"), old_status.get(
            "lastPhaseTransitionTime")
        if status.get("phase") == old_status.get("phase"):
            if stamp is None and old_stamp is not None:
                status["lastPhaseTransitionTime"] = old_stamp
        elif stamp is None or stamp == old_stamp:
            status["lastPhaseTransitionTime"] = now_rfc3339()

    def default(self, obj: Obj) -> None:
        """SetDefaults_PersistentVolume: Retain, Filesystem, Pending."""
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            set_default_if_zero(spec, "persistentVolumeReclaimPolicy", "Retain")
            set_default(spec, "volumeMode", "Filesystem")
            if isinstance(spec.get("hostPath"), dict):
                set_default(spec["hostPath"], "type", "")
        _default_pending(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidatePersistentVolumeSpec."""
        spec = as_dict(obj.get("spec"))
        errors = _validate_access_modes(spec)
        capacity = as_dict(spec.get("capacity"))
        if not capacity:
            errors.append(required("spec.capacity"))
        elif set(capacity) != {"storage"}:
            errors.append(not_supported("spec.capacity", sorted(capacity), ["storage"]))
        else:
            errors += _validate_storage_size(capacity["storage"], key("spec.capacity", "storage"))
        policy = spec.get("persistentVolumeReclaimPolicy")
        if policy and policy not in RECLAIM_POLICIES:
            errors.append(
                not_supported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES)
            )
        sources = [name for name in [*volume_sources(spec), "local"] if spec.get(name) is not None]
        sources = [name for name in sources if name in _PV_SOURCES]
        errors += one_of_errors(sources, "spec", "volume")
        if sources == ["hostPath"] and not as_dict(spec["hostPath"]).get("path"):
            errors.append(required("spec.hostPath.path"))
        if sources == ["local"]:
            if not as_dict(spec["local"]).get("path"):
                errors.append(required("spec.local.path"))
            if spec.get("nodeAffinity") is None:
                errors.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
        return errors + _validate_class_and_mode(spec)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidatePersistentVolumeUpdate: the source and mode are fixed."""
        errors = self.validate(new)
        spec, old_spec = semantic(as_dict(new.get("spec"))), semantic(as_dict(old.get("spec")))
        source = {name: spec.get(name) for name in _PV_SOURCES if name in spec}
        old_source = {name: old_spec.get(name) for name in _PV_SOURCES if name in old_spec}
        if source != old_source:
            changes = "\n".join(describe_changes(old_source, source, "spec"))
            errors.append(
                forbidden(
                    "spec.persistentvolumesource",
                    f"spec.persistentvolumesource is immutable after creation\n{changes}",
                )
            )
        errors += validate_immutable(
            spec.get("volumeMode"), old_spec.get("volumeMode"), "volumeMode"
        )
        if (
            old_spec.get("nodeAffinity") is not None
            and spec.get("nodeAffinity") != old_spec["nodeAffinity"]
        ):
            errors.append(
                invalid("spec.nodeAffinity", spec.get("nodeAffinity"), "field is immutable")
            )
        return errors
