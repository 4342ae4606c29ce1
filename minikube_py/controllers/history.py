"""ControllerRevisions: the template history of DaemonSets and StatefulSets (upstream's
pkg/controller/history and the two controllers' revision code).

    a DaemonSet or StatefulSet, as it is now
        -> its snapshot: {"spec": {"template": {...the template..., "$patch": "replace"}}}
           (the strategic merge patch that puts this template back: `kubectl rollout
           undo` applies it to the object)
        -> a ControllerRevision `<name>-<hash>` holding the snapshot as `data`, numbered
           one past the highest revision so far, owned by the object (controller: true)
           and labelled like its pods

When the template goes back to an earlier one (a rollback), the revision with equal
data is renumbered to be the newest rather than copied. Revisions beyond
spec.revisionHistoryLimit are deleted, oldest first, except those pods still run.

Numbers come from the informer's cache, so a sync waits until the cache holds the last
revision it wrote for the owner (`caught_up`): a cache one revision behind would number
the next template like the last one, for good once the template moves on, and the limit
would then keep the wrong revisions.

Two things differ between the two controllers, as upstream:
- the name's hash: a DaemonSet's is its template's hash (the pods' controller-revision-
  hash label); a StatefulSet's is the hash of the snapshot's bytes, and its pods' label
  is the whole revision name;
- the labels: a DaemonSet's revision carries controller-revision-hash, a StatefulSet's
  controller.kubernetes.io/hash.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

from minikube_py.api import Obj
from minikube_py.api.selectors import LabelSelector
from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.informer import SharedInformer
from minikube_py.client.rest import ResourceClient
from minikube_py.client.store import object_key
from minikube_py.controllers.controller_ref import claim, controller_of, owner_reference
from minikube_py.controllers.controller_utils import safe_encode_string

HASH_LABEL = "controller.kubernetes.io/hash"  # history.ControllerRevisionHashLabel
MAX_PREFIX = 223  # ControllerRevisionName: room for "-" and a hash in 253 characters
DEFAULT_HISTORY_LIMIT = 10
_FNV32_OFFSET, _FNV32_PRIME = 0x811C9DC5, 0x01000193


def snapshot(owner: Obj) -> Obj:
    """getPatch: the patch that restores the owner's pod template, its keys sorted at every
    level as Go writes a map: kubectl compares the bytes the API server returns with its
    own encoding of the object's template to tell that a rollback would change nothing."""
    template = {**((owner.get("spec") or {}).get("template") or {}), "$patch": "replace"}
    return dict(orjson.loads(orjson.dumps({"spec": {"template": template}},
                                          option=orjson.OPT_SORT_KEYS)))


def template_of(revision: Obj) -> Obj:
    """ApplyRevision's result for a snapshot: the template it restores."""
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get(
        "template") or {})
    template.pop("$patch", None)
    return template


def go_json(value: Any) -> bytes:
    """What Go's json.Marshal writes for a map: sorted keys, no spaces, and <, > and &
    escaped as \\u003c, \\u003e and \\u0026."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    return text.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def hash_data(data: Obj, collision_count: int | None) -> str:
    """HashControllerRevision: FNV-1 of the data's bytes, then of the collision count as
    decimal text."""
    value = _FNV32_OFFSET
    probe = b"" if collision_count is None else str(collision_count).encode()
    for byte in go_json(data) + probe:
        value = ((value * _FNV32_PRIME) & 0xFFFFFFFF) ^ byte
    return safe_encode_string(str(value))


def revision_name(owner_name: str, hash_: str) -> str:
    """ControllerRevisionName."""
    return f"{owner_name[:MAX_PREFIX]}-{hash_}"


def new_revision(owner: Obj, number: int, hash_: str, hash_label: str,
                 name_hash: str | None = None) -> Obj:
    """NewControllerRevision: the owner's snapshot, labelled like its pods (plus the
    hash label), annotated like the owner, owned by it."""
    meta = owner["metadata"]
    template = (owner.get("spec") or {}).get("template") or {}
    labels = {**((template.get("metadata") or {}).get("labels") or {}), hash_label: hash_}
    revision_meta: Obj = {"name": revision_name(meta["name"], name_hash or hash_),
                          "namespace": meta["namespace"], "labels": labels,
                          "ownerReferences": [owner_reference(owner)]}
    if meta.get("annotations"):
        revision_meta["annotations"] = dict(meta["annotations"])
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": revision_meta, "data": snapshot(owner), "revision": number}


def sort_revisions(revisions: list[Obj]) -> list[Obj]:
    """SortControllerRevisions: by number, then age, then name."""
    return sorted(revisions, key=lambda r: (r.get("revision", 0),
                                            r["metadata"].get("creationTimestamp", ""),
                                            r["metadata"]["name"]))


def next_number(revisions: list[Obj]) -> int:
    """nextRevision: one past the highest number (1 for the first)."""
    return max((r.get("revision", 0) for r in revisions), default=0) + 1


def equal(revision: Obj, data: Obj) -> bool:
    return revision.get("data") == data


def _version(resource_version: str) -> int:
    """A resourceVersion as a number (etcd's mod_revision), to tell which is newer."""
    return int(resource_version or 0)


class History:
    """One owner kind's revisions: listed from the informer's cache, written through the
    API (upstream's realHistory)."""

    def __init__(self, informer: SharedInformer, client: ResourceClient) -> None:
        self.informer = informer
        self.store = informer.store
        self.client = client
        # owner key -> resourceVersion of the last revision written for it, until cached
        self._written: dict[str, int] = {}

    def caught_up(self, owner: Obj) -> bool:
        """Whether the cache holds the last revision created or renumbered for the owner.
        Until it does, a sync must not use the owner's history. The watch event of that
        write queues the owner again (the controllers' revision handlers), so a sync
        skipped for this is always followed by another."""
        key = object_key(owner)
        written = self._written.get(key)
        if written is None:
            return True
        if _version(self.informer.last_sync_resource_version()) < written:
            return False
        del self._written[key]
        return True

    def forget(self, owner_key: str) -> None:
        """The owner is gone: nothing of its to wait for."""
        self._written.pop(owner_key, None)

    def _wrote(self, revision: Obj) -> Obj:
        """Remember a revision written (or found) through the API, for caught_up."""
        reference = controller_of(revision)
        if reference is not None:  # the owner's object_key: it shares the namespace
            key = f"{revision['metadata']['namespace']}/{reference['name']}"
            version = _version(revision["metadata"].get("resourceVersion", ""))
            self._written[key] = max(self._written.get(key, 0), version)
        return revision

    async def owned(self, owner: Obj, selector: LabelSelector) -> list[Obj]:
        """ListControllerRevisions and adoptOrphanRevisions: the owner's revisions, orphans
        its selector matches adopted and its own that it no longer matches released."""
        namespace = owner["metadata"]["namespace"]
        return sort_revisions(await claim(self.client, owner, selector,
                                          self.store.list(namespace)))

    async def create(self, revision: Obj) -> Obj | None:
        """One try of CreateControllerRevision: the revision as stored, or the one already
        there under its name with equal data; None when that one holds other data (a hash
        collision: the caller counts it and names the revision again)."""
        meta = revision["metadata"]
        try:
            return self._wrote(await self.client.create(revision, meta["namespace"]))
        except AlreadyExists:
            existing = await self.client.get(meta["name"], meta["namespace"])
            return self._wrote(existing) if equal(existing, revision["data"]) else None

    async def renumber(self, revision: Obj, number: int) -> Obj:
        """UpdateControllerRevision: a rollback makes an old revision the newest."""
        if revision.get("revision") == number:
            return revision
        return self._wrote(await self.client.patch(
            revision["metadata"]["name"], {"revision": number},
            revision["metadata"]["namespace"], patch_type="merge"))

    async def delete(self, revision: Obj) -> None:
        try:
            await self.client.delete(revision["metadata"]["name"],
                                     revision["metadata"]["namespace"])
        except NotFound:
            pass
