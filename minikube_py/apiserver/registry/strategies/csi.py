"""storage.k8s.io/v1 CSI kinds (upstream pkg/registry/storage/{csidriver,csinode,
volumeattachment,csistoragecapacity}, pkg/apis/storage/v1/defaults.go and
pkg/apis/storage/validation).

  CSIDriver           a driver installed in the cluster: whether its volumes need an
                      attach, what the kubelet passes it on mount
  CSINode             the drivers installed on one node (the kubelet keeps it)
  VolumeAttachment    the intent to attach a volume to a node; the attacher writes the
                      outcome through /status
  CSIStorageCapacity  the capacity a driver reports for a class in a topology segment

minikube-py runs no CSI driver: these objects are stored, validated and printed as
upstream does, for drivers and lab code that bring their own.
"""

from __future__ import annotations

import copy
from typing import Any

from minikube_py.api import Obj
from minikube_py.api.defaulting import as_dict, as_list, items_of, set_default
from minikube_py.api.validation import (
    FIELD_IMMUTABLE,
    IS_NEGATIVE,
    FieldError,
    GoValue,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_label_selector,
    validate_nonnegative,
    validate_qualified_name,
)
from minikube_py.apiserver.registry.strategies.base import (
    NoGenerationStrategy,
    keep_stored_generation,
)
from minikube_py.apiserver.registry.strategies.fields import as_invalid, child, index, semantic
from minikube_py.apiserver.registry.strategies.resourcenames import parse_amount, show_amount
from minikube_py.apiserver.registry.strategies.volumes import ACCESS_MODES

FS_GROUP_POLICIES = ["File", "None", "ReadWriteOnceWithFSType"]
VOLUME_LIFECYCLE_MODES = ["Persistent", "Ephemeral"]
MIN_TOKEN_EXPIRATION_SECONDS = 10 * 60
MAX_TOKEN_EXPIRATION_SECONDS = 1 << 32
MIN_NODE_ALLOCATABLE_UPDATE_PERIOD_SECONDS = 10
# The CSINode strategy validates with AllowLongNodeID: node ids of up to 256 characters.
CSI_NODE_ID_MAX_LENGTH = 256
CSI_DRIVER_NAME_MAX_LENGTH = 63
MAX_ATTACHED_VOLUME_METADATA_SIZE = 256 * (1 << 10)  # 256 kB
MAX_VOLUME_ERROR_MESSAGE_SIZE = 1024
MAX_INT32 = 2**31 - 1


def validate_csi_driver_name(name: Any, path: str) -> list[FieldError]:
    """ValidateCSIDriverName: required, at most 63 characters, a DNS subdomain once
    lower-cased (the value is reported as written)."""
    name = "" if name is None else str(name)
    errors: list[FieldError] = []
    if not name:
        errors.append(required(path))
    if len(name) > CSI_DRIVER_NAME_MAX_LENGTH:
        errors.append(too_long(path, CSI_DRIVER_NAME_MAX_LENGTH))
    return errors + as_invalid(path, name, validate_dns1123_subdomain(name.lower()))


# --- CSIDriver ---------------------------------------------------------------------------


class CSIDriverStrategy(NoGenerationStrategy):
    """CSIDrivers: how Kubernetes works with one driver. Attach and lifecycle modes are
    fixed once created; a change of the spec is a new generation."""
    return_deleted_object = True


    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """A new generation when the spec changes: one more than the stored one, which a
        CSIDriver does not have until then (0). Upstream compares the decoded body, which
        its decoder has defaulted, so the spec is compared as defaulting leaves it."""
        defaulted = copy.deepcopy(new)
        self.default(defaulted)
        if semantic(defaulted.get("spec")) != semantic(old.get("spec")):
            new["metadata"]["generation"] = old["metadata"].get("generation", 0) + 1
        else:
            keep_stored_generation(new, old)

    def default(self, obj: Obj) -> None:
        """SetDefaults_CSIDriver: attach required, no pod info, Persistent volumes only."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        set_default(spec, "attachRequired", True)
        set_default(spec, "podInfoOnMount", False)
        set_default(spec, "storageCapacity", False)
        set_default(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
        set_default(spec, "requiresRepublish", False)
        if not spec.get("volumeLifecycleModes"):
            spec["volumeLifecycleModes"] = ["Persistent"]
        set_default(spec, "seLinuxMount", False)

    def validate(self, obj: Obj) -> list[FieldError]:
        """validateCSIDriverSpec."""
        return _validate_csi_driver_spec(as_dict(obj.get("spec")), "spec")

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateCSIDriverUpdate: attachRequired and volumeLifecycleModes are fixed (the
        path of the first is upstream's, `attachedRequired`)."""
        spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
        errors = self.validate(new)
        errors += validate_immutable(spec.get("attachRequired"), old_spec.get("attachRequired"),
                                     "spec.attachedRequired")
        modes, old_modes = spec.get("volumeLifecycleModes"), old_spec.get("volumeLifecycleModes")
        if modes != old_modes:
            errors.append(invalid("spec.volumeLifecycleModes", _lifecycle_modes(modes),
                                  FIELD_IMMUTABLE))
        return errors


def _lifecycle_modes(modes: Any) -> GoValue:
    """A []VolumeLifecycleMode as upstream's message prints it."""
    shown = ", ".join(f'"{mode}"' for mode in as_list(modes))
    return GoValue(f"[]storage.VolumeLifecycleMode{{{shown}}}")


def _validate_csi_driver_spec(spec: Obj, path: str) -> list[FieldError]:
    """validateCSIDriverSpec: the defaulted booleans set, known policy and modes, token
    requests with distinct audiences and sane lifetimes."""
    errors: list[FieldError] = []
    for name, field_path in (("attachRequired", "attachedRequired"),
                             ("podInfoOnMount", "podInfoOnMount"),
                             ("storageCapacity", "storageCapacity")):
        if spec.get(name) is None:
            errors.append(required(child(path, field_path)))
    policy = spec.get("fsGroupPolicy")
    if policy is not None and policy not in FS_GROUP_POLICIES:
        errors.append(not_supported(child(path, "fsGroupPolicy"), policy, FS_GROUP_POLICIES))
    errors += _validate_token_requests(as_list(spec.get("tokenRequests")),
                                       child(path, "tokenRequests"))
    for mode in as_list(spec.get("volumeLifecycleModes")):
        if mode not in VOLUME_LIFECYCLE_MODES:
            errors.append(not_supported(child(path, "volumeLifecycleModes"), mode,
                                        VOLUME_LIFECYCLE_MODES))
    if spec.get("seLinuxMount") is None:
        errors.append(required(child(path, "seLinuxMount")))
    period = spec.get("nodeAllocatableUpdatePeriodSeconds")
    if isinstance(period, int) and period < MIN_NODE_ALLOCATABLE_UPDATE_PERIOD_SECONDS:
        errors.append(invalid(child(path, "nodeAllocatableUpdatePeriodSeconds"), period,
                              "must be greater than or equal to 10 seconds"))
    return errors


def _validate_token_requests(requests: list[Any], path: str) -> list[FieldError]:
    """validateTokenRequests: one request per audience; 10 minutes to 2^32 seconds."""
    errors: list[FieldError] = []
    audiences: set[str] = set()
    for i, request in enumerate(requests):
        request_path = index(path, i)
        request = as_dict(request)
        audience = str(request.get("audience") or "")
        if audience in audiences:
            errors.append(duplicate(child(request_path, "audience"), audience))
            continue
        audiences.add(audience)
        seconds = request.get("expirationSeconds")
        if not isinstance(seconds, int):
            continue
        seconds_path = child(request_path, "expirationSeconds")
        if seconds < MIN_TOKEN_EXPIRATION_SECONDS:
            errors.append(invalid(seconds_path, seconds,
                                  "may not specify a duration less than 10 minutes"))
        if seconds > MAX_TOKEN_EXPIRATION_SECONDS:
            errors.append(invalid(seconds_path, seconds,
                                  "may not specify a duration larger than 2^32 seconds"))
    return errors


# --- CSINode -----------------------------------------------------------------------------


class CSINodeStrategy(NoGenerationStrategy):
    """CSINodes: the drivers on one node. A driver's entry is fixed once listed, except
    its allocatable count (MutableCSINodeAllocatableCount, on by default)."""
    return_deleted_object = True


    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """dropDisabledCSINodeFields: storage health is reported only with CSIVolumeHealth
        (off by default), so a /status write keeps it only where it was already stored."""
        super().prepare_for_status_update(new, old)
        status = new.get("status")
        if isinstance(status, dict) and not as_dict(old.get("status")).get("storageHealth"):
            status.pop("storageHealth", None)

    def validate(self, obj: Obj) -> list[FieldError]:
        """validateCSINodeDrivers."""
        errors: list[FieldError] = []
        names: set[str] = set()
        path = "spec.drivers"
        for i, driver in items_of(as_dict(obj.get("spec")), "drivers"):
            errors += _validate_csi_node_driver(driver, names, index(path, i))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateCSINodeUpdate: a driver listed before keeps its entry (all but
        allocatable)."""
        errors = self.validate(new)
        new_drivers = [d for _, d in items_of(as_dict(new.get("spec")), "drivers")]
        for _, old_driver in items_of(as_dict(old.get("spec")), "drivers"):
            for new_driver in new_drivers:
                if new_driver.get("name") != old_driver.get("name"):
                    continue
                before, after = _without_allocatable(old_driver), _without_allocatable(new_driver)
                if semantic(before) != semantic(after):
                    errors.append(invalid("spec.drivers", after, FIELD_IMMUTABLE))
        return errors


def _without_allocatable(driver: Obj) -> Obj:
    return {name: value for name, value in driver.items() if name != "allocatable"}


def _validate_csi_node_driver(driver: Obj, names: set[str], path: str) -> list[FieldError]:
    """validateCSINodeDriver: a valid, unique driver name, a node id, topology keys that
    are distinct qualified names, a non-negative allocatable count."""
    name = driver.get("name")
    errors = validate_csi_driver_name(name, child(path, "name"))
    node_id = str(driver.get("nodeID") or "")
    if not node_id:
        errors.append(required(child(path, "nodeID")))
    if len(node_id) > CSI_NODE_ID_MAX_LENGTH:
        errors.append(invalid(child(path, "nodeID"), node_id,
                              f"must be {CSI_NODE_ID_MAX_LENGTH} characters or less"))
    count = as_dict(driver.get("allocatable")).get("count")
    if count is not None:
        errors += validate_nonnegative(count, child(path, "allocatable", "count"))
    if name in names:
        errors.append(duplicate(child(path, "name"), name))
    names.add(str(name))
    keys: set[str] = set()
    for key in as_list(driver.get("topologyKeys")):
        key = str(key)
        if not key:
            errors.append(required(path))
        if key in keys:
            errors.append(duplicate(path, key))
        keys.add(key)
        errors += as_invalid(path, key, validate_qualified_name(key))
    return errors


# --- VolumeAttachment --------------------------------------------------------------------


class VolumeAttachmentStrategy(NoGenerationStrategy):
    """VolumeAttachments: what to attach where (fixed once created), and the attacher's
    outcome in status."""
    return_deleted_object = True


    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateVolumeAttachment plus ValidateVolumeAttachmentV1, which a new v1
        attachment must also pass: the attacher a CSI driver name, the volume a valid
        persistent volume name."""
        spec = as_dict(obj.get("spec"))
        errors = _validate_volume_attachment(obj)
        errors += validate_csi_driver_name(spec.get("attacher"), "spec.attacher")
        volume = as_dict(spec.get("source")).get("persistentVolumeName")
        if volume is not None:
            errors += as_invalid("spec.source.persistentVolumeName", volume,
                                 validate_dns1123_subdomain(str(volume)))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateVolumeAttachmentUpdate: the spec never changes."""
        errors = _validate_volume_attachment(new)
        spec = as_dict(new.get("spec"))
        if semantic(spec) != semantic(as_dict(old.get("spec"))):
            errors.append(invalid("spec", spec, FIELD_IMMUTABLE))
        return errors

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """The status strategy's ValidateUpdate: the object as a whole (its spec is the
        stored one)."""
        return _validate_volume_attachment(new)


def _validate_volume_attachment(obj: Obj) -> list[FieldError]:
    """ValidateVolumeAttachment: an attacher, exactly one source, a node name; status
    metadata and errors within their limits."""
    spec = as_dict(obj.get("spec"))
    errors: list[FieldError] = []
    if not spec.get("attacher"):
        errors.append(required("spec.attacher"))
    errors += _validate_source(as_dict(spec.get("source")), "spec.source")
    node = str(spec.get("nodeName") or "")
    errors += as_invalid("spec.nodeName", node, validate_dns1123_subdomain(node))
    status = as_dict(obj.get("status"))
    metadata = as_dict(status.get("attachmentMetadata"))
    size = sum(len(str(k)) + len(str(v)) for k, v in metadata.items())
    if size > MAX_ATTACHED_VOLUME_METADATA_SIZE:
        errors.append(too_long("status.attachmentMetadata", MAX_ATTACHED_VOLUME_METADATA_SIZE))
    for name in ("attachError", "detachError"):
        errors += _validate_volume_error(status.get(name), child("status", name))
    return errors


def _validate_source(source: Obj, path: str) -> list[FieldError]:
    """validateVolumeAttachmentSource: exactly one of inlineVolumeSpec and
    persistentVolumeName."""
    inline, volume = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    one = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    if inline is None and volume is None:
        return [required(path, one)]
    if inline is not None and volume is not None:
        return [forbidden(path, one)]
    if volume is not None and not volume:
        return [required(child(path, "persistentVolumeName"),
                         "must specify non empty persistentVolumeName")]
    if inline is not None:
        return _validate_inline_volume_spec(as_dict(inline), child(path, "inlineVolumeSpec"))
    return []


def _validate_inline_volume_spec(spec: Obj, path: str) -> list[FieldError]:
    """ValidatePersistentVolumeSpec for an inline volume: a CSI source without claim or
    capacity, and access modes (the rest of a volume spec's rules are not checked here)."""
    errors: list[FieldError] = []
    inline_only = "may not be specified in the context of inline volumes"
    if spec.get("claimRef") is not None:
        errors.append(forbidden(child(path, "claimRef"), inline_only))
    if spec.get("capacity"):
        errors.append(forbidden(child(path, "capacity"), inline_only))
    csi = spec.get("csi")
    if csi is None:
        errors.append(required(child(path, "csi"),
                               "has to be specified in the context of inline volumes"))
    modes = as_list(spec.get("accessModes"))
    if not modes:
        errors.append(required(child(path, "accessModes")))
    for mode in modes:
        if mode not in ACCESS_MODES:
            errors.append(not_supported(child(path, "accessModes"), mode, ACCESS_MODES))
    if "ReadWriteOncePod" in modes and any(m != "ReadWriteOncePod" and m in ACCESS_MODES
                                           for m in modes):
        errors.append(forbidden(child(path, "accessModes"),
                                "may not use ReadWriteOncePod with other access modes"))
    if isinstance(csi, dict):
        csi_path = child(path, "csi")
        errors += validate_csi_driver_name(csi.get("driver"), child(csi_path, "driver"))
        if not csi.get("volumeHandle"):
            errors.append(required(child(csi_path, "volumeHandle")))
    return errors


def _validate_volume_error(error: Any, path: str) -> list[FieldError]:
    """validateVolumeError: a message of at most 1024 bytes (upstream's message names the
    metadata limit), a non-negative code."""
    if not isinstance(error, dict):
        return []
    errors: list[FieldError] = []
    if len(str(error.get("message") or "")) > MAX_VOLUME_ERROR_MESSAGE_SIZE:
        errors.append(too_long(child(path, "message"), MAX_ATTACHED_VOLUME_METADATA_SIZE))
    code = error.get("errorCode")
    if isinstance(code, int) and code < 0:
        errors.append(invalid(child(path, "errorCode"), code,
                              f"must be between 0 and {MAX_INT32}, inclusive"))
    return errors


# --- CSIStorageCapacity ------------------------------------------------------------------


class CSIStorageCapacityStrategy(NoGenerationStrategy):
    """CSIStorageCapacities: what a driver can still provision for one class in one
    topology segment. The segment and the class are fixed; the numbers change."""

    def validate(self, obj: Obj) -> list[FieldError]:
        """ValidateCSIStorageCapacity."""
        errors = validate_label_selector(obj.get("nodeTopology"), "nodeTopology")
        class_name = str(obj.get("storageClassName") or "")
        errors += as_invalid("storageClassName", class_name,
                             validate_dns1123_subdomain(class_name))
        if obj.get("capacity") is not None:
            amount, capacity_errors = parse_amount(obj["capacity"], "capacity")
            errors += capacity_errors
            if amount is not None and amount < 0:
                errors.append(invalid("capacity", show_amount(obj["capacity"]), IS_NEGATIVE))
        return errors

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        """ValidateCSIStorageCapacityUpdate: the topology and the class are the input of
        the driver's GetCapacity, so they never change."""
        errors = self.validate(new)
        if semantic(new.get("nodeTopology")) != semantic(old.get("nodeTopology")):
            errors.append(invalid("nodeTopology", new.get("nodeTopology"), FIELD_IMMUTABLE))
        if new.get("storageClassName") != old.get("storageClassName"):
            errors.append(invalid("storageClassName", new.get("storageClassName"),
                                  FIELD_IMMUTABLE))
        return errors
