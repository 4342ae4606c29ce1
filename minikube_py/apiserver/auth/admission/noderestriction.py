"""NodeRestriction (upstream plugin/pkg/admission/noderestriction): a kubelet writes only
what is its own.

The Node authorizer lets every kubelet update nodes, pod status and leases; this plugin,
for requests from a node (`system:node:<name>` in `system:nodes`), narrows that to:

    nodes        its own Node only; no labels under node-restriction.kubernetes.io/
    pods         create only mirror pods bound to itself; delete only pods bound to it
    pods/status  only for pods bound to it
    pods/eviction only of pods bound to it
    leases       in kube-node-lease, only the lease named after it

Everyone else passes untouched.
"""

from __future__ import annotations

from typing import Any

from minikube_py.api import errors
from minikube_py.apiserver.auth.admission import CREATE, DELETE, UPDATE, Attributes, Plugin
from minikube_py.apiserver.auth.nodeauthorizer import node_name

Obj = dict[str, Any]

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
RESTRICTED_LABEL_DOMAIN = "node-restriction.kubernetes.io"
NODE_LEASE_NAMESPACE = "kube-node-lease"


class NodeRestriction(Plugin):
    name = "NodeRestriction"
    operations = frozenset((CREATE, UPDATE, DELETE))
    validating = True

    def handles(self, attributes: Attributes) -> bool:
        return (attributes.operation in self.operations
                and node_name(attributes.user) is not None
                and attributes.resource.group in ("", "coordination.k8s.io"))

    async def validate(self, attributes: Attributes) -> None:
        node = node_name(attributes.user)
        assert node is not None
        if attributes.is_resource("", "nodes") or attributes.is_resource("", "nodes",
                                                                          "status"):
            self._node(node, attributes)
        elif attributes.resource.group == "" and attributes.resource.plural == "pods":
            self._pod(node, attributes)
        elif attributes.is_resource("coordination.k8s.io", "leases"):
            if attributes.namespace == NODE_LEASE_NAMESPACE and attributes.name != node:
                raise _forbidden(attributes, "can only access node lease with the same name "
                                             "as the requesting node")

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

    def _pod(self, node: str, attributes: Attributes) -> None:
        subresource = attributes.subresource
        if subresource == "status":
            if _bound_to(attributes.old) != node:
                raise _forbidden(attributes, f'node "{node}" can only update pod status for '
                                             "pods with spec.nodeName set to itself")
            return
        if subresource == "eviction":
            if _bound_to(attributes.old) != node:
                raise _forbidden(attributes, f'node "{node}" can only evict pods with '
                                             "spec.nodeName set to itself")
            return
        if subresource:
            raise _forbidden(attributes, f'node "{node}" can not modify pods/{subresource}')
        if attributes.operation == CREATE:
            pod = attributes.obj or {}
            annotations = (pod.get("metadata") or {}).get("annotations") or {}
            if MIRROR_POD_ANNOTATION not in annotations:
                raise _forbidden(attributes, f'pod does not have "{MIRROR_POD_ANNOTATION}" '
                                             f'annotation, node "{node}" can only create '
                                             "mirror pods")
            if _bound_to(pod) != node:
                raise _forbidden(attributes, f'node "{node}" can only create pods with '
                                             "spec.nodeName set to itself")
            return
        if attributes.operation == DELETE:
            if _bound_to(attributes.old) != node:
                raise _forbidden(attributes, f'node "{node}" can only delete pods with '
                                             "spec.nodeName set to itself")
            return
        raise _forbidden(attributes, f'unexpected operation {attributes.operation}, node '
                                     f'"{node}" can only create and delete mirror pods')


def _labels(obj: Obj | None) -> dict[str, str]:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


def _restricted(key: str) -> bool:
    domain = key.partition("/")[0] if "/" in key else ""
    return domain == RESTRICTED_LABEL_DOMAIN or domain.endswith(f".{RESTRICTED_LABEL_DOMAIN}")


def _bound_to(pod: Obj | None) -> str:
    return ((pod or {}).get("spec") or {}).get("nodeName") or ""


def _forbidden(attributes: Attributes, why: str) -> errors.APIError:
    resource = attributes.resource
    return errors.forbidden(resource.plural, resource.group, attributes.name, why)
