"""NodeRestriction (upstream plugin/pkg/admission/noderestriction): a kubelet writes only
what is its own.

The Node authorizer lets every kubelet update nodes, pod status and leases; this plugin,
for requests from a node (`system:node:<name>` in `system:nodes`), narrows that to:

    nodes        its own Node only; no labels under node-restriction.kubernetes.io/
    pods         create only mirror pods (the kubelet's copies of its static pods):
                 bound to itself, owned by its Node alone (controller, with the Node's
                 uid, no blockOwnerDeletion), and naming no other API object (service
                 account, Secret, ConfigMap, ClusterTrustBundle, claim); delete only pods
                 bound to it
    pods/status  only for pods bound to it, and no label changes
    pods/eviction only of pods bound to it
    persistentvolumeclaims/status  (a resize the kubelet finishes) only the capacity,
                 the conditions and the allocated resources and their statuses
    leases       in kube-node-lease, only the lease named after it
    csinodes     only the CSINode named after it

Everyone else passes untouched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from minikube_py.api import Obj, errors
from minikube_py.apiserver.auth.admission import CREATE, DELETE, UPDATE, Attributes, Plugin
from minikube_py.apiserver.auth.nodeauthorizer import node_name, pod_references

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
RESTRICTED_LABEL_DOMAIN = "node-restriction.kubernetes.io"
NODE_LEASE_NAMESPACE = "kube-node-lease"


class NodeRestriction(Plugin):
    name = "NodeRestriction"
    operations = frozenset((CREATE, UPDATE, DELETE))
    validating = True

    def __init__(self, node: Callable[[str], Awaitable[Obj | None]]) -> None:
        self.node = node  # a Node by name (None: there is none), to check owner uids

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation in self.operations
                and node_name(attributes.user) is not None
                and attributes.resource.group in ("", "coordination.k8s.io", "storage.k8s.io"))

    async def validate(self, attributes: Attributes) -> None:
        node = node_name(attributes.user)
        assert node is not None
        if attributes.is_resource("", "nodes") or attributes.is_resource("", "nodes",
                                                                          "status"):
            self._node(node, attributes)
        elif attributes.resource.group == "" and attributes.resource.plural == "pods":
            await self._pod(node, attributes)
        elif attributes.is_resource("", "persistentvolumeclaims", "status"):
            self._claim_status(node, attributes)
        elif attributes.is_resource("coordination.k8s.io", "leases"):
            if attributes.namespace == NODE_LEASE_NAMESPACE and attributes.name != node:
                raise _forbidden(attributes, "can only access node lease with the same name "
                                             "as the requesting node")
        elif attributes.is_resource("storage.k8s.io", "csinodes"):
            if attributes.name != node:
                raise _forbidden(attributes, "can only access CSINode with the same name as "
                                             "the requesting node")

    def _node(self, node: str, attributes: Attributes) -> None:
        if attributes.name != node:
            raise _forbidden(attributes, f'node "{node}" is not allowed to modify node '
                                         f'"{attributes.name}"')
        if attributes.operation == DELETE:
            return
        old_labels = _labels(attributes.old)
        changed = sorted(key for key, value in _labels(attributes.obj).items()
                         if _restricted(key) and old_labels.get(key) != value)
        if changed and attributes.operation == CREATE:
            raise _forbidden(attributes, "is not allowed to set the following labels: "
                                         f"{', '.join(changed)}")
        if changed:
            raise _forbidden(attributes, "is not allowed to modify labels: "
                                         f"{', '.join(changed)}")

    async def _pod(self, node: str, attributes: Attributes) -> None:
        subresource = attributes.subresource
        if subresource == "status":
            if _bound_to(attributes.old) != node:
                raise _forbidden(attributes, f'node "{node}" can only update pod status for '
                                             "pods with spec.nodeName set to itself")
            if _labels(attributes.obj) != _labels(attributes.old):
                raise _forbidden(attributes, f'node "{node}" cannot update labels through '
                                             "pod status")
            return
        if subresource == "eviction":
            if _bound_to(attributes.old) != node:
                raise _forbidden(attributes, f'node "{node}" can only evict pods with '
                                             "spec.nodeName set to itself")
            return
        if subresource:
            raise _forbidden(attributes, f'node "{node}" can not modify pods/{subresource}')
        if attributes.operation == CREATE:
            await self._pod_create(node, attributes)
            return
        if attributes.operation == DELETE:
            if _bound_to(attributes.old) != node:
                raise _forbidden(attributes, f'node "{node}" can only delete pods with '
                                             "spec.nodeName set to itself")
            return
        raise _forbidden(attributes, f'unexpected operation {attributes.operation}, node '
                                     f'"{node}" can only create and delete mirror pods')

    async def _pod_create(self, node: str, attributes: Attributes) -> None:
        """admitPodCreate: a mirror pod of this node's, owned by its Node, that reads no
        other API object (the kubelet could read nothing of them for a static pod)."""
        pod = attributes.obj or {}
        metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if MIRROR_POD_ANNOTATION not in (metadata.get("annotations") or {}):
            raise _forbidden(attributes, f'pod does not have "{MIRROR_POD_ANNOTATION}" '
                                         f'annotation, node "{node}" can only create mirror '
                                         "pods")
        if _bound_to(pod) != node:
            raise _forbidden(attributes, f'node "{node}" can only create pods with '
                                         "spec.nodeName set to itself")
        await self._check_owner(node, attributes, metadata.get("ownerReferences") or [])
        if spec.get("serviceAccountName"):
            raise _forbidden(attributes, f'node "{node}" can not create pods that reference '
                                         "a service account")
        kinds = {kind for kind, _ in pod_references(pod)}
        for kind, plural in (("secret", "secrets"), ("configmap", "configmaps")):
            if kind in kinds:
                raise _forbidden(attributes, f'node "{node}" can not create pods that '
                                             f"reference {plural}")
        volumes = [volume for volume in spec.get("volumes") or [] if isinstance(volume, dict)]
        if any("clusterTrustBundle" in source for volume in volumes
               for source in (volume.get("projected") or {}).get("sources") or []):
            raise _forbidden(attributes, f'node "{node}" can not create pods that reference '
                                         "clustertrustbundles")
        if any(volume.get("persistentVolumeClaim") is not None for volume in volumes):
            raise _forbidden(attributes, f'node "{node}" can not create pods that reference '
                                         "persistentvolumeclaims")

    async def _check_owner(self, node: str, attributes: Attributes, owners: list[Obj]
                           ) -> None:
        """The mirror pod's one owner is this node's Node, as its controller."""
        if len(owners) > 1:
            raise _forbidden(attributes, f'node "{node}" can only create pods with a single '
                                         "owner reference set to itself")
        if not owners:
            raise _forbidden(attributes, f'node "{node}" can only create pods with an owner '
                                         "reference set to itself")
        owner = owners[0]
        if (owner.get("apiVersion"), owner.get("kind"), owner.get("name")) != (
                "v1", "Node", node):
            raise _forbidden(attributes, f'node "{node}" can only create pods with an owner '
                                         "reference set to itself")
        if not owner.get("controller"):
            raise _forbidden(attributes, f'node "{node}" can only create pods with a '
                                         "controller owner reference set to itself")
        if owner.get("blockOwnerDeletion"):
            raise _forbidden(attributes, f'node "{node}" must not set blockOwnerDeletion on '
                                         "an owner reference")
        existing = await self.node(node)
        if existing is None:
            raise errors.not_found("nodes", "", node)
        uid = existing["metadata"]["uid"]
        if owner.get("uid") != uid:
            raise _forbidden(attributes, f"node {node} UID mismatch: expected "
                                         f"{owner.get('uid', '')} got {uid}")

    @staticmethod
    def _claim_status(node: str, attributes: Attributes) -> None:
        """admitPVCStatus: a node may change a claim's status.capacity, conditions,
        allocatedResources and allocatedResourceStatuses, nothing else."""
        if attributes.operation != UPDATE:
            raise _forbidden(attributes, f"unexpected operation {attributes.operation}")

        def comparable(claim: Obj | None) -> Obj:
            claim = dict(claim or {})
            claim["metadata"] = {key: value for key, value in
                                 (claim.get("metadata") or {}).items()
                                 if key not in ("resourceVersion", "managedFields")}
            claim["status"] = {key: value for key, value in (claim.get("status") or {}).items()
                               if key not in _NODE_CLAIM_STATUS_FIELDS}
            return claim

        old, new = comparable(attributes.old), comparable(attributes.obj)
        if old != new:
            changed = sorted(key for key in {*old, *new} if old.get(key) != new.get(key))
            raise _forbidden(attributes, f'node "{node}" is not allowed to update fields '
                                         "other than status.capacity and status.conditions: "
                                         f"{', '.join(changed)} changed")


def _labels(obj: Obj | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _restricted(key: str) -> bool:
    domain = key.partition("/")[0] if "/" in key else ""
    return domain == RESTRICTED_LABEL_DOMAIN or domain.endswith(f".{RESTRICTED_LABEL_DOMAIN}")


def _bound_to(pod: Obj | None) -> str:
    return ((pod or {}).get("spec") or {}).get("nodeName") or ""


_NODE_CLAIM_STATUS_FIELDS = ("capacity", "conditions", "allocatedResources",
                             "allocatedResourceStatuses")


def _forbidden(attributes: Attributes, why: str) -> errors.APIError:
    resource = attributes.resource
    return errors.forbidden(resource.plural, resource.group, attributes.name, why)
