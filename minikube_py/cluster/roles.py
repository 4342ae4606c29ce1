"""What the host components of a secured cluster may do, beyond upstream's bootstrap
roles.

Upstream runs cluster DNS and metrics-server as pods with ServiceAccounts; here they
are processes on the host that publish themselves (their Service, EndpointSlice and, for
metrics, the APIService). `up --secure` gives their certificates' users
(system:kube-dns, system:metrics-server) the reads upstream's roles give those accounts
and the few writes publishing takes. (The local-path provisioner and the gateway
controller are Deployments with their ServiceAccounts and roles: kubeadm/addons.py.) The
proxy also enforces NetworkPolicies (proxy/netpol/), so its user, the kube-proxy
ServiceAccount of the kubeadm layout and the nodes (a joined machine's proxy uses its
node's credentials) may read pods, namespaces and policies: the reads
kube-network-policies' ClusterRole gives its DaemonSet.

The cluster autoscaler of `up --autoscale-nodes` is a host process too, as on upstream's
GCE masters (cluster/addons/rbac/cluster-autoscaler): its certificate's user
`cluster-autoscaler` is bound to the ClusterRole `cluster-autoscaler` (what its loop
reads, the nodes it taints, the pods it evicts, its events) and to the Role
`cluster-autoscaler` in kube-system (its status ConfigMap and its lease), with the rules
of upstream's chart (charts/cluster-autoscaler: clusterrole.yaml, role.yaml). Two verbs
on nodes go beyond the chart's: `patch`, its taint (upstream's GCE role has it), and
`delete`, because the node group deletes the Node object of a node it removed, the work a
cloud node lifecycle controller does elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from minikube_py.api import Obj
from minikube_py.client.errors import AlreadyExists
from minikube_py.client.rest import Client

RBAC = "rbac.authorization.k8s.io"
LABELS = {"app.kubernetes.io/managed-by": "minikube-py"}


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> Obj:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _named(verbs: list[str], groups: list[str], resources: list[str], names: list[str]
           ) -> Obj:
    return {**_rule(verbs, groups, resources), "resourceNames": names}


READ = ["get", "list", "watch"]
PUBLISH = ["get", "create", "update"]
CLUSTER_AUTOSCALER = "cluster-autoscaler"
"""The autoscaler's user (its certificate's CN), its ClusterRole, Role and bindings."""
CLUSTER_AUTOSCALER_STATUS = "cluster-autoscaler-status"
ROLES: dict[str, tuple[str, list[Obj]]] = {
    "minikube-py:dns": ("system:kube-dns", [
        _rule(READ, [""], ["services", "endpoints", "namespaces", "pods"]),
        _rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
        _rule(PUBLISH, [""], ["services"]),
        _rule(PUBLISH, ["discovery.k8s.io"], ["endpointslices"]),
    ]),
    "minikube-py:metrics-server": ("system:metrics-server", [
        _rule(READ, [""], ["nodes", "pods", "namespaces"]),
        _rule(["get"], [""], ["nodes/metrics"]),
        _rule(PUBLISH, [""], ["services"]),
        _rule(PUBLISH, ["discovery.k8s.io"], ["endpointslices"]),
        _rule(PUBLISH, ["apiregistration.k8s.io"], ["apiservices"]),
    ]),
    "minikube-py:network-policies": ("system:kube-proxy", [
        _rule(["list", "watch"], [""], ["pods", "namespaces"]),
        _rule(["list", "watch"], ["networking.k8s.io"], ["networkpolicies"]),
    ]),
    CLUSTER_AUTOSCALER: (CLUSTER_AUTOSCALER, [
        _rule(["create", "patch"], [""], ["events", "endpoints"]),
        _rule(["create"], [""], ["pods/eviction"]),
        _rule(["update"], [""], ["pods/status"]),
        _named(["get", "update"], [""], ["endpoints"], [CLUSTER_AUTOSCALER]),
        # patch: its taint (upstream's GCE role); delete: the Node of a removed node
        _rule([*READ, "update", "patch", "delete"], [""], ["nodes"]),
        _rule(READ, [""], ["namespaces", "pods", "services", "replicationcontrollers",
                           "persistentvolumeclaims", "persistentvolumes"]),
        _rule(READ, ["batch"], ["jobs", "cronjobs"]),
        _rule(["list", "watch"], ["policy"], ["poddisruptionbudgets"]),
        _rule(READ, ["apps"], ["daemonsets", "replicasets", "statefulsets"]),
        _rule(READ, ["storage.k8s.io"], ["storageclasses", "csinodes", "csidrivers",
                                         "csistoragecapacities"]),
        _rule(["list", "watch"], [""], ["configmaps"]),
    ]),
}
NAMESPACED_ROLES: dict[tuple[str, str], tuple[str, list[Obj]]] = {
    ("kube-system", CLUSTER_AUTOSCALER): (CLUSTER_AUTOSCALER, [
        _rule(["create"], [""], ["configmaps"]),
        _named(["delete", "get", "update"], [""], ["configmaps"],
               [CLUSTER_AUTOSCALER_STATUS]),
        _rule(["create"], ["coordination.k8s.io"], ["leases"]),
        _named(["get", "update"], ["coordination.k8s.io"], ["leases"],
               [CLUSTER_AUTOSCALER]),
    ]),
}
"""(namespace, name) -> (user, rules): the Roles, each bound to its user in its
namespace."""
EXTRA_SUBJECTS: dict[str, list[Obj]] = {"minikube-py:network-policies": [
    {"kind": "ServiceAccount", "namespace": "kube-system", "name": "kube-proxy"},
    {"apiGroup": RBAC, "kind": "Group", "name": "system:nodes"}]}
"""Who else a role is bound to: the kube-proxy ServiceAccount of the kubeadm layout, and
the nodes, whose credentials the proxy of a machine that joined uses (cluster/join.py)."""


def role_objects() -> list[tuple[str, Obj]]:
    """(plural, object) for each ClusterRole and its ClusterRoleBinding, then each Role
    and its RoleBinding."""
    objects = []
    for name, (user, rules) in ROLES.items():
        objects.append(("clusterroles", {
            "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": LABELS}, "rules": rules}))
        objects.append(("clusterrolebindings", {
            "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": LABELS},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user},
                         *EXTRA_SUBJECTS.get(name, [])]}))
    for (namespace, name), (user, rules) in NAMESPACED_ROLES.items():
        objects.append(("roles", {
            "apiVersion": f"{RBAC}/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
            "rules": rules}))
        objects.append(("rolebindings", {
            "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace, "labels": LABELS},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": name},
            "subjects": [{"apiGroup": RBAC, "kind": "User", "name": user}]}))
    return objects


async def grant_component_roles(kubeconfig: Path) -> None:
    """Create the roles and bindings that are missing (as the admin)."""
    async with Client.from_kubeconfig(kubeconfig, user_agent="minikube-py-up") as client:
        for plural, obj in role_objects():
            try:
                await client.resource(plural, RBAC).create(obj)
            except AlreadyExists:
                continue
