"""`minikube-py addons enable | disable | list`: what a cluster runs on request, as
minikube's add-ons. One so far, the dashboard, which `minikube-py dashboard` also enables
(as `minikube dashboard` does).

    dashboard   `python -m minikube_py.dashboard`, a host component like the provisioner
                (logs/dashboard.log, run/dashboard.pid, restarted by the supervisor) on
                the bridge's address, port 9090, HTTPS only; in a secured cluster it lets
                in only the API server's proxy (the front-proxy CA's certificate,
                cluster/certs.py). In the cluster, what upstream's manifest applies
                (objects below), made as the admin:
        Namespace kubernetes-dashboard
        ServiceAccount kubernetes-dashboard    the dashboard runs as it: a token of it
                                               (TokenRequest, as the kubelet asks one for
                                               a pod) is the only credential in its
                                               kubeconfig (kubeconfigs/dashboard.conf)
        ClusterRoleBinding kubernetes-dashboard-view
                                               to `view`: reading what namespaces hold
                                               (pods, Services, EndpointSlices, Events,
                                               ConfigMaps such as the trace receiver's),
                                               never Secrets, no writes
        ClusterRole + ClusterRoleBinding kubernetes-dashboard
                                               get, list, watch of nodes, the one thing the
                                               page draws that `view` does not read
        Service kubernetes-dashboard           port 443 (upstream's), no selector; its
                                               EndpointSlice names the dashboard's address
                                               and port, so the API server's service proxy
                                               reaches it, as https:kubernetes-dashboard:

Enabled add-ons are remembered in cluster.json ("addons"): `up` starts them again and
`down` stops them; `disable` stops the component and deletes its objects.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
from collections.abc import Callable
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.rest import Client
from minikube_py.cluster.kubeconfig import CLUSTER_NAME, write_kubeconfig_document

NAMESPACE = "kubernetes-dashboard"
SERVICE = "kubernetes-dashboard"
PROXY_PATH = f"/api/v1/namespaces/{NAMESPACE}/services/https:{SERVICE}:/proxy/"
"""The page through the API server's service proxy, as upstream's Dashboard is opened
(https: the dashboard serves TLS only)."""
SERVICE_PORT = 443
ADDONS = {"dashboard": "the dashboard: `minikube-py dashboard` opens it"}
RBAC = "rbac.authorization.k8s.io"
NAMESPACE_GONE_TIMEOUT = 60.0  # s to wait for the namespace controller to empty the namespace
DASHBOARD_USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE}"
"""Who the dashboard is to the API server: the ServiceAccount upstream's Deployment runs
as."""
TOKEN_SECONDS = 365 * 24 * 3600
"""Its token lasts a year, as the cluster's client certificates do; `up` and `addons
enable` ask for a new one each time they start it."""
SLICE = f"{SERVICE}-host"
MANAGED_BY = "addons.minikube-py.io"
LABELS = {"k8s-app": SERVICE, "addonmanager.kubernetes.io/mode": "Reconcile",
          "app.kubernetes.io/managed-by": "minikube-py"}
READ = ["get", "list", "watch"]
VIEW_BINDING = f"{SERVICE}-view"
DASHBOARD_RULES: list[Obj] = [{"apiGroups": [""], "resources": ["nodes"], "verbs": READ}]
"""What the page draws (dashboard/hub.py's KINDS) beyond `view`: nodes, which are not in
a namespace. The rest (pods, Services, EndpointSlices, Events, and the trace receiver's
ConfigMap in kube-public, which every signed-in user may read anyway) `view` reads."""


def addons_of(cluster: dict[str, object]) -> set[str]:
    """The add-ons cluster.json says are enabled."""
    saved = cluster.get("addons")
    return {name for name, on in saved.items() if on} if isinstance(saved, dict) else set()


def dashboard_objects(address: str, port: int) -> list[tuple[str, str, Obj]]:
    """(group, plural, object) of the dashboard add-on, in the order they are made (the
    EndpointSlice's owner, the Service, is made before it)."""
    def meta(name: str, namespaced: bool = True) -> Obj:
        return {"name": name, "labels": dict(LABELS),
                **({"namespace": NAMESPACE} if namespaced else {})}

    return [
        ("", "namespaces", {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": meta(NAMESPACE, namespaced=False)}),
        ("", "serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                 "metadata": meta(SERVICE)}),
        (RBAC, "clusterroles", {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
                                "metadata": meta(SERVICE, namespaced=False),
                                "rules": DASHBOARD_RULES}),
        *((RBAC, "clusterrolebindings", {
            "apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
            "metadata": meta(binding, namespaced=False),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE,
                          "namespace": NAMESPACE}]})
          for binding, role in ((SERVICE, SERVICE), (VIEW_BINDING, "view"))),
        ("", "services", {"apiVersion": "v1", "kind": "Service", "metadata": meta(SERVICE),
                          "spec": {"ports": [{"port": SERVICE_PORT, "protocol": "TCP",
                                              "targetPort": port}]}}),
        ("discovery.k8s.io", "endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {**meta(SLICE), "labels": {
                **LABELS, "kubernetes.io/service-name": SERVICE,
                "endpointslice.kubernetes.io/managed-by": MANAGED_BY}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {
                "ready": True, "serving": True, "terminating": False}}],
            "ports": [{"name": "", "port": port, "protocol": "TCP"}]}),
    ]


async def apply_dashboard(kubeconfig: Path, address: str, port: int,
                          own_kubeconfig: Path | None = None) -> None:
    """Make the dashboard's objects that are missing; point its EndpointSlice at
    address:port, its Service's port at it and its role at today's rules (any may have
    changed since). With `own_kubeconfig` (a cluster that authenticates), write there the
    dashboard's kubeconfig: the cluster of `kubeconfig`, a new token of its ServiceAccount."""
    async with Client.from_kubeconfig(kubeconfig, user_agent="minikube-py-addons") as client:
        owner: Obj = {}
        for group, plural, obj in dashboard_objects(address, port):
            api = client.resource(plural, group or None)
            namespace = obj["metadata"].get("namespace")
            if plural == "endpointslices":
                obj["metadata"]["ownerReferences"] = [{
                    "apiVersion": "v1", "kind": "Service", "name": SERVICE,
                    "uid": owner["metadata"]["uid"]}]
            try:
                made = await api.create(obj, namespace)
            except AlreadyExists:
                made = await api.get(obj["metadata"]["name"], namespace)
                if plural in ("clusterroles", "endpointslices"):
                    obj["metadata"]["resourceVersion"] = made["metadata"]["resourceVersion"]
                    made = await api.update(obj)
                elif plural == "services" and made["spec"].get("ports") != obj["spec"]["ports"]:
                    made = await api.update({**made, "spec": {**made["spec"],
                                                              "ports": obj["spec"]["ports"]}})
            if plural == "services":
                owner = made
        if own_kubeconfig is not None:
            write_kubeconfig_document(own_kubeconfig, dashboard_kubeconfig(
                client.config.server, _ca_pem(client.config.ca_file),
                await request_token(client)))


async def request_token(client: Client) -> str:
    """TokenRequest: a token of the dashboard's ServiceAccount, good while the account is
    there (deleting it, as `addons disable` does, ends the token) for TOKEN_SECONDS."""
    answer = await client.request(
        "POST", client.resource("serviceaccounts").path(NAMESPACE, SERVICE, "token"),
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": TOKEN_SECONDS}})
    return str(answer["status"]["token"])


def dashboard_kubeconfig(server: str, ca_pem: bytes, token: str) -> Obj:
    """The dashboard's kubeconfig: the server and its CA, the token as the only
    credential."""
    cluster: Obj = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {"apiVersion": "v1", "kind": "Config", "current-context": CLUSTER_NAME,
            "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
            "users": [{"name": SERVICE, "user": {"token": token}}],
            "contexts": [{"name": CLUSTER_NAME, "context": {
                "cluster": CLUSTER_NAME, "user": SERVICE, "namespace": NAMESPACE}}],
            "preferences": {}}


def _ca_pem(ca_file: str | None) -> bytes:
    return Path(ca_file).read_bytes() if ca_file else b""


async def remove_dashboard(kubeconfig: Path) -> None:
    """Delete the dashboard's objects: its role, its Service at once (the API server's
    proxy stops reaching it), then its namespace with what else is in it, waiting until
    the namespace is gone, as `kubectl delete` waits: a namespace being terminated takes
    no new objects, so an `addons enable` right after would fail."""
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
