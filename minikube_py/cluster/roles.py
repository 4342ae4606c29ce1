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


READ = ["get", "list", "watch"]
PUBLISH = ["get", "create", "update"]
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
}
EXTRA_SUBJECTS: dict[str, list[Obj]] = {"minikube-py:network-policies": [
    {"kind": "ServiceAccount", "namespace": "kube-system", "name": "kube-proxy"},
    {"apiGroup": RBAC, "kind": "Group", "name": "system:nodes"}]}
"""Who else a role is bound to: the kube-proxy ServiceAccount of the kubeadm layout, and
the nodes, whose credentials the proxy of a machine that joined uses (cluster/join.py)."""


def role_objects() -> list[tuple[str, Obj]]:
    """(plural, object) for each ClusterRole and its ClusterRoleBinding."""
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
    return objects


async def grant_component_roles(kubeconfig: Path) -> None:
    """Create the roles and bindings that are missing (as the admin)."""
    async with Client.from_kubeconfig(kubeconfig, user_agent="minikube-py-up") as client:
        for plural, obj in role_objects():
            try:
                await client.resource(plural, RBAC).create(obj)
            except AlreadyExists:
                continue
