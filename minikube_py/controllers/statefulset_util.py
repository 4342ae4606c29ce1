"""Pure helpers of the StatefulSet controller: pod identity and storage from the ordinal,
revisions, and the PVC retention policy's owner references (upstream
pkg/controller/statefulset/stateful_set_utils.go)."""

from __future__ import annotations

import copy
import re

from minikube_py.api import Obj
from minikube_py.api.podutil import is_pod_ready
from minikube_py.controllers.controller_ref import pod_from_template

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
RETAIN, DELETE = "Retain", "Delete"

_STATEFUL_POD_NAME = re.compile(r"(.*)-([0-9]+)$")


# --- identity and storage (stateful_set_utils.go) ----------------------------------------------


def parent_name_and_ordinal(pod: Obj) -> tuple[str, int]:
    """getParentNameAndOrdinal: ("web", 2) for pod web-2; ("", -1) for other names."""
    match = _STATEFUL_POD_NAME.fullmatch(pod["metadata"].get("name", ""))
    if match is None or int(match.group(2)) >= 2**31:
        return "", -1
    return match.group(1), int(match.group(2))


def get_ordinal(pod: Obj) -> int:
    return parent_name_and_ordinal(pod)[1]


def is_member_of(sts: Obj, pod: Obj) -> bool:
    return parent_name_and_ordinal(pod)[0] == sts["metadata"]["name"]


def start_ordinal(sts: Obj) -> int:
    """getStartOrdinal: spec.ordinals.start, or 0."""
    return (sts["spec"].get("ordinals") or {}).get("start", 0)


def replica_count(sts: Obj) -> int:
    replicas = sts["spec"].get("replicas")
    return 1 if replicas is None else replicas


def in_ordinal_range(pod: Obj, sts: Obj) -> bool:
    """podInOrdinalRange: start <= ordinal <= start + replicas - 1."""
    start = start_ordinal(sts)
    return start <= get_ordinal(pod) < start + replica_count(sts)


def pod_name(sts: Obj, ordinal: int) -> str:
    return f"{sts['metadata']['name']}-{ordinal}"


def claim_name(sts: Obj, template: Obj, ordinal: int) -> str:
    """getPersistentVolumeClaimName: `<template>-<set>-<ordinal>`, e.g. www-web-0."""
    return f"{template['metadata']['name']}-{sts['metadata']['name']}-{ordinal}"


def persistent_volume_claims(sts: Obj, ordinal: int) -> dict[str, Obj]:
    """getPersistentVolumeClaims: the pod's claims by template name, labelled with the
    set's selector so they can be found again."""
    claims = {}
    for template in sts["spec"].get("volumeClaimTemplates") or []:
        pvc = copy.deepcopy(template)
        pvc.pop("status", None)
        meta = pvc.setdefault("metadata", {})
        meta["name"] = claim_name(sts, template, ordinal)
        meta["namespace"] = sts["metadata"]["namespace"]
        meta["labels"] = {**(meta.get("labels") or {}),
                          **((sts["spec"].get("selector") or {}).get("matchLabels") or {})}
        claims[template["metadata"]["name"]] = {"apiVersion": "v1",
                                                "kind": "PersistentVolumeClaim", **pvc}
    return claims


def identity_matches(sts: Obj, pod: Obj) -> bool:
    """identityMatches: the pod's name, namespace and identity labels fit its ordinal."""
    parent, ordinal = parent_name_and_ordinal(pod)
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    return (ordinal >= 0 and parent == sts["metadata"]["name"]
            and meta.get("namespace") == sts["metadata"]["namespace"]
            and labels.get(POD_NAME_LABEL) == meta["name"]
            and labels.get(POD_INDEX_LABEL) == str(ordinal))


def update_identity(sts: Obj, pod: Obj) -> None:
    """updateIdentity: the labels that name the pod and give its index."""
    ordinal = get_ordinal(pod)
    pod["metadata"]["name"] = pod_name(sts, ordinal)
    pod["metadata"]["namespace"] = sts["metadata"]["namespace"]
    labels = pod["metadata"].setdefault("labels", {})
    labels[POD_NAME_LABEL] = pod["metadata"]["name"]
    labels[POD_INDEX_LABEL] = str(ordinal)


def storage_matches(sts: Obj, pod: Obj) -> bool:
    """storageMatches: every claim template is mounted from the pod's own claim."""
    ordinal = get_ordinal(pod)
    if ordinal < 0:
        return False
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    for template in sts["spec"].get("volumeClaimTemplates") or []:
        source = (volumes.get(template["metadata"]["name"]) or {}).get("persistentVolumeClaim")
        if not source or source.get("claimName") != claim_name(sts, template, ordinal):
            return False
    return True


def update_storage(sts: Obj, pod: Obj) -> None:
    """updateStorage: claim-backed volumes first, replacing any volume of the same name."""
    claims = persistent_volume_claims(sts, get_ordinal(pod))
    volumes = [{"name": name, "persistentVolumeClaim": {"claimName": pvc["metadata"]["name"]}}
               for name, pvc in claims.items()]
    spec = pod.setdefault("spec", {})
    volumes += [v for v in spec.get("volumes") or [] if v.get("name") not in claims]
    spec["volumes"] = volumes


def new_stateful_set_pod(sts: Obj, ordinal: int, revision: str) -> Obj:
    """newStatefulSetPod: a pod from the template with the identity and storage of its
    ordinal (initIdentity sets hostname and subdomain, which never change after)."""
    pod = pod_from_template(sts["spec"].get("template") or {}, sts)
    pod["metadata"]["name"] = pod_name(sts, ordinal)  # generateName stays, unused, as upstream
    update_identity(sts, pod)
    pod["spec"]["hostname"] = pod["metadata"]["name"]
    if sts["spec"].get("serviceName"):
        pod["spec"]["subdomain"] = sts["spec"]["serviceName"]
    update_storage(sts, pod)
    pod["metadata"]["labels"][REVISION_LABEL] = revision
    return pod


def pod_revision(pod: Obj) -> str:
    return (pod["metadata"].get("labels") or {}).get(REVISION_LABEL, "")


def pod_phase(pod: Obj) -> str:
    return (pod.get("status") or {}).get("phase", "")


def is_created(pod: Obj) -> bool:
    """isCreated: the API server has it (it has a phase); placeholders have none."""
    return pod_phase(pod) != ""


def is_terminating(pod: Obj) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def is_running_and_ready(pod: Obj) -> bool:
    return pod_phase(pod) == "Running" and is_pod_ready(pod)


def descending_ordinal(pods: list[Obj]) -> list[Obj]:
    return sorted(pods, key=get_ordinal, reverse=True)


# --- PVC retention policy (StatefulSetAutoDeletePVC, GA in 1.32) ------------------------------


def retention_policy(sts: Obj) -> tuple[str, str]:
    """(whenDeleted, whenScaled); Retain unless set."""
    policy = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
    return policy.get("whenDeleted") or RETAIN, policy.get("whenScaled") or RETAIN


def _reference(obj: Obj, api_version: str, kind: str) -> Obj:
    """metav1.NewControllerRef for the set or a pod."""
    return {"apiVersion": api_version, "kind": kind, "name": obj["metadata"]["name"],
            "uid": obj["metadata"].get("uid", ""), "controller": True,
            "blockOwnerDeletion": True}


def _set_reference(sts: Obj) -> Obj:
    return _reference(sts, "apps/v1", "StatefulSet")


def pod_reference(pod: Obj) -> Obj:
    return _reference(pod, "v1", "Pod")


def _matches_ref(reference: Obj, owner: Obj) -> bool:
    """matchesRef: same apiVersion, kind and name (the uid may differ)."""
    return all(reference.get(field) == owner[field] for field in ("apiVersion", "kind", "name"))


def _has_owner(claim_obj: Obj, owner: Obj) -> bool:
    return any(r.get("uid") == owner["uid"] for r in claim_obj["metadata"].get("ownerReferences")
               or [])


def has_stale_owner(claim_obj: Obj, owner: Obj) -> bool:
    """hasStaleOwnerRef: a reference to an earlier object of the same name."""
    for reference in claim_obj["metadata"].get("ownerReferences") or []:
        if _matches_ref(reference, owner):
            return reference.get("uid") != owner["uid"]
    return False


def _has_unexpected_controller(claim_obj: Obj, sts: Obj, pod: Obj) -> bool:
    """hasUnexpectedController: with a Delete policy, a controller other than our set or
    pod (or an earlier one of theirs) owns the claim: then it is left alone."""
    if retention_policy(sts) == (RETAIN, RETAIN):
        return False
    ours = (_set_reference(sts), pod_reference(pod))
    for reference in claim_obj["metadata"].get("ownerReferences") or []:
        mine = next((owner for owner in ours if _matches_ref(reference, owner)), None)
        if mine is not None:
            if reference.get("uid") != mine["uid"]:
                return True
            continue
        if reference.get("controller"):
            return True
    return False


def is_claim_owner_up_to_date(claim_obj: Obj, sts: Obj, pod: Obj) -> bool:
    """isClaimOwnerUpToDate: the claim's ownerReferences fit the retention policy.

        Retain/Retain: no reference to set or pod      (whenDeleted/whenScaled)
        Delete/Retain: the set only
        Retain/Delete: the pod, once it is scaled down
        Delete/Delete: the set, or the pod once it is scaled down
    Deleting the owner then lets the garbage collector delete the claim.
    """
    set_ref, pod_ref = _set_reference(sts), pod_reference(pod)
    if has_stale_owner(claim_obj, set_ref) or has_stale_owner(claim_obj, pod_ref):
        return True
    if _has_unexpected_controller(claim_obj, sts, pod):
        return not (_has_owner(claim_obj, set_ref) or _has_owner(claim_obj, pod_ref))
    for reference in claim_obj["metadata"].get("ownerReferences") or []:
        if reference.get("uid") in (set_ref["uid"], pod_ref["uid"]) and not reference.get(
                "controller"):
            return False
    when_deleted, when_scaled = retention_policy(sts)
    scaled_down = not in_ordinal_range(pod, sts)
    want_set = when_deleted == DELETE and not (when_scaled == DELETE and scaled_down)
    want_pod = when_scaled == DELETE and scaled_down
    return (_has_owner(claim_obj, set_ref) == want_set
            and _has_owner(claim_obj, pod_ref) == want_pod)


def claim_owner_references(claim_obj: Obj, sts: Obj, pod: Obj) -> list[Obj]:
    """updateClaimOwnerRefForSetAndPod: our references scrubbed, then added per policy."""
    set_ref, pod_ref = _set_reference(sts), pod_reference(pod)
    unexpected = _has_unexpected_controller(claim_obj, sts, pod)
    references = [r for r in claim_obj["metadata"].get("ownerReferences") or []
                  if not (_matches_ref(r, set_ref) or _matches_ref(r, pod_ref))]
    if unexpected:
        return references
    when_deleted, when_scaled = retention_policy(sts)
    scaled_down = not in_ordinal_range(pod, sts)
    if when_scaled == DELETE and scaled_down:
        references.append(pod_ref)
    elif when_deleted == DELETE:
        references.append(set_ref)
    return references
