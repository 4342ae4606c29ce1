"""Controller references: which controller owns an object, adoption and release.

An object has at most one ownerReference with `controller: true`: its *controller*.
A controller *claims* the objects it should own (upstream's ControllerRefManager):

    owned by us,   selector matches       -> keep
    owned by us,   selector stops matching -> release (remove our ownerReference)
    owned by none, selector matches        -> adopt (add our ownerReference), unless we
                                              or it are being deleted
    owned by someone else                  -> never touched

Adoption and release are patches that carry the object's uid, so they fail rather than
touch a different object that reused the name.
"""

from __future__ import annotations

import copy
import logging

from minikube_py.api import Obj
from minikube_py.api.selectors import LabelSelector
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import ResourceClient
from minikube_py.client.store import Indexer

log = logging.getLogger(__name__)


def owner_reference(owner: Obj, *, controller: bool = True,
                    block_owner_deletion: bool = True) -> Obj:
    """metav1.NewControllerRef: the reference a controller puts on what it creates."""
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
            "uid": meta["uid"], "controller": controller,
            "blockOwnerDeletion": block_owner_deletion}


def controller_of(obj: Obj) -> Obj | None:
    """metav1.GetControllerOf: the ownerReference with controller: true, if any."""
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller"):
            return reference
    return None


def is_controlled_by(obj: Obj, owner: Obj) -> bool:
    reference = controller_of(obj)
    return reference is not None and reference.get("uid") == owner["metadata"]["uid"]


def resolve_controller_ref(store: Indexer, namespace: str, reference: Obj,
                           kind: str) -> Obj | None:
    """resolveControllerRef: the cached `kind` a controller reference names, or None when
    the kind differs, the name is not in the cache, or the uid is another object's."""
    if reference.get("kind") != kind:
        return None
    owner = store.get_by_name(namespace, reference.get("name", ""))
    if owner is None or owner["metadata"].get("uid") != reference.get("uid"):
        return None
    return owner


def being_deleted(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


async def claim(children: ResourceClient, owner: Obj, selector: LabelSelector,
                candidates: list[Obj]) -> list[Obj]:
    """Adopt and release among `candidates` (same namespace); return those we own now."""
    claimed: list[Obj] = []
    owner_uid = owner["metadata"]["uid"]
    for child in candidates:
        reference = controller_of(child)
        matches = selector.matches((child.get("metadata") or {}).get("labels"))
        if reference is not None:
            if reference.get("uid") != owner_uid:
                continue
            if matches or being_deleted(owner):
                claimed.append(child)
            else:
                await _release(children, owner, child)
            continue
        if being_deleted(owner) or being_deleted(child) or not matches:
            continue
        adopted = await _adopt(children, owner, child)
        if adopted is not None:
            claimed.append(adopted)
    return claimed


async def _adopt(children: ResourceClient, owner: Obj, child: Obj) -> Obj | None:
    meta = child["metadata"]
    references = [*(meta.get("ownerReferences") or []), owner_reference(owner)]
    try:
        return await children.patch(
            meta["name"], {"metadata": {"ownerReferences": references, "uid": meta["uid"]}},
            meta.get("namespace"), patch_type="merge")
    except NotFound:
        return None


async def _release(children: ResourceClient, owner: Obj, child: Obj) -> None:
    meta = child["metadata"]
    owner_uid = owner["metadata"]["uid"]
    references = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != owner_uid]
    try:
        await children.patch(
            meta["name"], {"metadata": {"ownerReferences": references or None,
                                        "uid": meta["uid"]}},
            meta.get("namespace"), patch_type="merge")
    except NotFound:
        pass


def pod_from_template(template: Obj, owner: Obj, *, name_prefix: str | None = None) -> Obj:
    """controller.GetPodFromTemplate: a new pod from a pod template, owned by `owner`."""
    template_meta = template.get("metadata") or {}
    prefix = name_prefix if name_prefix is not None else owner["metadata"]["name"] + "-"
    meta: Obj = {
        "generateName": prefix,
        "namespace": owner["metadata"].get("namespace", ""),
        "labels": dict(template_meta.get("labels") or {}),
        "annotations": dict(template_meta.get("annotations") or {}),
        "ownerReferences": [owner_reference(owner)],
    }
    if template_meta.get("finalizers"):
        meta["finalizers"] = list(template_meta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": copy.deepcopy(template.get("spec") or {})}
