"""The Node authorizer (upstream plugin/pkg/auth/authorizer/node): what a kubelet may do.

A kubelet authenticates as `system:node:<name>` in the group `system:nodes`. It may:

    read, write its status, and so on, with the fixed rules every kubelet needs
        (NodeRules: nodes, pods, pods/status, events, leases, services, reviews...)
    get, update, patch or delete its own CSINode (create any: the name is checked by
        NodeRestriction, since a create names no object yet)
    get a Secret, ConfigMap, PersistentVolumeClaim, PersistentVolume or ServiceAccount,
    or ask for a ServiceAccount's token, only when a pod bound to it uses that object
        (the graph: node <- pod -> secret / configmap / claim -> volume / account)

Anything else gets no answer here, and the next authorizer (RBAC) decides; upstream
runs `--authorization-mode=Node,RBAC`. NodeRestriction admission (admission/
noderestriction.py) then narrows the writes the rules allow to the node's own objects.

The graph is computed from the pods watch cache, for one node at a time, and kept
until a pod changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from minikube_py.api import Obj
from minikube_py.apiserver.auth.authentication import UserInfo
from minikube_py.apiserver.auth.authorization import Attributes, Decision, Rule

NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"

# (group, resource or resource/subresource) -> the verbs a pod's use lets its node do.
GRAPH_RESOURCES = {
    ("", "secrets"): ("get", "list", "watch"),
    ("", "configmaps"): ("get", "list", "watch"),
    ("", "persistentvolumeclaims"): ("get",),
    ("", "persistentvolumes"): ("get",),
    ("", "serviceaccounts"): ("get",),
    ("", "serviceaccounts/token"): ("create",),
}


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> Rule:
    return Rule.of({"verbs": verbs, "apiGroups": groups, "resources": resources})


# NodeRules (bootstrappolicy.NodeRules): what every kubelet may do, whatever the graph.
NODE_RULES = (
    _rule(["create", "get", "list", "watch"], [""], ["nodes"]),
    _rule(["update", "patch"], [""], ["nodes/status"]),
    _rule(["update", "patch"], [""], ["nodes"]),
    _rule(["create", "update", "patch"], ["", "events.k8s.io"], ["events"]),
    _rule(["get", "list", "watch"], [""], ["pods"]),
    _rule(["create", "delete"], [""], ["pods"]),  # mirror pods
    _rule(["update", "patch"], [""], ["pods/status"]),
    _rule(["create"], [""], ["pods/eviction"]),
    _rule(["get", "list", "watch"], [""], ["services"]),
    _rule(["get"], [""], ["endpoints"]),
    _rule(["create"], ["authentication.k8s.io"], ["tokenreviews"]),
    _rule(["create"], ["authorization.k8s.io"],
          ["subjectaccessreviews", "localsubjectaccessreviews"]),
    _rule(["get", "update", "patch"], [""], ["persistentvolumeclaims/status"]),
    _rule(["get", "create", "update", "patch", "delete"], ["coordination.k8s.io"],
          ["leases"]),
    _rule(["create", "get", "list", "watch"], ["certificates.k8s.io"],
          ["certificatesigningrequests"]),
    _rule(["get", "list", "watch"], ["node.k8s.io"], ["runtimeclasses"]),
    _rule(["get", "watch", "list"], ["storage.k8s.io"], ["csidrivers"]),
)
CSI_NODE_VERBS = ("get", "create", "update", "patch", "delete")


def node_name(user: UserInfo) -> str | None:
    """The node a user is (NodeIdentity), or None for anyone else."""
    if NODES_GROUP not in user.groups or not user.name.startswith(NODE_USER_PREFIX):
        return None
    return user.name.removeprefix(NODE_USER_PREFIX) or None


class NodeAuthorizer:
    """Allows a kubelet what NodeRules and its pods' graph allow; no opinion otherwise."""

    def __init__(self, pods: Callable[[], Iterable[Obj]], claims: Callable[[], Iterable[Obj]],
                 version: Callable[[], int]) -> None:
        self.pods = pods
        self.claims = claims
        self.version = version
        self._built = -1
        self._reachable: dict[str, frozenset[tuple[str, str, str]]] = {}

    def authorize(self, attributes: Attributes) -> Decision:
        node = node_name(attributes.user)
        if node is None or not attributes.is_resource_request:
            return Decision(False)
        resource = attributes.resource + (
            f"/{attributes.subresource}" if attributes.subresource else "")
        if (attributes.api_group, attributes.resource) == ("storage.k8s.io", "csinodes"):
            return self.authorize_csi_node(node, attributes)
        verbs = GRAPH_RESOURCES.get((attributes.api_group, resource))
        if verbs is None:
            allowed = any(rule.allows(attributes) for rule in NODE_RULES)
            return Decision(allowed)
        if attributes.verb not in verbs:
            return Decision(False, f"can only {'/'.join(verbs)} individual resources of this "
                                   "type")
        if not attributes.name:
            return Decision(False, "can only get individual resources of this type")
        kind = attributes.resource.removesuffix("s")
        if (kind, attributes.namespace, attributes.name) in self.reachable(node):
            return Decision(True)
        return Decision(False, f"no relationship found between node '{node}' and this "
                               "object")

    @staticmethod
    def authorize_csi_node(node: str, attributes: Attributes) -> Decision:
        """authorizeCSINode: its own CSINode, no subresource."""
        if attributes.verb not in CSI_NODE_VERBS:
            return Decision(False, "can only get, create, update, patch, or delete a CSINode")
        if attributes.subresource:
            return Decision(False, "cannot authorize CSINode subresources")
        if attributes.verb != "create" and attributes.name != node:
            return Decision(False, "can only access CSINode with the same name as the "
                                   "requesting node")
        return Decision(True)

    def rules_for(self, user: UserInfo, namespace: str) -> list[Rule]:
        return list(NODE_RULES) if node_name(user) is not None else []

    def reachable(self, node: str) -> frozenset[tuple[str, str, str]]:
        """(kind, namespace, name) of every object the node's pods use."""
        version = self.version()
        if version != self._built:
            self._reachable.clear()
            self._built = version
        found = self._reachable.get(node)
        if found is None:
            found = self._reachable[node] = frozenset(self._walk(node))
        return found

    def _walk(self, node: str) -> Iterator[tuple[str, str, str]]:
        volumes = {}
        for claim in self.claims():
            metadata = claim.get("metadata") or {}
            bound = (claim.get("spec") or {}).get("volumeName")
            if bound:
                volumes[(metadata.get("namespace", ""), metadata.get("name", ""))] = bound
        for pod in self.pods():
            spec = pod.get("spec") or {}
            if spec.get("nodeName") != node:
                continue
            namespace = (pod.get("metadata") or {}).get("namespace", "")
            yield "serviceaccount", namespace, spec.get("serviceAccountName") or "default"
            for kind, name in pod_references(pod):
                yield kind, namespace, name
                if kind == "persistentvolumeclaim" and (namespace, name) in volumes:
                    yield "persistentvolume", "", volumes[(namespace, name)]


def pod_references(pod: Obj) -> Iterator[tuple[str, str]]:
    """The Secrets, ConfigMaps and claims a pod uses (VisitPodSecretNames,
    VisitPodConfigmapNames, and its claims)."""
    spec = pod.get("spec") or {}
    for secret in spec.get("imagePullSecrets") or []:
        yield "secret", secret.get("name", "")
    for volume in spec.get("volumes") or []:
        if "secret" in volume:
            yield "secret", (volume["secret"] or {}).get("secretName", "")
        if "configMap" in volume:
            yield "configmap", (volume["configMap"] or {}).get("name", "")
        if "persistentVolumeClaim" in volume:
            yield "persistentvolumeclaim", (volume["persistentVolumeClaim"] or {}).get(
                "claimName", "")
        if "ephemeral" in volume:
            yield ("persistentvolumeclaim",
                   f"{(pod.get('metadata') or {}).get('name', '')}-{volume.get('name', '')}")
        for source in (volume.get("projected") or {}).get("sources") or []:
            if "secret" in source:
                yield "secret", (source["secret"] or {}).get("name", "")
            if "configMap" in source:
                yield "configmap", (source["configMap"] or {}).get("name", "")
    for list_name in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(list_name) or []:
            for source in container.get("envFrom") or []:
                if "secretRef" in source:
                    yield "secret", (source["secretRef"] or {}).get("name", "")
                if "configMapRef" in source:
                    yield "configmap", (source["configMapRef"] or {}).get("name", "")
            for variable in container.get("env") or []:
                value_from = variable.get("valueFrom") or {}
                if "secretKeyRef" in value_from:
                    yield "secret", (value_from["secretKeyRef"] or {}).get("name", "")
                if "configMapKeyRef" in value_from:
                    yield "configmap", (value_from["configMapKeyRef"] or {}).get("name", "")


class UnionAuthorizer:
    """--authorization-mode=Node,RBAC: the first authorizer that allows decides; the
    reasons of those that did not are kept for the 403."""

    def __init__(self, authorizers: list[Any]) -> None:
        self.authorizers = authorizers

    def authorize(self, attributes: Attributes) -> Decision:
        reasons = []
        for authorizer in self.authorizers:
            decision = authorizer.authorize(attributes)
            if decision.allowed:
                return decision
            if decision.reason:
                reasons.append(decision.reason)
        return Decision(False, ", ".join(reasons))

    def rules_for(self, user: UserInfo, namespace: str) -> list[Rule]:
        return [rule for authorizer in self.authorizers
                for rule in authorizer.rules_for(user, namespace)]
