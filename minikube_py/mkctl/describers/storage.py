"""`describe persistentvolumeclaim` (describe.go: describePersistentVolumeClaim,
printPersistentVolumeClaim, getPodsForPVC): the claim, what it is bound to, and the
pods that use it."""

from __future__ import annotations

from minikube_py.api import Obj
from minikube_py.mkctl.describers import Lookups, Settings
from minikube_py.mkctl.describers.common import (
    describe_events,
    print_annotations_multiline,
    print_labels_multiline,
    search_events,
    since,
)
from minikube_py.mkctl.describers.writer import LEVEL_0, LEVEL_1, PrefixWriter, rfc1123z

ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                ("ReadWriteOncePod", "RWOP"))


def claim_class(claim: Obj) -> str:
    """storageutil.GetPersistentVolumeClaimClass: spec.storageClassName, else the beta
    annotation."""
    spec_class = (claim.get("spec") or {}).get("storageClassName")
    if spec_class is not None:
        return spec_class
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    return annotations.get("volume.beta.kubernetes.io/storage-class", "")


def access_modes_string(modes: list[str] | None) -> str:
    """GetAccessModesAsString: "RWO,ROX", in that fixed order."""
    return ",".join(short for mode, short in ACCESS_MODES if mode in (modes or []))


def pods_for_claim(pods: list[Obj], claim: Obj) -> list[Obj]:
    """getPodsForPVC: the pods with a volume from the claim, then its owner pods."""
    name = (claim.get("metadata") or {}).get("name")
    using = [pod for pod in pods for volume in (pod.get("spec") or {}).get("volumes") or []
             if (volume.get("persistentVolumeClaim") or {}).get("claimName") == name]
    for ref in (claim.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("kind") != "Pod":
            continue
        owner = next((pod for pod in pods if pod["metadata"].get("uid") == ref.get("uid")),
                     None)
        if owner is not None and all(p["metadata"].get("uid") != ref.get("uid")
                                     for p in using):
            using.append(owner)
    return using


def persistent_volume_claim_describer(claim: Obj, lookups: Lookups, settings: Settings
                                      ) -> str:
    meta = claim.get("metadata") or {}
    namespace = meta.get("namespace", "")
    params = {"limit": str(settings.chunk_size)} if settings.chunk_size > 0 else {}
    pods = pods_for_claim(lookups.list(f"/api/v1/namespaces/{namespace}/pods", params), claim)
    events = search_events(lookups, namespace, meta.get("name", ""), "PersistentVolumeClaim",
                           meta.get("uid", ""), settings)
    spec, status = claim.get("spec") or {}, claim.get("status") or {}
    w = PrefixWriter()
    w.write(LEVEL_0, f"Name:\t{meta.get('name', '')}\n")
    w.write(LEVEL_0, f"Namespace:\t{namespace}\n")
    w.write(LEVEL_0, f"StorageClass:\t{claim_class(claim)}\n")
    if meta.get("deletionTimestamp"):
        w.write(LEVEL_0, f"Status:\tTerminating (lasts {since(meta['deletionTimestamp'])})\n")
    else:
        w.write(LEVEL_0, f"Status:\t{status.get('phase', '')}\n")
    w.write(LEVEL_0, f"Volume:\t{spec.get('volumeName', '')}\n")
    print_labels_multiline(w, "Labels", meta.get("labels"))
    print_annotations_multiline(w, "Annotations", meta.get("annotations"))
    w.write(LEVEL_0, f"Finalizers:\t[{' '.join(meta.get('finalizers') or [])}]\n")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = access_modes_string(status.get("accessModes"))
        capacity = str((status.get("capacity") or {}).get("storage", "0"))
    w.write(LEVEL_0, f"Capacity:\t{capacity}\n")
    w.write(LEVEL_0, f"Access Modes:\t{modes}\n")
    if spec.get("volumeMode") is not None:
        w.write(LEVEL_0, f"VolumeMode:\t{spec['volumeMode']}\n")
    source = spec.get("dataSource")
    if source is not None:
        w.write(LEVEL_0, "DataSource:\n")
        if source.get("apiGroup") is not None:
            w.write(LEVEL_1, f"APIGroup:\t{source['apiGroup']}\n")
        w.write(LEVEL_1, f"Kind:\t{source.get('kind', '')}\n")
        w.write(LEVEL_1, f"Name:\t{source.get('name', '')}\n")
    w.write(LEVEL_0, "Used By:\t")
    names = sorted(pod["metadata"].get("name", "") for pod in pods)
    if not names:
        w.write_line("<none>")
    for index, name in enumerate(names):
        w.write(LEVEL_0, ("\t" if index else "") + name + "\n")
    if status.get("conditions"):
        w.write(LEVEL_0, "Conditions:\n")
        w.write(LEVEL_1, "Type\tStatus\tLastProbeTime\tLastTransitionTime\tReason\tMessage\n")
        w.write(LEVEL_1, "----\t------\t-----------------\t------------------\t------\t"
                         "-------\n")
        for c in status["conditions"]:
            w.write(LEVEL_1, f"{c.get('type', '')} \t{c.get('status', '')} \t"
                             f"{rfc1123z(c.get('lastProbeTime'))} \t"
                             f"{rfc1123z(c.get('lastTransitionTime'))} \t"
                             f"{c.get('reason', '')} \t{c.get('message', '')}\n")
    describe_events(events, w)
    return w.tabbed()
