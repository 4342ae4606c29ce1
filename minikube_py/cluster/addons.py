"""`minikube-py addons enable | disable | list`: what a cluster runs on request, as
minikube's add-ons. One so far, the dashboard, which `minikube-py dashboard` also enables
(as `minikube dashboard` does). What upstream's manifest (kubernetes/dashboard's
recommended.yaml) applies, made as the admin by server-side apply, the Deployment's image
the component image `dashboard` (images/components.py) pushed to the cluster's registry:

    Namespace kubernetes-dashboard
    ServiceAccount kubernetes-dashboard        the dashboard's pod runs as it: its
                                               kubeconfig (a ConfigMap, as the kube-system
                                               add-ons', kubeadm/addons.py) names the
                                               API server, the mounted CA and token
    ClusterRoleBinding kubernetes-dashboard-view
                                               to `view`: reading what namespaces hold
                                               (pods, Services, EndpointSlices, Events,
                                               ConfigMaps such as the trace receiver's),
                                               never Secrets, no writes
    ClusterRole + ClusterRoleBinding kubernetes-dashboard
                                               get, list, watch of nodes, the one thing the
                                               page draws that `view` does not read
    Secret kubernetes-dashboard-certs          a secured cluster's front-proxy CA
                                               (cluster/certs.py): the dashboard lets in
                                               only the certificate it signed, the API
                                               server's proxy's (tls.py)
    Deployment kubernetes-dashboard            one replica, HTTPS on 8443 (upstream's), a
                                               self-signed serving certificate, on a node
                                               of this machine
    Service kubernetes-dashboard               port 443 -> 8443, selecting the pod: the API
                                               server's service proxy reaches it, as
                                               https:kubernetes-dashboard:

Enabled add-ons are remembered in cluster.json ("addons"): `up` applies them again (and,
as for every Deployment it makes, does not wait for the pod); `disable` deletes the
objects, the namespace last, with what else is in it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.client.errors import NotFound
from minikube_py.client.rest import Client
from minikube_py.cluster.certs import FRONT_PROXY_CLIENT
from minikube_py.cluster.kubeadm.addons import CONTROL_PLANE_TAINT, in_cluster_kubeconfig, on_nodes
from minikube_py.cluster.kubeadm.init import apply_addons

NAMESPACE = "kubernetes-dashboard"
SERVICE = "kubernetes-dashboard"
PROXY_PATH = f"/api/v1/namespaces/{NAMESPACE}/services/https:{SERVICE}:/proxy/"
"""The page through the API server's service proxy, as upstream's Dashboard is opened
(https: the dashboard serves TLS only)."""
SERVICE_PORT = 443
CONTAINER_PORT = 8443
DASHBOARD_IMAGE = "dashboard"
"""The dashboard's component image (images/components.py)."""
ADDONS = {"dashboard": "the dashboard: `minikube-py dashboard` opens it"}
RBAC = "rbac.authorization.k8s.io"
NAMESPACE_GONE_TIMEOUT = 60.0  # s to wait for the namespace controller to empty the namespace
DASHBOARD_USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE}"
"""Who the dashboard is to the API server: the ServiceAccount upstream's Deployment runs
as."""
LABELS = {"k8s-app": SERVICE, "addonmanager.kubernetes.io/mode": "Reconcile",
          "app.kubernetes.io/managed-by": "minikube-py"}
SELECTOR = {"k8s-app": SERVICE}
READ = ["get", "list", "watch"]
VIEW_BINDING = f"{SERVICE}-view"
CERTS = f"{SERVICE}-certs"
CERTS_DIR = "/certs"
FRONT_PROXY_CA = "front-proxy-ca.crt"
KUBECONFIG = f"{SERVICE}-kubeconfig"
KUBECONFIG_DIR = "/etc/kubernetes/in-cluster"
DASHBOARD_RULES: list[Obj] = [{"apiGroups": [""], "resources": ["nodes"], "verbs": READ}]
"""What the page draws (dashboard/hub.py's KINDS) beyond `view`: nodes, which are not in
a namespace. The rest (pods, Services, EndpointSlices, Events, and the trace receiver's
ConfigMap in kube-public, which every signed-in user may read anyway) `view` reads."""


@dataclass(frozen=True)
class Dashboard:
    """What the dashboard's objects depend on: its image, the API server's URL (as pods
    reach it), the nodes its pod may run on (this machine's kubelets'), the front-proxy
    CA (PEM; none in a cluster that does not authenticate) and the log verbosity."""

    image: str
    server: str
    nodes: Sequence[str]
    front_proxy_ca: bytes = b""
    verbosity: int = 2


def addons_of(cluster: dict[str, object]) -> set[str]:
    """The add-ons cluster.json says are enabled."""
    saved = cluster.get("addons")
    return {name for name, on in saved.items() if on} if isinstance(saved, dict) else set()


def _meta(name: str, namespaced: bool = True) -> Obj:
    return {"name": name, "labels": dict(LABELS),
            **({"namespace": NAMESPACE} if namespaced else {})}


def dashboard_flags(dashboard: Dashboard) -> list[str]:
    """The dashboard in its pod: HTTPS on every address of the pod, with a self-signed
    certificate (the API server's proxy does not check it); with a front-proxy CA, only
    the API server's proxy certificate let in."""
    secured = [f"--client-ca-file={CERTS_DIR}/{FRONT_PROXY_CA}",
               f"--allowed-names={FRONT_PROXY_CLIENT}"] if dashboard.front_proxy_ca else []
    return [f"--kubeconfig={KUBECONFIG_DIR}/kubeconfig.conf", "--bind-address=0.0.0.0",
            f"--port={CONTAINER_PORT}", *secured, f"--v={dashboard.verbosity}"]


def dashboard_deployment(dashboard: Dashboard) -> Obj:
    """Upstream's Deployment: one replica as the ServiceAccount, on a node of this
    machine. Its probes open a TCP connection to the port, as a handshake without the
    proxy's certificate fails (upstream's HTTPS liveness probe would); the port opens
    once the informers have synced, so ready means serving."""
    connect = {"tcpSocket": {"port": "https"}}
    volumes: list[tuple[Obj, Obj]] = [(
        {"name": "kubeconfig", "configMap": {"name": KUBECONFIG}},
        {"name": "kubeconfig", "mountPath": KUBECONFIG_DIR, "readOnly": True})]
    if dashboard.front_proxy_ca:
        volumes.append(({"name": CERTS, "secret": {"secretName": CERTS}},
                        {"name": CERTS, "mountPath": CERTS_DIR, "readOnly": True}))
    container = {
        "name": SERVICE, "image": dashboard.image, "imagePullPolicy": "IfNotPresent",
        "command": [DASHBOARD_IMAGE, *dashboard_flags(dashboard)],
        "ports": [{"name": "https", "containerPort": CONTAINER_PORT, "protocol": "TCP"}],
        "livenessProbe": {**connect, "initialDelaySeconds": 30, "periodSeconds": 10},
        "readinessProbe": {**connect, "periodSeconds": 1},
        "volumeMounts": [mount for _, mount in volumes]}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta(SERVICE),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(SELECTOR)},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": {
                "containers": [container],
                "serviceAccountName": SERVICE,
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "affinity": {"nodeAffinity": on_nodes(dashboard.nodes)},
                "tolerations": [{"key": CONTROL_PLANE_TAINT, "effect": "NoSchedule"}],
                "volumes": [volume for volume, _ in volumes]}}}}


def dashboard_objects(dashboard: Dashboard) -> list[Obj]:
    """The dashboard add-on's objects, the Namespace first."""
    bindings = [{"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
                 "metadata": _meta(binding, namespaced=False),
                 "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
                 "subjects": [{"kind": "ServiceAccount", "name": SERVICE,
                               "namespace": NAMESPACE}]}
                for binding, role in ((SERVICE, SERVICE), (VIEW_BINDING, "view"))]
    certs = [{"apiVersion": "v1", "kind": "Secret", "metadata": _meta(CERTS),
              "type": "Opaque",
              "data": {FRONT_PROXY_CA: base64.b64encode(dashboard.front_proxy_ca).decode()}}
             ] if dashboard.front_proxy_ca else []
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(NAMESPACE, False)},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(SERVICE)},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
         "metadata": _meta(SERVICE, namespaced=False), "rules": DASHBOARD_RULES},
        *bindings,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(KUBECONFIG),
         "data": {"kubeconfig.conf": in_cluster_kubeconfig(dashboard.server)}},
        *certs,
        {"apiVersion": "v1", "kind": "Service", "metadata": _meta(SERVICE),
         "spec": {"selector": dict(SELECTOR),
                  "ports": [{"port": SERVICE_PORT, "protocol": "TCP",
                             "targetPort": CONTAINER_PORT}]}},
        dashboard_deployment(dashboard),
    ]


async def apply_dashboard(kubeconfig: Path, dashboard: Dashboard) -> None:
    """Apply the dashboard's objects (its Namespace first, which the others go in);
    what changed since (the image, the server, the rules) is updated."""
    namespace, *rest = dashboard_objects(dashboard)
    await apply_addons(kubeconfig, [namespace])
    await apply_addons(kubeconfig, rest)


async def remove_dashboard(kubeconfig: Path) -> None:
    """Delete the dashboard's objects: its role, its Service at once (the API server's
    proxy stops reaching it), then its namespace with what else is in it (the
    Deployment, its pod, the Secret), waiting until the namespace is gone, as `kubectl
    delete` waits: a namespace being terminated takes no new objects, so an `addons
    enable` right after would fail."""
    async with Client.from_kubeconfig(kubeconfig, user_agent="minikube-py-addons") as client:
        for plural, name in (("clusterrolebindings", SERVICE),
                             ("clusterrolebindings", VIEW_BINDING),
                             ("clusterroles", SERVICE)):
            with contextlib.suppress(NotFound):
                await client.resource(plural, RBAC).delete(name)
        with contextlib.suppress(NotFound):
            await client.resource("services").delete(SERVICE, NAMESPACE)
        namespaces = client.resource("namespaces")
        with contextlib.suppress(NotFound):
            await namespaces.delete(NAMESPACE)
        with contextlib.suppress(TimeoutError, NotFound):
            async with asyncio.timeout(NAMESPACE_GONE_TIMEOUT):
                while True:
                    await namespaces.get(NAMESPACE)
                    await asyncio.sleep(0.2)


def add_addons_command(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                       set_addon: Callable[[str, bool], None],
                       enabled: Callable[[], set[str]]) -> None:
    """Add `addons enable | disable NAME` and `addons list` to the command line.
    `set_addon(name, on)` enables or disables one in the running cluster; `enabled()`
    reads which are."""
    addons = commands.add_parser("addons", help="enable or disable add-ons (the dashboard)")
    actions = addons.add_subparsers(dest="action", required=True)
    for verb, on in (("enable", True), ("disable", False)):
        action = actions.add_parser(verb, help=f"{verb} an add-on of the running cluster")
        action.add_argument("name", help=f"one of: {', '.join(ADDONS)}")
        action.set_defaults(run=lambda args, on=on: set_addon(args.name, on))
    actions.add_parser("list", help="each add-on and whether it is enabled").set_defaults(
        run=lambda _args: list_addons(enabled()))


def list_addons(enabled: set[str]) -> None:
    """One line per add-on: its name, enabled or disabled, what it is."""
    for name, what in ADDONS.items():
        print(f"{name:<12}{'enabled' if name in enabled else 'disabled':<10}{what}")
