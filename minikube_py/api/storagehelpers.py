"""What PersistentVolumes, claims and StorageClasses mean to each other: the helpers the
PersistentVolume controller, its admission plugins and (later) the scheduler share.

Upstream: k8s.io/component-helpers/storage/volume (pv_helpers.go, helpers.go),
pkg/volume/util/storageclass.go and the PV controller's index.go.

    claim --(class, size, access modes, volume mode, selector)--> smallest Available
    volume that satisfies it; a volume pre-bound to the claim (its claimRef names it)
    wins over any other.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from minikube_py.api import Obj
from minikube_py.api.meta import parse_rfc3339
from minikube_py.api.quantity import parse_quantity
from minikube_py.api.scheduling.nodeaffinity import node_selector_matches
from minikube_py.api.selectors import SelectorError, label_selector_from_dict

# Annotations of the binding protocol (storagehelpers / pv_controller.go).
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
# The provisioner of the cluster's default StorageClass (minikube_py/provisioner).
LOCAL_PATH_PROVISIONER = "minikube-py.io/local-path"
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
IS_DEFAULT_STORAGE_CLASS = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_STORAGE_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
# StorageObjectInUseProtection's finalizers.
PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"

ACCESS_MODE_ABBREVIATIONS = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"),
                             ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP"))


def _annotations(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def claim_key(claim: Obj) -> str:
    meta = claim["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def claim_ref_key(claim_ref: Obj) -> str:
    return f"{claim_ref.get('namespace', '')}/{claim_ref.get('name', '')}"


def claim_class(claim: Obj) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation first, then
    spec.storageClassName; "" when the claim asks for no class."""
    annotations = _annotations(claim)
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return _spec(claim).get("storageClassName") or ""


def claim_has_class(claim: Obj) -> bool:
    """PersistentVolumeClaimHasClass: a class was asked for, even the empty one."""
    return (BETA_STORAGE_CLASS_ANNOTATION in _annotations(claim)
            or _spec(claim).get("storageClassName") is not None)


def volume_class(volume: Obj) -> str:
    """GetPersistentVolumeClass: the beta annotation first, then spec.storageClassName."""
    annotations = _annotations(volume)
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return _spec(volume).get("storageClassName") or ""


def is_default_class(storage_class: Obj) -> bool:
    """IsDefaultAnnotation: the GA or the beta default-class annotation is "true"."""
    annotations = _annotations(storage_class)
    return (annotations.get(IS_DEFAULT_STORAGE_CLASS) == "true"
            or annotations.get(BETA_IS_DEFAULT_STORAGE_CLASS) == "true")


def default_class(storage_classes: Iterable[Obj]) -> Obj | None:
    """GetDefaultClass: the newest class marked default (ties: the first by name)."""
    defaults = [each for each in storage_classes if is_default_class(each)]
    if not defaults:
        return None
    defaults.sort(key=lambda each: each["metadata"]["name"])
    defaults.sort(key=lambda each: parse_rfc3339(each["metadata"]["creationTimestamp"]),
                  reverse=True)
    return defaults[0]


def access_modes_string(modes: Iterable[str]) -> str:
    """GetAccessModesAsString: "RWO,ROX,RWX,RWOP", always in this order."""
    wanted = set(modes)
    return ",".join(short for mode, short in ACCESS_MODE_ABBREVIATIONS if mode in wanted)


def storage_of(resources: Obj | None) -> Decimal:
    """The storage quantity of a resource list; 0 when absent (a Go map's zero value)."""
    value = (resources or {}).get("storage")
    return parse_quantity(value) if value is not None else Decimal(0)


def requested_storage(claim: Obj) -> Decimal:
    return storage_of((_spec(claim).get("resources") or {}).get("requests"))


def volume_capacity(volume: Obj) -> Decimal:
    return storage_of(_spec(volume).get("capacity"))


def is_volume_bound_to_claim(volume: Obj, claim: Obj) -> bool:
    """IsVolumeBoundToClaim: the volume's claimRef names the claim (and its UID, if set)."""
    claim_ref = _spec(volume).get("claimRef")
    if claim_ref is None:
        return False
    meta = claim["metadata"]
    if (claim_ref.get("name"), claim_ref.get("namespace", "")) != (
            meta["name"], meta.get("namespace", "")):
        return False
    uid = claim_ref.get("uid", "")
    return not uid or uid == meta.get("uid")


def check_volume_mode_mismatches(claim: Obj, volume: Obj) -> bool:
    """CheckVolumeModeMismatches: Filesystem unless said; True when they differ."""
    return ((_spec(claim).get("volumeMode") or "Filesystem")
            != (_spec(volume).get("volumeMode") or "Filesystem"))


def check_access_modes(claim: Obj, volume: Obj) -> bool:
    """CheckAccessModes: the volume offers every access mode the claim asks for."""
    offered = set(_spec(volume).get("accessModes") or [])
    return all(mode in offered for mode in _spec(claim).get("accessModes") or [])


def check_node_affinity(volume: Obj, node: Obj) -> bool:
    """CheckNodeAffinity: a volume without required node affinity fits every node."""
    required = (_spec(volume).get("nodeAffinity") or {}).get("required")
    return required is None or node_selector_matches(required, node)


def find_matching_volume(claim: Obj, volumes: Iterable[Obj], node: Obj | None = None,
                         excluded: frozenset[str] = frozenset(),
                         delay_binding: bool = False) -> Obj | None:
    """FindMatchingVolume: the volume pre-bound to the claim, else the smallest Available
    unclaimed one of the claim's class, attributes class and selector that is big enough.

    delay_binding (the PV controller's path, for WaitForFirstConsumer claims): only a
    pre-bound volume is returned. node (the scheduler's path): the volume's node
    affinity must allow it, and its access modes must include the claim's.
    ValueError: the claim's selector does not parse.
    """
    requested = requested_storage(claim)
    requested_class = claim_class(claim)
    requested_attributes_class = _spec(claim).get("volumeAttributesClassName") or ""
    selector = None
    if _spec(claim).get("selector") is not None:
        try:
            selector = label_selector_from_dict(_spec(claim)["selector"])
        except SelectorError as error:
            raise ValueError(f"error creating internal label selector for claim: "
                             f"{claim_key(claim)}: {error}") from error
    smallest: Obj | None = None
    smallest_size = Decimal(0)
    for volume in volumes:
        # every test is a skip, so the cheap ones come first and the node affinity (the
        # dearest, as upstream's comment says) last
        if volume["metadata"]["name"] in excluded:
            continue
        bound_to_claim = is_volume_bound_to_claim(volume, claim)
        spec = _spec(volume)
        if not bound_to_claim and (
                (node is None and delay_binding)
                or (volume.get("status") or {}).get("phase") != "Available"
                or spec.get("claimRef") is not None):
            continue
        size = volume_capacity(volume)
        if size < requested or check_volume_mode_mismatches(claim, volume) \
                or volume["metadata"].get("deletionTimestamp"):
            continue
        if bound_to_claim:
            return volume if node is None or check_node_affinity(volume, node) else None
        if selector is not None and not selector.matches(
                volume["metadata"].get("labels") or {}):
            continue
        if volume_class(volume) != requested_class:
            continue
        if (spec.get("volumeAttributesClassName") or "") != requested_attributes_class:
            continue
        if node is not None and not (check_node_affinity(volume, node)
                                     and check_access_modes(claim, volume)):
            continue
        if smallest is None or smallest_size > size:
            smallest, smallest_size = volume, size
    return smallest


def _may_match(volume: Obj, claim: Obj, delay_binding: bool) -> bool:
    """The first skip of find_matching_volume (no node): pre-bound to the claim, or (not
    delayed) an Available volume without a claimRef."""
    if is_volume_bound_to_claim(volume, claim):
        return True
    return (not delay_binding and (volume.get("status") or {}).get("phase") == "Available"
            and _spec(volume).get("claimRef") is None)


def find_best_match_for_claim(claim: Obj, volumes: Iterable[Obj], *,
                              delay_binding: bool = False) -> Obj | None:
    """persistentVolumeOrderedIndex.findByClaim: look among the volumes whose access
    modes include all the claim's, the sets with the fewest modes first, so that a claim
    for RWO takes an RWO volume before an RWO+RWX one."""
    by_modes: dict[str, list[Obj]] = {}
    for volume in volumes:
        if not _may_match(volume, claim, delay_binding):
            continue
        modes = access_modes_string(_spec(volume).get("accessModes") or [])
        by_modes.setdefault(modes, []).append(volume)
    wanted = set(access_modes_string(_spec(claim).get("accessModes") or []).split(",")) - {""}
    possible = [modes for modes in by_modes if wanted <= set(modes.split(","))]
    possible.sort(key=lambda modes: len(modes.split(",")))
    for modes in possible:
        best = find_matching_volume(claim, by_modes[modes], delay_binding=delay_binding)
        if best is not None:
            return best
    return None


def check_volume_satisfies_claim(volume: Obj, claim: Obj) -> str:
    """checkVolumeSatisfyClaim: why the volume a claim names cannot serve it ("" if it
    can)."""
    if volume["metadata"].get("deletionTimestamp"):
        return f'the volume is marked for deletion "{volume["metadata"]["name"]}"'
    if volume_capacity(volume).to_integral_value(rounding="ROUND_CEILING") < \
            requested_storage(claim).to_integral_value(rounding="ROUND_CEILING"):
        return "requested PV is too small"
    if volume_class(volume) != claim_class(claim):
        return "storageClassName does not match"
    if check_volume_mode_mismatches(claim, volume):
        return "incompatible volumeMode"
    if not check_access_modes(claim, volume):
        return "incompatible accessMode"
    return ""


def claim_names_of_pod(pod: Obj) -> list[str]:
    """The claims a pod's volumes use: persistentVolumeClaim sources, and the
    `<pod>-<volume>` claim of each ephemeral volume (upstream's PodPVCIndex)."""
    names = []
    for volume in _spec(pod).get("volumes") or []:
        if volume.get("persistentVolumeClaim") is not None:
            names.append(volume["persistentVolumeClaim"].get("claimName", ""))
        elif volume.get("ephemeral") is not None:
            names.append(f"{pod['metadata']['name']}-{volume.get('name', '')}")
    return names
