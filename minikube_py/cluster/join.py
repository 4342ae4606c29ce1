"""How `up` joins its nodes to a secured cluster: the way kubeadm does, so that a node
needs nothing but the API server's address, a bootstrap token and the CA's hash (the
compose file's nodes join the same way: cluster/compose.py).

    once the API server runs (publish_cluster_objects: first the host components'
    roles, cluster/roles.py, then as `kubeadm init` does, phase bootstrap-token)
      publish_join_info   a bootstrap token (kept in pki/bootstrap-token while it is
                          good; a new one once the token cleaner has removed it),
                          kube-public/cluster-info (the server and its CA), and the RBAC
                          that lets anonymous read it and the token's group ask for node
                          certificates and have them approved (and a joined machine's
                          proxy watch as its node: node_proxier_rbac)
      (the controller-manager's bootstrapsigner signs cluster-info with the token)
    for each node, before its kubelet starts (as `kubeadm join` does)
      join_node           discover the cluster from the address, token and CA hash
                          (cluster/bootstraptoken.py) and write the node's bootstrap
                          kubeconfig; its kubelet then earns its own client certificate
                          (kubelet/certificate.py) and renews it
    once the kubelets run
      approve_serving_certificates   each kubelet asks for its serving certificate (a
                          kubelet-serving CSR); `up`, the cluster's owner, approves the
                          ones that name only their node's name and address
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from dataclasses import dataclass
from pathlib import Path

from minikube_py.api import Obj
from minikube_py.api import bootstraptoken as bt
from minikube_py.client.errors import AlreadyExists, NotFound
from minikube_py.client.kubeconfig import load_kubeconfig
from minikube_py.client.rest import Client, ResourceClient
from minikube_py.cluster import bootstraptoken
from minikube_py.cluster.roles import grant_component_roles

# `up` waits for cluster-info's signature while the controller-manager starts: look often
DISCOVERY_RETRY = 0.5
DISCOVERY_TIMEOUT = 120.0


@dataclass(frozen=True)
class JoinInfo:
    """What a node needs to join: `kubeadm join <server> --token <token>
    --discovery-token-ca-cert-hash <ca_hash>`."""

    server: str
    token: str
    ca_hash: str

    def command(self) -> str:
        address = self.server.removeprefix("https://")
        return (f"kubeadm join {address} --token {self.token} "
                f"--discovery-token-ca-cert-hash {self.ca_hash}")


def token_file(state: Path) -> Path:
    return state / "pki" / "bootstrap-token"


async def _current_token(secrets: ResourceClient, path: Path) -> str | None:
    """The token of a previous `up`, when its Secret is still there and unexpired."""
    try:
        token = path.read_text().strip()
        token_id, _ = bt.parse_token(token)
        secret = await secrets.get(bt.secret_name(token_id), bt.TOKEN_NAMESPACE)
    except (OSError, ValueError, NotFound):
        return None
    _, expired = bt.time_to_expiry(secret, datetime.datetime.now(datetime.UTC))
    return None if expired else token


NODE_PROXIER_BINDING = "minikube-py:node-proxier"


def node_proxier_rbac() -> Obj:
    """A machine that joined a cluster without the kube-proxy DaemonSet (`up --layout
    processes`) runs its proxy with its node's credentials (in the kubeadm layout the
    DaemonSet's pod runs there, as the ServiceAccount kubeadm binds system:node-proxier
    to): the nodes' group may watch what kube-proxy watches."""
    return {"apiVersion": f"{bootstraptoken.RBAC}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": NODE_PROXIER_BINDING},
            "roleRef": {"apiGroup": bootstraptoken.RBAC, "kind": "ClusterRole",
                        "name": "system:node-proxier"},
            "subjects": [{"apiGroup": bootstraptoken.RBAC, "kind": "Group",
                          "name": bootstraptoken.NODES_GROUP}]}


async def publish_join_info(admin_kubeconfig: Path, state: Path, server: str,
                            ca_pem: bytes) -> JoinInfo:
    """kubeadm init's bootstrap-token phase, as the admin: a good token, cluster-info and
    the bootstrap RBAC (each object created unless it is there)."""
    path = token_file(state)
    async with Client.from_kubeconfig(admin_kubeconfig, user_agent="minikube-py-up") as client:
        secrets = client.resource("secrets")
        token = await _current_token(secrets, path)
        if token is None:
            token = bootstraptoken.generate_token()
            await secrets.create(bootstraptoken.token_secret(
                token, description="the token the cluster's nodes join with"))
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.touch(mode=0o600)
            path.write_text(token + "\n")
        config_maps = client.resource("configmaps")
        wanted = bootstraptoken.cluster_info_configmap(server, ca_pem)
        try:
            current = await config_maps.get(bt.CLUSTER_INFO, bt.CLUSTER_INFO_NAMESPACE)
        except NotFound:
            await config_maps.create(wanted)
        else:
            if (current.get("data") or {}).get(bt.KUBECONFIG_KEY) != (
                    wanted["data"][bt.KUBECONFIG_KEY]):
                # the server moved: keep the signatures' keys, the signer redoes them
                current["data"] = {**(current.get("data") or {}), **wanted["data"]}
                await config_maps.update(current)
        for obj in (*bootstraptoken.cluster_info_rbac(), *bootstraptoken.node_bootstrap_rbac(),
                    node_proxier_rbac()):
            plural = {"Role": "roles", "RoleBinding": "rolebindings",
                      "ClusterRoleBinding": "clusterrolebindings"}[obj["kind"]]
            with contextlib.suppress(AlreadyExists):
                await client.resource(plural, bootstraptoken.RBAC).create(obj)
    return JoinInfo(server, token, bootstraptoken.ca_cert_hash(ca_pem))


async def publish_cluster_objects(admin_kubeconfig: Path, state: Path, server: str,
                                  ca_pem: bytes) -> JoinInfo:
    """What follows the API server's start, as the admin: the DNS's and metrics server's
    roles, then the join info (publish_join_info)."""
    await grant_component_roles(admin_kubeconfig)
    return await publish_join_info(admin_kubeconfig, state, server, ca_pem)


def join_info(state: Path, admin_kubeconfig: Path, ca_file: Path) -> JoinInfo:
    """The join command of the cluster in `state`, once publish_join_info has run."""
    return JoinInfo(load_kubeconfig(admin_kubeconfig).server,
                    token_file(state).read_text().strip(),
                    bootstraptoken.ca_cert_hash(ca_file.read_bytes()))


async def join_node(join: JoinInfo, bootstrap_kubeconfig: Path) -> Path:
    """kubeadm join's discovery for one node: trust the cluster through the token and
    the CA hash alone, and write the kubelet's --bootstrap-kubeconfig."""
    found = await bootstraptoken.discover(join.server, join.token, [join.ca_hash],
                                          timeout=DISCOVERY_TIMEOUT,
                                          retry_interval=DISCOVERY_RETRY)
    return bootstraptoken.write_bootstrap_kubeconfig(bootstrap_kubeconfig, found.server,
                                                     found.ca_pem, join.token)


SERVING_TIMEOUT = 60.0


def _serving_request_of(csr: dict, node: str, address: str) -> bool:
    """Is this CSR node `node` asking, as itself, for a serving certificate that names
    nothing but its name and address? (what the cluster's owner checks before approving)"""
    from cryptography import x509

    from minikube_py.security import csr as csrs

    spec = csr.get("spec") or {}
    if spec.get("signerName") != csrs.KUBELET_SERVING or csrs.has_condition(
            csr, "Approved") or csrs.has_condition(csr, "Denied"):
        return False
    if spec.get("username") != f"system:node:{node}":
        return False
    try:
        request = csrs.request_of(csr)
    except ValueError:
        return False
    if csrs.kubelet_serving_error(request, spec.get("usages") or []) is not None or (
            csrs.common_name(request) != f"system:node:{node}"):
        return False
    try:
        names = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    return (set(names.get_values_for_type(x509.DNSName)) <= {node}
            and {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} <= {address})


async def approve_serving_certificates(admin_kubeconfig: Path,
                                       nodes: dict[str, tuple[str, Path]],
                                       timeout: float = SERVING_TIMEOUT) -> None:
    """Each node's kubelet asks for its serving certificate (--rotate-server-
    certificates); no controller approves those, as upstream leaves them to the cluster's
    owner. `up` is the owner here: it approves the request of each of its nodes (name ->
    (address, the kubelet's serving pair, once written)) that names nothing but that
    node, as `kubectl certificate approve` would, and waits until each pair is written."""
    from minikube_py.security import csr as csrs

    waiting = {name for name, (_, pair) in nodes.items() if not pair.exists()}
    async with Client.from_kubeconfig(admin_kubeconfig, user_agent="minikube-py-up") as client:
        api = client.resource("certificatesigningrequests", "certificates.k8s.io")
        deadline = asyncio.get_running_loop().time() + timeout
        while waiting:
            for csr in (await api.list())["items"]:
                for name in list(waiting):
                    if not _serving_request_of(csr, name, nodes[name][0]):
                        continue
                    message = (f"minikube-py up approved the serving certificate of "
                               f"node {name}: its name and address")
                    await api.update(csrs.approved(csr, "ApprovedByMinikubePy", message),
                                     subresource="approval")
                    print(f"{name}: approved its serving certificate "
                          f"(CSR {csr['metadata']['name']})", flush=True)
            waiting = {name for name in waiting if not nodes[name][1].exists()}
            if not waiting:
                break
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"no serving certificate for {', '.join(sorted(waiting))} "
                                   f"after {timeout:.0f} s: see its kubelet's log")
            await asyncio.sleep(0.5)
